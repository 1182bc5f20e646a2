"""Writing a run's output files without ever losing the previous ones: each file is written to a temporary name in
its folder and renamed into place (``os.replace``, atomic on one file system), and a failure (a full disk, a
read-only folder) is one error naming the path, the previous file left as it was. A file so written gets the
permissions ``open()`` would give it: an existing file keeps its mode, a new one gets ``0666`` less the umask
(``0644`` under the usual umask ``022``: readable by the group in a shared folder), and a symbolic link is
written through, not replaced. :func:`atomic_path` gives the temporary name itself to a writer that takes a path
(a download, a figure saved by its extension). Imports only :mod:`styleeval.errors`: every layer may use it."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from styleeval.errors import UserError

WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded", errno.EROFS:
       "the file system is read-only", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def write_error(path: Path | str, err: OSError) -> UserError:
    """A one-line error for an ``OSError`` while writing ``path``."""
    why = WHY.get(err.errno or 0, err.strerror or str(err))
    return UserError(f"cannot write {path}: {why}; the previous file (if any) is unchanged")


def _create_beside(path: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new, empty temporary file in ``path``'s folder (``.<name>.<8 hex><suffix>``), created as
    ``open(..., "w")`` creates a file (mode ``0666`` less the umask: the kernel applies it), or with the mode of
    ``path`` where it exists."""
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{suffix}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            try:
                os.fchmod(fd, mode)
            except OSError:
                os.close(fd)
                tmp.unlink(missing_ok=True)
                raise
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def atomic_write(path: Path | str, write: Callable[[IO], None], mode: str = "w",
                 encoding: str | None = "utf-8") -> Path:
    """``write(file)`` into a temporary file beside ``path`` (beside its target, when ``path`` is a symbolic link),
    flushed and synced, then renamed to it; returns ``path``."""
    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_beside(target)
    except OSError as err:
        raise write_error(given, err) from None
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding, newline=None if "b" in mode else "") \
                as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise write_error(given, err) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return given


def atomic_write_text(path: Path | str, text: str) -> Path:
    """:func:`atomic_write` of a text (UTF-8)."""
    return atomic_write(path, lambda f: f.write(text))


@contextmanager
def atomic_path(path: Path | str, suffix: str = ".tmp", permissions: int | None = None) -> Iterator[Path]:
    """A new, empty temporary file beside ``path`` (beside its target, when ``path`` is a symbolic link), its name
    ending in ``suffix``, created as :func:`atomic_write` creates one or with ``permissions``, for the body to write
    by name; renamed to ``path`` when the body returns, removed when it raises. Errors pass as they are: unlike
    :func:`atomic_write`, an ``OSError`` is not made one line naming the path here (the caller says what failed)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_beside(target, suffix)
    try:
        try:
            if permissions is not None:
                os.fchmod(fd, permissions)
        finally:
            os.close(fd)
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
