"""Input checks shared by every public entry point: errors name the argument and the row."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from styleeval.errors import UserError


def check_texts(name: str, values: Any, n: int | None = None, allow_empty: bool = True) -> list[str]:
    """Return ``values`` as a list of strings, or raise a ``ValueError`` naming ``name`` and the bad row.

    Any iterable of strings is accepted (a list, a tuple, a pandas Series, a NumPy array of ``str``...);
    ``n`` is the expected length (``None``: any). Empty strings are accepted unless ``allow_empty`` is false.
    """
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise UserError(f"{name} must be a list of strings, got {type(values).__name__}")
    values = list(values)
    if n is not None and len(values) != n:
        raise UserError(f"{name} has {len(values)} rows but {n} were expected (lengths must match)")
    for i, v in enumerate(values):
        if v is None:
            raise UserError(f"{name}[{i}] is None; every row needs a string")
        if not isinstance(v, str):
            raise UserError(f"{name}[{i}] is {type(v).__name__}, not str: {v!r:.60}")
        if not allow_empty and not v.strip():
            raise UserError(f"{name}[{i}] is empty")
    return values


def broadcast_texts(name: str, values: Any, n: int, allow_empty: bool = False) -> list[str]:
    """Like :func:`check_texts`, but a single string is repeated ``n`` times."""
    if isinstance(values, str):
        values = [values] * n
    return check_texts(name, values, n, allow_empty=allow_empty)
