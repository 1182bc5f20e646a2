#!/usr/bin/env python
"""``styleeval reproduce-paper`` (the paper's Tables 3-5 beside ours), kept as a script for the commands that name
it; the work is :mod:`styleeval.metaeval.paper`.

    python scripts/reproduce_paper.py --data-dir ../shared/data [--write docs/reproduction.md] [--online]
"""

from __future__ import annotations

import sys

from styleeval.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["reproduce-paper", *sys.argv[1:]]))
