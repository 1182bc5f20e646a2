"""`styleeval score` (placeholder: being written)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the `score` sub-command."""
    p = subparsers.add_parser("score", help="(not yet implemented)")
    p.set_defaults(func=lambda args: (_ for _ in ()).throw(NotImplementedError("score")))
