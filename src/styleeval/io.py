"""CSV / JSONL input and output for LogProb scoring, and the resumable chunked loop behind ``styleeval score``.

Input files have one row per rewrite with the columns ``source``, ``rewrite`` and ``style`` (``style`` may
instead be given once for every row). Output files hold one record per input row::

    row, source, rewrite, style, content, style_strength, signature

``row`` is the 0-based index of the row in the input file (blank lines are not counted), followed by the input's
other columns (ids, system names...) when it has any; ``content`` and
``style_strength`` are the LogProb scores (``content`` <= 0, ``style_strength`` in [-1, 1]; empty / NaN when a
row was skipped with ``on_overflow="skip"``); ``signature`` is :attr:`styleeval.LogProb.signature`.
:func:`score_file` appends records chunk by chunk and skips rows that are already in the output, so an
interrupted run picks up where it stopped.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any, Literal

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

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field of a record, in order."""
        return ("row", "source", "rewrite", "style", *self.scores, *self.extras, "signature")


LOGPROB_RECORDS = RecordKind("score", ("content", "style_strength"))
"""``styleeval score`` records (:data:`OUTPUT_FIELDS`)."""

AUTORATER_RECORDS = RecordKind("autorate", ("meaning", "style_rating"),
                               ("parsed", "reply", "meaning_probs", "style_probs"))
"""``styleeval autorate`` records: the two ratings (null where paper mode could not read one), ``parsed``, the
judge's ``reply`` (paper mode) or the rating distributions (expected mode)."""

Format = Literal["csv", "jsonl"]

RESERVED_FIELDS = frozenset({*OUTPUT_FIELDS, *LOGPROB_RECORDS.fields, *AUTORATER_RECORDS.fields})
"""Output field names that an extra input column may not use."""


@dataclass(frozen=True)
class InputRow:
    """One validated input row; ``row`` is its 0-based index in the file, ``where`` locates it for messages."""

    row: int
    source: str
    rewrite: str
    style: str
    where: str
    extra: dict[str, Any] = field(default_factory=dict)  # the input's other columns, carried through to the output


@dataclass(frozen=True)
class ScoreFileResult:
    """What :func:`score_file` did: ``total`` input rows, ``skipped`` already in the output, ``scored`` now."""

    input: Path
    output: Path
    total: int
    skipped: int
    scored: int
    signature: str | None

    @property
    def remaining(self) -> int:
        """Rows still missing from the output (non-zero after ``max_rows`` stopped a run early)."""
        return self.total - self.skipped - self.scored

    @property
    def complete(self) -> bool:
        """Whether every input row is in the output."""
        return self.remaining == 0


