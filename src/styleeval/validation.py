"""Input checks shared by every public entry point: errors name the argument and the row.

Missing and empty rewrites follow one rule, whatever the interface (a CSV or JSONL file, ``evaluate``'s rows or
DataFrame, ``LogProb.score`` / ``Autorater.score`` / a metric's ``compute``): a *missing* rewrite (``None``, JSON's
``null``, a float NaN such as pandas' missing value, ``pd.NA``) is refused with an error naming the row
(:func:`text_value`); an *empty* one (``""``, an empty CSV cell) is a rewrite, scored as given, and said in a
:class:`EmptyRewritesWarning` (:func:`warn_empty_rewrites`) with the count and the first rows. The text ``"NaN"`` is
text: styleeval's CSV reader keeps it, as it keeps an empty cell as ``""`` (pandas' ``read_csv`` makes both NaN
unless ``keep_default_na=False``).
"""

from __future__ import annotations

import functools
import math
import numbers
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from styleeval.errors import RowsWarning, UserError, current_interface

PANDAS_HINT = ("pandas' read_csv makes an empty cell and the text NaN a NaN: read with "
               "pd.read_csv(..., keep_default_na=False)")
"""How a NaN rewrite usually comes about, and the fix."""


class EmptyRewritesWarning(RowsWarning):
    """Some rewrites are empty texts: scored as given (:func:`warn_empty_rewrites`)."""


_QUIET: ContextVar[bool] = ContextVar("styleeval_empty_rewrites_told", default=False)


def is_missing(value: Any) -> bool:
    """Whether ``value`` is a missing value rather than a text: ``None``, a NaN number (pandas' and numpy's missing
    value, JSON's NaN) or ``pd.NA``."""
    if value is None or type(value).__name__ == "NAType":
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(value)


def missing_text_error(where: str, value: Any) -> UserError:
    """The refusal of a missing text at ``where`` (``"a.jsonl, line 3: 'rewrite'"``, ``"rewrites[3]"``): what it
    is and the fix."""
    what = "None (missing)" if value is None else f"{value!r} (missing)"
    hint = f"; {PANDAS_HINT}" if value is not None else ""
    return UserError(f'{where} is {what}; give every row its text (a rewrite that is really empty is "": scored, '
                     f"with a warning){hint}")


def lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds a lone surrogate (half of a UTF-16 pair, U+D800 to U+DFFF: what Python's
    ``surrogateescape`` makes of bytes that are not UTF-8), which is no text a tokenizer or UTF-8 takes; ``None``
    where it holds none."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return err.start
    return None


def surrogate_error(where: str, text: str, at: int) -> UserError:
    """The refusal of a text holding a lone surrogate at character ``at`` (:func:`lone_surrogate`), naming ``where``
    (``"rewrites[3]"``, ``"in.csv, row 1 (line 2): 'source'"``)."""
    return UserError(f"{where} holds a lone surrogate (U+{ord(text[at]):04X} at character {at}), which is not text "
                     "and cannot be written as UTF-8")


def text_value(value: Any, where: str) -> str:
    """One input text by the rule of this module: a string as it is (empty included), a missing value refused
    (:func:`missing_text_error`), a lone surrogate refused (:func:`surrogate_error`: no tokenizer takes it), anything
    else refused naming its type."""
    if is_missing(value):
        raise missing_text_error(where, value)
    if not isinstance(value, str):
        raise UserError(f"{where} is {type(value).__name__}, not str: {value!r:.60}; give every row its text as a str")
    at = lone_surrogate(value)
    if at is not None:
        raise surrogate_error(where, value, at)
    return value


