"""Reading and writing styleeval's record files: CSV / JSONL input rows and output records, validated.

Input files have one row per rewrite with the columns ``source``, ``rewrite`` and ``style`` (``style`` may
instead be given once for every row); other columns are carried through to the output. Output files hold one record
per input row::

    row, <extra input columns>, source, rewrite, style, <scores>, <extras>, signature

``row`` is the 0-based index of the row in the input file (blank lines are not counted). Numeric scores are written
empty (CSV) / null (JSONL) when NaN; so is a non-finite number in a carried-through column. CSV fields may be of any
length (the csv module's 131,072-character limit is lifted for reading). In CSV output a text that a spreadsheet
would run as a formula (``=HYPERLINK(...)``, ``@SUM(...)``), a cell or a column's name in the header, is written with
a leading ``'`` (:func:`styleeval.escaping.csv_text`), which :func:`iter_scores` / :func:`read_scores` remove: every
text and name reads back as given.
"""

from __future__ import annotations

import atexit
import codecs
import csv
import io
import itertools
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any, Literal, NamedTuple

from styleeval.errors import UserError
from styleeval.escaping import csv_text, csv_untext
from styleeval.llm_scorer import LLMScorer
from styleeval.options import AUTORATER, LLM_SCORERS, LOGPROB
from styleeval.validation import is_missing, lone_surrogate, missing_text_error, surrogate_error

# a field of any length reads back (the csv module's default limit is 131,072 characters)
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

INPUT_COLUMNS: tuple[str, ...] = ("source", "rewrite", "style")
"""Columns of an input file (``style`` may be given once instead)."""

OUTPUT_FIELDS: tuple[str, ...] = ("row", "source", "rewrite", "style", "content", "style_strength", "signature")
"""Fields of every ``styleeval score`` output record, in order."""


@dataclass(frozen=True)
class RecordKind:
    """The fields of one kind of output file: numeric ``scores`` (NaN written as empty / null) and ``extras``
    (strings, booleans or lists, written as JSON text in CSV) between the input columns and the signature."""

    name: str
    scores: tuple[str, ...]
    extras: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    """The extras that hold text (the others: booleans or lists)."""

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field of a record, in order."""
        return ("row", "source", "rewrite", "style", *self.scores, *self.extras, "signature")

    @classmethod
    def of(cls, scorer: LLMScorer) -> RecordKind:
        """The records of an LLM scorer's command: its dimensions' fields, then its extras.

        >>> RecordKind.of(LOGPROB)
        RecordKind(name='score', scores=('content', 'style_strength'), extras=(), texts=())
        """
        return cls(scorer.command.name, tuple(str(d.field) for d in scorer.fields), scorer.extras, scorer.texts)


LOGPROB_RECORDS = RecordKind.of(LOGPROB)
"""``styleeval score`` records (:data:`OUTPUT_FIELDS`)."""

AUTORATER_RECORDS = RecordKind.of(AUTORATER)
"""``styleeval autorate`` records: the two ratings (null where paper mode could not read one), ``parsed``, the
judge's ``reply`` (paper mode) or the rating distributions (expected mode)."""

Format = Literal["csv", "jsonl"]

RECORD_KINDS: tuple[RecordKind, ...] = tuple(RecordKind.of(scorer) for scorer in LLM_SCORERS)
"""The records of every built-in LLM scorer's command, in :data:`~styleeval.options.LLM_SCORERS`' order.

>>> [kind.name for kind in RECORD_KINDS]
['score', 'autorate']
"""

RESERVED_FIELDS = frozenset({*OUTPUT_FIELDS, *(name for kind in RECORD_KINDS for name in kind.fields)})
"""Output field names that an extra input column may not use."""


def kind_of(keys: Iterable[str]) -> RecordKind:
    """The kind of record whose scores a file's first record (or CSV header) ``keys`` holds: the first of
    :data:`RECORD_KINDS` with the most of its score fields there (so that a record missing one field is read as its
    kind, whose reader names what is missing), ``score`` records where none is there.

    >>> kind_of(["row", "source", "rewrite", "style", "meaning", "style_rating", "parsed"]).name
    'autorate'
    >>> kind_of(["row", "source", "rewrite", "style", "meaning", "parsed"]).name
    'autorate'
    >>> kind_of(["row", "source"]).name
    'score'
    """
    present = set(keys)
    return max(RECORD_KINDS, key=lambda kind: len(present.intersection(kind.scores)))


