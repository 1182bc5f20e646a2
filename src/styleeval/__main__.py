"""``python -m styleeval``: the ``styleeval`` command line."""

import sys

from styleeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
