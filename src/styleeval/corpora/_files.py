"""Locating, downloading and checksumming the source files of the corpora.

Every source file is addressed by ``(Source, path)`` where ``path`` is its path inside the source
repository. With a local mirror (``data_dir=`` or ``$STYLEEVAL_DATA_DIR``) the file is read from
``<mirror>/<source.folder>/<path>`` and nothing is downloaded; otherwise it is downloaded once from
``https://raw.githubusercontent.com/<repo>/<commit>/<path>`` into
``<cache>/corpora/<source.folder>/<commit>/<path>`` (the cache root: :mod:`styleeval.paths`).
Either way the file is checked against its pinned checksum before it is parsed. Downloads go through urllib3
(:mod:`styleeval.http_pools`: proxies from the environment, certificates verified), retried on connection errors,
429 and 5xx; a body shorter than its ``Content-Length`` is an error, never a file.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from styleeval.atomic import atomic_path
from styleeval.corpora._checksums import EXTRA_SHA256, GIT_BLOB_SHA1, SHA256
from styleeval.errors import UserError
from styleeval.paths import cache_path
from styleeval.progress import bar as progress_bar

ENV_DATA_DIR = "STYLEEVAL_DATA_DIR"
DOWNLOAD_TIMEOUT = 60.0
"""Seconds to connect, and between two reads of a download."""
DOWNLOAD_RETRIES = 3
OFFLINE_ADVICE = (f"to use the corpora without the network, point --data-dir (data_dir= in Python) or ${ENV_DATA_DIR} "
                  "at a local copy laid out like the download (e.g. ../shared/data on this project's machines)")
"""Said by a failed download: it only happens where neither ``data_dir`` nor ``$STYLEEVAL_DATA_DIR`` names a mirror."""


class CorpusError(UserError):
    """A source file is missing, corrupted or malformed.

    The message names the file, the line (when the problem is in one row) and the URL the file comes from.
    """

    def __init__(self, message: str, *, file: str | os.PathLike[str], url: str, line: int | None = None,
                 advice: str = ""):
        self.reason = message
        """What is wrong, without the file and the URL (a one-line summary names the corpus instead)."""
        self.file = str(file)
        self.url = url
        self.line = line
        self.advice = advice
        """What to do about it (``""``: nothing beyond the message), after the file and the URL."""
        where = f"{self.file}, line {line}" if line is not None else self.file
        super().__init__(f"{message} [file: {where}; source: {url}]" + (f"; {advice}" if advice else ""))


class ChecksumError(CorpusError):
    """A source file does not have its pinned size or checksum."""


class MissingFileError(CorpusError, FileNotFoundError):
    """A source file is absent from the local mirror (or could not be downloaded)."""


class MissingMirrorError(MissingFileError):
    """The local data mirror named by ``data_dir`` or ``$STYLEEVAL_DATA_DIR`` is not a directory."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        self.reason, self.file, self.url, self.line = reason or message, "", "", None
        ValueError.__init__(self, message)


@dataclass(frozen=True)
class Source:
    """A public GitHub repository pinned at one commit, mirrored under ``folder``."""

    folder: str
    repo: str
    commit: str

    def url(self, path: str) -> str:
        """The raw download URL of ``path`` at the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{path}"


def local_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The local mirror to read from: ``data_dir`` if given, else ``$STYLEEVAL_DATA_DIR``, else None (download).

    Raises :class:`MissingFileError` when the named mirror is not a directory.
    """
    if data_dir is not None:
        path, origin = Path(data_dir).expanduser(), "data_dir / --data-dir"
    elif os.environ.get(ENV_DATA_DIR):
        path, origin = Path(os.environ[ENV_DATA_DIR]).expanduser(), f"${ENV_DATA_DIR}"
    else:
        return None
    if not path.is_dir():
        what = f"the local data mirror {path} (from {origin}) is not a directory"
        raise MissingMirrorError(f"{what}: point it at a folder laid out like ../shared/data (see its README), or unset "
                                 "it to download the corpora", reason=what)
    return path


