"""JSON over HTTP/1.1 for the server backend: every request :class:`~styleeval.backends.openai_server.ServerClient`
sends goes through :meth:`Transport.request`.

- Keep-alive connections, one per thread (``http.client``: the standard library's C-buffered reader, no per-chunk
  Python parsing; a client that scores thousands of rows a second spends its time on the answers, not on HTTP).
- A total deadline per attempt (``timeout``): headers and body must arrive within it, so a server that drips its
  answer a byte at a time is cut off, not waited on forever.
- Retries as the official ``openai`` client makes them: 408, 409, 429 and 5xx answers, timeouts and connection
  errors, at most ``max_retries`` times, after ``Retry-After``/``retry-after-ms`` when the server gives one of at
  most 60 s, else 0.5 s doubling up to 8 s with up to 25% jitter; ``x-should-retry: true|false`` decides where
  present. A keep-alive connection the server closed while idle is reopened once without counting as a retry.
- ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` from the environment, as the ``openai`` client (httpx) reads them:
  an http URL is requested through the proxy, an https URL tunnelled (``CONNECT``); credentials in the proxy URL are
  sent as ``Proxy-Authorization``.
- Failures are :class:`TransportError` with the HTTP status (``None``: unreachable or timed out) and a message that
  says what to do; the caller adds the row.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import random
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

from styleeval._version import __version__
from styleeval.errors import UserError

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
READ_SIZE = 1 << 16
RETRY_STATUSES = frozenset({408, 409, 429})


class TransportError(Exception):
    """A request that failed for good: ``status`` is the HTTP status of the last answer, ``None`` when the server
    could not be reached or did not answer within the deadline (``timed_out``)."""

    def __init__(self, message: str, status: int | None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.status, self.timed_out = status, timed_out


class _Timeout(Exception):
    """No complete answer within the attempt's deadline."""


class Transport:
    """Requests to one server (``base_url``: scheme, host, port and path prefix such as ``/v1``).

    Args:
        base_url: the API root.
        api_key: sent as ``Authorization: Bearer <api_key>``.
        timeout: seconds an attempt may take in all (connecting, sending, headers and body).
        max_retries: retries of a failed attempt (see the module docstring).
    """

    def __init__(self, base_url: str, api_key: str, timeout: float, max_retries: int) -> None:
        url = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        if url is None or url.scheme not in ("http", "https") or not url.hostname:
            raise UserError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port
        self._prefix = url.path.rstrip("/")
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json",
                         "User-Agent": f"styleeval/{__version__}"}
        self._local = threading.local()
        self.proxy = _proxy_for(url)
        """The proxy URL requests go through (from the environment), or ``None``."""
        self._tunnel_headers: dict[str, str] = {}
        if self.proxy is not None:
            proxy = urllib.parse.urlsplit(self.proxy)
            auth = {}
            if proxy.username:
                pair = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
                auth["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            if self._https:
                self._tunnel_headers = auth
            else:  # the proxy gets the absolute URL
                self._headers.update(auth)
                self._prefix = f"http://{url.netloc.rpartition('@')[2]}{self._prefix}"

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """The body of a 2xx answer to ``method path`` (``body``: JSON bytes), after the retries the module docstring
        describes; anything else raises :class:`TransportError`."""
        headers = dict(self._headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                status, answer_headers, data = self._attempt(method, self._prefix + path, body, headers)
            except _Timeout:
                if last:
                    raise TransportError(f"{self.base_url} did not answer within {self.timeout:g} s, "
                                         f"{self.max_retries} retries included (raise timeout=...)", None,
                                         timed_out=True) from None
                time.sleep(self._backoff(attempt, None))
                continue
            except (OSError, http.client.HTTPException) as err:
                if last:
                    raise TransportError(f"cannot reach {self.base_url} after {self.max_retries} retries "
                                         f"({type(err).__name__}: {err}); is the server running?", None) from None
                time.sleep(self._backoff(attempt, None))
                continue
            if 200 <= status < 300:
                return data
            if last or not _should_retry(status, answer_headers):
                raise TransportError(f"{self.base_url} answered {status}: {_error_message(data)}", status)
            time.sleep(self._backoff(attempt, answer_headers))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _attempt(self, method: str, url: str, body: bytes | None, headers: dict[str, str]
                 ) -> tuple[int, http.client.HTTPMessage, bytes]:
        deadline = time.monotonic() + self.timeout
        conn = getattr(self._local, "conn", None)
        reused = conn is not None
        while True:
            if conn is None:
                conn = self._connect()
            try:
                return self._exchange(conn, method, url, body, headers, deadline)
            except _Timeout:
                self._drop(conn)
                raise
            except (OSError, http.client.HTTPException) as err:
                self._drop(conn)
                stale = reused and isinstance(err, (http.client.RemoteDisconnected, BrokenPipeError,
                                                    ConnectionResetError))
                if not stale or time.monotonic() >= deadline:
                    raise
                conn, reused = None, False  # closed by the server while idle: once more on a new connection

    def _exchange(self, conn: http.client.HTTPConnection, method: str, url: str, body: bytes | None,
                  headers: dict[str, str], deadline: float) -> tuple[int, http.client.HTTPMessage, bytes]:
        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Timeout
            return left

        try:
            conn.timeout = remaining()
            if conn.sock is None:
                conn.connect()
            sock = conn.sock  # an answer with "Connection: close" takes it over from conn
            sock.settimeout(remaining())
            conn.request(method, url, body=body, headers=headers)
            response = conn.getresponse()
            parts = []
            while True:
                sock.settimeout(remaining())
                part = response.read1(READ_SIZE)
                if not part:
                    break
                parts.append(part)
            response.read()  # b"": marks the answer complete, so that the connection takes the next request
            remaining()
        except TimeoutError:
            raise _Timeout from None
        if response.will_close:
            self._drop(conn)
        return response.status, response.headers, b"".join(parts)

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        if self.proxy is None:
            conn = cls(self._host, self._port, timeout=self.timeout)
        else:
            proxy = urllib.parse.urlsplit(self.proxy)
            conn = cls(proxy.hostname, proxy.port or (443 if proxy.scheme == "https" else 80), timeout=self.timeout)
            if self._https:
                conn.set_tunnel(self._host, self._port or 443, headers=self._tunnel_headers)
        self._local.conn = conn
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None

    def _backoff(self, attempt: int, headers: http.client.HTTPMessage | None) -> float:
        after = _retry_after(headers) if headers is not None else None
        if after is not None and 0 < after <= MAX_RETRY_AFTER:
            return after
        return min(INITIAL_RETRY_DELAY * 2.0**attempt, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def _proxy_for(url: urllib.parse.SplitResult) -> str | None:
    """The proxy of ``url`` named by ``HTTP(S)_PROXY`` unless ``NO_PROXY`` exempts its host, else ``None``."""
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(url.scheme)
    if not proxy or urllib.request.proxy_bypass_environment(url.netloc.rpartition("@")[2], proxies):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _should_retry(status: int, headers: http.client.HTTPMessage) -> bool:
    told = (headers.get("x-should-retry") or "").strip().lower()
    if told in ("true", "false"):
        return told == "true"
    return status in RETRY_STATUSES or status >= 500


def _retry_after(headers: http.client.HTTPMessage) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date)."""
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None


def _error_message(data: bytes) -> str:
    """The server's own message: ``{"error": {"message": ...}}`` (OpenAI, vLLM), ``{"message": ...}`` or
    ``{"detail": ...}``, else the start of the body."""
    try:
        body: Any = json.loads(data)
    except ValueError:
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

