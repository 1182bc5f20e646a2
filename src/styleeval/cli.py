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
    early = _weights_first(list(sys.argv[1:] if argv is None else argv))  # before any heavy import
    if early is not None:
        return early
    from styleeval.backends import BackendError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, BackendError, FileNotFoundError, IsADirectoryError, PermissionError) as err:
        # bad input, a file that is not there or cannot be read, a failing backend: one clear line, no traceback
        print(f"styleeval {args.command}: error: {err}", file=sys.stderr)
        return 2


def _weights_first(argv: list[str]) -> int | None:
    """``score`` / ``autorate`` on a local model: whether its weights can be had is decided before the parser's
    imports (torch, transformers, pandas: seconds), so that weights that cannot be had (offline, gated, unknown) are
    one line in about a second (:func:`styleeval.hub.check_downloadable`; decided once per process, the later load
    asks again for free). ``None``: go on."""
    from styleeval.hub import DEFAULT_MODEL, ModelLoadError, check_downloadable, hub_id

    if not argv or argv[0] not in ("score", "autorate"):
        return None
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    early.add_argument("--model", "-m", default=None)
    for flag in ("--base-url", "--backend", "--help", "-h", "--version"):
        early.add_argument(flag, nargs="?", default=None, const=True)
    known, _ = early.parse_known_args(argv[1:])
    if known.base_url or known.backend or known.help or known.h or known.version:
        return None  # a server, another backend, or no work: the parser decides
    try:
        check_downloadable(hub_id(known.model) if known.model else DEFAULT_MODEL)
    except ModelLoadError as err:
        print(f"styleeval {argv[0]}: error: {err}", file=sys.stderr)
        return 2
    return None


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