def check_texts(name: str, values: Any, n: int | None = None, allow_empty: bool = True) -> list[str]:
    """Return ``values`` as a list of strings, or raise a ``ValueError`` naming ``name`` and the bad row.

    Any iterable of strings is accepted (a list, a tuple, a pandas Series, a NumPy array of ``str``...);
    ``n`` is the expected length (``None``: any). A missing value (None, NaN) is refused (:func:`text_value`); empty
    strings are accepted unless ``allow_empty`` is false.
    """
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise UserError(f"{name} must be a list of strings, got {type(values).__name__}")
    values = list(values)
    if n is not None and len(values) != n:
        raise UserError(f"{name} has {len(values)} rows but {n} were expected (lengths must match)")
    for i, v in enumerate(values):
        text_value(v, f"{name}[{i}]")
        if not allow_empty and not v.strip():
            raise UserError(f"{name}[{i}] is empty")
    return values


def check_rewrites(values: Any, n: int | None = None, stacklevel: int = 2) -> list[str]:
    """``rewrites`` checked (:func:`check_texts`: a missing one refused) and the empty ones warned about
    (:func:`warn_empty_rewrites`, rows numbered as given)."""
    rewrites = check_texts("rewrites", values, n)
    warn_empty_rewrites(rewrites, stacklevel=stacklevel + 1)
    return rewrites


def check_rows(sources: Any, rewrites: Any, styles: Any, stacklevel: int = 2) -> tuple[list[str], list[str],
                                                                                     list[str]]:
    """A scorer's rows checked (what :meth:`LogProb.score <styleeval.LogProb.score>` and :meth:`Autorater.rate
    <styleeval.Autorater.rate>` take): :func:`check_texts` of ``sources``, :func:`check_rewrites` and
    :func:`check_styles` (one string: every row's) of as many rows; warnings point at the caller's caller.

    >>> check_rows(["a"], ["b"], "formal")
    (['a'], ['b'], ['formal'])
    """
    sources = check_texts("sources", sources)
    n = len(sources)
    return sources, check_rewrites(rewrites, n, stacklevel + 1), check_styles(styles, n, stacklevel + 1)


def empty_rows(rewrites: Sequence[str]) -> list[int]:
    """The positions of the empty rewrites (nothing but white space)."""
    return [i for i, text in enumerate(rewrites) if not text.strip()]


def empty_rewrites_warning(rows: Sequence[int], total: int, where: Sequence[str] = ()) -> EmptyRewritesWarning:
    """The warning for the empty rewrites at ``rows`` (of ``total``); ``where``: the first rows as the input names
    them (``"a.csv, line 3"``), shown instead of the numbers."""
    one = len(rows) == 1
    shown = "; ".join(where[:3]).replace("{", "{{").replace("}", "}}") + ("; ..." if len(where) > 3 else "")
    return EmptyRewritesWarning(
        f"{{count}} of {total} rewrites {'is' if one else 'are'} empty ({shown or 'row' + ('' if one else 's') + ' {rows}'}"
        f"): scored as given, an empty text (LogProb scores only the end-of-turn token, BLEU and chrF give 0); give "
        f"the text where it was lost, or leave it where the system really wrote nothing", rows)


def warn_empty_rewrites(rewrites: Sequence[str], where: Sequence[str] = (), stacklevel: int = 2) -> list[int]:
    """Warn (:class:`EmptyRewritesWarning`) when some ``rewrites`` are empty, unless an outer caller already has
    (:func:`empty_rewrites_told`); returns their positions. ``where``: every row's name in the input."""
    rows = empty_rows(rewrites)
    if rows and not _QUIET.get():
        named = [where[i] for i in rows] if where else []
        warnings.warn(empty_rewrites_warning(rows, len(rewrites), named), stacklevel=stacklevel + 1)
    return rows


