"""The ``styleeval`` command line: one sub-command per job (``score``, ``autorate``, ``merge``, ``evaluate``,
``metaeval``, ``stel``, ``reproduce-paper``, ``build-datasets``, ``space``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

from styleeval._version import __version__

COMMANDS = ("score", "autorate", "merge", "evaluate", "metaeval", "stel", "reproduce-paper", "build-datasets", "space")
"""The sub-commands, each a module of :mod:`styleeval.commands` (``reproduce-paper``: ``reproduce_paper.py``) with
``SUMMARY``, ``register`` and ``run``."""


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every sub-command listed with its summary, and the arguments of ``commands`` (default:
    all) declared. As pip does, ``main`` declares only the command it runs: some declarations read their defaults
    from heavy modules (``evaluate``: the systems' metrics; ``metaeval``: the corpora), and a command that fails at
    once (weights that cannot be had) must not pay for another command's imports."""
    import importlib

    parser = argparse.ArgumentParser(prog="styleeval", description="Evaluate text style transfer.")
    parser.add_argument("--version", action="version", version=f"styleeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = set(COMMANDS if commands is None else commands)
    for name in COMMANDS:
        module = importlib.import_module(f"styleeval.commands.{name.replace('-', '_')}")
        if name in wanted:
            module.register(sub)
        else:
            sub.add_parser(name, help=module.SUMMARY)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``styleeval`` console script; returns the exit status."""
    from styleeval.backends import BackendError
    from styleeval.errors import UserError
    from styleeval.escaping import terminal_text

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[:1] if argv and argv[0] in COMMANDS else ())
    args = parser.parse_args(argv)
    if getattr(args, "quiet", False) or getattr(args, "no_progress", False):  # every bar, the libraries' too
        from styleeval.progress import quiet_libraries

        quiet_libraries()
    try:
        return int(args.func(args) or 0)
    except (UserError, BackendError, FileNotFoundError, IsADirectoryError, PermissionError) as err:
        # input refused, a file that is not there or cannot be read, a failing backend: one clear line, no traceback;
        # anything else is a bug (a ValueError from numpy or pandas too) and keeps its traceback
        print(f"styleeval {args.command}: error: {terminal_text(err, lines=True)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
