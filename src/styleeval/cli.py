"""The ``styleeval`` command line: one sub-command per job (``score``, ``autorate``, ``merge``, ``evaluate``,
``metaeval``, ``stel``, ``reproduce-paper``, ``build-datasets``, ``space``, ``list``)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

from styleeval._version import __version__
from styleeval.backends import BackendError
from styleeval.errors import RowsWarning, UserError, advising
from styleeval.escaping import terminal_text
from styleeval.progress import enabled, quiet_libraries
from styleeval.registry import Registry

COMMANDS: Registry[ModuleType] = Registry("command")
"""The sub-commands, in the order ``--help`` lists them, each a lazy entry naming its module of
:mod:`styleeval.commands` (``SUMMARY``, ``register`` and ``run``), imported when the parser is built: the import-graph
test reads these strings as ``cli``'s imports."""
COMMANDS.add("score", "styleeval.commands.score")
COMMANDS.add("autorate", "styleeval.commands.autorate")
COMMANDS.add("merge", "styleeval.commands.merge")
COMMANDS.add("evaluate", "styleeval.commands.evaluate")
COMMANDS.add("metaeval", "styleeval.commands.metaeval")
COMMANDS.add("stel", "styleeval.commands.stel")
COMMANDS.add("reproduce-paper", "styleeval.commands.reproduce_paper")
COMMANDS.add("build-datasets", "styleeval.commands.build_datasets")
COMMANDS.add("space", "styleeval.commands.space")
COMMANDS.add("list", "styleeval.commands.list")


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every sub-command listed with its summary, and the arguments of ``commands`` (default:
    all) declared. As pip does, ``main`` declares only the command it runs: some declarations read their defaults
    from heavy modules (``evaluate``: the systems' metrics; ``metaeval``: the corpora), and a command that fails at
    once (weights that cannot be had) must not pay for another command's imports."""
    parser = argparse.ArgumentParser(prog="styleeval", description="Evaluate text style transfer.")
    parser.add_argument("--version", action="version", version=f"styleeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = set(COMMANDS if commands is None else commands)
    for name, module in COMMANDS.items():
        if name in wanted:
            module.register(sub)
        else:
            sub.add_parser(name, help=module.SUMMARY)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``styleeval`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[:1] if argv and argv[0] in COMMANDS else ())
    args = parser.parse_args(argv)
    if getattr(args, "quiet", False) or getattr(args, "no_progress", False) or not enabled(None):
        quiet_libraries()  # every bar, the libraries' too; none where stderr is no terminal (a file, a pipe)
    try:
        with advising("cli"), warnings.catch_warnings():
            warnings.showwarning = _command_warning(args.command, warnings.showwarning)
            return int(args.func(args) or 0)
    except (UserError, BackendError, FileNotFoundError, IsADirectoryError, PermissionError) as err:
        # input refused, a file that is not there or cannot be read, a failing backend: one clear line, no traceback;
        # anything else is a bug (a ValueError from numpy or pandas too) and keeps its traceback
        print(f"styleeval {args.command}: error: {terminal_text(err, lines=True)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # styleeval evaluate ... | head: the reader has what it wanted (OUT is written)
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Standard output to /dev/null once its reader has gone, so that Python's flush at exit raises no second
    ``BrokenPipeError`` (the way Python's documentation of SIGPIPE advises)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _command_warning(command: str, fallback: Callable[..., None]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that writes styleeval's own warnings as the command's lines
    (``styleeval score: warning: 1 row longer than ...``), not as Python's ``file:line: Category: message`` with the
    source line; other libraries' warnings go to ``fallback``."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001 - warnings' signature
        ours = issubclass(category, RowsWarning) or (
            issubclass(category, UserWarning) and os.path.abspath(str(filename)).startswith(package))
        if not ours:
            return fallback(message, category, filename, lineno, file, line)
        stream = sys.stderr if file is None else file
        try:
            print(f"styleeval {command}: warning: {terminal_text(message, lines=True)}", file=stream)
        except OSError:  # a closed stderr: as warnings itself does, say nothing
            pass

    return show


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
