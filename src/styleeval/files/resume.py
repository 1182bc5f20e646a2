"""Resuming a record file: one writer per file (a lock), torn tails cut, and the checks that the records already there
were written for this input and with this run's whole signature."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any


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