def file_format(path: str | os.PathLike[str]) -> Format:
    """``"csv"`` for ``*.csv``, ``"jsonl"`` for ``*.jsonl`` / ``*.ndjson`` (one JSON object per line)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    raise ValueError(f"{path}: unknown file type {suffix or '(none)'!r}; use .csv or .jsonl")


# ----------------------------------------------------------------------------------------------- reading

STDIN = "-"
"""The input path that reads standard input (CSV or JSONL, told apart by the first character)."""


def _decode_error(path: Path, data: bytes, encoding: str, err: UnicodeDecodeError) -> ValueError:
    """Name the line of ``path`` that is not valid ``encoding``, and what to do."""
    line = 1
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            raw.decode(encoding)
        except UnicodeDecodeError:
            line = number
            break
    return ValueError(f"{path}, line {line}: not valid {encoding} ({err.reason}); save the file as UTF-8 or pass "
                      f"the file's encoding (--encoding latin-1, encoding='latin-1')")


def _read_text(path: Path | str, encoding: str) -> tuple[str, Path]:
    """The whole text of ``path`` (``-``: standard input), decoded; a UTF-8 byte order mark is dropped."""
    import sys

    if str(path) == STDIN:
        data = sys.stdin.buffer.read()
        path = Path("<stdin>")
    else:
        path = Path(path)
        if path.is_dir():
            raise ValueError(f"{path}: is a directory, not an input file")
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        data = path.read_bytes()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise _decode_error(path, data, encoding, err) from None
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    return text.removeprefix("\ufeff"), path


def _iter_csv(text: str, path: Path, strict: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.reader(StringIO(text, newline=""))
    try:
        header: list[str] | None = None
        line = 1
        for fields in reader:
            if header is None:
                header = fields
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise ValueError(f"{path}, line {line}: the header names column(s) "
                                     f"{', '.join(map(repr, dupes))} more than once")
                yield "header", {name: name for name in header}
            elif fields:  # blank lines are skipped
                if not strict and len(fields) < len(header):  # an output row cut short: missing fields are None
                    fields = fields + [None] * (len(header) - len(fields))  # type: ignore[list-item]
                if len(fields) != len(header):
                    raise ValueError(
                        f"{path}, line {line}: {len(fields)} fields but the header has {len(header)} columns "
                        "(quote fields that contain commas: \"Hello, world\")"
                    )
                yield f"line {line}", dict(zip(header, fields))
            line = reader.line_num + 1
    except csv.Error as err:
        raise ValueError(f"{path}, line {reader.line_num}: not valid CSV ({err})") from None


def _iter_jsonl(text: str, path: Path, strict: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {number}: not valid JSON ({err.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: expected a JSON object, got {type(record).__name__}")
        yield f"line {number}", record


def iter_records(
    path: str | os.PathLike[str], fmt: Format | None = None, encoding: str = "utf-8", strict: bool = True
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)`` for every record of a CSV or JSONL file (``location`` is e.g. ``"line 3"``).

    ``fmt`` defaults to :func:`file_format` of ``path`` (standard input, ``-``: JSONL when its first character is
    ``{``, else CSV). A CSV file first yields ``("header", {column: column})``; a CSV row with more or fewer fields
    than the header, a duplicated column name, or text that is not valid ``encoding`` raises ``ValueError`` naming
    the line (``strict=False``: a CSV row with too few fields gets ``None`` for the rest, as in an output file cut
    short); a missing file raises ``FileNotFoundError``.
    """
    text, where = _read_text(path, encoding)
    if fmt is None:
        fmt = ("jsonl" if text.lstrip().startswith("{") else "csv") if str(path) == STDIN else file_format(path)
    yield from (_iter_csv if fmt == "csv" else _iter_jsonl)(text, where, strict)


def output_format(path: str | os.PathLike[str]) -> Format:
    """The format of an output file: CSV when it ends in ``.csv``, JSONL otherwise (and on standard output)."""
    return "csv" if Path(path).suffix.lower() == ".csv" else "jsonl"


