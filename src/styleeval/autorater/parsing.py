"""Reading 1-5 ratings out of a judge's free-text reply (paper mode).

Two parsers, each ``reply -> (meaning, style)`` with ``None`` for a rating that could not be read:

``robust`` (default)
    The *last* JSON-like object ``{...}`` in the reply whose ``meaning`` and ``style`` keys (double, single or no
    quotes) both hold an integer 1..5 (``4`` or ``"4"``; ``4.0`` counts as 4, ``4.5`` or ``6`` does not).
    Code fences and prose around the object are ignored. An object cut off by the token limit still counts when
    both values are complete (followed by a comma, a line break or ``}``). Words copied from the prompt (which
    itself says 'meaning', 'style' and "1-5") never count: only an object with a number after each key does.
    Both ratings come from the same object, or neither does.

``authors``
    The authors' rule (their ``run_llamaprompt*`` scripts), for reproducing their compliance figures: each
    dimension separately, a reply counts only if it contains the key in double quotes (``"meaning"``); the value
    is the text after the first ``"meaning":`` up to the next ``}``, with double quotes removed, up to the next
    comma, read as a float with no range check. Where their script's ``eval`` check would reject the text
    (``nan``, ``inf``, digits other than ASCII such as ``٤`` or ``４``, anything that is not a number) the rating
    is not read.

Any string parses or comes back unparsed (``(None, None)``); no reply raises.

Mukherjee et al.'s prompts ask for one rating per reply: :func:`parse_number` reads it (the first number of the
reply, once the scale the prompt names is taken out of it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from styleeval.errors import UserError

Ratings = tuple[float | None, float | None]

_OBJECT = re.compile(r"\{[^{}]*\}|\{[^{}]*$")
_PAIR = re.compile(
    r"""(?P<q>["']?)\b(?P<key>meaning|style)\b(?P=q)\s*:\s*(?P<v>["']?)(?P<num>[0-9]+(?:\.[0-9]+)?)(?P=v)"""
    r"""[ \t]*(?P<end>[,}\n]|$)""",
    re.IGNORECASE,
)


def _rating(text: str) -> int | None:
    value = float(text)  # '1' * 400 is inf: never a rating, never an OverflowError
    if not math.isfinite(value) or value != int(value) or not 1 <= value <= 5:
        return None
    return int(value)


def parse_robust(reply: str) -> Ratings:
    """Ratings from the last JSON-like object with integer ``meaning`` and ``style`` in 1..5 (see module doc)."""
    if not isinstance(reply, str):
        return None, None
    for match in reversed(list(_OBJECT.finditer(reply))):
        body = match.group(0)
        closed = body.endswith("}")
        found: dict[str, set[int | None]] = {}
        for pair in _PAIR.finditer(body):
            if not closed and pair.group("end") == "":  # a value cut off by the token limit
                continue
            found.setdefault(pair.group("key").lower(), set()).add(_rating(pair.group("num")))
        meaning, style = found.get("meaning", set()), found.get("style", set())
        if len(meaning) == 1 and len(style) == 1:  # one unambiguous value per key
            m, s = next(iter(meaning)), next(iter(style))
            if m is not None and s is not None:
                return float(m), float(s)
    return None, None


def _authors_value(reply: str, key: str) -> float | None:
    if f'"{key}"' not in reply:
        return None
    parts = reply.split(f'"{key}":')
    if len(parts) < 2:  # e.g. '"meaning" : 4': their split would fail; not compliant
        return None
    text = parts[1].split("}")[0].replace('"', "").split(",")[0]
    if not text.isascii():  # '٤' or '４' would pass float() but not their eval(): Python literals are ASCII
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or text.strip().lower() in ("nan", "inf", "infinity"):
        return None
    return value


def parse_authors(reply: str) -> Ratings:
    """The authors' per-dimension rule (see module doc): no range check, each dimension on its own."""
    if not isinstance(reply, str):
        return None, None
    return _authors_value(reply, "meaning"), _authors_value(reply, "style")


_SCALE = re.compile(r"\b(?:1\s*(?:to|-|–)\s*5|0\s*or\s*1)\b", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
NUMBER_PARSER = "number"
"""The parser name a one-rating prompt's signature records."""


def parse_number(reply: str, ratings: tuple[str, ...] = ("1", "2", "3", "4", "5")) -> float | None:
    """The rating of a reply that should be one number (Mukherjee et al.'s prompts): the first number in the reply,
    after the scale the prompt names ("1 to 5", "1-5", "0 or 1") is taken out of it, if it is one of ``ratings``
    (``4`` and ``4.0`` are 4; ``4.5``, ``6`` or no number: ``None``).

    >>> [parse_number(r) for r in ("4", " 5\\n\\nThe sentiment is now positive.", "On a scale of 1 to 5, I rate it 3.",
    ...                            "Rating: 4/5", "4.5", "none", "7")]
    [4.0, 5.0, 3.0, 4.0, None, None, None]
    >>> parse_number("1 (transferred)", ("0", "1")), parse_number("(0 or 1) = 0", ("0", "1"))
    (1.0, 0.0)
    """
    if not isinstance(reply, str):
        return None
    match = _NUMBER.search(_SCALE.sub(" ", reply))
    if match is None:
        return None
    value = float(match.group(0))
    if not math.isfinite(value) or value != int(value) or str(int(value)) not in ratings:
        return None
    return value


PARSERS: dict[str, Callable[[str], Ratings]] = {"robust": parse_robust, "authors": parse_authors}


def get_parser(name: str) -> Callable[[str], Ratings]:
    """The parser called ``name`` (``robust`` or ``authors``)."""
    if name not in PARSERS:
        raise UserError(f"parser: unknown parser {name!r}; choose one of {', '.join(PARSERS)}")
    return PARSERS[name]
