"""Small strict readers: every malformed value raises a CorpusError naming file, line and source URL."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path

from styleeval.corpora._files import CorpusError


class RowContext:
    """Where a value comes from (file, 1-based line, source URL), for error messages."""

    def __init__(self, file: Path, url: str, line: int | None = None):
        self.file = file
        self.url = url
        self.line = line

    def error(self, message: str) -> CorpusError:
        """A :class:`CorpusError` located at this file and line."""
        return CorpusError(message, file=self.file, url=self.url, line=self.line)

    def number(self, value: str | None, field: str, low: float, high: float) -> float:
        """``value`` as a finite float within ``[low, high]``."""
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise self.error(f"field {field!r}: {value!r} is not a number") from None
        if not math.isfinite(number) or not low <= number <= high:
            raise self.error(f"field {field!r}: {number} is outside the scale [{low}, {high}]")
        return number

    def text(self, row: dict[str, str | None], field: str, *, allow_empty: bool = False) -> str:
        """The string in ``row[field]``; an error if it is missing (or empty unless allowed)."""
        value = row.get(field)
        if value is None or (not allow_empty and not value.strip()):
            raise self.error(f"field {field!r} is missing or empty")
        return value


def read_csv(
    path: Path, url: str, required: set[str], *, delimiter: str = ","
) -> Iterator[tuple[RowContext, dict[str, str | None]]]:
    """Rows of a CSV/TSV file with a header, each with its :class:`RowContext` (line of the record's start).

    Raises :class:`CorpusError` if a required column is missing or a row has the wrong number of fields.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise CorpusError("empty file (no header)", file=path, url=url, line=1) from None
        missing = required - set(header)
        if missing:
            raise CorpusError(f"header lacks columns {sorted(missing)}", file=path, url=url, line=1)
        start = reader.line_num + 1
        for fields in reader:
            ctx = RowContext(path, url, start)
            start = reader.line_num + 1
            if not fields:
                continue
            if len(fields) != len(header):
                raise ctx.error(f"{len(fields)} fields, expected {len(header)} (as in the header)")
            yield ctx, dict(zip(header, fields, strict=True))


def read_lines(path: Path, url: str, expected: int, allow_empty: bool = True) -> list[str]:
    """The lines of a one-sentence-per-line file (a final newline is optional); exactly ``expected`` of them."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != expected:
        raise CorpusError(f"{len(lines)} lines, expected {expected}", file=path, url=url)
    if not allow_empty:
        for i, line in enumerate(lines):
            if not line.strip():
                raise RowContext(path, url, i + 1).error("empty line")
    return lines
