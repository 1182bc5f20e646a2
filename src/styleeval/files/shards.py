"""Sharding a file job for job arrays, and putting the shard files back together.

``--shard K/N`` takes the input rows whose number is ``K`` modulo ``N`` (``0 <= K < N``): N jobs (a SLURM array, N
GPUs, N servers) each score a deterministic 1/N of the rows into their own file, with no coordinator. Round-robin
rows need no row count up front and give every shard the same mix of short and long rows. :func:`merge_shards`
checks that the shard files carry one signature, that no row is in two files and none is missing, and (given the
input) that every record is its input row's, and writes the records in input order: the records one unsharded run
writes, with the same text in the same order: byte for byte when styleeval's engine scored them (a row's scores
never depend on its batch-mates or chunk; tested); through a server, each score as the server computed it (a
server's sums may depend on which requests share its batch).
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from styleeval.atomic import atomic_write
from styleeval.errors import UserError
from styleeval.escaping import csv_untext
from styleeval.files.outputs import check_output_path
from styleeval.files.records import (
    INPUT_COLUMNS,
    InputRow,
    RecordKind,
    RecordReader,
    TornTail,
    format_in_batches,
    iter_records,
    iter_rows,
    iter_scores,
    kind_of,
    output_format,
)
from styleeval.files.resume import same_input


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the rows whose number is ``index`` modulo ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise UserError(f"shard {self.index}/{self.count}: K/N needs N >= 1 and 0 <= K < N (shards are "
                            f"numbered from 0, e.g. --shard $SLURM_ARRAY_TASK_ID/{max(self.count, 1)})")

    @classmethod
    def parse(cls, text: str | Shard | None) -> Shard | None:
        """``"K/N"`` (or a Shard, or ``None``) as a Shard."""
        if text is None or isinstance(text, Shard):
            return text
        try:
            index, count = (int(part) for part in str(text).split("/"))
        except ValueError:
            raise UserError(f"shard {text!r}: expected K/N, e.g. 0/4 for the first of four shards") from None
        return cls(index, count)

    def __contains__(self, row: int) -> bool:
        return row % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


class RowSet:
    """A set of row numbers (>= 0) as a bitmap: one bit a row, 12.5 MB for 10^8 rows, whatever the records hold.

    ``below=B, count=C``: every row below ``B`` that the job covers is in the set, ``C`` of them, in no memory (a
    resumed run that starts reading at row ``B``: its rows before are never asked about one by one)."""

    def __init__(self, below: int = 0, count: int = 0) -> None:
        self._bits = bytearray()
        self._below, self._below_count = below, count
        self._count = 0

    def add(self, row: int) -> None:
        """Add ``row``."""
        if row < self._below:
            return
        byte = row >> 3
        if byte >= len(self._bits):
            self._bits.extend(bytes(max(byte + 1 - len(self._bits), len(self._bits))))
        mask = 1 << (row & 7)
        if not self._bits[byte] & mask:
            self._bits[byte] |= mask
            self._count += 1

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, int) or row < 0:
            return False
        if row < self._below:
            return True
        byte = row >> 3
        return byte < len(self._bits) and bool(self._bits[byte] & (1 << (row & 7)))

    def __len__(self) -> int:
        return self._below_count + self._count

    def missing(self, total: int) -> Iterator[int]:
        """The rows below ``total`` not in the set, in order."""
        return (r for r in range(total) if r not in self)


def _ranges(rows: Sequence[int], limit: int = 8) -> str:
    """``rows`` (sorted) as short ranges: ``3, 7-9, 12 (+40 more)``."""
    parts: list[str] = []
    start = prev = None
    for r in rows:
        if prev is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = r
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    more = f" (+{len(parts) - limit} more ranges)" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


@dataclass(frozen=True)
class MergeResult:
    """What :func:`merge_shards` wrote: ``rows`` records from ``files`` into ``output``, under ``signature``."""

    output: Path
    files: tuple[Path, ...]
    rows: int
    signature: str


def merge_shards(files: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                 kind: RecordKind | None = None, total: int | None = None, input: str | os.PathLike[str] | None = None,
                 style: str | None = None, encoding: str = "utf-8") -> MergeResult:
    """Merge the output files of sharded ``score`` / ``autorate`` runs into ``output`` (JSONL, or CSV when it ends in
    ``.csv``), in input order, in bounded memory.

    Checked before anything is written: ``output`` is none of the files, nor ``input`` (under any name: links
    too); every record of every file carries one signature (the first that differs is named); no row is in two files
    (both named); no row is missing between 0 and the largest row (or ``total``, or ``input``'s row count): the
    missing rows are named, with the shard they belong to when the files are the shards ``K/N`` of one ``N``; and
    the files carry the same columns. With ``input`` (the file the shards were scored from, read in ``encoding``),
    every record's source, rewrite and style must be its input row's (the style: ``style``, the shards' ``--style``,
    when given; else the input's style column; an input without one was scored with one ``--style``, which every
    shard must share): shards of another input of the same length, or of runs with another ``--style``, are refused
    naming the row; so are shards whose carried columns (the input's other columns) are not the input's, or hold
    other values (as the shard's format writes them). ``kind``: the records' kind (default: the kind
    whose scores the first file holds, :func:`~styleeval.files.records.kind_of`).

    The merged records equal, field for field and in order, those one unsharded run writes: byte for byte when
    styleeval's engine scored them (a row's scores never depend on its batch-mates); through a server, each score as
    the server computed it. Records read
    from CSV files and written as JSONL get their JSONL types back: the known fields (``parsed``, the rating
    distributions, nulls) always; the carried columns with ``input``, whose rows give their values (``0`` stays a
    number, ``true`` a boolean, ``null`` null, a list a list). Without ``input`` a CSV cell does not say its type:
    carried columns from CSV shards are written as text, as the cells hold them (``"0"``, ``"true"``, ``""`` for a
    null, a list as its JSON text); give ``input`` for the input's types.
    """
    paths = [Path(f) for f in files]
    if not paths:
        raise UserError("no shard files to merge")
    out = Path(output)
    check_output_path(out, paths, what="the merged file", of="one of the shard files")
    reader = None if input is None else RecordReader(input, encoding=encoding)  # standard input: copied once
    carried: list[str] = []  # the input's carried columns
    if reader is not None:
        check_output_path(out, [reader.path], what="the merged file", of="the input file")
        rows, carried = _rows_and_columns(reader)
        if total is not None and total != rows:
            raise UserError(f"total={total} but {input} has {rows} rows")
        total = rows
    if kind is None:
        kind = kind_of(_keys(paths[0]))
    seen = RowSet()
    signature: str | None = None
    residues: dict[Path, set[int]] = {}
    extra: list[str] | None = None
    largest = -1
    for path in paths:
        columns = _columns(path, kind)
        if extra is None:
            extra = columns
        elif columns != extra:
            raise UserError(f"{path}: has the columns {columns} but {paths[0]} has {extra}; shards of one input "
                            "carry the same columns")
        sample: list[int] = []  # a few rows of the file: which shard it is
        for record in _records(path, kind):
            r = record["row"]
            if signature is None:
                signature = record["signature"]
            elif record["signature"] != signature:
                raise UserError(f"{path}, row {r}: signature {record['signature']!r} differs from "
                                f"{signature!r} in the files before; shards must come from one model and settings")
            if style is not None and record["style"] != style:
                raise UserError(f"{path}, row {r}: style {record['style']!r}, not {style!r} (--style): scored in "
                                "another run")
            if r in seen:
                first = next(p for p in paths if any(x["row"] == r for x in _records(p, kind)))  # found again
                raise UserError(f"row {r} is in {first} and in {path}: the shards overlap (was one shard run twice "
                                "under two names, or an unsharded file given with its shards?)")
            seen.add(r)
            if len(sample) < 64:
                sample.append(r)
            largest = max(largest, r)
        residues[path] = set(sample)
    if signature is None:
        raise UserError("the shard files hold no records")
    n = total if total is not None else largest + 1
    if total is not None and largest >= total:
        raise UserError(f"a shard file has row {largest} but the input has {total} rows")
    missing = list(seen.missing(n))
    if missing:
        raise UserError(f"rows {_ranges(missing)} ({len(missing)} of {n}) are in none of the files"
                        + _missing_shards(missing, residues, len(paths)))
    fmt = output_format(out)
    assert extra is not None

    merged = heapq.merge(*(_tagged(p, kind) for p in paths))  # (row, file, record), in row order
    records = ((record for _, _, record in merged) if reader is None
               else _same_input_rows(merged, reader, style, carried))
    atomic_write(out, lambda f: f.writelines(format_in_batches(records, fmt, kind, extra, fmt == "csv")))
    return MergeResult(out, tuple(paths), n, signature)


def _tagged(path: Path, kind: RecordKind) -> Iterator[tuple[int, str, dict[str, Any]]]:
    for record in _records(path, kind):
        yield record["row"], str(path), record


def _rows_and_columns(input: RecordReader) -> tuple[int, list[str]]:
    """How many rows ``input`` has, and the columns they carry beyond source, rewrite and style (in order of
    appearance: those a run on it writes)."""
    rows = 0
    columns: dict[str, None] = {}
    for where, record in input:
        if where != "header":
            rows += 1
            columns.update(dict.fromkeys(k for k in record if k not in INPUT_COLUMNS))
    return rows, list(columns)


def _same_input_rows(merged: Iterator[tuple[int, str, dict[str, Any]]], input: RecordReader,
                     style: str | None, columns: list[str]) -> Iterator[dict[str, Any]]:
    """The merged records (every row of ``input``, in order), each checked against its input row (its texts and
    its carried ``columns``), the carried values as the input has them (a CSV shard's cells are text; the input's
    values have their types)."""
    first = next(iter(input), ("", {}))[1]
    implied: tuple[str, str, int] | None = None  # an input without styles: the style of the run, where it was read
    rows: Iterator[InputRow] | None = None
    for r, path, record in merged:
        if rows is None:
            if style is None and "style" not in first:
                implied = (record["style"], path, r)
            rows = iter_rows(input, style=style if implied is None else implied[0])
        if implied is not None and record["style"] != implied[0]:
            raise UserError(f"{path}, row {r}: style {record['style']!r}, but {implied[1]}, row {implied[2]}: "
                            f"{implied[0]!r}: the shards were scored with different --style (merge the shards of "
                            "one run)")
        row = next(rows)
        same_input(Path(path), record, row, columns, advice="merge the shards scored from this input, or give "
                   "--style when the shards were scored with one")
        yield {**record, **{name: row.extra.get(name) for name in columns}}


def _missing_shards(missing: list[int], residues: dict[Path, set[int]], files: int) -> str:
    """Which shard the missing rows belong to, when the files look like the shards K/N of one N."""
    for count in range(files + 1, 1, -1):  # the files given plus the missing one(s)
        taken = {}
        for path, rows in residues.items():
            classes = {r % count for r in rows}
            if len(classes) != 1:
                break
            taken[path] = classes.pop()
        else:
            absent = sorted({r % count for r in missing} - set(taken.values()))
            if absent and {r % count for r in missing} <= set(absent):
                names = ", ".join(f"{k}/{count}" for k in absent)
                return f": shard {names} is missing (run it, or pass its file)"
            incomplete = sorted({r % count for r in missing} & set(taken.values()))
            if incomplete:
                files_of = [str(p) for p, k in taken.items() if k in incomplete]
                return (f": shard(s) {', '.join(f'{k}/{count}' for k in incomplete)} ({', '.join(files_of)}) are "
                        "incomplete; run them again to finish")
    return ""


def _records(path: Path, kind: RecordKind) -> Iterator[dict[str, Any]]:
    torn = TornTail()
    yield from iter_scores(path, kind, torn, seen=RowSet())
    if torn.where:
        raise UserError(f"{path}, {torn.where}: the last record is incomplete (an interrupted write); run its shard "
                        "again to finish it")


def _keys(path: Path) -> list[str]:
    """The fields of a record file's first record (a CSV file's header, its names as the input named them)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    for _, record in iter_records(path, output_format(path), strict=False):
        return [csv_untext(name) for name in record] if output_format(path) == "csv" else list(record)
    raise UserError(f"{path}: empty file")


def _columns(path: Path, kind: RecordKind) -> list[str]:
    """The extra input columns a record file carries (between ``row`` and ``source``)."""
    keys = _keys(path)
    if "row" not in keys or "source" not in keys:
        raise UserError(f"{path}: not a styleeval {kind.name} file (no row / source fields)")
    return keys[keys.index("row") + 1 : keys.index("source")]
