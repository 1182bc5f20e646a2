"""File digests behind model signatures, remembered in ``fingerprints.json`` in styleeval's cache.

A file's SHA-256 is kept under (real path, size, mtime in ns), so an unchanged file is never read twice; facts derived
from a file's bytes (a GGUF header) are kept under its digest. The cache is only a saving: an unreadable or read-only
one costs time, never a wrong number (a changed file has another size or mtime, hence another key).

>>> import os, tempfile
>>> os.environ["STYLEEVAL_CACHE"] = tempfile.mkdtemp()
>>> path = os.path.join(os.environ["STYLEEVAL_CACHE"], "weights.bin")
>>> _ = open(path, "wb").write(b"abc")
>>> file_sha256(path)[:16]
'ba7816bf8f01cfea'
>>> remembered("facts|ba7816bf", lambda: {"kind": "test"})
{'kind': 'test'}
>>> del os.environ["STYLEEVAL_CACHE"]
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from typing import Any

from styleeval.atomic import atomic_path
from styleeval.paths import cache_path

_LOCK = threading.Lock()


def cache_file() -> str:
    """``fingerprints.json`` in styleeval's cache root (read when called)."""
    return str(cache_path("fingerprints.json"))


class DigestCache:
    """The digests of ``fingerprints.json``, read once and written once (:meth:`save`) for a batch of files."""

    def __init__(self) -> None:
        self.path = cache_file()
        try:
            with open(self.path, encoding="utf-8") as f:
                entries = json.load(f)
        except (OSError, ValueError):
            entries = {}
        self.entries: dict[str, Any] = entries if isinstance(entries, dict) else {}
        self.changed = False

    def sha256(self, path: str) -> str:
        """The SHA-256 of ``path``'s bytes (hex), read only when its (path, size, mtime) is new."""
        full = os.path.realpath(path)
        stat = os.stat(full)
        key = f"{full}|{stat.st_size}|{stat.st_mtime_ns}"
        digest = self.entries.get(key)
        if not isinstance(digest, str):
            digest = self.entries[key] = sha256_of(full)
            self.changed = True
        return digest

    def remember(self, key: str, compute: Callable[[], dict[str, str]]) -> dict[str, str]:
        """What ``compute`` returns, kept under ``key`` (a key that names a file's digest)."""
        value = self.entries.get(key)
        if not isinstance(value, dict):
            value = self.entries[key] = compute()
            self.changed = True
        return value

    def save(self) -> None:
        """Write the digests back when any is new (a temporary file renamed into place; a read-only cache is fine)."""
        if not self.changed:
            return
        try:
            with atomic_path(self.path, permissions=0o600) as tmp, open(tmp, "w", encoding="utf-8") as f:
                json.dump(self.entries, f)
        except OSError:
            pass


def sha256_of(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read now in 1 MiB blocks (not remembered: :func:`file_sha256` is)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str) -> str:
    """The SHA-256 of one file (hex), remembered by (path, size, mtime)."""
    with _LOCK:
        cache = DigestCache()
        digest = cache.sha256(path)
        cache.save()
    return digest


def remembered(key: str, compute: Callable[[], dict[str, str]]) -> dict[str, str]:
    """:meth:`DigestCache.remember` on styleeval's cache, for one fact."""
    with _LOCK:
        cache = DigestCache()
        value = cache.remember(key, compute)
        cache.save()
    return value
