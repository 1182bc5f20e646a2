"""Writing a run's output files without ever losing the previous ones: each file is written to a temporary name in
its folder and renamed into place (``os.replace``, atomic on one file system), and a failure (a full disk, a
read-only folder) is one ``ValueError`` naming the path, the previous file left as it was."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded", errno.EROFS:
       "the file system is read-only", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def write_error(path: Path | str, err: OSError) -> ValueError:
    """A one-line error for an ``OSError`` while writing ``path``."""
    why = WHY.get(err.errno or 0, err.strerror or str(err))
    return ValueError(f"cannot write {path}: {why}; the previous file (if any) is unchanged")


def atomic_write(path: Path | str, write: Callable[[IO], None], mode: str = "w",
                 encoding: str | None = "utf-8") -> Path:
    """``write(file)`` into a temporary file beside ``path``, flushed and synced, then renamed to ``path``."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise write_error(path, err) from None
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding, newline=None if "b" in mode else "") \
                as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(path, err) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    """:func:`atomic_write` of a text (UTF-8)."""
    return atomic_write(path, lambda f: f.write(text))