def cache_dir() -> Path:
    """Where downloaded files are kept: ``corpora/`` in styleeval's cache (:mod:`styleeval.paths`)."""
    return cache_path("corpora")


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file: SHA-1 of ``b"blob <size>\\0" + content``."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(path: Path) -> str:
    """The SHA-256 hex digest of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_VERIFIED: dict[tuple[str, int, int], str] = {}


def verify(path: Path, key: str, url: str) -> None:
    """Check ``path`` against the checksum pinned for ``key``; raise :class:`ChecksumError` if it differs."""
    stat = path.stat()
    memo = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if _VERIFIED.get(memo) == key:
        return
    if key in SHA256 or key in EXTRA_SHA256:
        expected, size = SHA256[key] if key in SHA256 else EXTRA_SHA256[key]
        if stat.st_size != size:
            raise ChecksumError(f"size {stat.st_size} bytes, expected {size}", file=path, url=url)
        actual = sha256(path)
        if actual != expected:
            raise ChecksumError(f"SHA-256 {actual}, expected {expected}", file=path, url=url)
    elif key in GIT_BLOB_SHA1:
        actual = git_blob_sha1(path)
        if actual != GIT_BLOB_SHA1[key]:
            raise ChecksumError(f"git blob SHA-1 {actual}, expected {GIT_BLOB_SHA1[key]}", file=path, url=url)
    else:  # a programming error: every file a loader reads must be pinned
        raise KeyError(f"no pinned checksum for {key!r}")
    _VERIFIED[memo] = key


def download(url: str, dest: Path) -> None:
    """Download ``url`` to ``dest`` (atomically) with a tqdm progress bar; :data:`DOWNLOAD_RETRIES` retries with
    backoff on connection errors, 429 and 5xx. Raises ``OSError`` naming the cause (an HTTP status, a connection
    error, a body cut short); nothing is left at ``dest`` then."""
    import urllib3  # noqa: PLC0415 - heavy (urllib3)

    from styleeval.http_pools import pool_manager  # noqa: PLC0415 - heavy (urllib3, via styleeval.http_pools)

    retries = urllib3.Retry(total=DOWNLOAD_RETRIES, backoff_factor=0.5, status_forcelist=(429, 500, 502, 503, 504),
                            raise_on_status=False)
    pool = pool_manager(url, retries=retries, timeout=urllib3.Timeout(connect=DOWNLOAD_TIMEOUT, read=DOWNLOAD_TIMEOUT))
    with atomic_path(dest, suffix=".part", permissions=0o600) as tmp_path, open(tmp_path, "wb") as tmp:
        try:
            response = pool.request("GET", url, preload_content=False)
            try:
                if response.status != 200:
                    raise OSError(f"HTTP {response.status} {response.reason or ''}".strip())
                total = int(response.headers.get("Content-Length") or 0) or None
                with progress_bar(total=total, unit="B", unit_scale=True, desc=dest.name, progress=True) as bar:
                    for block in response.stream(1 << 16):
                        tmp.write(block)
                        bar.update(len(block))
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as err:
            raise OSError(network_reason(err, url)) from err
        finally:
            pool.clear()


def network_reason(err: Exception, url: str) -> str:
    """A failed request in a few words: the host, the innermost cause's type and its system error (``raw.githubusercontent.com:
    NameResolutionError: [Errno -2] Name or service not known``), never urllib3's whole chain (its ``MaxRetryError``
    repeats the URL and each wrapper's text: several hundred characters per file)."""
    import urllib3  # noqa: PLC0415 - heavy (urllib3)

    reason = err.reason if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None else err
    text = str(reason)
    errno = re.search(r"\[Errno -?\d+\] [^\"')\]]+", text)
    if errno:
        what = errno.group().strip()
    else:  # e.g. "HTTPSConnectionPool(host='...', port=443): Read timed out. (read timeout=60.0)": the pool's name dropped
        what = re.sub(r"^\w+\(host=[^)]*\): ", "", text).strip()
        what = what if len(what) <= 160 else what[:157].rsplit(" ", 1)[0] + " ..."
    proxy = " via the proxy" if isinstance(reason, urllib3.exceptions.ProxyError) else ""
    host = urllib3.util.parse_url(url).host or url
    return f"{host}{proxy}: {type(reason).__name__}: {what}"


def resolve(source: Source, path: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The verified local path of ``path`` from ``source``: from the mirror, the cache, or downloaded.

    Raises:
        MissingFileError: the file is not in the local mirror, or the download failed.
        ChecksumError: the file does not match its pinned checksum.
    """
    key = f"{source.folder}/{path}"
    url = source.url(path)
    mirror = local_data_dir(data_dir)
    if mirror is not None:
        local = mirror / source.folder / path
        if not local.is_file():
            raise MissingFileError(
                f"missing from the local data mirror {mirror} (download it from the source URL)",
                file=local,
                url=url,
            )
        verify(local, key, url)
        return local
    cached = cache_dir() / source.folder / source.commit / path
    if not cached.is_file():
        try:
            download(url, cached)
        except OSError as err:
            raise MissingFileError(f"download failed ({err})", file=cached, url=url, advice=OFFLINE_ADVICE) from err
    try:
        verify(cached, key, url)
    except ChecksumError:
        cached.unlink(missing_ok=True)  # do not keep a bad download around
        raise
    return cached
