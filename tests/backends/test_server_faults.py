"""The server backend against a real vLLM server and a fault-injecting proxy: what is behind a URL signs the scores,
a row of exactly max_model_len tokens, a total deadline per request, answers checked before use, rows named as data."""

from __future__ import annotations

import json
import math
import re
import time

import pytest
from conftest import JUDGE_REWRITES, JUDGE_SOURCES

from styleeval import LogProb
from styleeval.backends.openai_server import ServerError
from styleeval.errors import RowError, RowsWarning


@pytest.fixture(scope="module")
def other_weights_dir(tiny_tokenizer, tmp_path_factory):
    """A model of the judge's shape and tokenizer with other random weights (seed 1)."""
    from styleeval.random_weights import build_model

    tok = tiny_tokenizer
    model = build_model("small", vocab_size=len(tok), seed=1, eos_token_id=tok.eos_token_id,
                        bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id)
    path = tmp_path_factory.mktemp("other-weights")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _signature(base_url: str, tokenizer) -> str:
    return LogProb("judge", tokenizer=str(tokenizer), base_url=base_url, progress=False).signature


def test_the_signature_identifies_the_weights_behind_the_url(vllm_server, judge_model_dir, other_weights_dir,
                                                             tmp_path, monkeypatch):
    """Two servers with different weights under one served name sign differently; another server process with the
    same weights (another port, signing after the first is stopped) signs the same (and a resumed file checks it).

    The two servers of the other weights are launched at once: a start is mostly one core importing vLLM and torch
    (two processes, one after the other), so two starts side by side on 2 cores take about one's time."""
    from _servers import VLLMServer, vllm_python

    first = _signature(vllm_server.base_url, judge_model_dir)
    assert re.search(r"\|model:judge@server-[0-9a-f]{12}\|", first)
    servers, signatures = [], []
    try:
        for k in range(2):  # the other weights, twice: two processes on two ports
            servers.append(VLLMServer(vllm_python(), other_weights_dir, tmp_path / f"other{k}.log", name="judge",
                                      wait=False))
        for k, server in enumerate(servers):
            server.ready()
            signatures.append(_signature(server.base_url, judge_model_dir))
            if k == 0:
                _a_redeploy_in_the_middle_of_a_file_job(vllm_server, server, judge_model_dir, tmp_path, monkeypatch)
            server.stop()  # the first is gone when the second signs
    finally:
        for server in servers:
            server.stop()
    assert signatures[0] != first  # other weights, same name, same tokenizer and template
    assert signatures[1] == signatures[0]  # the same weights in another server process


def _a_redeploy_in_the_middle_of_a_file_job(judge, other, tokenizer_dir, tmp_path, monkeypatch) -> None:
    """The URL switches to other weights after the first chunk of `styleeval score`: the job is re-probed after
    every chunk (here; every minute by default) and at its end, stops, keeps the rows made before the switch and
    names the first row after it."""
    import json

    from _servers import FaultProxy

    import styleeval.files.runner as runner
    from styleeval.files import score_file

    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.0)
    table = tmp_path / "redeploy.jsonl"
    table.write_text("".join(json.dumps({"source": f"give me report {i} now.", "rewrite": f"Report {i}, please.",
                                         "style": "polite"}) + "\n" for i in range(6)), encoding="utf-8")
    proxy = FaultProxy(judge.port)

    def switch(records):
        proxy.target_port = other.port  # a redeploy behind the same URL

    try:
        with pytest.raises(ValueError, match=r"the model behind the backend changed during this run .* the rows "
                                             r"written from input row 2 on were removed"):
            score_file(table, tmp_path / "redeploy.out.jsonl", "judge", base_url=proxy.base_url,
                       tokenizer=str(tokenizer_dir), chunk_size=2, flush_seconds=1e-9, progress=False,
                       on_chunk=switch)
    finally:
        proxy.close()
    kept = [json.loads(line) for line in (tmp_path / "redeploy.out.jsonl").read_text().splitlines()]
    assert [r["row"] for r in kept] == [0, 1]


def _row_of_length(lp: LogProb, target: int) -> tuple[str, str]:
    """A (source, rewrite) whose longest prompt + rewrite is exactly ``target`` tokens."""
    source = "give me the report now."
    for words in range(1, 1000):  # "a a a ...": one token per word with the test tokenizer
        rewrite = " ".join(["a"] * words)
        _, prompts, targets = lp._encode([0], [source], [rewrite], ["polite"])
        longest = max(len(p[0]) for p in prompts.values()) + len(targets[0])
        if longest == target:
            return source, rewrite
    raise AssertionError(f"no row of {target} tokens found")


