"""Signature strings that make every score reproducible (in the manner of sacrebleu's)."""

from __future__ import annotations

from collections.abc import Mapping


def format_signature(name: str, fields: Mapping[str, object]) -> str:
    """``name|key:value|key:value...``; booleans are written ``yes``/``no``."""
    parts = [name]
    for key, value in fields.items():
        if isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key}:{value}")
    return "|".join(parts)


def parse_signature(signature: str) -> tuple[str, dict[str, str]]:
    """Inverse of :func:`format_signature` (values come back as strings)."""
    name, *rest = signature.split("|")
    return name, dict(part.split(":", 1) for part in rest)