@contextmanager
def empty_rewrites_told() -> Iterator[None]:
    """Within it, :func:`warn_empty_rewrites` is silent: its caller has said it for the rows as the user gave them
    (``evaluate``'s input rows), and a scorer called on them in another order must not say it again."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def broadcast_texts(name: str, values: Any, n: int, allow_empty: bool = False) -> list[str]:
    """Like :func:`check_texts`, but a single string is repeated ``n`` times."""
    if isinstance(values, str):
        values = [values] * n
    return check_texts(name, values, n, allow_empty=allow_empty)


KNOWN_STYLES = ("polite", "formal", "informal", "positive", "negative", "detoxified", "catchy", "persuasive", "simple",
                "appropriate", "simplified", "appropriated", "understandable for layman", "addressed to an expert",
                "layman", "expert", "simplicity")
"""The target styles of the paper's six tasks (its test set: polite, formal, positive/negative, detoxified, catchy,
persuasive) and of the corpora (Lai: formal/informal, Mir: positive/negative, ASSET: simple, Ziegenbein:
appropriate), with the words of the authors' scripts (:func:`styleeval.metaeval.data.authors_style_words`). A test
checks that every corpus's ``target_style`` is here."""


class StyleSpellingWarning(UserWarning):
    """A target style that is not a known style (:data:`KNOWN_STYLES`) but close to one (``polyte``, ``Polite.``): the
    style is free text put as written into the instruction, so another spelling gives other numbers. Said once per
    process and style (:func:`check_styles`)."""


_STYLES_TOLD: set[str] = set()
_STYLES_LOCK = threading.Lock()


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _plain(style: str) -> str:
    """``style`` in lower case, spaces collapsed, punctuation and quotes around it dropped."""
    return " ".join(style.split()).strip(" .,;:!?'\"").lower()


@functools.lru_cache(maxsize=4096)  # asked for every chunk of a file
def closest_known_style(style: str) -> str | None:
    """The known style that ``style`` is likely a misspelling of, or ``None`` (a known style, or free text not close
    to one): the same words in other case, spaces or punctuation, or within one edit (two for a style of more than
    six letters), a comparative (``simpler``) excepted.

    >>> closest_known_style("polyte"), closest_known_style("Polite."), closest_known_style("polite")
    ('polite', 'polite', None)
    >>> [closest_known_style(s) for s in ("impolite", "simpler", "more formal", "like a pirate")]
    [None, None, None, None]
    """
    if style in KNOWN_STYLES:
        return None
    plain = _plain(style)
    if plain in KNOWN_STYLES:
        return plain
    close = [(d, known) for known in KNOWN_STYLES if abs(len(plain) - len(known)) <= 2  # else more edits: free text
             and plain not in (known + "r", known + "er")  # a comparative (simpler, politer) is meant
             and (d := _distance(plain, known)) <= (1 if len(known) <= 6 else 2)]
    return min(close)[1] if close else None


def _silencing(style: str) -> str:
    """How to silence the warning for a deliberate style, as the current interface takes it."""
    interface = current_interface()
    if interface == "space":
        return ""
    if interface == "python":
        return ('; if it is meant, silence this with warnings.filterwarnings("ignore", '
                "category=styleeval.validation.StyleSpellingWarning)")
    prefix = f"unknown style {style!r}" if not set(style) & set(":,'\"\n") else "unknown style"
    return f'; if it is meant, silence this with PYTHONWARNINGS="ignore:{prefix}"'


def check_styles(values: Any, n: int, stacklevel: int = 2) -> list[str]:
    """:func:`broadcast_texts` of ``styles`` (no empty style), and a :class:`StyleSpellingWarning` for each style that
    is likely a misspelling of a known one (:func:`closest_known_style`), once per process and style."""
    styles = broadcast_texts("styles", values, n, allow_empty=False)
    for style in dict.fromkeys(styles):
        known = closest_known_style(style)
        if known is None:
            continue
        with _STYLES_LOCK:
            if style in _STYLES_TOLD:
                continue
            _STYLES_TOLD.add(style)
        how = f" ({style!r} differs from it in case, spaces or punctuation)" if _plain(style) == known else ""
        warnings.warn(StyleSpellingWarning(
            f"unknown style {style!r}: did you mean {known!r}?{how} The style is free text, put as written into the "
            f"instructions (LogProb's \"Rewrite the following sentence to be {style}: ...\"), so another spelling "
            f"gives other numbers{_silencing(style)} (said once per style)"), stacklevel=stacklevel + 1)
    return styles