def test_a_row_of_exactly_max_model_len_tokens(vllm_server, judge_model_dir):
    """vLLM needs room for one generated token: the limit is max_model_len - 1; such a row is a clear local error (or
    skipped), never the server's 400 that kills the run."""
    served = LogProb("judge", tokenizer=str(judge_model_dir), base_url=vllm_server.base_url, progress=False)
    assert served.max_length == 511  # the server's max_model_len is 512
    exact = _row_of_length(served, 512)
    fits = _row_of_length(served, 511)
    with pytest.raises(RowError, match=r"row 1: prompt \+ rewrite is 512 tokens, longer than the model's context "
                                       r"of 511"):
        served.score(["short", exact[0]], ["a", exact[1]], "polite")
    skipping = LogProb("judge", tokenizer=str(judge_model_dir), base_url=vllm_server.base_url, progress=False,
                       on_overflow="skip")
    with pytest.warns(RowsWarning, match=r"1 row longer .* row 1$"):
        got = skipping.score(["short", exact[0], fits[0]], ["a", exact[1], fits[1]], "polite")
    assert math.isnan(got[1]["content"]) and all(math.isfinite(got[i]["content"]) for i in (0, 2))


@pytest.fixture(scope="module")
def proxied_scorer(vllm_server, judge_model_dir):
    from _servers import FaultProxy

    proxy = FaultProxy(vllm_server.port)
    lp = LogProb("judge", tokenizer=str(judge_model_dir), base_url=proxy.base_url, progress=False, max_retries=0,
                 timeout=2.0)
    assert lp.signature  # the probe goes through the proxy before the faults start
    yield proxy, lp
    proxy.close()


@pytest.fixture
def proxy_and_scorer(proxied_scorer):
    proxy, lp = proxied_scorer
    yield proxy, lp
    proxy.plan, proxy.reject, proxy.mutate = [], None, None
    proxy.reject_message = "rejected by the test proxy"


def test_a_dripping_server_hits_the_total_deadline(proxy_and_scorer):
    proxy, lp = proxy_and_scorer
    proxy.plan = [("drip", 0.5)]  # one byte every 0.5 s: each read is fast, the answer never completes
    start = time.monotonic()
    with pytest.raises(ServerError, match=r"row 0 \(scoring\): .* did not answer within 2 s"):
        lp.score(JUDGE_SOURCES[:1], JUDGE_REWRITES[:1], "polite")
    assert time.monotonic() - start < 15


def _set_first_logprob(value: float):
    def mutate(path: str, body: bytes) -> bytes:
        data = json.loads(body)
        for choice in data.get("choices", []):
            for entry in (choice.get("prompt_logprobs") or [])[-3:]:
                if entry:
                    for item in entry.values():
                        item["logprob"] = value
        return json.dumps(data).encode()

    return mutate


@pytest.mark.parametrize("value", [math.nan, 5.0, math.inf])
def test_log_probabilities_that_are_not_are_errors_naming_the_row(proxy_and_scorer, value):
    proxy, lp = proxy_and_scorer
    proxy.mutate = _set_first_logprob(value)
    with pytest.raises(ServerError, match=r"row 0 \(scoring\): .* returned the log-probability .* not a "
                                          r"log-probability"):
        lp.score(JUDGE_SOURCES[:1], JUDGE_REWRITES[:1], "polite")


@pytest.mark.parametrize("mutate, message", [
    (lambda path, body: json.dumps({**json.loads(body), "choices": []}).encode(), "answered 0 of 3 prompts"),
    (lambda path, body: body[: len(body) // 2], "sent an answer that could not be read"),
])
def test_broken_answers_are_server_errors_not_input_errors(proxy_and_scorer, mutate, message):
    proxy, lp = proxy_and_scorer
    proxy.mutate = mutate
    with pytest.raises(ServerError, match=re.escape(message)):
        lp.score(JUDGE_SOURCES[:1], JUDGE_REWRITES[:1], "polite")


def test_a_server_error_names_the_input_row_and_keeps_its_message(proxy_and_scorer, tmp_path):
    """Rows are scored sorted by source: the error still names the caller's row, in the library and through the
    file runner, and the server's own numbers are left as they are."""
    from styleeval.files import score_file

    proxy, lp = proxy_and_scorer
    message = "This model's maximum context length is 2000 tokens. However, you requested 2000 in the messages, 50 in the completion"
    proxy.reject_message = message
    sources = ["mmm middle", "aaa first", "zzz last", "bbb second"]
    _, prompts, targets = lp._encode([2], sources, ["a", "b", "c", "d"], ["polite"] * 4)
    poison = json.dumps(prompts["style"][0] + targets[0], separators=(",", ":"))[1:-1].encode()
    proxy.reject = lambda body: poison in re.sub(rb"\s", b"", body)  # the request of the row "zzz last"
    with pytest.raises(ServerError) as caught:
        lp.score(sources, ["a", "b", "c", "d"], "polite")
    assert caught.value.row == 2 and str(caught.value).startswith("row 2 (scoring): ")
    assert message in str(caught.value)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": "polite"}) + "\n"
                           for s, r in zip(sources, "abcd", strict=True)))
    with pytest.raises(ServerError) as caught:
        score_file(inp, tmp_path / "out.jsonl", scorer=lp, progress=False)
    assert caught.value.row == 2 and message in str(caught.value)
