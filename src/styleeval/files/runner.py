"""The resumable file runner behind ``styleeval score`` and ``styleeval autorate``: one :class:`FileJob` per kind of
work, one loop (:func:`run_file`: a :class:`FileRun` under OUT's lock). Input and output are read as the work goes:
memory does not grow with either (:data:`READ_AHEAD` validated rows ahead, one bit per finished row).

Rows are scored in chunks of about ``flush_seconds`` of work (at least :data:`FULL_CHUNK_ROWS`, at most ``chunk_size``
rows); each chunk is appended to
OUT and flushed before the next starts. A rerun skips the rows already in OUT after checking that they were written
for this input and with this run's whole signature (also when OUT is already complete). Errors about a row
(:class:`~styleeval.errors.RowError`, a backend's :class:`~styleeval.backends.BackendError`) carry the
chunk's row number as data, mapped here to the input row; warnings about rows likewise.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from styleeval.atomic import atomic_write
from styleeval.autorater.declaration import AUTORATER
from styleeval.backends import BackendError
from styleeval.errors import RowError, RowsWarning, UserError
from styleeval.files.outputs import check_output_path
from styleeval.files.records import (
    STDIN,
    Format,
    InputRow,
    RecordKind,
    RecordReader,
    TornTail,
    _fields,
    _format_records,
    _whose,
    format_in_batches,
    iter_rows,
    iter_scores,
    output_format,
)
from styleeval.files.resume import (
    ResumeIndex,
    _check_signature,
    _existing_header,
    _lock,
    check_one_name,
    drop_torn_tail,
    hash_file,
    input_digest,
    read_index,
    real_path,
    same_input,
    write_index,
)
from styleeval.files.shards import RowSet, Shard
from styleeval.llm_scorer import LLMScorer
from styleeval.logprob.declaration import LOGPROB
from styleeval.progress import bar as progress_bar
from styleeval.run import FULL_CHUNK_ROWS, ChunkPlan, ScoringRun


@dataclass(frozen=True)
class ScoreFileResult:
    """What :func:`run_file` did: ``total`` input rows (of the shard, with ``shard``), ``skipped`` already in the
    output, ``scored`` now."""

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


@dataclass
class FileJob:
    """One kind of file work: the records it writes, how to build its scorer (anything with a ``signature``), and
    how the scorer turns a chunk of input rows into one dict of record fields per row (in order)."""

    kind: RecordKind
    make_scorer: Callable[[], Any]
    score_chunk: Callable[[Any, list[InputRow]], list[dict[str, Any]]]
    scorer: Any = None

    def get_scorer(self) -> Any:
        """The scorer, built on first use."""
        if self.scorer is None:
            self.scorer = self.make_scorer()
        return self.scorer


class _Writer:
    """Where finished records go: OUT appended in place, a temporary file that replaces OUT once the first chunk
    is safely written (``overwrite``), or standard output (``-``). No file is opened before the first write: a run
    whose first chunk fails leaves no OUT behind (nor an empty one)."""

    def __init__(self, output: Path | None, fmt: Format, header: bool, replace: bool) -> None:
        self.output, self.fmt, self.header = output, fmt, header
        self.target = output if output is None or not replace else output.with_name(output.name + ".partial")
        self.file: Any = sys.stdout if output is None else None
        if output is not None:
            output.parent.mkdir(parents=True, exist_ok=True)  # fails before any row is scored

    def _open(self) -> Any:
        assert self.output is not None and self.target is not None
        if self.target != self.output:
            self.file = open(self.target, "w", encoding="utf-8", newline="")
            os.fchmod(self.file.fileno(), os.stat(self.output).st_mode & 0o7777)  # OUT keeps its mode
        else:
            self.file = open(self.output, "a", encoding="utf-8", newline="")
        return self.file

    def write(self, text: str) -> None:
        file = self.file if self.file is not None else self._open()
        file.write(text)
        file.flush()
        if self.output is not None:
            os.fsync(file.fileno())
            if self.target != self.output:  # the first chunk of an --overwrite run is safe: it becomes OUT
                os.replace(self.target, self.output)
                self.target = self.output
        self.header = False

    @property
    def replacing(self) -> bool:
        """Whether OUT is still the old file that an ``overwrite`` writer replaces once its first chunk is written."""
        return self.target != self.output

    def size(self) -> int | None:
        """Bytes of OUT written so far (``None`` for standard output)."""
        if self.output is None:
            return None
        if self.file is None:  # nothing written yet: OUT as it is (an overwrite starts from nothing)
            return 0 if self.replacing or not self.output.exists() else self.output.stat().st_size
        return self.file.tell()

    def cut(self, size: int) -> None:
        """OUT back to its first ``size`` bytes (rows written after a point that turned out to be unsafe)."""
        if self.file is None:  # nothing written by this run
            return
        self.file.flush()
        os.ftruncate(self.file.fileno(), size)
        self.file.seek(size)
        os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.output is not None and self.file is not None:
            try:
                self.file.close()
            except OSError:  # a full disk fails the last flush too; what was written before stays
                pass
            if self.target != self.output:  # nothing was written: OUT stays as it was
                self.target.unlink(missing_ok=True)


READ_AHEAD = 10_000
"""Input rows read and validated ahead of the scoring: an input of up to this many rows is checked whole before its
first row is scored (a bad row is an error before any work); memory holds about this many rows whatever the input's
size."""


class _ReadAhead:
    """The input rows, read and validated up to ``size`` rows ahead of the one handed out."""

    def __init__(self, rows: Iterator[InputRow], size: int, first: int = 0) -> None:
        self._rows = rows
        self.buffer: deque[InputRow] = deque(itertools.islice(rows, size))
        self.exhausted = len(self.buffer) < size
        self.read = first + len(self.buffer)  # rows of the file read so far (``first`` before the reading began)

    def columns(self) -> list[str]:
        """The extra input columns of the rows read so far, in order of appearance."""
        return list(dict.fromkeys(k for r in self.buffer for k in r.extra))

    def __iter__(self) -> Iterator[InputRow]:
        while self.buffer:
            yield self.buffer.popleft()
            if not self.exhausted:
                row = next(self._rows, None)
                if row is None:
                    self.exhausted = True
                else:
                    self.buffer.append(row)
                    self.read += 1


@dataclass
class _Done:
    """What OUT already holds: its rows (a bitmap), the first record of each signature (in file order), and where an
    incomplete last record is (``None``: none)."""

    rows: RowSet
    by_signature: dict[str, dict[str, Any]]
    torn: str | None = None


PROBE_SECONDS = 60.0
"""During a file job the backend is probed again at least this often (and at the end): a server redeployed with
other weights mid-run stops the job."""


@dataclass(frozen=True)
class _Checkpoint:
    """The last point the weights were verified (:meth:`FileRun._verify_weights`)."""

    size: int | None  # OUT's size when the weights were last verified
    first_row: int | None  # the first input row written after it
    time: float


def run_file(
    job: FileJob,
    input: Path | str,
    output: Path | str,
    *,
    style: str | None = None,
    chunk_size: int = 256,
    max_rows: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    on_chunk: Callable[[list[dict[str, Any]]], None] | None = None,
    encoding: str = "utf-8",
    flush_seconds: float = 5.0,
    shard: Shard | str | None = None,
) -> ScoreFileResult:
    """Run ``job`` over every row of ``input`` (of ``shard``, ``"K/N"``, when given) into ``output``, resumably (see
    the module docstring)."""
    if chunk_size < 1:
        raise UserError(f"chunk_size must be positive, got {chunk_size}")
    if max_rows is not None and max_rows < 0:
        raise UserError(f"max_rows must be >= 0, got {max_rows}")
    if flush_seconds <= 0:
        raise UserError(f"flush_seconds must be positive, got {flush_seconds}")
    options = RunOptions(style=style, chunk_size=chunk_size, max_rows=max_rows, overwrite=overwrite,
                         progress=progress, on_chunk=on_chunk, encoding=encoding, flush_seconds=flush_seconds,
                         shard=Shard.parse(shard))
    out_path = None if str(output) == STDIN else Path(output)
    lock = None
    if out_path is not None:
        check_output_path(out_path, [input])
        out_path = real_path(out_path)  # one file, one lock and one index, whatever name it is written through
        lock = _lock(out_path)  # before anything of OUT or the input is read
    try:
        return FileRun(job, input, output, out_path, options).score()
    finally:
        if lock is not None:  # the lock file goes with the run (removed while still held: no one else took it)
            Path(lock.lock_file).unlink(missing_ok=True)
            lock.release()


@dataclass(frozen=True)
class RunOptions:
    """How :func:`run_file` goes through a file, whatever the job: its keyword arguments once checked (``shard``
    parsed)."""

    style: str | None
    chunk_size: int
    max_rows: int | None
    overwrite: bool
    progress: bool
    on_chunk: Callable[[list[dict[str, Any]]], None] | None
    encoding: str
    flush_seconds: float
    shard: Shard | None


class FileRun:
    """One run of a :class:`FileJob` over ``input`` into OUT (``out``: its real path; ``None``: standard output)
    once OUT's lock is held: built, it knows what OUT already holds (from OUT's resume index, else OUT's records
    checked against the input, a torn tail cut) and has checked the signature; :meth:`score` scores the rows left.

    It holds the input's ``reader`` and read-ahead (``ahead``), the rows ``done`` before the run, the ``writer`` OUT is
    written through (opened with the first chunk), OUT's running SHA-256 ``digest`` (``None`` where no resume index
    is kept: standard input or output) and the ``checkpoint`` where the weights were last verified.

    It is its :class:`~styleeval.run.ScoringRun`'s sink (:meth:`holds`, :meth:`write`): the run cuts the rows into
    chunks and scores them, FileRun writes each chunk's records and keeps the resume index."""

    def __init__(self, job: FileJob, input: Path | str, output: Path | str, out: Path | None,
                 options: RunOptions) -> None:
        self.job, self.input, self.output, self.out, self.options = job, input, output, out, options
        if out is not None:
            check_one_name(out)
        self.fmt: Format = "jsonl" if out is None else output_format(out)
        self.settings = {"kind": job.kind.name, "encoding": options.encoding, "style": options.style,
                         "shard": options.shard}  # what the resume index is written for
        self.resumable = out is not None and out.exists() and not options.overwrite and out.stat().st_size > 0
        index = self._open_input()
        if index is None and self.resumable:
            self._cut_torn_tail()
        self._check_csv_header()
        self.done = self._done_from_index(index) if index is not None else self._check_done()
        self.signature = self._checked_signature()
        self.scorer = job.get_scorer() if self.signature is not None else None
        if self.digest is None and out is not None and self.reader.digest is not None:
            self.digest = hash_file(out) if self.resumable else hashlib.sha256()  # OUT as the run starts
        self.writer: _Writer | None = None
        self.bar: Any = None
        self.checkpoint = _Checkpoint(None, None, time.monotonic())
        self.total = 0 if self.reader.start is None else _shard_size(self.reader.start.record, options.shard)
        self.taken = self.scored = 0  # rows handed out to score, rows written
        self.first_row = next(iter(self.done.by_signature.values()))["row"] if self.done.by_signature else None
        self.last_read: InputRow | None = None

    def _open_input(self) -> ResumeIndex | None:
        """OUT's resume index when it holds (then OUT's running hash comes with it), and the input's reader and
        read-ahead: from the index's row on, else from the first row, hashing every byte it reads where an index can
        be kept (what the rows written were parsed from). The output's extra columns: the index's, else those of
        the rows read ahead."""
        found = read_index(self.out, self.input, **self.settings) if self.resumable else None
        index, self.digest, start_digest = found if found is not None else (None, None, None)
        if index is None:
            start_digest = None if self.out is None else input_digest(self.input, self.options.encoding)
        self.reader = RecordReader(self.input, encoding=self.options.encoding,
                                   start=index.next if index is not None else None, digest=start_digest)
        self.ahead = _ReadAhead(iter_rows(self.reader, style=self.options.style), READ_AHEAD,
                                index.next.record if index is not None else 0)
        self.columns = index.columns if index is not None else self.ahead.columns()
        return index

    def _cut_torn_tail(self) -> None:
        """OUT without an incomplete last record (a crash mid-write); an OUT left empty starts afresh."""
        drop_torn_tail(self.out)
        self.resumable = self.out.stat().st_size > 0

    def _check_csv_header(self) -> None:
        """A CSV OUT resumed has exactly the columns this run writes."""
        fields = _fields(self.job.kind, self.columns)
        if self.resumable and self.fmt == "csv" and _existing_header(self.out) != fields:
            header = _existing_header(self.out)
            whose = _whose([] if header is None else header, self.job.kind)
            raise UserError(f"{self.out} has the columns {header} but this run writes {fields} (use another --out, "
                            f"or --overwrite{'; ' + whose if whose else ''})")

    @staticmethod
    def _done_from_index(index: ResumeIndex) -> _Done:
        """OUT and the input are as the index says: its finished rows, read on from its row."""
        return _Done(RowSet(index.next.record, index.finished),
                     {index.signature: {"row": index.first_row, "signature": index.signature}})

    def _check_done(self) -> _Done:
        """OUT's finished rows, every record checked against the input (nothing when OUT starts afresh); a CSV
        record cut at a newline inside a quoted field is dropped by writing OUT again without it."""
        if not self.resumable:
            return _Done(RowSet(), {})
        # a reader of its own, that hashes nothing; standard input is copied once, by ``self.reader``
        check = self.reader if self.reader.digest is None else RecordReader(self.input, encoding=self.options.encoding)
        done = _check_resume(self.out, self.job.kind, lambda: iter_rows(check, style=self.options.style),
                             self.options.shard, self.columns)
        if done.torn:
            _rewrite_complete_records(self.out, self.job.kind, self.fmt, self.columns)
        return done

    def _checked_signature(self) -> Any:
        """This run's signature (``None`` when OUT holds nothing and no row is to be scored: no scorer is built),
        checked against the signatures OUT holds, also when nothing is left to do."""
        busy = len(self.done.rows) or self.options.max_rows != 0
        signature = self.job.get_scorer().signature if busy else None
        _check_signature(self.out if self.out is not None else Path("<stdout>"),
                         list(self.done.by_signature.values()), signature)
        return signature

    def score(self) -> ScoreFileResult:
        """Score the rows not yet in OUT in chunks sized to about ``flush_seconds`` of work each (at least
        :data:`FULL_CHUNK_ROWS`, at most ``chunk_size`` rows), each written and flushed before the next starts, then
        the resume index kept when OUT holds exactly the run's rows up to the chunk's last; and once more at the end
        when OUT holds every row (a complete OUT checked in full is not read again by the next run). The input is
        read as the work goes; OUT is opened with the first chunk."""
        opts = self.options
        fill = min(opts.chunk_size, FULL_CHUNK_ROWS)
        run = ScoringRun(self._score, self, ChunkPlan(opts.flush_seconds, opts.chunk_size, floor=fill, first=fill),
                         shard=opts.shard, number=lambda group: group[0].row)  # rows alone: row j is shard j mod N's
        try:
            left = run.pending(self._counted(run.select([row] for row in self._read())))  # each row its own group
            run.score_chunks(self._at_most_max_rows(left))
            if self.writer is not None:
                self._verify_weights()  # and once more at the end
            self._keep_final_index()
        finally:
            if self.bar is not None:
                self.bar.close()
            if self.writer is not None:
                self.writer.close()
        return ScoreFileResult(Path(str(self.input)), Path(str(self.output)), self.total, len(self.done.rows),
                               self.scored, self.signature)

    def _read(self) -> Iterator[InputRow]:
        """The input's rows from the run's start (the resume index's row, else the first), read as the work goes; the
        input is read on to its end all the same: every row of the shard is validated and counted (:meth:`_counted`)."""
        for row in self.ahead:
            self.last_read = row
            yield row

    def _counted(self, groups: Iterable[list[InputRow]]) -> Iterator[list[InputRow]]:
        """The shard's rows, each counted in :attr:`total` and checked: no column the output lacks."""
        known = set(self.columns)
        for group in groups:
            self.total += 1
            if not known.issuperset(group[0].extra):
                raise _new_columns(group[0], self.columns, None if self.reader.start is None else self.out)
            yield group

    def _at_most_max_rows(self, groups: Iterable[list[InputRow]]) -> Iterator[list[InputRow]]:
        """The rows left to score, at most ``max_rows`` of them (the rest read, counted and checked all the same)."""
        max_rows = self.options.max_rows
        for group in groups:
            if max_rows is None or self.taken < max_rows:
                self.taken += 1
                yield group

    def holds(self, row: InputRow) -> bool:
        """Whether OUT holds ``row`` already (the run's :class:`~styleeval.run.Sink`: the run skips it)."""
        return row.row in self.done.rows

    def _score(self, chunk: list[InputRow]) -> list[dict[str, Any]]:
        """The run's scoring of ``chunk``: OUT's writer opened before the first chunk (a folder that cannot be made
        fails before any row is scored), then :meth:`_score_chunk`."""
        if self.writer is None:
            self._open_writer()
        return self._score_chunk(chunk)

    def write(self, chunk: list[InputRow], values: Sequence[dict[str, Any]]) -> None:
        """The run's :class:`~styleeval.run.Sink`: append ``chunk``'s records to OUT, keep the index, move the bar,
        probe the weights when due."""
        records = self._records(chunk, values)
        self._write(records)
        if self.first_row is None:
            self.first_row = chunk[0].row
        self._keep_index_after(chunk[-1])
        if self.checkpoint.first_row is None:
            self.checkpoint = _Checkpoint(self.checkpoint.size, chunk[0].row, self.checkpoint.time)
        self.bar.total = self._estimated_total()
        self.bar.update(len(records))
        if time.monotonic() - self.checkpoint.time >= PROBE_SECONDS:
            self._verify_weights()
        if self.options.on_chunk is not None:
            self.options.on_chunk(records)

    def _open_writer(self) -> None:
        """OUT's writer (appended to, or replacing OUT with ``overwrite``; a CSV header where OUT starts afresh), the
        weights' checkpoint at OUT's size now, and the progress bar."""
        out, opts = self.out, self.options
        fresh = out is None or opts.overwrite or not out.exists() or out.stat().st_size == 0
        self.writer = _Writer(out, self.fmt, header=self.fmt == "csv" and fresh,
                          replace=opts.overwrite and out is not None and out.exists())
        self.checkpoint = _Checkpoint(self.writer.size(), None, time.monotonic())
        self.bar = progress_bar(total=self._estimated_total(), initial=len(self.done.rows), unit="row",
                                desc=f"styleeval {self.job.kind.name}", leave=True, progress=opts.progress)

    def _score_chunk(self, chunk: list[InputRow]) -> list[dict[str, Any]]:
        """The job's fields for each row of ``chunk``; an error or a warning about a chunk row names its input row."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                values = self.job.score_chunk(self.scorer, chunk)
            except (RowError, BackendError) as err:
                raise _input_row_error(self.input, err, chunk) from None
        for w in caught:
            message = w.message
            if isinstance(message, RowsWarning):
                message = message.mapped(lambda i, chunk=chunk: chunk[i].row)
            warnings.warn_explicit(message, w.category, w.filename, w.lineno)
        return values

    def _records(self, chunk: list[InputRow], values: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The output records of ``chunk``: each row's number, carried columns and texts, its fields, the signature."""
        return [{"row": r.row, **r.extra, "source": r.source, "rewrite": r.rewrite, "style": r.style,
                 **v, "signature": self.signature} for r, v in zip(chunk, values, strict=True)]

    def _write(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` to OUT, flushed and synced, and to OUT's running hash; a failed write says what OUT
        holds."""
        assert self.writer is not None
        text = _format_records(records, self.fmt, self.writer.header, self.job.kind, self.columns)
        try:
            self.writer.write(text)
        except OSError as err:
            raise _write_error(self.out, err, self._written(), self.writer.replacing) from None
        if self.digest is not None:
            self.digest.update(text.encode("utf-8"))
        self.scored += len(records)

    def _written(self) -> int:
        """Rows in OUT: those done before the run and those it wrote."""
        return len(self.done.rows) + self.scored

    def _keep_index_after(self, last: InputRow) -> None:
        """The resume index at the row after ``last`` (just written), when OUT holds every row of the shard up to
        it (none after it)."""
        if last.end is not None and self._written() == _shard_size(last.row + 1, self.options.shard):
            self._keep_index(last.end_digest,
                             ResumeIndex(last.end, self._written(), self.signature, self.first_row, self.columns))

    def _keep_final_index(self) -> None:
        """The resume index at the input's end, when OUT holds every row of the input (of the shard)."""
        last = self.last_read
        if (self.signature is not None and self.first_row is not None and last is not None and last.end is not None
                and self.ahead.exhausted and self._written() == self.total):
            self._keep_index(last.end_digest, ResumeIndex(last.end, self.total, str(self.signature), self.first_row,
                                                          self.columns))

    def _keep_index(self, input_digest: Any, index: ResumeIndex) -> None:
        """Write the resume index (where one is kept: not for standard input or output)."""
        if self.digest is not None:
            write_index(self.out, self.digest, input_digest, index, **self.settings)

    def _estimated_total(self) -> int | None:
        """The rows of the input (of the shard): counted once it is read to its end, else estimated from the
        share of its bytes read (``None`` where that is unknown)."""
        shard = self.options.shard
        if self.ahead.exhausted:
            return _shard_size(self.ahead.read, shard)
        fraction = self.reader.fraction_read
        return _shard_size(int(self.ahead.read / fraction), shard) if fraction else None

    def _verify_weights(self) -> None:
        """Probe the scorer's backend again; when its signature changed, cut OUT back to the last verified point and
        stop, naming the first row after it (those rows may come from either weights)."""
        backend = getattr(self.scorer, "backend", None)
        if backend is None:
            return
        backend.verify_identity()
        now = str(self.scorer.signature)
        if now == str(self.signature):
            self.checkpoint = _Checkpoint(self.writer.size(), None, time.monotonic())
            return
        checked = self.checkpoint
        where = "" if checked.first_row is None else f" from input row {checked.first_row} on"
        if checked.size is not None and checked.first_row is not None:
            self.writer.cut(checked.size)
            kept = (f"the rows written{where} were removed from {self.out} (they may come from either model), those "
                    "before kept")
        else:
            kept = f"the rows{where} may come from either model"
        raise UserError(f"the model behind the backend changed during this run (signature {self.signature} is now "
                        f"{now}): {kept}; check which model you want, then run again (a new --out for the new model)")


def _check_resume(out: Path, kind: RecordKind, input_rows: Callable[[], Iterator[InputRow]],
                  shard: Shard | None, columns: list[str]) -> _Done:
    """Stream OUT's records against the input: no row twice, every row in the input (and in ``shard``) with the
    same source, rewrite and style, and the input's carried ``columns`` with the same values. Records in input order
    (as every run writes them) are checked in one pass over the input, in memory independent of both files; others
    are collected and checked in a second pass."""
    finished = RowSet()
    by_signature: dict[str, dict[str, Any]] = {}
    rows = input_rows()
    current: InputRow | None = None  # the input row at the reading position
    read = 0
    late: dict[int, dict[str, Any]] = {}
    torn = TornTail()
    for record in iter_scores(out, kind, torn, seen=finished):  # a row twice is an error there
        r = record["row"]
        if r < 0:
            read += sum(1 for _ in rows)
            raise _other_input(out, r, read)
        if shard is not None and r not in shard:
            raise UserError(f"{out} has row {r}, which is not in shard {shard} (row number modulo {shard.count} is "
                            f"{r % shard.count}): it was written by another shard or without --shard (use the "
                            "shard's own --out, or --overwrite)")
        by_signature.setdefault(record["signature"], record)
        if current is not None and r < current.row:
            late[r] = record
            continue
        while current is None or current.row < r:
            current = next(rows, None)
            if current is None:
                raise _other_input(out, r, read)
            read += 1
        same_input(out, record, current, columns)
    if late:
        for row in input_rows():
            record = late.pop(row.row, None)
            if record is not None:
                same_input(out, record, row, columns)
            if not late:
                break
    return _Done(finished, by_signature, torn.where)


def _new_columns(row: InputRow, columns: Sequence[str], resumed: Path | None) -> UserError:
    """The error for an input row with a column that the output's ``columns`` lack: fixed by the first
    :data:`READ_AHEAD` rows, or (``resumed``: OUT, resumed from its index) by OUT's records."""
    new = ", ".join(repr(c) for c in row.extra if c not in columns)
    if resumed is not None:
        return UserError(f"{row.where}: column(s) {new} are not among the columns {list(columns)} that the records "
                         f"of {resumed} carry: {resumed} was written for a different input (use another --out, or "
                         "--overwrite)")
    return UserError(f"{row.where}: column(s) {new} first appear after the first {READ_AHEAD} rows, which fixed the "
                     "output's columns; give every row the same fields (null where empty)")


def _other_input(out: Path, row: int, size: int) -> UserError:
    return UserError(f"{out} was written for a different input: it has row {row} but the input has {size} rows "
                     "(use another --out, or --overwrite)")


def _rewrite_complete_records(out: Path, kind: RecordKind, fmt: Format, extra_columns: Sequence[str]) -> None:
    """OUT written again with its complete records only (streamed, in batches; renamed into place)."""
    atomic_write(out, lambda f: f.writelines(format_in_batches(iter_scores(out, kind, TornTail()), fmt, kind,
                                                               extra_columns, fmt == "csv")))


def _input_row_error(input: Path | str, err: RowError | BackendError, chunk: Sequence[InputRow]) -> Exception:
    """The error of chunk row ``err.row`` re-addressed to its input row (the data, never the message text)."""
    if err.row is None or not 0 <= err.row < len(chunk):
        return err
    row = chunk[err.row]
    if isinstance(err, RowError):
        return err.at(row.row, f"{'<stdin>' if str(input) == STDIN else input}: row {row.row}")
    return err.at(row.row)


def _shard_size(rows: int, shard: Shard | None) -> int:
    """How many of ``rows`` input rows are in ``shard``."""
    if shard is None:
        return rows
    return max(0, (rows - shard.index + shard.count - 1) // shard.count)


def _write_error(out: Path | None, err: OSError, kept: int, replacing: bool) -> UserError:
    """A failed write of OUT, saying what OUT holds now: the rows written before, or (``replacing``: an
    ``--overwrite`` run whose first chunk did not get written) the old OUT, unchanged."""
    what = "the disk is full" if err.errno in (errno.ENOSPC, errno.EDQUOT) else (err.strerror or str(err))
    if replacing:
        return UserError(f"{out}: cannot write ({what}); {out} is kept unchanged (--overwrite replaces it only once "
                         "the first chunk of new rows is written, and none was): make room and run the same command "
                         "again")
    return UserError(f"{out or '<stdout>'}: cannot write ({what}); the {kept} rows written before are safe there, "
                     "nothing finished is lost: make room and run the same command again to continue")


def score_file(input: str | os.PathLike[str], output: str | os.PathLike[str], model: Any = None, *,
               scorer: Any = None, chunk_size: int = 256, **options: Any) -> ScoreFileResult:
    """Score every row of ``input`` with LogProb and append the results to ``output``, resumably: :func:`scorer_file`
    of :data:`~styleeval.logprob.declaration.LOGPROB` (its records: :data:`~styleeval.files.records.LOGPROB_RECORDS`).

    ``scorer``: an existing :class:`styleeval.LogProb` to use instead of loading ``model``; ``options``: the run's
    (``style``, ``max_rows``, ``overwrite``, ``progress``, ``on_chunk``, ``encoding``, ``flush_seconds``, ``shard``:
    see :func:`scorer_file`) and :class:`styleeval.LogProb`'s (``base_url``, ``device``, ``dtype``,
    ``batch_tokens``, ``end_of_turn``, ``on_overflow``, ...).
    """
    return scorer_file(LOGPROB, input, output, model, scorer=scorer, chunk_size=chunk_size, **options)


def autorate_file(input: str | os.PathLike[str], output: str | os.PathLike[str], model: Any = None, *,
                  judge: Any = None, chunk_size: int = 64, **options: Any) -> ScoreFileResult:
    """Rate every row of ``input`` with :class:`styleeval.Autorater` and append the results to ``output``, resumably:
    :func:`scorer_file` of :data:`~styleeval.autorater.declaration.AUTORATER`, the loop of :func:`score_file`.
    Records have ``meaning`` and ``style_rating`` (null where paper mode could not read a rating: the authors' mean
    fallback depends on which rows are averaged, so the file keeps the raw ratings;
    :func:`styleeval.autorater.rater.fill_unparsed_with_mean` applies it over a whole set), ``parsed``, ``reply``
    (paper mode) and ``meaning_probs`` / ``style_probs`` (expected mode), and ``signature``.

    ``model``: the judge (preset, Hub id, local path, model object, or the served model name with ``base_url``);
    ``judge``: an existing :class:`styleeval.Autorater` to use instead of building one (then ``model`` and the
    autorater options must be left out); ``options``: the run's, as for :func:`score_file`, and
    :class:`styleeval.Autorater`'s (``mode``, ``prompt``, ``parser``, ``base_url``, ``device``, ``dtype``,
    ``seed``...).
    """
    return _declared_file(AUTORATER, "judge", judge, input, output, model, chunk_size=chunk_size, **options)


def scorer_file(
    declared: LLMScorer,
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    model: Any = None,
    *,
    style: str | None = None,
    chunk_size: int | None = None,
    max_rows: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    scorer: Any = None,
    on_chunk: Callable[[list[dict[str, Any]]], None] | None = None,
    encoding: str = "utf-8",
    flush_seconds: float = 5.0,
    shard: Shard | str | None = None,
    **options: Any,
) -> ScoreFileResult:
    """Score every row of ``input`` with the LLM scorer ``declared`` (:class:`~styleeval.llm_scorer.LLMScorer`:
    :data:`~styleeval.logprob.declaration.LOGPROB`, :data:`~styleeval.autorater.declaration.AUTORATER`) and append its
    records (:meth:`~styleeval.files.records.RecordKind.of`) to ``output``, resumably: :func:`score_file` and
    :func:`autorate_file` are this function of LogProb and of the autorater.

    Rows are scored in chunks of about ``flush_seconds`` of work (at least 32 rows, at most ``chunk_size``); each
    chunk is appended to ``output`` (JSONL, or CSV when it ends in ``.csv``) and flushed to disk before the next one starts,
    and the progress bar moves with it. Rows already in ``output`` are skipped after checking that their
    ``source``, ``rewrite`` and ``style`` match the input and that their signature equals this run's (also when the
    file is complete), so an interrupted run can simply be started again. Scores do not depend on the chunking
    beyond float32 rounding. A lock (``output + ".lock"``) keeps a second process from writing the same file.

    Args:
        input: a CSV or JSONL file with the columns ``source``, ``rewrite``, ``style`` (see
            :func:`~styleeval.files.records.read_rows`); ``-``: standard input. Other columns are carried through.
        output: where the records go; ``-``: JSONL on stdout.
        model: the scorer's model (preset, Hub id, local path, model object; the served name with ``base_url``);
            with ``scorer`` it and every option of the scorer must be left out (they belong to the scorer).
        style: one target style for every row (overrides a ``style`` column).
        chunk_size: at most this many rows per chunk written to ``output`` (default: its command's, 256 for LogProb,
            64 for the autorater).
        max_rows: score at most this many new rows, then stop (the rest is scored by the next run).
        overwrite: start ``output`` afresh; the old file is replaced only once the first new chunk is written.
        progress: show a tqdm progress bar over rows (on stderr).
        scorer: an existing scorer (a :class:`styleeval.LogProb`...) to use instead of loading ``model``.
        on_chunk: called with the records of each chunk after they are written.
        encoding: the input file's encoding (default UTF-8).
        flush_seconds: the work per chunk aimed at (seconds).
        shard: ``"K/N"`` (or a :class:`~styleeval.files.shards.Shard`): only the input rows whose number is K
            modulo N (for job arrays; :func:`~styleeval.files.shards.merge_shards` puts the files together).
        **options: passed to ``declared.make`` (:class:`styleeval.LogProb`: ``base_url``, ``device``, ``dtype``,
            ``batch_tokens``, ``end_of_turn``, ``on_overflow``, ...).
    """
    return _declared_file(declared, "scorer", scorer, input, output, model, style=style, chunk_size=chunk_size,
                          max_rows=max_rows, overwrite=overwrite, progress=progress, on_chunk=on_chunk,
                          encoding=encoding, flush_seconds=flush_seconds, shard=shard, **options)


def _declared_file(declared: LLMScorer, given_as: str, given: Any, input: str | os.PathLike[str],
                   output: str | os.PathLike[str], model: Any, /, *, style: str | None = None,
                   chunk_size: int | None = None, max_rows: int | None = None, overwrite: bool = False,
                   progress: bool = True, on_chunk: Callable[[list[dict[str, Any]]], None] | None = None,
                   encoding: str = "utf-8", flush_seconds: float = 5.0, shard: Shard | str | None = None,
                   **options: Any) -> ScoreFileResult:
    """:func:`scorer_file` with the given scorer ``given`` named ``given_as`` (``judge`` for :func:`autorate_file`):
    the caller's ``scorer=`` stays one of ``options``, refused as every option the scorer does not take."""
    _given_or_options(given_as, given, model, options)
    job = FileJob(RecordKind.of(declared), lambda: declared.make(model, **{"progress": False, **options}),
                  lambda built, chunk: [declared.record(row) for row in declared.rows(built, *_texts(chunk))], given)
    return run_file(job, input, output, style=style,
                    chunk_size=declared.command.chunk_size if chunk_size is None else chunk_size, max_rows=max_rows,
                    overwrite=overwrite, progress=progress, on_chunk=on_chunk, encoding=encoding,
                    flush_seconds=flush_seconds, shard=shard)


def _given_or_options(what: str, given: Any, model: Any, options: dict[str, Any]) -> None:
    """A scorer object and options for building one are not given together (the options would be ignored)."""
    if given is None:
        return
    named = [k for k, v in {"model": model, **options}.items() if v is not None]
    if named:
        raise UserError(f"{', '.join(named)}: a {what} is given, and these belong to it; leave them out")


def _texts(chunk: list[InputRow]) -> tuple[list[str], list[str], list[Any]]:
    """The sources, rewrites and styles of ``chunk``'s rows: what a scorer is called with."""
    return [r.source for r in chunk], [r.rewrite for r in chunk], [r.style for r in chunk]
