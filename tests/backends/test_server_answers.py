"""Answers read whole, checked, or refused, end to end against a fake OpenAI-compatible server
(``_servers.FakeOpenAI``, answers in vLLM's format): a batched request's choices listed out of order give the
in-order numbers, a body cut anywhere is refused whatever its framing, another model's answer is refused, and a
batch rejected by the server is resent row by row so that the error names its row."""

from __future__ import annotations

import json
import random
import re

import pytest
from _servers import FakeOpenAI

from styleeval import LogProb
from styleeval.backends.openai_server import ServerClient, ServerError


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture
def server(fake):
    fake.edit, fake.reject, fake.framing, fake.cut, fake.ignore_k = None, None, "length", None, False
    fake.aliases = []
    fake.bodies.clear()
    yield fake


def _rows(n: int, seed: int = 0) -> list[list[tuple[list[int], int]]]:
    """``n`` rows as LogProb sends them: three contexts sharing the rewrite (the same last tokens), each prompt with
    how many of its last tokens are wanted."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        rewrite = [rng.randrange(1, 500) for _ in range(rng.randint(2, 6))]
        rows.append([([rng.randrange(1, 500) for _ in range(rng.randint(3, 9))] + rewrite, len(rewrite))
                     for _ in range(3)])
    return rows


def _expected(fake: FakeOpenAI, rows) -> list[list[list[float]]]:
    return [[fake.logprobs(p)[len(p) - tail :] for p, tail in row] for row in rows]


def _reversed(answer: dict) -> dict:
    return {**answer, "choices": answer["choices"][::-1]}


def _reversed_in_threes(answer: dict) -> dict:
    """Each row's three choices listed last first: a reader by position sees the tokens it expects."""
    listed = answer["choices"]
    return {**answer, "choices": [c for k in range(0, len(listed), 3) for c in listed[k : k + 3][::-1]]}


@pytest.mark.parametrize("reorder", [_reversed_in_threes, _reversed])
def test_choices_listed_out_of_order_give_the_in_order_numbers(server, reorder):
    """The three contexts of a row end with the same tokens: a reader that took the choices in the order listed would
    swap the style, paraphrase and repeat values without noticing."""
    rows = _rows(8)
    client = ServerClient(server.base_url, model="fake", max_concurrency=2, max_retries=0)
    server.edit = reorder
    assert client.batched_prompt_logprobs(rows) == _expected(server, rows)
    assert [len(body["prompt"]) for body in server.bodies] == [12, 12]  # 4 rows of 3 prompts a request


def test_logprob_scores_do_not_depend_on_the_order_the_server_lists_choices(server, tiny_tokenizer, tmp_path):
    tiny_tokenizer.save_pretrained(tmp_path / "tok")
    lp = LogProb("fake", tokenizer=str(tmp_path / "tok"), base_url=server.base_url, progress=False)
    sources = ["give me the report now.", "the food was cold.", "the meeting is on Tuesday."]
    rewrites = ["Could you send the report?", "The food was warm.", "The meeting is on Monday."]
    in_order = lp.score(sources, rewrites, "polite", return_tokens=True)
    server.edit = _reversed_in_threes
    assert lp.score(sources, rewrites, "polite", return_tokens=True) == in_order
    assert len({t["style"] for row in in_order for t in row["tokens"]}) > 3  # numbers that would show a swap


@pytest.mark.parametrize("framing", ["close", "chunked", "length"])
def test_a_body_cut_anywhere_is_refused(server, framing):
    """``close``: the body ends where the connection closes (no Content-Length), so only reading the whole JSON can
    tell a cut; ``chunked``: each chunk complete, the last one missing; ``length``: fewer bytes than announced.
    Every cut in the last 80 bytes (the last log-probability's digits among them) and 40 spread over the body."""
    rows = _rows(1, seed=3)
    client = ServerClient(server.base_url, model="fake", max_retries=0, timeout=10.0)
    server.framing = framing
    assert client.batched_prompt_logprobs(rows) == _expected(server, rows)  # whole, in this framing
    size = len(json.dumps(server.completion(server.bodies[-1])).encode())
    message = "could not be read" if framing == "close" else "broke off its answer before the end"
    for cut in sorted({*range(size - 80, size), *range(0, size, size // 40)}):
        server.cut = cut
        with pytest.raises(ServerError, match=message):
            client.batched_prompt_logprobs(rows)


def test_another_models_answer_is_refused(server):
    rows = _rows(2)
    client = ServerClient(server.base_url, model="fake", max_retries=0)
    server.edit = lambda answer: {**answer, "model": "fallback"}
    with pytest.raises(ServerError, match=r"row 0 \(scoring\): http://\S+ answered as model 'fallback', not 'fake': "
                                          "another model's answer"):
        client.batched_prompt_logprobs(rows)
    server.edit = lambda answer: {k: v for k, v in answer.items() if k != "model"}
    with pytest.raises(ServerError, match="answered as model None"):
        client.batched_prompt_logprobs(rows)
    server.aliases = ["fake-alias"]  # vLLM answers with the first of its served names: the same weights
    server.edit = lambda answer: {**answer, "model": "fake-alias"}
    assert ServerClient(server.base_url, model="fake").batched_prompt_logprobs(rows) == _expected(server, rows)


def test_an_answer_for_other_tokens_is_refused(server):
    rows = _rows(1)
    client = ServerClient(server.base_url, model="fake", max_retries=0)

    def shifted(answer):  # the entries of a prompt one token off, as a server scoring another prompt
        entries = answer["choices"][1]["prompt_logprobs"]
        answer["choices"][1]["prompt_logprobs"] = [None, *entries[2:], entries[1]]
        return answer

    server.edit = shifted
    with pytest.raises(ServerError, match=r"returned no log-probability for prompt token \d+ \(position 1\)"):
        client.batched_prompt_logprobs(rows)


def test_a_rejected_batch_is_resent_row_by_row_and_the_error_names_its_row(server):
    """Rows share requests when a call has more rows than max_concurrency; a 4xx for a batch sends its rows again one
    by one, so that the error names the row the server rejects, with the server's message."""
    rows = _rows(8, seed=5)
    poison = rows[6][0][0]
    client = ServerClient(server.base_url, model="fake", max_concurrency=2, max_retries=0)

    server.reject = lambda request: "prompt too long" if poison in request["prompt"] else None
    with pytest.raises(ServerError, match=r"row 6 \(scoring\): .* answered 400: prompt too long") as caught:
        client.batched_prompt_logprobs(rows)
    assert caught.value.row == 6


@pytest.mark.parametrize("value", [-3.5e38, -1e300, 5e-5])
def test_a_log_probability_float32_cannot_hold_is_refused_not_scored(server, tiny_tokenizer, tmp_path, value):
    """Finite in float64 but not in float32 (it became -inf where the scores are cast, content -inf with only a numpy
    warning), or above 0: the row's error, never a score."""
    tiny_tokenizer.save_pretrained(tmp_path / "tok")
    lp = LogProb("fake", tokenizer=str(tmp_path / "tok"), base_url=server.base_url, progress=False, max_retries=0)

    def poisoned(answer):  # the last scored token of every prompt
        for choice in answer["choices"]:
            entry = choice["prompt_logprobs"][-1]
            entry[next(iter(entry))]["logprob"] = value
        return answer

    server.edit = poisoned
    with pytest.raises(ServerError, match=rf"row 0 .*returned the log-probability {re.escape(repr(value))} for token \d+: not a "
                                          r"log-probability \(it must be a number from -3.4e\+38 to 0\)"):
        lp.score(["give me the report now."], ["Could you send the report?"], "polite")
