"""The server backend's HTTP transport against a small real HTTP server (answers scripted per request): keep-alive
connections closed by the server, Retry-After, x-should-retry, the server's error message. Retries on 503, stalls,
a dripping answer and unreachable servers are tested against vLLM behind the fault proxy (test_server_faults.py,
test_autorater_server.py)."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from styleeval.backends.transport import Transport, TransportError


class Scripted:
    """An HTTP/1.1 server on 127.0.0.1 whose answers are taken from ``plan`` (status, headers, body, close): after an
    answer with ``close`` it drops the connection without saying so (no ``Connection: close``), as a server does to an
    idle keep-alive connection."""

    def __init__(self) -> None:
        self.plan: list[tuple[int, dict[str, str], bytes, bool]] = []
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
                status, headers, body, close = scripted.plan.pop(0) if scripted.plan else (200, {}, b"{}", False)
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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def server():
    s = Scripted()
    yield s
    s.close()


@pytest.fixture
def scripted(server):
    server.plan, server.times, server.seen, server.connections = [], [], [], 0
    yield server


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


def test_the_environments_proxy_is_used_and_no_proxy_exempts(scripted, monkeypatch):
    from _servers import free_port

    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
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
