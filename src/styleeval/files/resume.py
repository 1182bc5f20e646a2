"""Resuming a record file: one writer per file (a lock on its real path, taken before anything is read; a file with
hard-linked names refused, as each name would have a lock of its own), torn tails cut in bounded memory, the checks
that the records already there were written for this input (its texts and every carried column) and with this
run's whole signature, and the resume index that lets a run start without reading them again.

The **resume index** (``.<OUT name>.resume.json`` beside OUT, rewritten after every chunk) records where in the input
the first row not yet in OUT starts (byte offset, line, row), how many rows OUT holds (every row of the run before
that one), OUT's signature and carried columns, the SHA-256 of OUT's bytes (hashed as they are written) and the
SHA-256 of the input's bytes before that row (hashed by the reader as it parses them: the bytes the finished rows
came from, even if the file changed since). A run that finds both files with exactly those bytes (and the same kind
of records, encoding, ``--style`` and ``--shard``) starts reading the input at that offset, having read each file
once at disk speed instead of parsing and comparing every record (0.43 s instead of 21 s for 10^6 rows,
docs/benchmarks.md). Anything else (no index, any byte of OUT or of the input's finished part changed, a run killed
between a chunk and its index, a last input row without its newline continued since) falls back to the full check,
which reads every record once. The index is exact: it trusts the files' bytes, never their sizes or modification
times."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from styleeval.atomic import atomic_path, write_error
from styleeval.errors import UserError
from styleeval.escaping import csv_untext
from styleeval.files.records import (
    STDIN,
    InputRow,
    Position,
    _splits_on_bytes,
    as_written,
    carried_columns,
    output_format,
)
from styleeval.signature import Signature


def real_path(output: Path) -> Path:
    """OUT's real path (symbolic links followed, as ``open()`` follows them): the one name its lock, its resume index
    and its rewrites use, so that OUT written through a link and through its own name is one file to them too."""
    return Path(os.path.realpath(output))


def _lock(output: Path):
    """An exclusive lock on ``output`` (OUT's real path: a ``.lock`` file beside it), taken before anything of OUT
    or the input is read and held for the whole run: a second process writing the same OUT, under any name, gets a
    clear error instead of duplicated rows, or (started as the first one ends) reads OUT as the first one left it."""
    lock = FileLock(str(output) + ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise UserError(f"{output} is being written by another styleeval process (lock {lock.lock_file}); wait "
                        "for it to finish or use another --out") from None
    except OSError as err:  # a read-only or full folder: the lock file cannot be made
        raise write_error(lock.lock_file, err) from None
    return lock


def check_one_name(output: Path) -> None:
    """OUT (its real path) has no other name. The lock is a file beside OUT's real path, and each hard-linked name of
    one file is a real path of its own: runs writing it through two names would hold two locks and both append to
    it. So a file with more than one name is refused, naming the others found in its folder, before anything is
    read (a new OUT has one name; a name added later is refused to the next run on either)."""
    try:
        info = os.stat(output)
    except FileNotFoundError:
        return
    if info.st_nlink <= 1:
        return
    try:
        found = [str(output.with_name(entry.name)) for entry in os.scandir(output.parent)
                 if entry.name != output.name and entry.inode() == info.st_ino and entry.stat().st_dev == info.st_dev]
    except OSError:  # a folder that cannot be listed: the other names are not named
        found = []
    elsewhere = info.st_nlink - 1 - len(found)
    names = found + ([f"{elsewhere} name(s) outside {output.parent}"] if elsewhere > 0 else [])
    raise UserError(f"{output} is also named {' and '.join(names)} (hard links: one file under {info.st_nlink} "
                    "names; the lock that keeps two runs from writing one OUT is taken per name): remove the other "
                    "name(s), or use another --out")


def _existing_header(output: Path) -> list[str] | None:
    """A CSV OUT's column names, as the input named them (a header cell is escaped as every cell is)."""
    with open(output, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f), None)
    return None if header is None else [csv_untext(name) for name in header]


