"""JSON over HTTP for the server backend, on urllib3: every request
:class:`~styleeval.backends.openai_server.ServerClient` sends goes through :meth:`Transport.request`.

- Connections, TLS and proxies are urllib3's: a pool of keep-alive connections (as many as requests in flight), a
  connection the server closed while idle noticed before it is reused, certificates verified, the environment's
  ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` (:mod:`styleeval.http_pools`; an ``https://`` proxy is spoken to
  over TLS).
- A total deadline per attempt (``timeout``): the headers and the whole body must arrive within it, so a server that
  drips its answer a byte at a time (its headers, ``100 Continue`` lines, its body) is cut off, not waited on
  forever. A socket's timeout bounds each read only, so one watchdog thread (:class:`_Watchdog`) shuts down the
  socket of an attempt past its deadline: the read blocked on it returns at once. A body cut short (fewer bytes than
  its ``Content-Length``, a chunked body without its last chunk) is an error, retried like a dropped connection.
- A size limit per answer (``limit``, sized by the caller from its request): a body that decodes to more, a gzip bomb
  or a flood, is refused as soon as it passes the limit, with no more than that held (urllib3 2.6 and later decode
  at most what each read asks for; older ones a whole 64 KiB read of compressed bytes, up to about 66 MB).
- Retries as the official ``openai`` client makes them, counted and slept by urllib3's ``Retry``: 408, 409, 429 and
  5xx answers, timeouts and connection errors, at most ``max_retries`` times, after ``Retry-After`` /
  ``retry-after-ms`` when the server gives one of at most 60 s, else 0.5 s doubling up to 8 s with up to 25% jitter;
  ``x-should-retry: true|false`` decides where present.
- Credentials in ``base_url`` (``http://user:password@host/v1``) are sent as ``Authorization: Basic`` (instead of
  the API key's ``Bearer``, as httpx does) and never printed: messages show ``***@`` (a user name alone may be the
  token). A server that echoes what it was sent (``bad key: Bearer sk-...``) has the API key, the URL's credentials
  and any bearer token or Basic credentials blanked out of its words (:attr:`Transport.secrets`). A redirect is not followed (the API key would go to another URL): it is an error naming where the server
  points.
- A gzip or deflate body is decoded. Failures are :class:`TransportError` with the HTTP status (``None``:
  unreachable or timed out) and a message that says what to do; the caller adds the row.
"""

from __future__ import annotations

import math
import os
import random
import re
import socket
import threading
import time
import urllib.parse
from typing import Any

