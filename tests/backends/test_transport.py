"""The server backend's HTTP transport (urllib3) against a small real HTTP server (answers scripted per request):
keep-alive connections closed by the server, Retry-After, x-should-retry, the server's error message, proxies from
the environment (an https:// one over TLS), credentials in the URL (sent, never printed), redirects, a gzip body,
close(). Retries on 503, stalls, a dripping answer and unreachable servers are tested against vLLM behind the fault
proxy (test_server_faults.py, test_autorater_server.py), cut bodies against a fake server
(test_server_answers.py)."""

from __future__ import annotations

import base64
import gzip
import socket
import ssl
import threading
import time
import tracemalloc
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from _servers import serve_http, stop_http

from styleeval.backends import transport
from styleeval.backends.transport import Transport, TransportError


class Scripted:
    """An HTTP/1.1 server on 127.0.0.1 whose answers are taken from ``plan`` (status, headers, body, close): after an
    answer with ``close`` it drops the connection without saying so (no ``Connection: close``), as a server does to an
    idle keep-alive connection; status 0 drops it on reading the request, with no answer at all."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.plan: list[tuple[int, dict[str, str], bytes, bool]] = []
        self.headers: list[dict[str, str]] = []  # every request's headers
        self.times: list[float] = []
        self.seen: list[tuple[str, str, str | None]] = []  # (method, request target, Proxy-Authorization)
        self.connections = 0
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                scripted.connections += 1

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                scripted.times.append(time.monotonic())
                scripted.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization")))
                scripted.headers.append(dict(self.headers.items()))
                status, headers, body, close = scripted.plan.pop(0) if scripted.plan else (200, {}, b"{}", False)
                if status == 0:  # closing the kept connection just as a request arrives
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
                if close:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True

            def do_CONNECT(self):  # a proxy that refuses the tunnel
                scripted.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization")))
                self.send_response(502)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = _handle
            do_POST = _handle

        context = None
        if tls is not None:  # every connection speaks TLS first
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
        self.server = serve_http(Handler, context)
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        stop_http(self.server)


@pytest.fixture(scope="module")
def server():
    s = Scripted()
    yield s
    s.close()


@pytest.fixture
def scripted(server):
    server.plan, server.times, server.seen, server.headers, server.connections = [], [], [], [], 0
    yield server


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_keep_alive_connection_closed_by_the_server_is_reopened_without_a_retry(scripted):
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=0)
    scripted.plan = [(200, {}, b'{"n": 1}', True), (200, {}, b'{"n": 2}', False), (200, {}, b'{"n": 3}', False)]
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 1}'
    time.sleep(0.1)  # the server has closed the connection the client keeps
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 2}'
    assert transport.request("GET", "/models") == b'{"n": 3}'
    assert scripted.connections == 2 and len(scripted.times) == 3  # reopened once, then kept
    scripted.plan = [(200, {"Connection": "close"}, b'{"n": 4}', True), (200, {}, b'{"n": 5}', False)]
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 4}'  # a server that says it closes
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 5}'
    assert scripted.connections == 3


def test_a_kept_connection_dropped_as_a_request_arrives_is_reopened_once(scripted):
    """urllib3 checks a kept connection before reusing it, but a server may close it just as the request is sent (no
    answer at all): that request is sent again once, on a new connection, without counting as a retry; a second
    drop is an error."""
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=0)
    scripted.plan = [(200, {}, b'{"n": 1}', False), (0, {}, b"", False), (200, {}, b'{"n": 2}', False)]
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 1}'
    assert transport.request("POST", "/completions", b"{}") == b'{"n": 2}'
    assert scripted.connections == 2 and len(scripted.times) == 3
    scripted.plan = [(0, {}, b"", False), (0, {}, b"", False)]
    with pytest.raises(TransportError, match="cannot reach"):
        transport.request("POST", "/completions", b"{}")


@pytest.mark.parametrize("header, wait", [({"Retry-After": "0.6"}, 0.6), ({"retry-after-ms": "600"}, 0.6)])
def test_retry_after_is_honoured(scripted, header, wait):
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=2)
    scripted.plan = [(429, header, b'{"error": {"message": "slow down"}}', False)]
    assert transport.request("POST", "/completions", b"{}") == b"{}"
    assert len(scripted.times) == 2 and scripted.times[1] - scripted.times[0] >= wait


def test_x_should_retry_decides_and_the_servers_message_is_kept(scripted):
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=3)
    scripted.plan = [(503, {"x-should-retry": "false"}, b'{"detail": "model is loading"}', False)]
    with pytest.raises(TransportError, match=r"answered 503: model is loading$") as caught:
        transport.request("POST", "/completions", b"{}")
    assert caught.value.status == 503 and len(scripted.times) == 1
    scripted.plan = [(400, {"x-should-retry": "true"}, b"plain text", False)]
    assert transport.request("POST", "/completions", b"{}") == b"{}"
    assert len(scripted.times) == 3
    scripted.plan = [(404, {}, b"not here", False)]
    with pytest.raises(TransportError, match=r"answered 404: not here$"):
        transport.request("GET", "/nothing")


def test_a_url_without_a_host_is_refused():
    with pytest.raises(ValueError, match="base_url must be an http"):
        Transport("http:///v1", "k", timeout=1.0, max_retries=0)


def test_the_environments_proxy_is_used_and_no_proxy_exempts(scripted, monkeypatch, no_proxy_env):
    from _servers import free_port

    proxy = scripted.base_url.removesuffix("/v1").replace("http://", "http://user:p%40ss@")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "exempt.invalid")
    through = Transport("http://vllm.invalid:8000/v1", "k", timeout=5.0, max_retries=0)
    assert through.request("GET", "/models") == b"{}"  # the host does not resolve: only the proxy answered
    assert scripted.seen == [("GET", "http://vllm.invalid:8000/v1/models", "Basic dXNlcjpwQHNz")]  # user:p@ss
    tunnelled = Transport("https://api.invalid/v1", "k", timeout=5.0, max_retries=0)
    with pytest.raises(TransportError, match="cannot reach https://api.invalid/v1 .*502"):
        tunnelled.request("GET", "/models")
    assert scripted.seen[1] == ("CONNECT", "api.invalid:443", "Basic dXNlcjpwQHNz")
    direct = Transport(f"http://exempt.invalid:{free_port()}/v1", "k", timeout=5.0, max_retries=0)
    assert direct.proxy is None and through.proxy == proxy
    with pytest.raises(TransportError, match="cannot reach"):  # tried directly: the name does not resolve
        direct.request("GET", "/models")
    assert len(scripted.seen) == 2


TLS = Path(__file__).parent / "tls"
CERTIFICATE = (TLS / "cert.pem", TLS / "key.pem")
"""A self-signed certificate for 127.0.0.1 (an ECDSA key made for these tests alone), valid 2020-2120."""


def test_an_https_proxy_is_spoken_to_over_tls(monkeypatch, no_proxy_env):
    """HTTPS_PROXY=https://...: the proxy gets TLS (an http URL's request forwarded inside it, an https URL's CONNECT
    inside it), never a plaintext CONNECT to a TLS port."""
    proxy = Scripted(tls=CERTIFICATE)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(CERTIFICATE[0]))  # trust the test proxy's certificate
        url = proxy.base_url.removesuffix("/v1").replace("https://", "https://user:pw@")
        monkeypatch.setenv("HTTP_PROXY", url)
        monkeypatch.setenv("HTTPS_PROXY", url)
        through = Transport("http://vllm.invalid:8000/v1", "k", timeout=5.0, max_retries=0)
        assert through.request("GET", "/models") == b"{}"  # answered by the proxy, over TLS
        assert proxy.seen == [("GET", "http://vllm.invalid:8000/v1/models", "Basic dXNlcjpwdw==")]
        tunnelled = Transport("https://api.invalid/v1", "k", timeout=5.0, max_retries=0)
        with pytest.raises(TransportError, match="cannot reach https://api.invalid/v1 .*502"):
            tunnelled.request("GET", "/models")
        assert proxy.seen[1] == ("CONNECT", "api.invalid:443", "Basic dXNlcjpwdw==")  # read by a TLS server
        monkeypatch.delenv("SSL_CERT_FILE")
        untrusted = Transport("http://vllm.invalid:8000/v1", "k", timeout=5.0, max_retries=0)
        with pytest.raises(TransportError, match="SSLError.*CERTIFICATE_VERIFY_FAILED"):
            untrusted.request("GET", "/models")  # the proxy's certificate is verified
    finally:
        proxy.close()


def test_credentials_in_the_url_are_sent_and_never_printed(scripted, no_proxy_env):
    from _servers import free_port

    url = scripted.base_url.replace("http://", "http://ann:s3cr%40t@")
    transport = Transport(url, "the-api-key", timeout=5.0, max_retries=0)
    assert transport.request("GET", "/models") == b"{}"
    assert scripted.headers[0]["Authorization"] == "Basic " + base64.b64encode(b"ann:s3cr@t").decode()
    assert transport.base_url == scripted.base_url.replace("http://", "http://***@")
    scripted.plan = [(401, {}, b'{"error": {"message": "bad credentials"}}', False)]
    messages = []
    with pytest.raises(TransportError) as caught:
        transport.request("GET", "/models")
    messages.append(str(caught.value))
    closed = Transport(f"http://ann:s3cr%40t@127.0.0.1:{free_port()}/v1", "k", timeout=5.0, max_retries=0)
    with pytest.raises(TransportError) as caught:
        closed.request("GET", "/models")
    messages.append(str(caught.value))
    with pytest.raises(ValueError) as caught:
        Transport("ftp://ann:s3cr%40t@host/v1", "k", timeout=5.0, max_retries=0)
    messages.append(str(caught.value))
    assert "answered 401: bad credentials" in messages[0] and "cannot reach http://***@127.0.0.1" in messages[1]
    assert all("s3cr" not in m and "ann:" not in m and "***@" in m for m in messages), messages


@pytest.mark.parametrize("status, location, root", [
    (301, "https://127.0.0.1:{port}/v1/completions", "https://127.0.0.1:{port}/v1"),
    (307, "/v2/completions", "http://127.0.0.1:{port}/v2"),
    (308, "http://other.invalid/v1/completions", "http://other.invalid/v1"),
])
def test_a_redirect_is_an_error_naming_where_it_points(scripted, no_proxy_env, status, location, root):
    port = scripted.base_url.split(":")[2].split("/")[0]
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=3)
    scripted.plan = [(status, {"Location": location.format(port=port)}, b"", False)]
    with pytest.raises(TransportError, match=rf"answered {status}, a redirect to .*/completions: requests are not "
                                             rf"redirected .* pass base_url='{root.format(port=port)}'") as caught:
        transport.request("POST", "/completions", b"{}")
    assert caught.value.status == status and len(scripted.times) == 1  # not retried, not followed


def test_a_gzip_body_is_decoded(scripted, no_proxy_env):
    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=0)
    answer = '{"text": "caf\u00e9 \u2014 ok"}'.encode()
    scripted.plan = [(200, {"Content-Encoding": "gzip"}, gzip.compress(answer), False),
                     (500, {"Content-Encoding": "gzip"}, gzip.compress(rb'{"detail": "r\u00e9sum\u00e9 failed"}'),
                      False)]
    assert transport.request("GET", "/models") == answer
    assert "gzip" in scripted.headers[0]["Accept-Encoding"]
    with pytest.raises(TransportError, match="answered 500: résumé failed"):
        transport.request("GET", "/models")


def test_close_drops_the_kept_connections(scripted, no_proxy_env):
    from styleeval.backends.openai_server import ServerClient

    transport = Transport(scripted.base_url, "k", timeout=5.0, max_retries=0)
    transport.request("GET", "/models")
    transport.request("GET", "/models")
    assert scripted.connections == 1  # kept alive
    transport.close()
    transport.request("GET", "/models")  # a closed transport opens a new connection when used again
    assert scripted.connections == 2
    before = set(threading.enumerate())
    with ServerClient(scripted.base_url, model="m", max_concurrency=3) as client:
        assert client.map_rows(lambda r: r * 2, [1, 2, 3]) == [2, 4, 6]
        started = [t for t in set(threading.enumerate()) - before if t.name.startswith("styleeval-http")]
    assert started and not any(t.is_alive() for t in started)  # the client's request threads ended


class Dripping:
    """A server on 127.0.0.1 (over TLS with ``tls``) that reads a request and answers with ``answer`` one piece at a
    time, ``every`` seconds apart, for at most ``seconds`` (then it closes the connection): a server whose headers
    never end."""

    def __init__(self, answer: list[bytes], every: float, seconds: float = 6.0,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.answer, self.every, self.seconds = answer, every, seconds
        self.context = None
        if tls is not None:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(*tls)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        end = time.monotonic() + self.seconds
        try:
            if self.context is not None:
                conn = self.context.wrap_socket(conn, server_side=True)
            conn.recv(1 << 16)  # the request
            for piece in self.answer:
                if time.monotonic() > end:
                    break
                conn.sendall(piece)
                time.sleep(self.every)
        except OSError:  # the client gave up
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 200 + b"\r\nContent-Length: 2\r\n\r\n{}"
_CONTINUE = [b"HTTP/1.1 100 Continue\r\n\r\n"] * 40 + [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"]


@pytest.mark.parametrize("answer, every", [([_HEAD[k : k + 1] for k in range(len(_HEAD))], 0.3), (_CONTINUE, 0.25)],
                         ids=["headers-a-byte-every-0.3s", "100-continue-every-0.25s"])
@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_the_deadline_covers_the_headers(answer, every, tls, monkeypatch, no_proxy_env):
    """Every read gets a byte (or a ``100 Continue``) well within the timeout, but the headers never end: the attempt
    is cut off at its total deadline (it took 33.8 s with timeout=2 when only each read was timed)."""
    server = Dripping(answer, every, tls=CERTIFICATE if tls else None)
    monkeypatch.setenv("SSL_CERT_FILE", str(CERTIFICATE[0]))
    try:
        transport = Transport(server.base_url, "k", timeout=2.0, max_retries=0)
        start = time.monotonic()
        with pytest.raises(TransportError, match=r"did not answer within 2 s, 0 retries included") as caught:
            transport.request("POST", "/completions", b"{}")
        assert time.monotonic() - start < 3.0 and caught.value.timed_out
    finally:
        server.close()


def test_urllib3_alone_does_not_bound_a_dripped_answer_which_is_why_the_transport_has_a_deadline(no_proxy_env):
    """Rule 4's side-by-side measurement: urllib3's own ``Timeout(total=1)`` bounds each read, not the answer, so a
    body dripped a byte every 0.25 s comes back whole (measured: 5.0 s for a 1 s total, urllib3 2.8.0); the
    transport on urllib3, with its per-attempt deadline, refuses the same answer at 1 s."""
    import urllib3

    body = b'{"a": "' + b"x" * 10 + b'"}'
    answer = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)]
    answer += [body[k : k + 1] for k in range(len(body))]
    server = Dripping(answer, 0.25)
    try:
        plain = urllib3.PoolManager().request("POST", f"{server.base_url}/completions", body=b"{}", retries=False,
                                              timeout=urllib3.Timeout(total=1.0))
        assert plain.status == 200 and plain.data == body  # no timeout: each read got its byte in time
        transport = Transport(server.base_url, "k", timeout=1.0, max_retries=0)
        with pytest.raises(TransportError, match=r"did not answer within 1 s, 0 retries included") as caught:
            transport.request("POST", "/completions", b"{}")
        assert caught.value.timed_out
    finally:
        server.close()


def test_a_dripped_body_without_a_length_is_cut_off_not_taken_as_complete(no_proxy_env):
    """A body framed by the connection's end: the cut at the deadline must not read as the body's end."""
    head = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
    server = Dripping([head] + [b"{"] + [b" "] * 100, 0.2)
    try:
        transport = Transport(server.base_url, "k", timeout=1.0, max_retries=0)
        start = time.monotonic()
        with pytest.raises(TransportError, match="did not answer within 1 s"):
            transport.request("GET", "/models")
        assert time.monotonic() - start < 2.0
    finally:
        server.close()


def _gzip_of_zeros(size: int) -> bytes:
    """``size`` zero bytes gzip-compressed (about a thousandth of it), built a MiB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