TAIL_BLOCK = 1 << 16
"""Bytes read at a time, backwards from OUT's end, looking for the end of its last complete record."""


def drop_torn_tail(path: Path) -> None:
    """Cut a last record that an interrupted write left without its newline (that row is scored again). Reads
    backwards from the end in blocks of :data:`TAIL_BLOCK` bytes, up to the last newline: memory independent of
    OUT's size."""
    with open(path, "rb+") as f:
        end = position = f.seek(0, os.SEEK_END)
        while position > 0:
            start = max(0, position - TAIL_BLOCK)
            f.seek(start)
            block = f.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                if start + newline + 1 < end:
                    f.truncate(start + newline + 1)
                return
            position = start
        f.truncate(0)  # not one complete record


def same_input(out: Path, record: dict[str, Any], row: InputRow, columns: list[str],
               advice: str = "use another --out, or --overwrite") -> None:
    """A record of ``out`` was written for input row ``row``: the same source, rewrite and style, and the same
    carried columns (``columns``: the input's, those a run on it writes) with the same values, as ``out``'s format
    writes them (every carried field is part of the input's identity); an error naming the row, the first field
    that differs, and ``advice``, otherwise."""
    different = f"{out} was written for a different input: row {row.row}"
    for name in ("source", "rewrite", "style"):
        if record[name] != getattr(row, name):
            raise UserError(f"{different} has {name} {record[name]!r:.60} in {out.name} but "
                            f"{getattr(row, name)!r:.60} in the input ({advice})")
    carried = carried_columns(record)
    if carried != columns:
        raise UserError(f"{different} carries the column(s) {carried} in {out.name} but the input's are "
                        f"{columns} ({advice})")
    fmt = output_format(out)
    for name in columns:
        value = row.extra.get(name)
        if not _same_carried(record[name], value, fmt):
            raise UserError(f"{different} has column {name!r} {record[name]!r:.60} in {out.name} but "
                            f"{value!r:.60} in the input ({advice})")


def _same_carried(old: Any, new: Any, fmt: str) -> bool:
    """Whether a carried value read back from OUT (``old``) is the input's ``new`` as OUT's format writes it; two
    texts (the usual case) are written alike exactly when they are equal."""
    if type(old) is str and type(new) is str:
        return old == new
    return as_written(old, fmt) == as_written(new, fmt)


def _check_signature(out: Path, done: list[dict[str, Any]], signature: str | None) -> None:
    """Every record's signature equals this run's, whole; an error names the first record and the fields that
    differ."""
    for record in done:
        if record["signature"] != signature:
            try:
                old, new = Signature.parse(record["signature"]), Signature.parse(str(signature))
                diff = [f"{k} {old.fields.get(k)!r}, this run asks for {new.fields.get(k)!r}"
                        for k in dict.fromkeys([*old.fields, *new.fields]) if old.fields.get(k) != new.fields.get(k)]
                if old.name != new.name:
                    diff.insert(0, f"name {old.name!r}, this run asks for {new.name!r}")
            except ValueError:
                diff = []
            detail = f"has {'; '.join(diff)}" if diff else f"has signature {record['signature']!r}"
            raise UserError(
                f"{out} was written with different settings: row {record['row']} {detail} (this run: "
                f"{signature!r}; use another --out, or --overwrite)"
            )
    if done and signature is not None and "-unverified" in str(signature):
        warnings.warn(f"{out}: resuming with a server whose weights styleeval cannot verify (it returns no "
                      "log-probabilities, so its signature rests on its reply text alone): the rows already there may "
                      "come from other weights under the same name", stacklevel=3)


INDEX_VERSION = 2


def index_path(output: Path) -> Path:
    """Where OUT's resume index lives: ``.<OUT name>.resume.json`` in OUT's folder (``output``: OUT's real path)."""
    return output.with_name(f".{output.name}.resume.json")


@dataclass(frozen=True)
class ResumeIndex:
    """What a run needs to know of OUT to resume it without reading its records: where the input's first row not in
    OUT starts (``next``), how many rows OUT holds (``finished``: every row of the run before ``next``), the signature
    of its records and the first row that has it, and the extra input columns it carries."""

    next: Position
    finished: int
    signature: str
    first_row: int
    columns: list[str]


