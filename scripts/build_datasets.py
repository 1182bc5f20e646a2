#!/usr/bin/env python
"""``styleeval build-datasets`` (the Hub dataset folders), kept as a script for the commands that name it; as before,
``--out`` defaults to this checkout's ``datasets/`` folder wherever it is run from.

    python scripts/build_datasets.py                          # all datasets into datasets/
    python scripts/build_datasets.py asset stel --out /tmp/ds  # copies the cards into /tmp/ds/<name>/
"""

from __future__ import annotations

import sys
from pathlib import Path

from styleeval.cli import main as cli_main

REPO_DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def main(argv: list[str] | None = None) -> int:
    """``styleeval build-datasets`` with ``argv``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", str(REPO_DATASETS)]
    return cli_main(["build-datasets", *argv])


if __name__ == "__main__":
    sys.exit(main())
