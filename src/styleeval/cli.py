"""The ``styleeval`` command line: one sub-command per job (``score``, ``autorate``, ``merge``, ``evaluate``,
``metaeval``, ``stel``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from styleeval._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    from styleeval.commands import autorate, evaluate, merge, metaeval, score, stel

    parser = argparse.ArgumentParser(prog="styleeval", description="Evaluate text style transfer.")
    parser.add_argument("--version", action="version", version=f"styleeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    score.register(sub)
    autorate.register(sub)
    merge.register(sub)
    evaluate.register(sub)
    metaeval.register(sub)
    stel.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``styleeval`` console script; returns the exit status."""
    from styleeval.backends import BackendError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, BackendError, FileNotFoundError, IsADirectoryError, PermissionError) as err:
        # bad input, a file that is not there or cannot be read, a failing backend: one clear line, no traceback
        print(f"styleeval {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