HASH_BLOCK = 1 << 20
"""Bytes read at a time when hashing a file."""


def hash_file(path: Path | str, end: int | None = None) -> Any:
    """A SHA-256 object holding the hash of ``path``'s bytes up to ``end`` (default: all), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        left = end
        while left is None or left > 0:
            block = f.read(HASH_BLOCK if left is None else min(HASH_BLOCK, left))
            if not block:
                break
            digest.update(block)
            if left is not None:
                left -= len(block)
    return digest


def input_digest(input: Path | str, encoding: str) -> Any:
    """A fresh SHA-256 object for the input's reader to hash its bytes with (``None`` where the index cannot
    serve: standard input, an encoding whose lines do not end at single bytes)."""
    return None if str(input) == STDIN or not _splits_on_bytes(encoding) else hashlib.sha256()


def _ends_a_line(path: Path | str, offset: int) -> bool:
    """Whether the record before ``offset`` ends there for good: at a line end, or at the end of the file (a last
    line without its newline, which text appended since would continue)."""
    with open(path, "rb") as f:
        if offset == 0 or f.seek(0, os.SEEK_END) == offset:
            return True
        f.seek(offset - 1)
        return f.read(1) in (b"\n", b"\r")


def _settings(kind: str, encoding: str, style: str | None, shard: Any) -> dict[str, Any]:
    return {"version": INDEX_VERSION, "kind": kind, "encoding": encoding, "style": style,
            "shard": None if shard is None else str(shard)}


def write_index(output: Path, out_digest: Any, input_digest: Any, index: ResumeIndex, *, kind: str, encoding: str,
                style: str | None, shard: Any) -> None:
    """Record ``index`` for OUT as it is now (after a chunk was written and flushed), with the SHA-256 of OUT's bytes
    (``out_digest``, kept as the run writes) and of the input's bytes before ``index.next`` (``input_digest``: of
    the bytes the rows written were parsed from, not read again). Written to a temporary file and renamed, so a
    reader sees the old index or the new one; a failure to write it costs only speed."""
    data = {**_settings(kind, encoding, style, shard),
            "out_sha256": out_digest.hexdigest(), "input_sha256": input_digest.hexdigest(),
            "next": list(index.next), "finished": index.finished,
            "signature": index.signature, "first_row": index.first_row, "columns": index.columns}
    try:
        with atomic_path(index_path(output)) as tmp:
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    except OSError:
        pass


def read_index(output: Path, input: Path | str, *, kind: str, encoding: str, style: str | None,
               shard: Any) -> tuple[ResumeIndex, Any, Any] | None:
    """OUT's resume index when it describes OUT and the input exactly as they are now: OUT's bytes and the input's
    bytes before the row to read next have the SHA-256 it recorded (each file read once, at disk speed), that row
    starts a line for good, and the record kind, encoding, style and shard are this run's. Then also the SHA-256
    objects of OUT and of the input's bytes before that row, for the run to hash on from. ``None`` otherwise (then
    the full check runs). Read and written under OUT's lock only."""
    if input_digest(input, encoding) is None:
        return None
    try:
        data = json.loads(index_path(output).read_text(encoding="utf-8"))
        if {k: data.get(k) for k in ("version", "kind", "encoding", "style", "shard")} \
                != _settings(kind, encoding, style, shard):
            return None
        index = ResumeIndex(Position(*data["next"]), int(data["finished"]), str(data["signature"]),
                            int(data["first_row"]), list(data["columns"]))
        out = hash_file(output)
        if out.hexdigest() != data["out_sha256"] or os.path.getsize(input) < index.next.offset:
            return None
        before = hash_file(input, index.next.offset)
        if before.hexdigest() != data["input_sha256"] or not _ends_a_line(input, index.next.offset):
            return None  # (a last row without its newline, continued since, has its hashed bytes unchanged)
        return index, out, before
    except (OSError, ValueError, KeyError, TypeError):
        return None
