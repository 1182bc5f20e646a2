"""Writing a run's output files without ever losing the previous ones: each file is written to a temporary name in
its folder and renamed into place (``os.replace``, atomic on one file system), and a failure (a full disk, a
read-only folder) is one error naming the path, the previous file left as it was. A file so written gets the
permissions ``open()`` would give it: an existing file keeps its mode, a new one gets ``0666`` less the umask
(``0644`` under the usual umask ``022``: readable by the group in a shared folder), and a symbolic link is
written through, not replaced. :func:`atomic_path` gives the temporary name itself to a writer that takes a path
(a download, a figure saved by its extension). :func:`atomic_dir` does the same for a folder that is built whole (a
model, a tokenizer, NLTK's data): a temporary folder beside it, renamed into place when complete, removed when not;
another process's finished build is kept. Imports only :mod:`styleeval.errors`: every layer may use it."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
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


@contextmanager
def atomic_dir(path: Path | str, done: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """A new, empty temporary folder beside ``path`` (beside its target, when ``path`` is a symbolic link), named
    ``.<name>.<8 hex>.tmp`` and made as ``mkdir`` makes one (``0777`` less the umask), for the body to fill; when the
    body returns, renamed to ``path``; removed with what it holds when the body raises or the rename fails.

    A folder already at ``path`` when the body returns is kept, and the temporary one dropped, where ``done(path)``
    says it is complete (another process's build, finished meanwhile); any other (an older build, one cut short) is
    first moved aside and removed. Where the rename fails (another process put its folder there first), the error
    passes unless ``done(path)`` now holds. Errors pass as they are (the caller says what failed)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _mkdir_beside(target, ".tmp")
    try:
        yield tmp
        if done is not None and done(target):  # another process's finished build: kept
            return
        _remove_aside(target)
        try:
            os.replace(tmp, target)
        except OSError:
            if done is None or not done(target):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _mkdir_beside(path: Path, suffix: str) -> Path:
    """A new, empty folder in ``path``'s folder (``.<name>.<8 hex><suffix>``), made as ``mkdir`` makes one."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{suffix}")
        try:
            os.mkdir(tmp, 0o777)
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def _remove_aside(path: Path) -> None:
    """What is at ``path`` (a folder, a file, a link) renamed to a new hidden name beside it, then removed, so that
    ``path`` is free at once however long the removal takes; nothing there (or moved by another process first) is
    fine."""
    if not os.path.lexists(path):
        return
    aside = _mkdir_beside(path, ".old")
    try:
        os.replace(path, aside)  # onto the empty folder just made: a folder replaces it, a file cannot
    except FileNotFoundError:  # another process moved it first
        pass
    except (NotADirectoryError, IsADirectoryError):  # a file or a link at path: removed where it is
        os.rmdir(aside)
        os.unlink(path)
        return
    shutil.rmtree(aside, ignore_errors=True)