class Position(NamedTuple):
    """A place in a record file where a record starts: its byte ``offset``, its ``line`` (1-based) and ``record``,
    how many records come before it (the header and blank lines not counted). A :class:`RecordReader` can start
    there (what a resumed run does instead of reading every finished row again)."""

    offset: int
    line: int
    record: int


@dataclass(frozen=True)
class InputRow:
    """One validated input row; ``row`` is its 0-based index in the file, ``where`` locates it for messages."""

    row: int
    source: str
    rewrite: str
    style: str
    where: str
    extra: dict[str, Any] = field(default_factory=dict)  # the input's other columns, carried through to the output
    end: Position | None = None  # where the next row starts in the file (None: unknown, e.g. a UTF-16 file)
    end_digest: Any = field(default=None, compare=False, repr=False)  # the hash of the file's bytes before ``end``



def file_format(path: str | os.PathLike[str]) -> Format:
    """``"csv"`` for ``*.csv``, ``"jsonl"`` for ``*.jsonl`` / ``*.ndjson`` (one JSON object per line)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise UserError(f"{path}: unknown file type {suffix or '(none)'!r}; use .csv or .jsonl")


# ----------------------------------------------------------------------------------------------- reading

STDIN = "-"
"""The input path that reads standard input (CSV or JSONL, told apart by the first character)."""


def _decode_error(path: Path, raw: Any, encoding: str, err: UnicodeError) -> UserError:
    """Name the line of ``path`` that is not valid ``encoding``, and what to do. ``raw``: the file open for reading
    bytes, read again from its start line by line (memory independent of the file's size)."""
    raw.seek(0)
    line = 1
    lines = (part for chunk in raw for part in chunk.splitlines(keepends=True))  # as bytes.splitlines numbers them
    for number, data in enumerate(lines, start=1):
        try:
            data.decode(encoding)
        except UnicodeError:  # UTF-16/32 without a byte order mark raise a plain UnicodeError
            line = number
            break
    reason = getattr(err, "reason", None) or str(err)
    return UserError(f"{path}, line {line}: not valid {encoding} ({reason}); save the file as UTF-8 or pass "
                     f"the file's encoding (--encoding latin-1, encoding='latin-1')")


def _stdin_copy() -> Path:
    """Standard input copied to a temporary file (removed at exit), so that a reader can read it more than once (a
    resume check, then the scoring) in bounded memory."""
    fd, name = tempfile.mkstemp(prefix="styleeval-stdin-")
    with os.fdopen(fd, "wb") as f:
        shutil.copyfileobj(sys.stdin.buffer, f)
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    return Path(name)


def _open_raw(path: Path | str, encoding: str) -> tuple[Any, Path]:
    """``path`` open for reading bytes (``-``: standard input, through :func:`_stdin_copy`), and the name to use in
    messages; a folder, a missing file and an unknown encoding are refused here."""
    if str(path) == STDIN:
        where, raw = Path("<stdin>"), open(_stdin_copy(), "rb")
    else:
        where = Path(path)
        if where.is_dir():
            raise UserError(f"{where}: is a directory, not an input file")
        if not where.is_file():
            raise FileNotFoundError(f"{where}: no such file")
        raw = open(where, "rb")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raw.close()
        raise UserError(f"unknown encoding {encoding!r}") from None
    return raw, where


def _lines(text: Any, where: Path, encoding: str) -> Iterator[str]:
    """The lines of an open text file, a UTF-8 byte order mark dropped; bytes that are not valid ``encoding`` raise
    ``UserError`` naming the line."""
    try:
        first = True
        for line in text:
            yield line.removeprefix("\ufeff") if first else line
            first = False
    except UnicodeError as err:  # UnicodeDecodeError, or UTF-16/32's missing byte order mark
        raise _decode_error(where, text.buffer, encoding, err) from None


def _splits_on_bytes(encoding: str) -> bool:
    """Whether lines of ``encoding`` text end at the bytes of ``\\n`` and ``\\r`` and nowhere else (UTF-8, Latin-1,
    the Windows code pages, Shift-JIS...; not UTF-16 or UTF-32): then a file is read as bytes split into lines, and
    every record's byte offset is known."""
    try:
        return "\r\n,\"{}".encode(encoding) == b'\r\n,"{}'
    except (LookupError, UnicodeError):
        return False


class _Cursor:
    """How far a byte-line reader has come: bytes and lines handed out, and (``digest``, a hashlib object, when
    given) the hash of those bytes."""

    __slots__ = ("offset", "lines", "digest")

    def __init__(self, offset: int, digest: Any = None) -> None:
        self.offset, self.lines, self.digest = offset, 0, digest


_BARE_CR = re.compile(rb"(?<=\r)(?!\n)")


def _byte_lines(raw: Any, where: Path, encoding: str, csv_lines: bool, cursor: _Cursor,
                at_start: bool) -> Iterator[str]:
    """The lines of a binary file from its current position, decoded, exactly as a text file opened with
    ``newline=""`` (CSV: lines end at ``\\r\\n``, ``\\r`` or ``\\n``) or ``newline="\\n"`` (JSONL) gives them, a UTF-8
    byte order mark dropped at the file's start; ``cursor`` counts the bytes and lines handed out."""
    info = codecs.lookup(encoding)
    if info.name.startswith("iso2022"):  # escape sequences: a state that lasts across lines
        decode = codecs.getincrementaldecoder(encoding)().decode
    else:
        def decode(data: bytes, name: str = info.name) -> str:
            return data.decode(name)
    first = at_start
    try:
        for chunk in raw:  # split at b"\n"; a b"\r" before it stays with it
            split = csv_lines and chunk.count(b"\r") > chunk.endswith(b"\r\n")  # a bare CR ends a line too
            for line in (part for part in _BARE_CR.split(chunk) if part) if split else (chunk,):
                cursor.offset += len(line)
                cursor.lines += 1
                if cursor.digest is not None:
                    cursor.digest.update(line)
                if first:
                    first = False
                    yield decode(line).removeprefix("\ufeff")
                else:
                    yield decode(line)
    except UnicodeError as err:  # UnicodeDecodeError, or UTF-16/32's missing byte order mark
        raise _decode_error(where, raw, encoding, err) from None


def _iter_csv(lines: Iterator[str], path: Path, strict: bool = True, first_line: int = 1,
              header: list[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.reader(lines)
    try:
        line = first_line
        if header is not None:  # read from the file's start by the caller (a reader that starts mid-file)
            yield "header", {name: name for name in header}
        for fields in reader:
            if header is None:
                header = fields
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise UserError(f"{path}, line {line}: the header names column(s) "
                                    f"{', '.join(map(repr, dupes))} more than once")
                yield "header", {name: name for name in header}
            elif fields:  # blank lines are skipped
                if not strict and len(fields) < len(header):  # an output row cut short: missing fields are None
                    fields = fields + [None] * (len(header) - len(fields))  # type: ignore[list-item]
                if len(fields) != len(header):
                    raise UserError(
                        f"{path}, line {line}: {len(fields)} fields but the header has {len(header)} columns "
                        "(quote fields that contain commas: \"Hello, world\")"
                    )
                yield f"line {line}", dict(zip(header, fields, strict=True))
            line = first_line + reader.line_num
    except csv.Error as err:
        raise UserError(f"{path}, line {reader.line_num}: not valid CSV ({err})") from None


MAX_NESTING = 100
"""The most levels of arrays and objects inside one another a JSONL record may have (the record itself is one): what
is read can always be written and compared again (Python's json module recurses, and gives up near 1,000 levels,
sooner deeper in a program's stack)."""


def _nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` has more than ``limit`` levels of lists and dicts inside one another (read without
    recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


def _json_line(line: str, where: str) -> Any:
    """One JSONL line as a value; a line Python's json module cannot read (bad syntax, too deep, an integer longer
    than Python reads) is a ``UserError`` naming ``where`` and the fix."""
    too_deep = (f"{where}: nested more than {MAX_NESTING} levels deep (arrays or objects inside one another); "
                "flatten the value, or write it as a string")
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        raise UserError(f"{where}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise UserError(too_deep) from None
    except ValueError as err:  # an integer longer than Python's limit on digits
        digits = re.search(r"has (\d+) digits", str(err))
        if digits is None:
            raise UserError(f"{where}: not readable as JSON ({err})") from None
        raise UserError(f"{where}: a number of {digits.group(1)} digits, more than Python reads "
                        f"({sys.get_int_max_str_digits()}); write it as a string (in quotes)") from None
    if line.count("[") + line.count("{") > MAX_NESTING and _nesting_exceeds(value, MAX_NESTING):
        raise UserError(too_deep)
    return value


def _iter_jsonl(lines: Iterator[str], path: Path, strict: bool = True,
                first_line: int = 1) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        record = _json_line(line, f"{path}, line {number}")
        if not isinstance(record, dict):
            raise UserError(f"{path}, line {number}: expected a JSON object, got {type(record).__name__}")
        yield f"line {number}", record


class RecordReader:
    """The records of a CSV or JSONL file, read lazily (memory independent of the file's size): iterate for
    ``(location, record)`` pairs as :func:`iter_records` describes; :attr:`fraction_read` is how far into the file
    reading has come (for progress estimates), ``None`` where unknown.

    :attr:`position` is where the record after the last one yielded starts (``None`` for an encoding whose lines do
    not end at single bytes, e.g. UTF-16); ``start=`` such a :class:`Position` reads on from there (a CSV file's
    header is read from its first line) with the same line numbers and record count. ``digest=`` a hashlib object
    holding the hash of the file's bytes before ``start`` (a fresh one without ``start``): each iteration hashes on
    from a copy of it every byte it reads, and :attr:`position_digest` is the hash of the bytes before
    :attr:`position`, exactly the bytes the records up to there were parsed from (``None`` without ``digest``)."""

    def __init__(self, path: str | os.PathLike[str], fmt: Format | None = None, encoding: str = "utf-8",
                 strict: bool = True, start: Position | None = None, digest: Any = None) -> None:
        self.path, self.fmt, self.encoding, self.strict, self.start = path, fmt, encoding, strict, start
        self.digest = digest
        self.position: Position | None = None
        self.position_digest: Any = None
        self._raw: Any = None
        self._size = 0
        self._stdin: Path | None = None
        if start is not None and (str(path) == STDIN or not _splits_on_bytes(encoding)):
            raise UserError(f"{path}: reading from a byte offset needs a file in an encoding whose lines end at single "
                            f"bytes (not standard input, not {encoding})")

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        # JSONL lines end at "\n" only (a CR is whitespace to JSON); CSV reads every line end (RFC 4180 quoting)
        jsonl = self.fmt == "jsonl" or (self.fmt is None and str(self.path) != STDIN and
                                        file_format(self.path) == "jsonl")
        if str(self.path) == STDIN and self._stdin is None:  # read once; every iteration reads the copy
            self._stdin = _stdin_copy()
        raw, where = _open_raw(self._stdin if self._stdin is not None else self.path, self.encoding)
        if self._stdin is not None:
            where = Path("<stdin>")
        with raw:
            self._raw = raw
            self._size = os.fstat(raw.fileno()).st_size
            fmt = self.fmt or (None if str(self.path) == STDIN else file_format(self.path))
            if not _splits_on_bytes(self.encoding):  # UTF-16 and the like: the text layer reads, no positions
                text = io.TextIOWrapper(raw, encoding=self.encoding, newline="\n" if jsonl else "")
                lines = _lines(text, where, self.encoding)
                if fmt is None:
                    fmt, lines = _sniff(lines)
                yield from (_iter_csv if fmt == "csv" else _iter_jsonl)(lines, where, self.strict)
                return
            start = self.start or Position(0, 1, 0)
            header = None
            if start.offset and (fmt or "csv") == "csv":  # the header is the file's first record
                header = next(csv.reader(_byte_lines(raw, where, self.encoding, True, _Cursor(0), True)), [])
            raw.seek(start.offset)
            cursor = _Cursor(start.offset, None if self.digest is None else self.digest.copy())
            lines = _byte_lines(raw, where, self.encoding, not jsonl, cursor, start.offset == 0)
            if fmt is None:
                fmt, lines = _sniff(lines)
            records, line = start.record, start.line
            parse = (_iter_csv(lines, where, self.strict, start.line, header) if fmt == "csv"
                     else _iter_jsonl(lines, where, self.strict, start.line))
            make = tuple.__new__  # Position(...) without its Python-level __new__: once a record
            for location, record in parse:
                if location != "header":
                    records += 1
                    self.position = make(Position, (cursor.offset, line + cursor.lines, records))
                    if cursor.digest is not None:
                        self.position_digest = cursor.digest.copy()
                yield location, record

    @property
    def fraction_read(self) -> float | None:
        """The share of the file's bytes read so far (ahead of the records yielded by one buffer), or ``None``."""
        if self._raw is None or self._raw.closed or not self._size:
            return None
        return min(1.0, self._raw.tell() / self._size)


def _sniff(lines: Iterator[str]) -> tuple[Format, Iterator[str]]:
    """Standard input's format: JSONL when its first character is ``{``, else CSV (and the lines, none lost)."""
    first = next(lines, "")
    return ("jsonl" if first.lstrip().startswith("{") else "csv"), itertools.chain([first], lines)


def iter_records(
    path: str | os.PathLike[str], fmt: Format | None = None, encoding: str = "utf-8", strict: bool = True
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)`` for every record of a CSV or JSONL file (``location`` is e.g. ``"line 3"``),
    reading the file lazily.

    ``fmt`` defaults to :func:`file_format` of ``path`` (standard input, ``-``: JSONL when its first character is
    ``{``, else CSV). A CSV file first yields ``("header", {column: column})``; a CSV row with more or fewer fields
    than the header, a duplicated column name, or text that is not valid ``encoding`` raises ``UserError`` naming
    the line (``strict=False``: a CSV row with too few fields gets ``None`` for the rest, as in an output file cut
    short); a missing file raises ``FileNotFoundError``.
    """
    return iter(RecordReader(path, fmt, encoding, strict))


def output_format(path: str | os.PathLike[str]) -> Format:
    """The format of an output file: CSV when it ends in ``.csv``, JSONL otherwise (and on standard output)."""
    return "csv" if Path(path).suffix.lower() == ".csv" else "jsonl"


def _text(record: dict[str, Any], column: str, where: str, allow_empty: bool = True) -> str:
    value = record.get(column)
    if column == "rewrite" and is_missing(value):  # the one rule for a missing rewrite (styleeval.validation)
        raise missing_text_error(f"{where}: {column!r}", value)
    if value is None:
        raise UserError(f"{where}: missing value for {column!r}")
    if not isinstance(value, str):
        raise UserError(f"{where}: {column!r} must be a string, got {type(value).__name__} {value!r:.40}")
    if not allow_empty and not value.strip():
        raise UserError(f"{where}: {column!r} is empty")
    at = lone_surrogate(value)
    if at is not None:
        raise surrogate_error(f"{where}: {column!r}", value, at)
    return value


def iter_rows(path: str | os.PathLike[str] | RecordReader, style: str | None = None,
              encoding: str = "utf-8") -> Iterator[InputRow]:
    """The validated rows of an input file, read lazily (see :func:`read_rows`; a problem is raised when its row is
    reached). ``path`` may be a :class:`RecordReader` (to follow :attr:`~RecordReader.fraction_read`, or to start at
    a :class:`Position`: rows are numbered on from there)."""
    if style is not None and not (isinstance(style, str) and style.strip()):
        raise UserError(f"style must be a non-empty string, got {style!r}")
    reader = path if isinstance(path, RecordReader) else RecordReader(path, encoding=encoding)
    needed = [c for c in INPUT_COLUMNS if not (c == "style" and style is not None)]
    name = "<stdin>" if str(reader.path) == STDIN else str(reader.path)
    index = first = 0 if reader.start is None else reader.start.record
    for where, record in reader:
        if where == "header":
            missing = [c for c in needed if c not in record]
            if missing:
                found = ", ".join(repr(c) for c in record) or "none"
                raise UserError(f"{name}: missing column(s) {', '.join(map(repr, missing))} (found: {found})"
                                + ("; give the style with --style" if missing == ["style"] else ""))
            continue
        loc = f"{name}, row {index} ({where})"
        missing = [c for c in needed if c not in record]
        if missing:
            raise UserError(f"{loc}: missing column(s) {', '.join(map(repr, missing))}"
                            + ("; give the style with --style" if missing == ["style"] else ""))
        extra = {k: v for k, v in record.items() if k not in INPUT_COLUMNS}
        clash = sorted(set(extra) & RESERVED_FIELDS)
        if clash:
            raise UserError(f"{loc}: input column(s) {', '.join(map(repr, clash))} would clash with output fields; "
                            "rename or drop them")
        yield InputRow(
            row=index,
            source=_text(record, "source", loc),
            rewrite=_text(record, "rewrite", loc),
            style=style if style is not None else _text(record, "style", loc, allow_empty=False),
            where=loc,
            extra=extra,
            end=reader.position,
            end_digest=reader.position_digest,
        )
        index += 1
    if index == first == 0:
        raise UserError(f"{name}: no rows to score (the file is empty or has only a header)")


def read_rows(path: str | os.PathLike[str], style: str | None = None, encoding: str = "utf-8") -> list[InputRow]:
    """Read and validate an input file (CSV or JSONL; ``-``: standard input) with the columns ``source``,
    ``rewrite``, ``style``; other columns are kept in :attr:`InputRow.extra` (carried through to the output).

    ``style`` gives one target style for every row; it overrides a ``style`` column. Raises ``UserError``
    naming the file, the row and the problem (missing column, missing / non-string value, empty style, malformed
    CSV, wrong encoding, no rows at all). :func:`iter_rows` reads the rows lazily.
    """
    return list(iter_rows(path, style, encoding))


def _score(value: Any) -> float:
    if value is None or value == "":
        return math.nan
    return float(value)


def read_scores(path: str | os.PathLike[str], kind: RecordKind = LOGPROB_RECORDS) -> list[dict[str, Any]]:
    """Read an output file of :func:`score_file` (or, with ``kind=AUTORATER_RECORDS``, of :func:`autorate_file`)
    as a list of records in file order.

    ``row`` comes back as ``int``; the scores (``content`` and ``style_strength``) as ``float`` (NaN for skipped
    rows). A file that holds a row twice (no run writes one) is an error naming the row.
    """
    records, torn = _read_scores(Path(path), kind)
    if torn:
        raise UserError(f"{path}, {torn}: the last record is incomplete (an interrupted write)")
    return records


def _read_scores(path: Path, kind: RecordKind) -> tuple[list[dict[str, Any]], str | None]:
    """The complete records, and the location of an incomplete last record (a CSV row cut short) or ``None``."""
    torn = TornTail()
    records = list(iter_scores(path, kind, torn, seen=set()))
    return records, torn.where


def _typed_extras(record: dict[str, Any], kind: RecordKind) -> dict[str, Any]:
    """A CSV record's extras as the JSONL record has them (the inverse of :func:`_csv_extra`): ``true`` / ``false``
    as booleans, JSON text as lists, an empty cell as null; a text extra (``kind.texts``) as it is, except that an
    empty one is null where the record has lists (the autorater's expected mode has rating distributions and no
    reply; paper mode's reply may be empty). ``ValueError`` for anything else (a corrupt record)."""
    out: dict[str, Any] = {}
    for name in kind.extras:
        text = record.get(name)
        if name in kind.texts or text is None:
            out[name] = text
        elif text == "":
            out[name] = None
        elif text in ("true", "false"):
            out[name] = text == "true"
        else:
            out[name] = json.loads(text)
    if any(isinstance(v, list) for v in out.values()):
        out.update({name: None for name in kind.texts if out[name] == ""})
    return out


def _first_time(path: Path, where: str, row: int, seen: Any) -> None:
    """Add ``row`` to ``seen``; a row already there is an error naming it (a file no run writes)."""
    if row in seen:
        raise UserError(f"{path}, {where}: row {row} appears twice; the file is corrupt (two runs wrote it at "
                        "once?): write it again (--overwrite)")
    seen.add(row)


def _whose(keys: Iterable[str], kind: RecordKind) -> str:
    """``its records are KIND records: ...``, the commands that write them, where ``keys`` (a record's, or a CSV
    header's) are wholly another kind's (a file of ``styleeval score --metric autorater`` resumed with ``styleeval
    score`` alone), else ``""``.

    >>> _whose(AUTORATER_RECORDS.fields, LOGPROB_RECORDS)
    'its records are autorate records: those of styleeval autorate, or styleeval score --metric autorater'
    """
    other = kind_of(keys)
    present = set(keys)
    if other == kind or not present.issuperset(other.fields):
        return ""
    scorer = next(s for s in LLM_SCORERS if s.command.name == other.name)
    return f"its records are {other.name} records: those of styleeval {other.name}, or styleeval score --metric {scorer.name}"


class TornTail:
    """Set by :func:`iter_scores` to the location of an incomplete last record (a CSV row cut short)."""

    where: str | None = None


def iter_scores(path: Path, kind: RecordKind, torn: TornTail, seen: Any = None) -> Iterator[dict[str, Any]]:
    """The complete records of an output file, read lazily; an incomplete last record is not yielded, its location
    goes to ``torn``; an incomplete record before the last, a corrupt one, or (with ``seen``, a set of rows, empty or
    a :class:`~styleeval.files.shards.RowSet`, filled with the rows read) a row read twice raises ``UserError``. A
    CSV file's header names, escaped as its cells are, are read back as the input named its columns."""
    pending: str | None = None  # where a record cut short was: an error unless it is the last
    csv_file = output_format(path) == "csv"
    names: dict[str, str] = {}  # a CSV header's names as written -> as the input named them
    for where, record in iter_records(path, output_format(path), strict=False):
        if pending is not None:
            raise UserError(f"{path}, {pending}: incomplete record")
        missing = [f for f in kind.fields if f not in record]
        if missing:
            what = "file" if where == "header" else f"record ({where})"
            raise UserError(f"{path}: not a styleeval {kind.name} {what}: missing {', '.join(missing)}"
                            + (f" ({whose})" if (whose := _whose(record, kind)) else ""))
        if where == "header":
            names = {name: csv_untext(name) for name in record}
            continue
        if any(record[f] is None for f in ("row", "source", "rewrite", "style", "signature")):
            pending = where
            continue
        try:
            row = int(record["row"])
            record = {**record, "row": row, **{f: _score(record[f]) for f in kind.scores}}
            if csv_file:  # texts and names as given (not as escaped for spreadsheets), extras with their types
                record = {names[k]: csv_untext(v) if isinstance(v, str) else v for k, v in record.items()}
                record.update(_typed_extras(record, kind))
        except (TypeError, ValueError, RecursionError):
            raise UserError(f"{path}, {where}: corrupt record (bad row, score or field)") from None
        if seen is not None:
            _first_time(path, where, row, seen)
        yield record
    torn.where = pending


# ----------------------------------------------------------------------------------------------- writing


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _plain(value: Any) -> Any:
    """A carried-through value as written: a non-finite number (NaN in a JSONL input) becomes null, at any depth (a
    value holds at most :data:`MAX_NESTING` levels)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _csv_extra(value: Any) -> Any:
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def carried_columns(record: dict[str, Any]) -> list[str]:
    """The input's columns that a record (read from an output file) carries: its fields that are no output field,
    in order."""
    return [name for name in record if name not in RESERVED_FIELDS]


def as_written(value: Any, fmt: Format) -> str:
    """A carried value as an output file in ``fmt`` holds it, as text: its JSON (JSONL) or its cell (CSV, before
    the spreadsheet escape). The input's value and the value read back from the file compare equal this way exactly
    when writing the input's value again would write the same record (``0`` and ``"0"`` differ in JSONL, not in
    CSV, whose cells are text)."""
    if fmt == "csv":
        cell = _csv_extra(value)
        return cell if isinstance(cell, str) else str(cell)
    return json.dumps(_plain(value))


def _fields(kind: RecordKind, extra_columns: Sequence[str]) -> list[str]:
    """Output fields: ``row``, the input's extra columns, then the kind's fields."""
    return ["row", *extra_columns, *kind.fields[1:]]


def _format_records(records: Sequence[dict[str, Any]], fmt: Format, header: bool,
                    kind: RecordKind = LOGPROB_RECORDS, extra_columns: Sequence[str] = ()) -> str:
    fields = _fields(kind, extra_columns)
    if fmt == "jsonl":
        return "".join(
            json.dumps({f: _finite(r[f]) if f in kind.scores else _plain(r.get(f)) for f in fields},
                       ensure_ascii=False, allow_nan=False) + "\n"
            for r in records
        )
    buf = StringIO()
    # CRLF line ends (RFC 4180): a field holding a bare CR or LF is then quoted, so every text reads back
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\r\n")
    if header:
        writer.writerow({f: csv_text(f) for f in fields})  # a header cell is a cell: no formula either
    for r in records:
        writer.writerow({f: ("" if math.isnan(r[f]) else repr(r[f])) if f in kind.scores
                         else csv_text(_csv_extra(r.get(f)) if f in kind.extras or f in extra_columns else r[f])
                         for f in fields})
    return buf.getvalue()


def format_in_batches(records: Iterable[dict[str, Any]], fmt: Format, kind: RecordKind,
                      extra_columns: Sequence[str], header: bool, batch: int = 4096) -> Iterator[str]:
    """``records`` (any iterable, read as it goes) as the text of an output file, ``batch`` records at a time (the
    CSV header first when ``header``): a whole file rewritten in bounded memory."""
    it = iter(records)
    while (part := list(itertools.islice(it, batch))) or header:
        yield _format_records(part, fmt, header, kind, extra_columns)
        header = False
        if len(part) < batch:
            return
