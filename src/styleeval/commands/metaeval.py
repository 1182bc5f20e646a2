"""`styleeval metaeval` (placeholder: being written)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the `metaeval` sub-command."""
    p = subparsers.add_parser("metaeval", help="(not yet implemented)")
    p.set_defaults(func=lambda args: (_ for _ in ()).throw(NotImplementedError("metaeval")))