class Flooding:
    """A server on 127.0.0.1 whose every answer is 200 with ``body`` (``Content-Encoding: gzip`` with ``gzip``), or,
    without a body, ``size`` bytes of spaces streamed 64 KiB at a time (a plain huge body: nothing held in memory)."""

    def __init__(self, body: bytes | None = None, gzip: bool = False, size: int = 0) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if gzip:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(size if body is None else len(body)))
                self.end_headers()
                try:
                    if body is not None:
                        self.wfile.write(body)
                    else:
                        block = b" " * (1 << 16)
                        for _ in range(size >> 16):
                            self.wfile.write(block)
                except OSError:  # the client gave up
                    self.close_connection = True

        self.server = serve_http(Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        stop_http(self.server)


@pytest.mark.parametrize("flood", [dict(body=_gzip_of_zeros(50 << 20), gzip=True), dict(size=1 << 28)],
                         ids=["gzip-bomb-50MB", "plain-268MB"])
def test_an_answer_larger_than_the_request_can_take_is_refused_in_bounded_memory(flood, no_proxy_env):
    """A 50 MB gzip bomb (50 kB on the wire) and a plain 268 MB body, to a request for 3 prompts of 8 tokens: refused at
    the size the request can take (a fixed base + an allowance per prompt position and top token), having held no
    more than that in memory (it grew past 4 GB of memory on a 4 MB bomb)."""
    from styleeval.backends.openai_server import ServerClient, ServerError

    server = Flooding(**flood)
    try:
        client = ServerClient(server.base_url, model="m", max_retries=0, max_concurrency=1)
        rows = [[(list(range(1, 9)), 4)] * 3]
        tracemalloc.start()
        start = time.monotonic()
        try:
            with pytest.raises(ServerError, match=r"row 0 \(scoring\): http://\S+ sent an answer larger than "
                                                  r"8\.6 MB for this request: refused") as caught:
                client.batched_prompt_logprobs(rows)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert time.monotonic() - start < 5.0 and caught.value.status == 200
        assert peak < 24 << 20, f"{peak / 1e6:.0f} MB held"
    finally:
        server.close()


@pytest.mark.parametrize(("body", "message"), [
    (b'{"error": {"message": "prompt too long", "code": 400}}', "prompt too long"),
    (b'{"detail": "Not Found"}', "Not Found"),
    (b'{"error": "overloaded"}', "overloaded"),
    (b'{"message": "x", "message": "the last"}', "the last"),  # a key given twice: its last value, as orjson read it
    (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),  # not JSON: the body's start
    (b'{"detail": NaN}', '{"detail": NaN}'),  # not JSON either (orjson refused NaN too)
    (b'\xff{"detail": "x"}', '\ufffd{"detail": "x"}'),  # not UTF-8: no UnicodeDecodeError, the text replaced
    (b"[" * 2000 + b"]" * 2000, "[" * 300),  # deeper than the decoder goes: the body's start, no RecursionError
    (b"", "(no message)"),
])
def test_the_servers_message_is_read_from_any_body(body, message):
    assert transport._error_message(body) == message