import msgspec
import urllib3
from urllib3 import connection, connectionpool
from urllib3.exceptions import (
    HTTPError,
    InvalidHeader,
    MaxRetryError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import TimeoutError as UrllibTimeout
from urllib3.util import Retry

from styleeval._version import __version__
from styleeval.errors import UserError
from styleeval.http_pools import Secrets, pool_manager, proxy_for, redacted, split_credentials

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
READ_SIZE = 1 << 16
RETRY_STATUSES = frozenset({408, 409, 429, *range(500, 600)})
DEFAULT_LIMIT = 16 << 20
"""The most bytes an answer may decode to when the request names no limit (``GET /models``)."""


class TransportError(Exception):
    """A request that failed for good: ``status`` is the HTTP status of the last answer, ``None`` when the server
    could not be reached or did not answer within the deadline (``timed_out``)."""

    def __init__(self, message: str, status: int | None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.status, self.timed_out = status, timed_out


class _Timeout(ReadTimeoutError):
    """No complete answer within the attempt's deadline."""


class _CutShort(ProtocolError):
    """The connection broke in the middle of an answer's body (fewer bytes than announced, a chunk missing)."""


class _Watch:
    """One attempt's deadline and, from the moment its request is sent, the socket its answer comes on."""

    __slots__ = ("deadline", "sock", "fired")

    def __init__(self, deadline: float) -> None:
        self.deadline, self.sock, self.fired = deadline, None, False


class _Watchdog:
    """One daemon thread for the process that shuts down the socket of every attempt past its deadline, so that a
    read blocked on it returns at once (a socket's timeout bounds each read, not an answer that arrives a byte per
    read). It sleeps until the nearest deadline of the attempts watched (the requests in flight)."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # the thread does not survive a fork

    def _reset(self) -> None:
        self._lock = threading.Condition()
        self._watched: set[_Watch] = set()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None

    def watch(self, watch: _Watch, sock: Any) -> None:
        """Shut ``sock`` down when ``watch``'s deadline passes, unless :meth:`release` comes first."""
        with self._lock:
            watch.sock = sock
            self._watched.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="styleeval-deadlines", daemon=True)
                self._thread.start()
            if watch.deadline < self._wake_at:
                self._lock.notify()

    def release(self, watch: _Watch) -> bool:
        """Stop watching ``watch``; whether its deadline had passed (its socket shut down) first."""
        with self._lock:
            self._watched.discard(watch)
            watch.sock = None
            return watch.fired

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for late in [w for w in self._watched if w.deadline <= now]:
                    self._watched.discard(late)
                    late.fired = True
                    _shut_down(late.sock)
                    late.sock = None
                self._wake_at = min((w.deadline for w in self._watched), default=math.inf)
                self._lock.wait(None if self._wake_at == math.inf else self._wake_at - now)


def _shut_down(sock: Any) -> None:
    """Shut the socket under ``sock`` down for reading and writing (a TLS socket's own file descriptor: its
    ``shutdown`` would unwrap TLS under the reading thread; urllib3's TLS-in-TLS ``SSLTransport`` holds its
    socket as ``.socket``)."""
    while sock is not None and not isinstance(sock, socket.socket):
        sock = getattr(sock, "socket", None)
    if sock is not None:
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:  # closed already
            pass


_WATCHDOG = _Watchdog()
_ATTEMPT = threading.local()
"""The attempt the current thread is making (``.watch``: its :class:`_Watch`), for its connection to arm."""


class _Watched:
    """A connection that puts its socket under the current attempt's deadline as it starts reading the answer."""

    def getresponse(self) -> Any:
        watch = getattr(_ATTEMPT, "watch", None)
        if watch is not None:
            _WATCHDOG.watch(watch, self.sock)  # type: ignore[attr-defined]
        return super().getresponse()  # type: ignore[misc]


class HTTPConnection(_Watched, connection.HTTPConnection):
    """urllib3's, under the attempt's deadline (named as urllib3's: its messages name the class)."""


class HTTPSConnection(_Watched, connection.HTTPSConnection):
    """urllib3's, under the attempt's deadline."""


class HTTPConnectionPool(connectionpool.HTTPConnectionPool):
    ConnectionCls = HTTPConnection


class HTTPSConnectionPool(connectionpool.HTTPSConnectionPool):
    ConnectionCls = HTTPSConnection


WATCHED_POOLS = {"http": HTTPConnectionPool, "https": HTTPSConnectionPool}
"""Pool classes by scheme whose connections are under the attempt's deadline (a proxy's pool too)."""


class OpenAIRetry(Retry):
    """urllib3's ``Retry`` with the numbers of the ``openai`` client: ``Retry-After`` in seconds (a float too), as
    an HTTP date or ``retry-after-ms``, honoured on any retried status when it is at most 60 s; otherwise 0.5 s
    doubling up to 8 s, less up to 25% jitter."""

    def get_retry_after(self, response: Any) -> float | None:
        headers = response.headers
        try:
            if headers.get("retry-after-ms"):
                seconds = float(headers["retry-after-ms"]) / 1000
            else:
                value = (headers.get("retry-after") or "").strip()
                if not value:
                    return None
                try:
                    seconds = float(value)
                except ValueError:
                    seconds = self.parse_retry_after(value)  # an HTTP date
        except (ValueError, InvalidHeader, OverflowError):
            return None
        return seconds if 0 < seconds <= MAX_RETRY_AFTER else None

    def get_backoff_time(self) -> float:
        failed = len(self.history)
        if failed == 0:
            return 0.0
        return min(INITIAL_RETRY_DELAY * 2.0 ** (failed - 1), MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


class Transport:
    """Requests to one server (``base_url``: scheme, host, port and path prefix such as ``/v1``).

    Args:
        base_url: the API root; ``user:password@`` in it is sent as Basic authentication.
        api_key: sent as ``Authorization: Bearer <api_key>`` (unless the URL holds credentials).
        timeout: seconds an attempt may take in all (connecting, sending, headers and body).
        max_retries: retries of a failed attempt (see the module docstring).
        pool_size: connections kept open (the requests in flight at once).
    """

    def __init__(self, base_url: str, api_key: str, timeout: float, max_retries: int, pool_size: int = 8) -> None:
        if not _is_http_url(base_url):
            shown = redacted(base_url) if isinstance(base_url, str) else base_url
            raise UserError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {shown!r}")
        bare, basic = split_credentials(base_url.rstrip("/"))
        self.base_url = redacted(base_url.rstrip("/"))
        """The API root as it may be printed (its user-info shown as ``***``)."""
        self._root = bare
        self.secrets = Secrets.of(api_key, basic)
        """The configured API key and the URL's credentials: blanked out of every message."""
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self._headers = {"Authorization": basic or f"Bearer {api_key}", "Accept": "application/json",
                         "Accept-Encoding": "gzip, deflate", "User-Agent": f"styleeval/{__version__}"}
        self._json_headers = {**self._headers, "Content-Type": "application/json"}
        self._retry = OpenAIRetry(total=self.max_retries, connect=None, read=None, status=None, other=None,
                                  redirect=False, allowed_methods=None, status_forcelist=RETRY_STATUSES,
                                  raise_on_status=False)
        self._timeouts = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        self._pool = pool_manager(bare, maxsize=max(1, int(pool_size)), retries=False)
        self._pool.pool_classes_by_scheme = WATCHED_POOLS
        self.proxy = proxy_for(bare)
        """The proxy URL requests go through (from the environment), or ``None``."""

    def request(self, method: str, path: str, body: bytes | None = None, limit: int = DEFAULT_LIMIT) -> bytes:
        """The body of a 2xx answer to ``method path`` (``body``: JSON bytes), after the retries the module docstring
        describes; anything else raises :class:`TransportError` (its message without a secret: :attr:`secrets`), an
        answer that decodes to more than ``limit`` bytes (the most one to this request can take) at once, not
        retried."""
        try:
            return self._request(method, path, body, limit)
        except TransportError as err:
            raise TransportError(self.secrets.redact(str(err)), err.status, err.timed_out) from None

    def _request(self, method: str, path: str, body: bytes | None, limit: int) -> bytes:
        url = self._root + path
        headers = self._headers if body is None else self._json_headers
        retry = self._retry
        reopened = False
        while True:
            try:
                response, data = self._attempt(method, url, body, headers, limit)
            except HTTPError as err:  # not answered: unreachable, timed out, dropped, cut short
                if not reopened and isinstance(err, ProtocolError) and not isinstance(err, _CutShort):
                    # the connection dropped before any answer: a kept connection the server was closing as it
                    # was reused (urllib3 checks it before use, a race remains); once, on a new connection, not
                    # counted as a retry
                    reopened = True
                    continue
                try:
                    retry = retry.increment(method, url, error=err)
                except (MaxRetryError, HTTPError):
                    raise self._unanswered(err) from None
                retry.sleep()
                continue
            status = response.status
            if 200 <= status < 300:
                return data
            if response.get_redirect_location():
                raise TransportError(self._redirect_message(status, response.headers["Location"], path), status)
            told = (response.headers.get("x-should-retry") or "").strip().lower()
            again = told == "true" if told in ("true", "false") else retry.is_retry(method, status)
            try:
                if not again:
                    raise MaxRetryError(None, url)
                retry = retry.increment(method, url, response=response)
            except MaxRetryError:
                raise TransportError(f"{self.base_url} answered {status}: {_error_message(data)}", status) from None
            retry.sleep(response)

    def _attempt(self, method: str, url: str, body: bytes | None, headers: dict[str, str], limit: int
                 ) -> tuple[Any, bytes]:
        """One exchange within the deadline (headers and body: :class:`_Watchdog`): the answer and its whole decoded
        body, at most ``limit`` bytes."""
        watch = _Watch(time.monotonic() + self.timeout)
        _ATTEMPT.watch = watch  # armed by the connection once the request is sent
        try:
            response = self._pool.urlopen(method, url, body=body, headers=headers, redirect=False, retries=False,
                                          timeout=self._timeouts, preload_content=False, assert_same_host=False)
        except BaseException as err:
            if _WATCHDOG.release(watch):
                raise self._late(url) from err
            raise
        finally:
            _ATTEMPT.watch = None
        try:
            data = self._body(response, limit)
            if _WATCHDOG.release(watch):  # the socket was shut down: its end is no end of the body
                raise self._late(url)
        except BaseException as err:
            late = _WATCHDOG.release(watch)
            response.close()  # the connection is dropped, not handed to the next request
            response.release_conn()
            if late and not isinstance(err, _Timeout):
                raise self._late(url) from err
            if isinstance(err, HTTPError) and not isinstance(err, UrllibTimeout):
                raise _CutShort(_describe(err)) from err
            raise
        response.release_conn()
        return response, data

    def _body(self, response: Any, limit: int) -> bytes:
        """``response``'s decoded body; one that passes ``limit`` bytes raises :class:`TransportError` there."""
        parts, size = [], 0
        while part := response.read1(READ_SIZE):  # at most READ_SIZE decoded bytes a read, a gzip bomb's too
            size += len(part)
            if size > limit:
                raise TransportError(f"{self.base_url} sent an answer larger than {limit / 1e6:.1f} MB for this "
                                     "request: refused (an answer to it takes far less; is an OpenAI-compatible "
                                     "server answering at this URL?)", response.status)
            parts.append(part)
        return b"".join(parts)

    def _late(self, url: str) -> _Timeout:
        return _Timeout(None, url, f"no complete answer within {self.timeout:g} s")

    def _unanswered(self, err: HTTPError) -> TransportError:
        if isinstance(err, UrllibTimeout) and not isinstance(err, NewConnectionError):
            return TransportError(f"{self.base_url} did not answer within {self.timeout:g} s, {self.max_retries} "
                                  "retries included (raise timeout=...)", None, timed_out=True)
        if isinstance(err, _CutShort):
            return TransportError(f"{self.base_url} broke off its answer before the end, {self.max_retries} retries "
                                  f"included ({err})", None)
        return TransportError(f"cannot reach {self.base_url} after {self.max_retries} retries "
                              f"({type(err).__name__}: {_describe(err)}); is the server running?", None)

    def _redirect_message(self, status: int, location: str, path: str) -> str:
        target = urllib.parse.urljoin(self._root + path, location)
        root = target[: -len(path)] if path and target.endswith(path) else target
        return (f"{self.base_url} answered {status}, a redirect to {redacted(target)}: requests are not redirected "
                f"(the API key would follow them); pass base_url={redacted(root)!r}")

    def close(self) -> None:
        """Close the kept connections (a later request opens new ones)."""
        self._pool.clear()


def _is_http_url(url: Any) -> bool:
    """Whether ``url`` is an http(s) URL with a host that ``urllib.parse`` reads (``http://[::1`` is none)."""
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        return parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname) and (
            parts.port is None or parts.port > 0)
    except ValueError:  # an unclosed IPv6 bracket, a port out of range
        return False


_OBJECT = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>: ")


def _describe(err: BaseException) -> str:
    """urllib3's message without its objects' addresses."""
    return _OBJECT.sub("", str(err))


def _error_message(data: bytes) -> str:
    """The server's own message: ``{"error": {"message": ...}}`` (OpenAI, vLLM), ``{"message": ...}`` or
    ``{"detail": ...}``, else the start of the body."""
    try:
        body: Any = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # not JSON (an HTML page, bytes not UTF-8)
        body = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        for key in ("message", "detail"):
            if body.get(key):
                return str(body[key])
        if isinstance(inner, str) and inner:
            return inner
    text = data.decode("utf-8", "replace").strip()
    return text[:300] or "(no message)"
