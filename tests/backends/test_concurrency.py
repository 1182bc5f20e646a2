"""A shared backend answers as if alone: threads scoring and rating through one local model get exactly the answers
of the same requests made one after another (issue 27)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from styleeval import Autorater, LogProb
from styleeval.backends import open_backend


def test_eight_threads_of_mixed_requests_equal_the_sequential_answers(tiny_model, tiny_tokenizer, rows):
    backend = open_backend(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    lp = LogProb(backend=backend, progress=False)
    judge = Autorater(backend=backend, progress=False)
    lp_plain = LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False, pack_prompts=False)  # another engine
    rng = random.Random(0)
    requests = []
    for _ in range(8 * 40):
        picked = rng.sample(rows, rng.randint(1, 3))
        requests.append((rng.choice(["logprob", "plain", "judge"]), [list(c) for c in zip(*picked)]))

    def answer(request):
        kind, (sources, rewrites, styles) = request
        if kind == "judge":
            return [(r["meaning"], r["style"]) for r in judge.rate(sources, rewrites, styles)]
        scorer = lp if kind == "logprob" else lp_plain
        return [(s["content"], s["style"]) for s in scorer.score(sources, rewrites, styles)]

    alone = [answer(r) for r in requests]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(answer, requests))
    differ = [i for i, (a, b) in enumerate(zip(alone, together)) if a != b]
    assert differ == [], f"{len(differ)} of {len(requests)} answers differ, e.g. request {differ[:3]}"
