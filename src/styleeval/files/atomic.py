"""Writing a run's output files without ever losing the previous ones: each file is written to a temporary name in
its folder and renamed into place (``os.replace``, atomic on one file system), and a failure (a full disk, a
read-only folder) is one error naming the path, the previous file left as it was. A file so written gets the
permissions ``open()`` would give it: an existing file keeps its mode, a new one gets ``0666`` less the umask
(``0644`` under the usual umask ``022``: readable by the group in a shared folder), and a symbolic link is
written through, not replaced. Also: the check that an output is none of a run's inputs."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from styleeval.errors import UserError

WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded", errno.EROFS:
       "the file system is read-only", errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def write_error(path: Path | str, err: OSError) -> UserError:
    """A one-line error for an ``OSError`` while writing ``path``."""
    why = WHY.get(err.errno or 0, err.strerror or str(err))
    return UserError(f"cannot write {path}: {why}; the previous file (if any) is unchanged")


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file in ``path``'s folder, created as ``open(..., "w")`` creates a file (mode
    ``0666`` less the umask: the kernel applies it), or with the mode of ``path`` where it exists."""
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
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


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file: the same real path (symbolic links followed), or, where both exist, the
    same file on disk (a hard link too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output_path(output: Path, inputs: Iterable[Path | str] = (), what: str = "the output file",
                      of: str = "the input file") -> None:
    """Before any work: OUT must be creatable (no parent is a file), not a folder, and none of ``inputs`` (under
    any name: a symbolic or hard link to an input is that input). ``what`` / ``of`` name them in the error."""
    from styleeval.files.records import STDIN

    if output.is_dir():
        raise UserError(f"{output}: is a directory; --out must name a file (e.g. {output}/scores.jsonl)")
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{output}: cannot be created, {parent} is a file, not a folder")
            break
    for source in inputs:
        if str(source) != STDIN and same_file(output, source):
            same = "" if str(source) == str(output) else f" ({source})"
            raise UserError(f"{output}: {what} must not be {of}{same}")