def _text(record: dict[str, Any], column: str, where: str, allow_empty: bool = True) -> str:
    value = record.get(column)
    if value is None:
        raise ValueError(f"{where}: missing value for {column!r}")
    if not isinstance(value, str):
        raise ValueError(f"{where}: {column!r} must be a string, got {type(value).__name__} {value!r:.40}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{where}: {column!r} is empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"{where}: {column!r} holds a lone surrogate (U+{ord(value[err.start]):04X} at character "
                         f"{err.start}), which is not text and cannot be written as UTF-8") from None
    return value


def read_rows(path: str | os.PathLike[str], style: str | None = None, encoding: str = "utf-8") -> list[InputRow]:
    """Read and validate an input file (CSV or JSONL; ``-``: standard input) with the columns ``source``,
    ``rewrite``, ``style``; other columns are kept in :attr:`InputRow.extra` (carried through to the output).

    ``style`` gives one target style for every row; it overrides a ``style`` column. Raises ``ValueError``
    naming the file, the row and the problem (missing column, missing / non-string value, empty style, malformed
    CSV, wrong encoding, no rows at all).
    """
    if style is not None and not (isinstance(style, str) and style.strip()):
        raise ValueError(f"style must be a non-empty string, got {style!r}")
    needed = [c for c in INPUT_COLUMNS if not (c == "style" and style is not None)]
    name = "<stdin>" if str(path) == STDIN else str(path)
    rows: list[InputRow] = []
    for where, record in iter_records(path, encoding=encoding):
        if where == "header":
            missing = [c for c in needed if c not in record]
            if missing:
                found = ", ".join(repr(c) for c in record) or "none"
                raise ValueError(f"{name}: missing column(s) {', '.join(map(repr, missing))} (found: {found})"
                                 + ("; give the style with --style" if missing == ["style"] else ""))
            continue
        index = len(rows)
        loc = f"{name}, row {index} ({where})"
        missing = [c for c in needed if c not in record]
        if missing:
            raise ValueError(f"{loc}: missing column(s) {', '.join(map(repr, missing))}"
                             + ("; give the style with --style" if missing == ["style"] else ""))
        extra = {k: v for k, v in record.items() if k not in INPUT_COLUMNS}
        clash = sorted(set(extra) & RESERVED_FIELDS)
        if clash:
            raise ValueError(f"{loc}: input column(s) {', '.join(map(repr, clash))} would clash with output fields; "
                             "rename or drop them")
        rows.append(InputRow(
            row=index,
            source=_text(record, "source", loc),
            rewrite=_text(record, "rewrite", loc),
            style=style if style is not None else _text(record, "style", loc, allow_empty=False),
            where=loc,
            extra=extra,
        ))
    if not rows:
        raise ValueError(f"{name}: no rows to score (the file is empty or has only a header)")
    return rows


def _score(value: Any) -> float:
    if value is None or value == "":
        return math.nan
    return float(value)


def read_scores(path: str | os.PathLike[str], kind: RecordKind = LOGPROB_RECORDS) -> list[dict[str, Any]]:
    """Read an output file of :func:`score_file` (or, with ``kind=AUTORATER_RECORDS``, of :func:`autorate_file`)
    as a list of records in file order.

    ``row`` comes back as ``int``; the scores (``content`` and ``style_strength``) as ``float`` (NaN for skipped
    rows).
    """
    records, torn = _read_scores(Path(path), kind)
    if torn:
        raise ValueError(f"{path}, {torn}: the last record is incomplete (an interrupted write)")
    return records


def _read_scores(path: Path, kind: RecordKind) -> tuple[list[dict[str, Any]], str | None]:
    """The complete records, and the location of an incomplete last record (a CSV row cut short) or ``None``."""
    records = []
    items = list(iter_records(path, output_format(path), strict=False))
    for k, (where, record) in enumerate(items):
        missing = [f for f in kind.fields if f not in record]
        if missing:
            what = "file" if where == "header" else f"record ({where})"
            raise ValueError(f"{path}: not a styleeval {kind.name} {what}: missing {', '.join(missing)}")
        if where == "header":
            continue
        if any(record[f] is None for f in ("row", "source", "rewrite", "style", "signature")):
            if k == len(items) - 1:
                return records, where
            raise ValueError(f"{path}, {where}: incomplete record")
        try:
            row = int(record["row"])
            record = {**record, "row": row, **{f: _score(record[f]) for f in kind.scores}}
        except (TypeError, ValueError):
            raise ValueError(f"{path}, {where}: corrupt record (bad row or score)") from None
        records.append(record)
    return records, None


# ----------------------------------------------------------------------------------------------- writing


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _csv_extra(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def _fields(kind: RecordKind, extra_columns: Sequence[str]) -> list[str]:
    """Output fields: ``row``, the input's extra columns, then the kind's fields."""
    return ["row", *extra_columns, *kind.fields[1:]]


def _format_records(records: Sequence[dict[str, Any]], fmt: Format, header: bool,
                    kind: RecordKind = LOGPROB_RECORDS, extra_columns: Sequence[str] = ()) -> str:
    fields = _fields(kind, extra_columns)
    if fmt == "jsonl":
        return "".join(
            json.dumps({f: _finite(r[f]) if f in kind.scores else r.get(f) for f in fields},
                       ensure_ascii=False, allow_nan=False) + "\n"
            for r in records
        )
    buf = StringIO()
    # CRLF line ends (RFC 4180): a field holding a bare CR or LF is then quoted, so every text reads back
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\r\n")
    if header:
        writer.writeheader()
    for r in records:
        writer.writerow({f: ("" if math.isnan(r[f]) else repr(r[f])) if f in kind.scores
                         else _csv_extra(r.get(f)) if f in kind.extras or f in extra_columns else r[f]
                         for f in fields})
    return buf.getvalue()


def _drop_torn_tail(path: Path) -> None:
    """Cut a last record that an interrupted write left without its newline (that row is scored again)."""
    with open(path, "rb+") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        f.truncate(f.read().rfind(b"\n") + 1)


# ----------------------------------------------------------------------------------------------- scoring

_INDEX = re.compile(r"(\brow |\[|, )(\d+)")


def _to_input_rows(message: str, chunk: Sequence[InputRow]) -> str:
    """Replace chunk-relative row numbers (``row 3``, ``rows [0, 3]``) in a message by input row numbers."""

    def repl(m: re.Match[str]) -> str:
        i = int(m.group(2))
        return f"{m.group(1)}{chunk[i].row}" if i < len(chunk) else m.group(0)

    return _INDEX.sub(repl, message)


def _chunk_error(path: Path | str, err: ValueError, chunk: Sequence[InputRow]) -> ValueError:
    """Re-word a LogProb error about chunk-relative row ``i`` so that it names the input row."""
    return ValueError(f"{path}: {_to_input_rows(str(err), chunk)}")


def _check_resume(out: Path, done: list[dict[str, Any]], rows: Sequence[InputRow]) -> set[int]:
    seen: set[int] = set()
    for record in done:
        r = record["row"]
        if r in seen:
            raise ValueError(f"{out}: row {r} appears twice; the file is corrupt (use --overwrite to start again)")
        seen.add(r)
        if not 0 <= r < len(rows):
            raise ValueError(f"{out} was written for a different input: it has row {r} but the input has "
                             f"{len(rows)} rows (use another --out, or --overwrite)")
        row = rows[r]
        for name in ("source", "rewrite", "style"):
            if record[name] != getattr(row, name):
                raise ValueError(
                    f"{out} was written for a different input: row {r} has {name} {record[name]!r:.60} in "
                    f"{out.name} but {getattr(row, name)!r:.60} in the input (use another --out, or --overwrite)"
                )
    return seen


def _check_signature(out: Path, done: list[dict[str, Any]], signature: str) -> None:
    for record in done:
        if record["signature"] != signature:
            raise ValueError(
                f"{out} was written with different settings: row {record['row']} has signature "
                f"{record['signature']!r}, this run has {signature!r} (use another --out, or --overwrite)"
            )


def _logprob_settings(model: Any, kwargs: dict[str, Any]) -> dict[str, str]:
    """The signature fields that LogProb options determine without loading the model."""
    from styleeval.models import PRESETS, resolve_dtype

    expected = {
        "variant": str(kwargs.get("variant", "default")),
        "eot": "yes" if kwargs.get("end_of_turn", True) else "no",
        "head": str(kwargs.get("head_dtype", "float32")).removeprefix("torch."),
    }
    if kwargs.get("base_url"):
        expected.update(backend="server", dtype="server")
        if model is not None:
            expected["model"] = PRESETS.get(str(model).lower(), str(model))
        return expected
    expected.update(backend="local", dtype=str(resolve_dtype(kwargs.get("dtype", "float32"))).removeprefix("torch."))
    if model is None or (isinstance(model, str) and not Path(model).exists()):
        expected["model"] = PRESETS.get(str(model or "1b").lower(), model)
    return expected


def _check_settings(out: Path, done: list[dict[str, Any]], expected: dict[str, str]) -> None:
    """Without loading the model: do the stored signatures agree with the fields this run's options determine?"""
    from styleeval.signature import parse_signature

    for record in done:
        try:
            fields = parse_signature(record["signature"])[1]
        except ValueError:
            fields = {}
        stored = {**fields, "model": fields.get("model", "").rsplit("@", 1)[0]}
        for key, value in expected.items():
            if stored.get(key) != value:
                raise ValueError(
                    f"{out} was written with different settings: row {record['row']} has {key} "
                    f"{stored.get(key)!r}, this run asks for {value!r} (use another --out, or --overwrite)"
                )


def timed_chunks(items: Sequence[Any], seconds: float, cap: int, first: int = 8) -> Iterator[Sequence[Any]]:
    """Consecutive chunks of ``items``: the first of ``first`` items, then each sized to about ``seconds`` of the
    caller's work on the previous one (timed between yields), at most ``cap``. Used wherever finished rows are saved
    as they come (``score``, ``autorate``, the meta-evaluation's LLM metrics)."""
    import time

    pos, size = 0, max(1, min(cap, first))
    while pos < len(items):
        chunk = items[pos : pos + size]
        start = time.perf_counter()
        yield chunk
        rate = len(chunk) / max(time.perf_counter() - start, 1e-6)
        pos += len(chunk)
        size = max(1, min(cap, int(rate * seconds)))


def _lock(output: Path):
    """An exclusive lock on ``output`` (a ``.lock`` file beside it) held for the whole run: a second process
    writing the same OUT gets a clear error instead of duplicated rows."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(output) + ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise ValueError(f"{output} is being written by another styleeval process (lock {lock.lock_file}); wait "
                         "for it to finish or use another --out") from None
    return lock


def _existing_header(output: Path) -> list[str] | None:
    with open(output, encoding="utf-8", newline="") as f:
        return next(csv.reader(f), None)


class _Sink:
    """Where finished records go: OUT appended in place, a temporary file that replaces OUT once the first chunk
    is safely written (``overwrite``), or standard output (``-``)."""

    def __init__(self, output: Path | None, fmt: Format, header: bool, replace: bool) -> None:
        import sys

        self.output, self.fmt, self.header = output, fmt, header
        self.target = output
        if output is None:
            self.file = sys.stdout
        else:
            output.parent.mkdir(parents=True, exist_ok=True)
            if replace:
                self.target = output.with_name(output.name + ".partial")
                self.file = open(self.target, "w", encoding="utf-8", newline="")
            else:
                self.file = open(output, "a", encoding="utf-8", newline="")

    def write(self, text: str) -> None:
        self.file.write(text)
        self.file.flush()
        if self.output is not None:
            os.fsync(self.file.fileno())
            if self.target != self.output:  # the first chunk of an --overwrite run is safe: it becomes OUT
                os.replace(self.target, self.output)
                self.target = self.output
        self.header = False

    def close(self) -> None:
        if self.output is not None:
            self.file.close()
            if self.target != self.output:  # nothing was written: OUT stays as it was
                self.target.unlink(missing_ok=True)


def _run_file(
    input: Path | str,
    output: Path | str,
    kind: RecordKind,
    *,
    style: str | None,
    chunk_size: int,
    max_rows: int | None,
    overwrite: bool,
    progress: bool,
    scorer: Any,
    make_scorer: Callable[[], Any],
    score_chunk: Callable[[Any, list[InputRow]], list[dict[str, Any]]],
    expected_settings: dict[str, str],
    on_chunk: Callable[[list[dict[str, Any]]], None] | None,
    encoding: str = "utf-8",
    flush_seconds: float = 5.0,
) -> ScoreFileResult:
    """The resumable chunked loop shared by :func:`score_file` and :func:`autorate_file`."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if max_rows is not None and max_rows < 0:
        raise ValueError(f"max_rows must be >= 0, got {max_rows}")
    if flush_seconds <= 0:
        raise ValueError(f"flush_seconds must be positive, got {flush_seconds}")
    to_stdout = str(output) == STDIN
    out_path = None if to_stdout else Path(output)
    if out_path is not None:
        if out_path.is_dir():
            raise ValueError(f"{out_path}: is a directory; --out must name a file (e.g. {out_path}/scores.jsonl)")
        if str(input) != STDIN and out_path.resolve() == Path(input).resolve():
            raise ValueError(f"{out_path}: the output file must not be the input file")
    out_fmt: Format = "jsonl" if to_stdout else output_format(out_path)  # type: ignore[arg-type]
    rows = read_rows(input, style=style, encoding=encoding)
    extra_columns = list(dict.fromkeys(k for r in rows for k in r.extra))
    fields = _fields(kind, extra_columns)
    lock = _lock(out_path) if out_path is not None else None
    try:
        done: list[dict[str, Any]] = []
        if out_path is not None and out_path.exists() and not overwrite:
            _drop_torn_tail(out_path)
            if out_path.stat().st_size > 0:
                if out_fmt == "csv" and _existing_header(out_path) != fields:
                    raise ValueError(f"{out_path} has the columns {_existing_header(out_path)} but this run writes "
                                     f"{fields} (use another --out, or --overwrite)")
                done, torn = _read_scores(out_path, kind)
                if torn:  # a CSV record cut at a newline inside a quoted field: write the file again without it
                    tmp = out_path.with_name(out_path.name + ".tmp")
                    tmp.write_text(_format_records(done, out_fmt, out_fmt == "csv", kind, extra_columns),
                                   encoding="utf-8", newline="")
                    os.replace(tmp, out_path)
        where = out_path if out_path is not None else "<stdout>"
        finished = _check_resume(where, done, rows)  # type: ignore[arg-type]
        todo = [row for row in rows if row.row not in finished]
        if max_rows is not None:
            todo = todo[:max_rows]
        signature = done[0]["signature"] if done else None
        if not todo:
            if done and scorer is not None:
                _check_signature(where, done, scorer.signature)  # type: ignore[arg-type]
            elif done:  # do not load a model just to check: compare what the options determine
                _check_settings(where, done, expected_settings)  # type: ignore[arg-type]
            return ScoreFileResult(Path(str(input)), Path(str(output)), len(rows), len(finished), 0, signature)

        if scorer is None:
            scorer = make_scorer()
        signature = scorer.signature
        _check_signature(where, done, signature)  # type: ignore[arg-type]
        return _score_rows(input, output, rows, finished, todo, kind, scorer, score_chunk, signature, out_path,
                           out_fmt, extra_columns, overwrite, chunk_size, flush_seconds, progress, on_chunk)
    finally:
        if lock is not None:
            lock.release()


def _score_rows(input, output, rows, finished, todo, kind, scorer, score_chunk, signature, out_path, out_fmt,
                extra_columns, overwrite, chunk_size, flush_seconds, progress, on_chunk) -> ScoreFileResult:
    """Score ``todo`` in chunks sized to about ``flush_seconds`` of work each (at most ``chunk_size`` rows), each
    chunk written and flushed before the next starts."""
    import warnings

    from tqdm.auto import tqdm

    fresh = out_path is None or overwrite or not out_path.exists() or out_path.stat().st_size == 0
    sink = _Sink(out_path, out_fmt, header=out_fmt == "csv" and fresh,
                 replace=overwrite and out_path is not None and out_path.exists())
    scored = 0
    try:
        with tqdm(total=len(rows), initial=len(finished), unit="row", desc=f"styleeval {kind.name}",
                  disable=not progress) as bar:
            for chunk in timed_chunks(todo, flush_seconds, chunk_size):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        values = score_chunk(scorer, chunk)
                    except ValueError as err:
                        raise _chunk_error(input, err, chunk) from err
                for w in caught:  # chunk-relative row numbers become input rows
                    warnings.warn_explicit(_to_input_rows(str(w.message), chunk), w.category, w.filename, w.lineno)
                records = [{"row": r.row, **r.extra, "source": r.source, "rewrite": r.rewrite, "style": r.style,
                            **v, "signature": signature} for r, v in zip(chunk, values)]
                sink.write(_format_records(records, out_fmt, sink.header, kind, extra_columns))
                scored += len(records)
                bar.update(len(records))
                if on_chunk is not None:
                    on_chunk(records)
    finally:
        sink.close()
    return ScoreFileResult(Path(str(input)), Path(str(output)), len(rows), len(finished), scored, signature)


def score_file(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    model: Any = None,
    *,
    style: str | None = None,
    chunk_size: int = 256,
    max_rows: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    scorer: Any = None,
    on_chunk: Callable[[list[dict[str, Any]]], None] | None = None,
    encoding: str = "utf-8",
    flush_seconds: float = 5.0,
    **logprob_kwargs: Any,
) -> ScoreFileResult:
    """Score every row of ``input`` with LogProb and append the results to ``output``, resumably.

    Rows are scored in chunks of about ``flush_seconds`` of work (at most ``chunk_size`` rows); each chunk is
    appended to ``output`` (JSONL, or CSV when it ends in ``.csv``) and flushed to disk before the next one starts,
    and the progress bar moves with it. Rows already in ``output`` are skipped after checking that their
    ``source``, ``rewrite`` and ``style`` match the input and that their signature matches this run's, so an
    interrupted run can simply be started again. Scores do not depend on the chunking beyond float32 rounding.
    A lock (``output + ".lock"``) keeps a second process from writing the same file.

    Args:
        input: a CSV or JSONL file with the columns ``source``, ``rewrite``, ``style`` (see :func:`read_rows`);
            ``-``: standard input. Other columns are carried through to the output records (after ``row``).
        output: where the records go (see the module docstring for the fields); ``-``: JSONL on standard output.
        model: the LogProb model (preset, Hub id, local path or model object); ignored when ``scorer`` is given.
        style: one target style for every row (overrides a ``style`` column).
        chunk_size: at most this many rows per chunk written to ``output``.
        max_rows: score at most this many new rows, then stop (the rest is scored by the next run).
        overwrite: start ``output`` afresh; the old file is replaced only once the first new chunk is written.
        progress: show a tqdm progress bar over rows (on stderr).
        encoding: the input file's encoding (default UTF-8).
        flush_seconds: the work per chunk aimed at (seconds).
        scorer: an existing :class:`styleeval.LogProb` to use instead of loading ``model``.
        on_chunk: called with the records of each chunk after they are written.
        **logprob_kwargs: passed to :class:`styleeval.LogProb` (``device``, ``dtype``, ``batch_tokens``,
            ``max_batch_rows``, ``end_of_turn``, ``on_overflow``, ...).

    Returns:
        a :class:`ScoreFileResult` with the row counts and the signature.
    """

    def make_scorer() -> Any:
        from styleeval.logprob import LogProb

        kwargs = {"progress": False, **logprob_kwargs}
        return LogProb(model, **kwargs) if model is not None else LogProb(**kwargs)

    def score_chunk(lp: Any, chunk: list[InputRow]) -> list[dict[str, Any]]:
        scores = lp.score([r.source for r in chunk], [r.rewrite for r in chunk], [r.style for r in chunk])
        return [{"content": float(s["content"]), "style_strength": float(s["style"])} for s in scores]

    return _run_file(
        input, output, LOGPROB_RECORDS, style=style, chunk_size=chunk_size, max_rows=max_rows,
        overwrite=overwrite, progress=progress, scorer=scorer, make_scorer=make_scorer, score_chunk=score_chunk,
        expected_settings=_logprob_settings(model, logprob_kwargs), on_chunk=on_chunk, encoding=encoding,
        flush_seconds=flush_seconds,
    )


def autorate_file(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    model: Any = None,
    *,
    style: str | None = None,
    chunk_size: int = 64,
    max_rows: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    judge: Any = None,
    on_chunk: Callable[[list[dict[str, Any]]], None] | None = None,
    encoding: str = "utf-8",
    flush_seconds: float = 5.0,
    **autorater_kwargs: Any,
) -> ScoreFileResult:
    """Rate every row of ``input`` with :class:`styleeval.Autorater` and append the results to ``output``, resumably.

    The same loop as :func:`score_file` (chunks appended and flushed, rows already in ``output`` skipped after
    checking inputs and signature). Records have ``meaning`` and ``style_rating`` (null where paper mode could not
    read a rating: the authors' mean fallback depends on which rows are in one call, so the file keeps the raw
    ratings and leaves that choice to the reader), ``parsed``, ``reply`` (paper mode) and ``meaning_probs`` /
    ``style_probs`` (expected mode), and ``signature``.

    Args:
        model: the judge (preset, Hub id, local path, model object, or the served model name with ``base_url``).
        judge: an existing :class:`styleeval.Autorater` to use instead of building one.
        **autorater_kwargs: passed to :class:`styleeval.Autorater` (``mode``, ``prompt``, ``parser``,
            ``base_url``, ``device``, ``dtype``, ``seed``...).
        Other arguments: as for :func:`score_file`.
    """

    def make_judge() -> Any:
        from styleeval.autorater import Autorater

        return Autorater(model, **{"progress": False, **autorater_kwargs})

    def rate_chunk(rater: Any, chunk: list[InputRow]) -> list[dict[str, Any]]:
        from styleeval.server import ServerError

        try:
            rows = rater.rate([r.source for r in chunk], [r.rewrite for r in chunk], [r.style for r in chunk],
                              fallback=None)
        except ServerError as err:
            raise ValueError(str(err)) from err
        return [{"meaning": float(r["meaning"]), "style_rating": float(r["style"]), "parsed": bool(r["parsed"]),
                 "reply": r.get("reply"), "meaning_probs": r.get("meaning_probs"), "style_probs": r.get("style_probs")}
                for r in rows]

    expected = {k: str(autorater_kwargs[k]) for k in ("mode", "prompt") if autorater_kwargs.get(k) is not None}
    return _run_file(
        input, output, AUTORATER_RECORDS, style=style, chunk_size=chunk_size, max_rows=max_rows,
        overwrite=overwrite, progress=progress, scorer=judge, make_scorer=make_judge, score_chunk=rate_chunk,
        expected_settings=expected, on_chunk=on_chunk, encoding=encoding, flush_seconds=flush_seconds,
    )
