"""Downloading a corpus file (corpora._files.download, urllib3) from a local HTTP server: the bytes land whole and
atomically, a gzip answer is decoded, 503s are retried, and a 404 or a body cut short is an OSError that leaves no
file behind (resolve() turns it into a MissingFileError naming the URL; the pinned checksum is checked after)."""

from __future__ import annotations

import gzip
from http.server import BaseHTTPRequestHandler

import pytest
from _servers import serve_http, stop_http

from styleeval.corpora import _files

CONTENT = "".join(f"source {i}\trewrite {i}\t{i % 5}\n" for i in range(5000)).encode()


@pytest.fixture(scope="module")
def files():
    """Paths: /file (200), /gzip (gzip-encoded), /flaky (503 twice, then 200), /cut (half the bytes announced),
    /missing (404)."""
    served = {"flaky": 0}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            body, status, headers = CONTENT, 200, {}
            if self.path == "/gzip":
                body, headers = gzip.compress(CONTENT), {"Content-Encoding": "gzip"}
            elif self.path == "/flaky":
                served["flaky"] += 1
                if served["flaky"] <= 2:
                    body, status = b"busy", 503
            elif self.path == "/missing":
                body, status = b"no such file", 404
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path == "/cut":
                self.wfile.write(body[: len(body) // 2])
                self.close_connection = True
            else:
                self.wfile.write(body)

    server = serve_http(Handler)
    yield f"http://127.0.0.1:{server.server_address[1]}", served
    stop_http(server)


def test_a_file_is_downloaded_whole(files, tmp_path):
    root, _ = files
    for path in ("/file", "/gzip"):
        dest = tmp_path / path.strip("/") / "data.tsv"
        _files.download(root + path, dest)
        assert dest.read_bytes() == CONTENT
        assert list(dest.parent.iterdir()) == [dest]  # no .part left


def test_503s_are_retried(files, tmp_path):
    root, served = files
    _files.download(root + "/flaky", tmp_path / "data.tsv")
    assert (tmp_path / "data.tsv").read_bytes() == CONTENT and served["flaky"] == 3


@pytest.mark.parametrize("path, message", [("/missing", "HTTP 404"), ("/cut", "IncompleteRead")])
def test_a_failed_download_leaves_nothing(files, tmp_path, path, message):
    root, _ = files
    with pytest.raises(OSError, match=message):
        _files.download(root + path, tmp_path / "data.tsv")
    assert list(tmp_path.iterdir()) == []
