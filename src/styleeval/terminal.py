"""Tables for a terminal, as sacrebleu's ``-f text`` prints them (aligned columns, one line per row), fitted to the
terminal's width: the columns that do not fit go into further tables stacked below, each repeating the key column.

>>> print("\\n".join(text_table(["system", "BLEU", "chrF"], [["A", "30.1", "55.2"], ["B", "28.4", "54.0"]], width=17)))
system  BLEU
------  ----
A       30.1
B       28.4
<BLANKLINE>
system  chrF
------  ----
A       55.2
B       54.0
"""

from __future__ import annotations

import math
import shutil
import textwrap
from collections.abc import Sequence

from styleeval.escaping import terminal_text

DEFAULT_WIDTH = 100
"""The width tables are fitted to when stdout is not a terminal (a file, a pipe) and ``$COLUMNS`` is not set."""

GAP = "  "
"""What separates two columns."""


def terminal_width(default: int = DEFAULT_WIDTH) -> int:
    """The width of stdout's terminal: ``$COLUMNS`` where set, else the terminal's, else ``default`` (stdout is a
    file or a pipe)."""
    return shutil.get_terminal_size((default, 24)).columns


def _clean(cell: object) -> str:
    """A cell on one line: runs of white space (line breaks included) as one space, control characters as escapes."""
    return terminal_text(" ".join(str(cell).split()))


def table_blocks(header: Sequence[object], rows: Sequence[Sequence[object]], width: int | None = None,
                 key: int = 1) -> list[list[str]]:
    """``header`` and ``rows`` as aligned tables no wider than ``width`` (default: :func:`terminal_width`): the first
    ``key`` columns (at least one) in every table, the others in order, as few tables as fit and as even as that allows. Every cell
    stays on one line and whole (a single column wider than ``width`` makes its table wider). Returns each table's
    lines: header, a rule of dashes, the rows."""
    width = terminal_width() if width is None else width
    header, *rows = [[_clean(c) for c in r] for r in [header, *rows]]
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    key = max(1, min(key, len(header)))
    keys, rest = list(range(key)), list(range(key, len(header)))
    base = sum(widths[k] for k in keys) + len(GAP) * (key - 1)

    def split(most: int) -> list[list[int]]:
        """Columns into tables in order, a table taking the next column while it fits and has fewer than ``most``."""
        groups: list[list[int]] = []
        used = 0
        for k in rest:
            if groups and len(groups[-1]) < most and used + len(GAP) + widths[k] <= width:
                groups[-1].append(k)
            else:
                groups.append([k])
                used = base
            used += len(GAP) + widths[k]
        return groups

    groups = split(len(rest)) if rest else [[]]
    if len(groups) > 1:  # as even as the same number of tables allows
        even = split(math.ceil(len(rest) / len(groups)))
        groups = even if len(even) == len(groups) else groups
    blocks = []
    for group in groups:
        columns = keys + group
        lines = [GAP.join(r[k].ljust(widths[k]) for k in columns).rstrip() for r in [header, *rows]]
        blocks.append([lines[0], GAP.join("-" * widths[k] for k in columns), *lines[1:]])
    return blocks


def text_table(header: Sequence[object], rows: Sequence[Sequence[object]], width: int | None = None,
               key: int = 1) -> list[str]:
    """The lines of :func:`table_blocks`, its tables separated by an empty line."""
    lines: list[str] = []
    for block in table_blocks(header, rows, width, key):
        lines += ([""] if lines else []) + block
    return lines


def wrap_text(text: str, width: int | None = None) -> list[str]:
    """Prose (a title, a warning) on lines no wider than ``width`` (default: :func:`terminal_width`), control
    characters as escapes."""
    width = terminal_width() if width is None else width
    return textwrap.wrap(terminal_text(text), width, break_on_hyphens=False) or [""]
