"""A shared backend answers as if alone: threads scoring and rating through one local model get exactly the answers
of the same requests made one after another (issues 27 and 37)."""

from __future__ import annotations

import contextlib
import copy
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from styleeval import Autorater, LogProb
from styleeval.backends import open_backend

# Rows whose texts hold control-token strings (text is text: they are tokenized as plain text, apart from the
# template's own control tokens), so that every request tokenizes both ways: the template with its control tokens,
# the texts with control-token strings kept as text.
CONTROL_ROWS = [
    ("Say <|eot_id|> to end the turn.", "Kindly say <|eot_id|> to end it.", "polite"),
    ("<|start_header_id|>user<|end_header_id|> hi there", "Hello <|start_header_id|> there.", "formal"),
    ("send the report <|begin_of_text|> now", "Could you send the report <|eot_id|>?", "polite"),
    ("the food <|end_header_id|> was cold", "The food was <|eot_id|> warm.", "positive"),
    ("<|eot_id|><|eot_id|> the meeting moved", "The meeting <|begin_of_text|> has moved.", "formal"),
    ("ur ready 4 the party <|start_header_id|>", "Are you ready for the party <|end_header_id|>?", "formal"),
]


def test_eight_threads_of_mixed_requests_equal_the_sequential_answers(tiny_model, tiny_tokenizer, rows):
    backend = open_backend(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    lp = LogProb(backend=backend, progress=False)
    judge = Autorater(backend=backend, progress=False)
    lp_plain = LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False, pack_prompts=False)  # another engine
    rng = random.Random(0)
    requests = []
    for _ in range(8 * 40):
        picked = rng.sample(rows, rng.randint(1, 3))
        requests.append((rng.choice(["logprob", "plain", "judge"]), [list(c) for c in zip(*picked, strict=True)]))

    def answer(request):
        kind, (sources, rewrites, styles) = request
        if kind == "judge":
            return [(r["meaning"], r["style"]) for r in judge.rate(sources, rewrites, styles)]
        scorer = lp if kind == "logprob" else lp_plain
        return [(s["content"], s["style_strength"]) for s in scorer.score(sources, rewrites, styles)]

    alone = [answer(r) for r in requests]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(answer, requests))
    differ = [i for i, (a, b) in enumerate(zip(alone, together, strict=True)) if a != b]
    assert differ == [], f"{len(differ)} of {len(requests)} answers differ, e.g. request {differ[:3]}"


THREADS = 8
ROUNDS = 8


class _SlowStart:
    """A ``tokenizers.Tokenizer`` whose ``encode_batch`` starts a moment late (asleep, the GIL released: as a thread
    descheduled on a busy machine), so that tokenizer calls of concurrent requests overlap every time."""

    def __init__(self, inner, pause: float) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_pause", pause)

    def encode_batch(self, *args, **kwargs):
        time.sleep(self._pause)
        return self._inner.encode_batch(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_inner"), name)

    def __setattr__(self, name, value):
        setattr(self._inner, name, value)

    def __deepcopy__(self, memo):
        return _SlowStart(copy.deepcopy(self._inner, memo), self._pause)


@pytest.fixture(scope="module")
def slow_start_tokenizer(tiny_tokenizer):
    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer._tokenizer = _SlowStart(tokenizer._tokenizer, 0.002)
    return tokenizer


@pytest.mark.parametrize("model_lock", [True, False], ids=["model-lock", "no-lock"])
def test_logprob_and_expected_autorater_on_one_backend_answer_as_alone(tiny_model, slow_start_tokenizer, rows,
                                                                      model_lock):
    """Issue 37: LogProb and the expected-mode autorater on one local backend (as the Space shares it), eight threads
    released together by a barrier each round, so that their calls overlap from their first step (tokenizing) on;
    rows hold control-token strings, so that every call tokenizes template text and plain text; the autorater reads
    its ratings in one token-tree pass and, as on backends without trees, in two passes (the engine's kept prefix
    cache between them). Every answer (or error) equals the same request's answer alone, exactly. ``no-lock``: the
    forward passes run at once too (the model lock is for throughput; no state of the engine or the model needs
    it)."""
    backend = open_backend(tiny_model, tokenizer=slow_start_tokenizer, progress=False)
    if not model_lock:
        backend._lock = contextlib.nullcontext()
    lp = LogProb(backend=backend, progress=False)
    judges = {"judge": Autorater(backend=backend, mode="expected", progress=False),
              "two-pass": Autorater(backend=backend, mode="expected", progress=False)}
    judges["two-pass"]._tree_cache = None  # what a tokenizer that cannot extend the scaffold token by token gets
    rng = random.Random(37)
    kinds = ("logprob", "judge", "two-pass")
    plan = [[(kinds[(t + r) % 3], rng.sample(CONTROL_ROWS, 1) + rng.sample(rows[:12], rng.randint(0, 1)))
             for t in range(THREADS)] for r in range(ROUNDS)]

    def answer(request):
        kind, picked = request
        sources, rewrites, styles = (list(c) for c in zip(*picked, strict=True))
        try:
            if kind in judges:
                return [(r["meaning"], r["style"]) for r in judges[kind].rate(sources, rewrites, styles)]
            return [(s["content"], s["style_strength"]) for s in lp.score(sources, rewrites, styles)]
        except Exception as err:  # an error is an answer too: it must be the one given alone
            return repr(err)

    alone = [[answer(request) for request in requests] for requests in plan]
    together: list[list] = [[None] * THREADS for _ in range(ROUNDS)]
    barrier = threading.Barrier(THREADS)

    def work(t: int) -> None:
        for r in range(ROUNDS):
            barrier.wait()
            together[r][t] = answer(plan[r][t])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    differ = [(r, t, plan[r][t][0]) for r in range(ROUNDS) for t in range(THREADS) if alone[r][t] != together[r][t]]
    assert differ == [], f"{len(differ)} of {ROUNDS * THREADS} answers differ from alone, e.g. (round, thread, kind) " \
                         f"{differ[:3]}: {alone[differ[0][0]][differ[0][1]]} vs {together[differ[0][0]][differ[0][1]]}"
    assert all(not isinstance(a, str) for requests in alone for a in requests)  # every request scored
