"""Untrusted text (system names, metric labels, input texts, notes quoting them) in styleeval's outputs: one escaping
rule per kind of output, used by every writer of that kind.

- **Markdown** (``report.md`` of ``evaluate`` and ``metaeval``, ``leaderboard.md``, ``lai.md``): :func:`md_cell` for
  table cells, list items and headings (a ``|`` or a line break cannot add a column or a row, raw HTML is shown as
  text, not run), :func:`md_code` for a code span (signatures).
- **Terminal** (``evaluate``'s table on stdout, notes and errors on stderr): :func:`terminal_text` (an ANSI escape
  sequence or another control character is shown as its escape, ``\\x1b``, never sent to the terminal).
- **CSV** (``score`` / ``autorate`` / ``merge`` output, ``systems.csv``, ``pairs.csv``, ``correlations.csv``, the
  leaderboard's and Lai's CSVs, the Space's scored CSV): :func:`csv_text` (a text a spreadsheet would run as a
  formula gets a leading ``'``, OWASP's rule) and its inverse :func:`csv_untext` for files styleeval reads back;
  :func:`spreadsheet_safe` applies it to a table's text cells.

Nothing here changes JSON outputs (``rows.jsonl``, ``report.json``, JSONL records): JSON strings are data, written
and read back as given.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# -------------------------------------------------------------------------------------------------- Markdown

_MD_BREAKS = re.compile(r"[\r\n\x0b\x0c\x85\u2028\u2029]")
_MD_SPECIAL = {"\\": "\\\\", "|": "\\|", "`": "\\`", "&": "&amp;", "<": "&lt;"}
_MD_SPECIAL_RE = re.compile("|".join(map(re.escape, _MD_SPECIAL)))


def _controls_as_spaces(text: str) -> str:
    return "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)


def md_cell(text: object) -> str:
    """``text`` safe in one Markdown table cell, list item or heading, shown as written: line breaks and other
    control characters as spaces, ``|`` and ``\\`` and ````` backslash-escaped (a name such as ``A | 99 |`` cannot
    add a column, nor a newline a row), ``&`` and ``<`` as HTML entities (``<script>`` is text, not HTML: no tag,
    comment or autolink opens without ``<``). ``>`` stays as written (``informal->formal``), but for a leading one,
    backslash-escaped (a list item ``> x`` would be a blockquote); ``](`` as ``]\\(`` (no inline link: a system
    named ``[x](javascript:...)`` is text); other brackets as written (``60.2 [54.5, 65.2]``).

    >>> md_cell("formal->informal | <b>x</b>"), md_cell("> quoted"), md_cell("[x](javascript:alert(1))")
    ('formal->informal \\\\| &lt;b>x&lt;/b>', '\\\\> quoted', '[x]\\\\(javascript:alert(1))')
    """
    text = _controls_as_spaces(_MD_BREAKS.sub(" ", str(text)))
    text = _MD_SPECIAL_RE.sub(lambda m: _MD_SPECIAL[m.group()], text).replace("](", "]\\(")
    return re.sub(r"^(\s*)>", r"\1\\>", text)


def md_code(text: object) -> str:
    """``text`` as one inline code span, shown verbatim (a signature): fenced by more backticks than any run of
    backticks inside it, line breaks and control characters as spaces."""
    text = _controls_as_spaces(_MD_BREAKS.sub(" ", str(text)))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# -------------------------------------------------------------------------------------------------- terminal


def terminal_text(text: object, lines: bool = False) -> str:
    """``text`` safe to print to a terminal: every control character (ESC, which starts ANSI sequences that move the
    cursor, recolour or retitle the terminal; BEL; DEL; C1 controls), line and paragraph separator and format
    character (bidirectional overrides, zero-width characters) written as its Python escape (``\\x1b[31m`` shows
    as ``\\x1b[31m``). ``lines``: newlines and tabs are kept (messages); otherwise escaped too (a table cell)."""
    keep = "\n\t" if lines else ""
    return "".join(repr(c)[1:-1] if c not in keep and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
                   for c in str(text))


# -------------------------------------------------------------------------------------------------- CSV

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet runs as a formula when a cell starts with it (OWASP's CSV-injection list)."""
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_text(value: Any) -> Any:
    """A CSV cell safe to open in a spreadsheet: a text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return (and not a plain number such as ``-1.5``) gets a leading ``'``, as OWASP recommends; so does a text
    starting with ``'``, so that :func:`csv_untext` gives every text back exactly. Other values (numbers, None) as
    they are."""
    if isinstance(value, str) and (value.startswith("'") or (value.startswith(FORMULA_START)
                                                            and not _NUMBER.fullmatch(value))):
        return "'" + value
    return value


def csv_untext(text: str) -> str:
    """The text :func:`csv_text` was given (a cell read back from a CSV file styleeval wrote)."""
    return text[1:] if text.startswith("'") else text


def spreadsheet_safe(frame: Any) -> Any:
    """A copy of a pandas DataFrame with :func:`csv_text` applied to every text cell (numbers stay numbers)."""
    import pandas as pd  # noqa: PLC0415 - heavy (pandas)

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = [csv_text(v) for v in out[column]]
    return out
