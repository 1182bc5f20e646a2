"""CSV / JSONL input and output for LogProb scoring, and the resumable chunked loop behind ``styleeval score``.

Input files have one row per rewrite with the columns ``source``, ``rewrite`` and ``style`` (``style`` may
instead be given once for every row). Output files hold one record per input row::

    row, source, rewrite, style, content, style_strength, signature

``row`` is the 0-based index of the row in the input file (blank JSONL lines are not counted); ``content`` and
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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class InputRow:
    """One validated input row; ``row`` is its 0-based index in the file, ``where`` locates it for messages."""

    row: int
    source: str
    rewrite: str
    style: str
    where: str


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


def _iter_csv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        try:
            header = reader.fieldnames or []
            yield "header", {name: name for name in header if name is not None}
            line = reader.line_num + 1
            for record in reader:
                yield f"line {line}", record
                line = reader.line_num + 1
        except csv.Error as err:
            raise ValueError(f"{path}, line {reader.line_num}: not valid CSV ({err})") from None


def _iter_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
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
    path: str | os.PathLike[str], fmt: Format | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)`` for every record of a CSV or JSONL file (``location`` is e.g. ``"line 3"``).

    ``fmt`` defaults to :func:`file_format` of ``path``. A CSV file first yields ``("header", {column:
    column})``; a missing file raises ``FileNotFoundError``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    yield from (_iter_csv if (fmt or file_format(path)) == "csv" else _iter_jsonl)(path)


def output_format(path: str | os.PathLike[str]) -> Format:
    """The format of an output file: CSV when it ends in ``.csv``, JSONL otherwise."""
    return "csv" if Path(path).suffix.lower() == ".csv" else "jsonl"


def _text(record: dict[str, Any], column: str, where: str, allow_empty: bool = True) -> str:
    value = record.get(column)
    if value is None:
        raise ValueError(f"{where}: missing value for {column!r}")
    if not isinstance(value, str):
        raise ValueError(f"{where}: {column!r} must be a string, got {type(value).__name__} {value!r:.40}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{where}: {column!r} is empty")
    return value


def read_rows(path: str | os.PathLike[str], style: str | None = None) -> list[InputRow]:
    """Read and validate an input file (CSV or JSONL) with the columns ``source``, ``rewrite``, ``style``.

    ``style`` gives one target style for every row; it overrides a ``style`` column. Raises ``ValueError``
    naming the file, the row and the problem (missing column, missing / non-string value, empty style).
    """
    path = Path(path)
    if style is not None and not (isinstance(style, str) and style.strip()):
        raise ValueError(f"style must be a non-empty string, got {style!r}")
    needed = [c for c in INPUT_COLUMNS if not (c == "style" and style is not None)]
    rows: list[InputRow] = []
    for where, record in iter_records(path):
        if where == "header":
            missing = [c for c in needed if c not in record]
            if missing:
                found = ", ".join(repr(c) for c in record) or "none"
                raise ValueError(f"{path}: missing column(s) {', '.join(map(repr, missing))} (found: {found})"
                                 + ("; give the style with --style" if missing == ["style"] else ""))
            continue
        index = len(rows)
        loc = f"{path}, row {index} ({where})"
        missing = [c for c in needed if c not in record]
        if missing:
            raise ValueError(f"{loc}: missing column(s) {', '.join(map(repr, missing))}"
                             + ("; give the style with --style" if missing == ["style"] else ""))
        rows.append(InputRow(
            row=index,
            source=_text(record, "source", loc),
            rewrite=_text(record, "rewrite", loc),
            style=style if style is not None else _text(record, "style", loc, allow_empty=False),
            where=loc,
        ))
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
    items = list(iter_records(path, output_format(path)))
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


def _format_records(records: Sequence[dict[str, Any]], fmt: Format, header: bool,
                    kind: RecordKind = LOGPROB_RECORDS) -> str:
    if fmt == "jsonl":
        return "".join(
            json.dumps({f: _finite(r[f]) if f in kind.scores else r.get(f) for f in kind.fields},
                       ensure_ascii=False, allow_nan=False) + "\n"
            for r in records
        )
    buf = StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(kind.fields), lineterminator="\n")
    if header:
        writer.writeheader()
    for r in records:
        writer.writerow({f: ("" if math.isnan(r[f]) else repr(r[f])) if f in kind.scores
                         else _csv_extra(r.get(f)) if f in kind.extras else r[f] for f in kind.fields})
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

_INDEX = re.compile(r"(\brow |\[)(\d+)")


def _chunk_error(path: Path, err: ValueError, chunk: Sequence[InputRow]) -> ValueError:
    """Re-word a LogProb error about chunk-relative row ``i`` so that it names the input row."""

    def repl(m: re.Match[str]) -> str:
        i = int(m.group(2))
        return f"{m.group(1)}{chunk[i].row}" if i < len(chunk) else m.group(0)

    return ValueError(f"{path}: {_INDEX.sub(repl, str(err))}")


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
        for field in ("source", "rewrite", "style"):
            if record[field] != getattr(row, field):
                raise ValueError(
                    f"{out} was written for a different input: row {r} has {field} {record[field]!r:.60} in "
                    f"{out.name} but {getattr(row, field)!r:.60} in the input (use another --out, or --overwrite)"
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


def _run_file(
    input: Path,
    output: Path,
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
) -> ScoreFileResult:
    """The resumable chunked loop shared by :func:`score_file` and :func:`autorate_file`."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if max_rows is not None and max_rows < 0:
        raise ValueError(f"max_rows must be >= 0, got {max_rows}")
    out_fmt = output_format(output)
    if output.resolve() == input.resolve():
        raise ValueError(f"{output}: the output file must not be the input file")
    rows = read_rows(input, style=style)

    if overwrite and output.exists():
        output.unlink()
    done: list[dict[str, Any]] = []
    if output.exists():
        _drop_torn_tail(output)
        if output.stat().st_size > 0:
            done, torn = _read_scores(output, kind)
            if torn:  # a CSV record cut at a newline inside a quoted field: write the file again without it
                tmp = output.with_name(output.name + ".tmp")
                tmp.write_text(_format_records(done, out_fmt, out_fmt == "csv", kind), encoding="utf-8")
                os.replace(tmp, output)
    finished = _check_resume(output, done, rows)
    todo = [row for row in rows if row.row not in finished]
    if max_rows is not None:
        todo = todo[:max_rows]
    signature = done[0]["signature"] if done else None
    if not todo:
        if done and scorer is not None:
            _check_signature(output, done, scorer.signature)
        elif done:  # do not load a model just to check: compare what the options determine
            _check_settings(output, done, expected_settings)
        return ScoreFileResult(input, output, len(rows), len(finished), 0, signature)

    if scorer is None:
        scorer = make_scorer()
    signature = scorer.signature
    _check_signature(output, done, signature)

    chunks: dict[int, list[InputRow]] = {}
    for row in todo:
        chunks.setdefault(row.row // chunk_size, []).append(row)

    from tqdm.auto import tqdm

    output.parent.mkdir(parents=True, exist_ok=True)
    header = out_fmt == "csv" and not (output.exists() and output.stat().st_size > 0)
    scored = 0
    with (
        open(output, "a", encoding="utf-8", newline="") as f,
        tqdm(total=len(rows), initial=len(finished), unit="row", desc=f"styleeval {kind.name}",
             disable=not progress) as bar,
    ):
        for chunk in chunks.values():
            try:
                values = score_chunk(scorer, chunk)
            except ValueError as err:
                raise _chunk_error(input, err, chunk) from err
            records = [{"row": r.row, "source": r.source, "rewrite": r.rewrite, "style": r.style, **v,
                        "signature": signature} for r, v in zip(chunk, values)]
            f.write(_format_records(records, out_fmt, header, kind))
            f.flush()
            os.fsync(f.fileno())
            header = False
            scored += len(records)
            bar.update(len(records))
            if on_chunk is not None:
                on_chunk(records)
    return ScoreFileResult(input, output, len(rows), len(finished), scored, signature)


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
    **logprob_kwargs: Any,
) -> ScoreFileResult:
    """Score every row of ``input`` with LogProb and append the results to ``output``, resumably.

    Rows are scored ``chunk_size`` at a time (chunks are aligned to multiples of ``chunk_size`` in the
    input); each chunk is appended to ``output`` (JSONL, or CSV when it ends in ``.csv``) and flushed to disk
    before the next one starts. Rows already in ``output`` are skipped after checking that their ``source``,
    ``rewrite`` and ``style`` match the input and that their signature matches this run's, so an interrupted
    run can simply be started again.

    Args:
        input: a CSV or JSONL file with the columns ``source``, ``rewrite``, ``style`` (see :func:`read_rows`).
        output: where the records go (see the module docstring for the fields).
        model: the LogProb model (preset, Hub id, local path or model object); ignored when ``scorer`` is given.
        style: one target style for every row (overrides a ``style`` column).
        chunk_size: rows per chunk written to ``output``.
        max_rows: score at most this many new rows, then stop (the rest is scored by the next run).
        overwrite: delete ``output`` first instead of resuming.
        progress: show a tqdm progress bar over rows (on stderr).
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
        Path(input), Path(output), LOGPROB_RECORDS, style=style, chunk_size=chunk_size, max_rows=max_rows,
        overwrite=overwrite, progress=progress, scorer=scorer, make_scorer=make_scorer, score_chunk=score_chunk,
        expected_settings=_logprob_settings(model, logprob_kwargs), on_chunk=on_chunk,
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
        Path(input), Path(output), AUTORATER_RECORDS, style=style, chunk_size=chunk_size, max_rows=max_rows,
        overwrite=overwrite, progress=progress, scorer=judge, make_scorer=make_judge, score_chunk=rate_chunk,
        expected_settings=expected, on_chunk=on_chunk,
    )
