"""Resuming a record file: one writer per file (a lock), torn tails cut, the checks that the records already there
were written for this input and with this run's whole signature, and the resume index that lets a run start without
reading them again.

The **resume index** (``.<OUT name>.resume.json`` beside OUT, rewritten after every chunk) records where in the input
the first row not yet in OUT starts (byte offset, line, row), how many rows OUT holds (every row of the run before
that one), OUT's signature and carried columns, and the size, modification time and inode of OUT and of the input
as they were when it was written, with a SHA-256 of OUT's last 64 KiB and of the input's 64 KiB before that row. A
run that finds both files exactly so (and the same kind of records, encoding, ``--style`` and ``--shard``) starts
reading the input at that offset: start-up time independent of OUT's size. Anything else (no index, OUT or the input
touched since, an input modified less than 2 s before the index was written, a run killed between a chunk and its
index) falls back to the full check, which reads every record once."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from styleeval.files.records import STDIN, Position


def _lock(output: Path):
    """An exclusive lock on ``output`` (a ``.lock`` file beside it) held for the whole run: a second process
    writing the same OUT gets a clear error instead of duplicated rows."""
    from filelock import FileLock, Timeout

    from styleeval.files.atomic import write_error

    lock = FileLock(str(output) + ".lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise ValueError(f"{output} is being written by another styleeval process (lock {lock.lock_file}); wait "
                         "for it to finish or use another --out") from None
    except OSError as err:  # a read-only or full folder: the lock file cannot be made
        raise write_error(lock.lock_file, err) from None
    return lock


def _existing_header(output: Path) -> list[str] | None:
    with open(output, encoding="utf-8", newline="") as f:
        return next(csv.reader(f), None)


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


def _check_signature(out: Path, done: list[dict[str, Any]], signature: str | None) -> None:
    """Every record's signature equals this run's, whole; an error names the first record and the fields that
    differ."""
    from styleeval.signature import Signature

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
            raise ValueError(
                f"{out} was written with different settings: row {record['row']} {detail} (this run: "
                f"{signature!r}; use another --out, or --overwrite)"
            )
    if done and signature is not None and "-unverified" in str(signature):
        import warnings

        warnings.warn(f"{out}: resuming with a server whose weights styleeval cannot verify (it returns no "
                      "log-probabilities, so its signature rests on its reply text alone): the rows already there may "
                      "come from other weights under the same name", stacklevel=3)


INDEX_VERSION = 1


def index_path(output: Path) -> Path:
    """Where OUT's resume index lives: ``.<OUT name>.resume.json`` in OUT's folder."""
    return output.with_name(f".{output.name}.resume.json")


@dataclass(frozen=True)
class ResumeIndex:
    """What a run needs to know of OUT to resume it without reading it: where the input's first row not in OUT
    starts (``next``), how many rows OUT holds (``finished``: every row of the run before ``next``), the signature
    of its records and the first row that has it, and the extra input columns it carries."""

    next: Position
    finished: int
    signature: str
    first_row: int
    columns: list[str]


SAMPLED_BYTES = 1 << 16
"""How much of each file the index hashes: OUT's last bytes, and the input's bytes before the row to read next."""
RACY_SECONDS = 2.0
"""An input modified this close to the moment the index was written could be modified again within the file
system's timestamp resolution without its modification time changing: such an index is not trusted."""


def _identity(path: Path | str, end: int | None = None) -> list[Any]:
    """Size, modification time, inode, and a SHA-256 of the :data:`SAMPLED_BYTES` before ``end`` (default: the end)."""
    import hashlib

    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        end = st.st_size if end is None else end
        f.seek(max(0, end - SAMPLED_BYTES))
        sample = hashlib.sha256(f.read(min(end, SAMPLED_BYTES))).hexdigest()
    return [st.st_size, st.st_mtime_ns, st.st_ino, sample]


def _settings(input: Path | str, kind: str, encoding: str, style: str | None, shard: Any) -> dict[str, Any]:
    return {"version": INDEX_VERSION, "kind": kind, "input": os.path.realpath(input), "encoding": encoding,
            "style": style, "shard": None if shard is None else str(shard)}


def write_index(output: Path, input: Path | str, index: ResumeIndex, *, kind: str, encoding: str,
                style: str | None, shard: Any) -> None:
    """Record ``index`` for OUT as it is now (after a chunk was written and flushed). Written to a temporary file
    and renamed, so a reader sees the old index or the new one; a failure to write it costs only speed."""
    if str(input) == STDIN:
        return
    import time

    data = {**_settings(input, kind, encoding, style, shard), "out_file": _identity(output),
            "input_file": _identity(input, index.next.offset), "written_ns": time.time_ns(),
            "next": list(index.next), "finished": index.finished,
            "signature": index.signature, "first_row": index.first_row, "columns": index.columns}
    path = index_path(output)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def read_index(output: Path, input: Path | str, *, kind: str, encoding: str, style: str | None,
               shard: Any) -> ResumeIndex | None:
    """OUT's resume index when it describes OUT and the input exactly as they are now (size, modification time and
    inode of both, and the same record kind, encoding, style and shard); ``None`` otherwise (then the full check
    runs)."""
    if str(input) == STDIN:
        return None
    try:
        data = json.loads(index_path(output).read_text(encoding="utf-8"))
        if ({k: data.get(k) for k in ("version", "kind", "input", "encoding", "style", "shard")}
                != _settings(input, kind, encoding, style, shard)):
            return None
        if data["out_file"] != _identity(output) or data["input_file"] != _identity(input, data["next"][0]):
            return None
        if data["input_file"][1] > data["written_ns"] - RACY_SECONDS * 1e9:
            return None
        return ResumeIndex(Position(*data["next"]), int(data["finished"]), str(data["signature"]),
                           int(data["first_row"]), list(data["columns"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
