"""A server's identity names the weights, not the noise (issue 27, item 2): log-probabilities that move in the 4th
decimal from call to call (GPU batch noise, injected by the proxy) give one signature across fresh clients; a server
without log-probabilities is marked unverified."""

from __future__ import annotations

import json
import random

from styleeval import LogProb
from styleeval.backends.openai_server import ServerClient


def _jitter(seed: int):
    rng = random.Random(seed)

    def mutate(path: str, body: bytes) -> bytes:
        data = json.loads(body)
        for choice in data.get("choices", []):
            for position in choice.get("prompt_logprobs") or []:
                for item in (position or {}).values():
                    if isinstance(item, dict) and "logprob" in item:
                        item["logprob"] = min(0.0, item["logprob"] + rng.uniform(-1e-3, 1e-3))
        return json.dumps(data).encode()

    return mutate


def test_jitter_of_the_weights_answers_gives_one_signature(vllm_server, judge_model_dir):
    from _servers import FaultProxy

    proxy = FaultProxy(vllm_server.port)
    try:
        plain = LogProb("judge", tokenizer=str(judge_model_dir), base_url=vllm_server.base_url,
                        progress=False).signature
        signatures = set()
        for k in range(8):  # eight fresh clients, each probe answered with other noise
            proxy.mutate = _jitter(k)
            signatures.add(LogProb("judge", tokenizer=str(judge_model_dir), base_url=proxy.base_url,
                                   progress=False).signature)
        assert signatures == {plain}
    finally:
        proxy.close()


def test_a_server_without_log_probabilities_is_unverified(vllm_server):
    from _servers import FaultProxy

    proxy = FaultProxy(vllm_server.port)
    proxy.reject = lambda body: b"prompt_logprobs" in body  # no prompt log-probabilities
    try:
        def strip(path: str, body: bytes) -> bytes:
            data = json.loads(body)
            for choice in data.get("choices", []):
                choice["logprobs"] = None
            return json.dumps(data).encode()

        proxy.mutate = strip
        assert ServerClient(proxy.base_url, model="judge", max_retries=0).fingerprint().endswith("-unverified")
        proxy.mutate = None  # generated tokens' log-probabilities: verified by their top tokens
        fingerprint = ServerClient(proxy.base_url, model="judge", max_retries=0).fingerprint()
        assert fingerprint.startswith("server-") and not fingerprint.endswith("-unverified")
    finally:
        proxy.close()


def test_a_server_that_ignores_the_top_k_asked_for_is_unverified():
    """Issue 37, item 5: a server that lists only the prompt token's own entry at every probe position names the
    probe's own tokens as the "top" ones whatever its weights, so two of them with other weights would sign alike.
    Servers that list the top tokens asked for sign their weights apart."""
    from _servers import FakeOpenAI

    servers = [FakeOpenAI(seed=0), FakeOpenAI(seed=1)]
    try:
        honest = [ServerClient(s.base_url, model="fake", max_retries=0).fingerprint() for s in servers]
        assert honest[0] != honest[1] and not any(f.endswith("-unverified") for f in honest)
        assert [ServerClient(s.base_url, model="fake").fingerprint() for s in servers] == honest  # stable
        for s in servers:
            s.ignore_k = True
        quiet = [ServerClient(s.base_url, model="fake", max_retries=0).fingerprint() for s in servers]
        assert quiet[0] == quiet[1]  # what the probe saw cannot tell these weights apart: hence the mark
        assert all(f.endswith("-unverified") for f in quiet) and set(quiet).isdisjoint(honest)
    finally:
        for s in servers:
            s.close()


def test_a_tokenizer_whose_tokens_the_server_decodes_otherwise_is_refused(tiny_tokenizer, tmp_path):
    """Issue 44, item 1, against a server that names the tokens it scores as vLLM does (``decoded_token``): the
    client's tokenizer decoding one of the probe's ids otherwise is refused when the identity is probed; the same
    decoding passes, and a server that names no tokens cannot be checked (and is not refused)."""
    import pytest
    from _servers import FakeOpenAI

    from styleeval.errors import UserError

    tiny_tokenizer.save_pretrained(tmp_path / "tok")
    server = FakeOpenAI()
    try:
        server.decode = lambda token: tiny_tokenizer.decode([token])
        assert "@server-" in LogProb("fake", tokenizer=str(tmp_path / "tok"), base_url=server.base_url,
                                     progress=False).signature
        server.decode = lambda token: tiny_tokenizer.decode([token]) if token % 7 else "[other]"
        with pytest.raises(UserError, match=r"tokenizer: \S+tok is not the tokenizer of the model 'fake' at "
                                            r"http://\S+: it decodes token \d+ as '.+', the server as '\[other\]'"):
            _ = LogProb("fake", tokenizer=str(tmp_path / "tok"), base_url=server.base_url, progress=False).signature
        server.decode = None
        assert "@server-" in LogProb("fake", tokenizer=str(tmp_path / "tok"), base_url=server.base_url,
                                     progress=False).signature
    finally:
        server.close()
