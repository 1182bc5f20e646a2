"""A real chat model: SmolLM2-135M-Instruct (the ``smollm2-135m`` preset), fetched as a user gets it and loaded once
per test run (the session's ``real_backend``). The engine against a naive unbatched transformers loop on the same
weights, under the three instructions, on rows of every task of the test set, batched and chunked differently; the
autorater in both modes; what the signature names."""

from __future__ import annotations

import copy
import math
import random

import pytest
from _slow import CONTEXT_INSTRUCTIONS, naive_token_logprobs, slow_expected

from styleeval import Autorater, LogProb
from styleeval.gguf_files import PRESETS, REAL_WEIGHTS

SIGNED = "model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f"
"""What the preset signs as, on every machine (its file's content)."""


@pytest.fixture(scope="module")
def task_rows(data_dir):
    """A row of every task of the test set (the longest rewrite of each: the most positions), plus an empty
    rewrite."""
    from styleeval.corpora import load_corpus

    data = load_corpus("style_gap_testset", data_dir)
    rows = []
    for task in sorted(set(data["task"])):
        r = max((r for r in data if r["task"] == task), key=lambda r: len(r["rewrite"]))
        rows.append((r["source"], r["rewrite"], r["target_style"]))
    assert len(rows) == 6
    return [*rows, ("Thanks for nothing.", "", "polite")]


@pytest.fixture(scope="module")
def exact(real_backend, task_rows):
    """Each row's per-token log-probabilities under each instruction by the naive loop in float64 (the exact answer
    for these weights), and the largest difference of the same loop in float32 from it: float32's own rounding
    on this 30-layer model, the floor no float32 computation goes below."""
    model, tok = real_backend.model, real_backend.tokenizer
    eot = tok.convert_tokens_to_ids("<|im_end|>")  # ChatML's end of turn, named here, not detected
    wide = copy.deepcopy(model).double()
    exact = [{c: naive_token_logprobs(wide, tok, *row, c, eot) for c in CONTEXT_INSTRUCTIONS} for row in task_rows]
    del wide
    floor = max(abs(a - b) for row, want in zip(task_rows, exact, strict=True) for c in CONTEXT_INSTRUCTIONS
                for a, b in zip(naive_token_logprobs(model, tok, *row, c, eot), want[c], strict=True))
    return exact, floor


@pytest.mark.parametrize("options", [{}, {"max_batch_rows": 1}, {"batch_tokens": 96, "pipeline_rows": 2},
                                     {"pack_prompts": False, "reuse_prefix": False}],
                         ids=["default", "one-row-batches", "small-batches-and-chunks", "no-sharing"])
def test_the_engine_equals_a_naive_loop_on_real_weights(real_backend, task_rows, exact, options):
    """Per token, the float32 engine is as close to the exact (float64) answer as the naive float32 loop is: both are
    within float32's rounding of this 30-layer model (measured: the naive float32 loop up to ~3e-5 from float64, the
    engine up to ~3e-5: the issue's 1e-5 is below what float32 itself reaches here). Content and style follow."""
    reference, floor = exact
    order = list(range(len(task_rows)))
    random.Random(len(options)).shuffle(order)
    lp = LogProb(real_backend.model, tokenizer=real_backend.tokenizer, progress=False, **options)
    got = lp.score(*map(list, zip(*[task_rows[i] for i in order], strict=True)), return_tokens=True)
    worst = 0.0
    for k, i in enumerate(order):
        tokens = got[k]["tokens"]
        assert len(tokens) == len(reference[i]["style"]), f"row {i}: the engine scored another number of tokens"
        for context in CONTEXT_INSTRUCTIONS:
            worst = max(worst, max(abs(t[context] - s) for t, s in zip(tokens, reference[i][context], strict=True)))
        best = [max(v) for v in zip(*reference[i].values(), strict=True)]
        assert got[k]["content"] == pytest.approx(sum(best) / len(best), abs=3e-5)
        gain = [math.exp(s) - max(math.exp(p), math.exp(r)) for s, p, r in zip(*reference[i].values(), strict=True)]
        assert got[k]["style"] == pytest.approx(sum(gain) / len(gain), abs=1e-5)
    print(f"{options}: engine {worst:.2e} from float64, the naive float32 loop {floor:.2e}")
    assert worst <= max(2 * floor, 1e-5) and worst <= 5e-5
    assert got[order.index(len(task_rows) - 1)]["tokens"][0]["token"] == "<|im_end|>"


def test_the_preset_signs_by_its_content(real_backend, task_rows):
    lp = LogProb(backend=real_backend, progress=False)
    sig = lp.score(*map(list, zip(*task_rows[:1], strict=True))).signature
    assert SIGNED in sig and "dtype:float32" in sig and "backend:local" in sig
    from styleeval.labels import has_random_weights

    assert not has_random_weights(sig)
    assert real_backend.model.config.num_hidden_layers == 30 and real_backend.model.config.vocab_size == 49152
    assert PRESETS[REAL_WEIGHTS].sha256.startswith(SIGNED.rsplit("-", 1)[1])


def test_the_expected_autorater_equals_its_definition_on_real_weights(real_backend, task_rows):
    model, tok = real_backend.model, real_backend.tokenizer
    picked = [task_rows[i] for i in (0, 4)]  # the definition costs ten full passes a row
    judge = Autorater(backend=real_backend, mode="expected", progress=False)
    res = judge.rate(*map(list, zip(*picked, strict=True)))
    assert res.compliance_rate == 1.0 and SIGNED in res.signature
    for row, r in zip(picked, res, strict=True):
        meaning, style, mp, sp = slow_expected(model, tok, *row)
        assert r["meaning"] == pytest.approx(meaning, abs=1e-5)
        assert r["style"] == pytest.approx(style, abs=1e-5)
        assert r["meaning_probs"] == pytest.approx(mp.tolist(), abs=1e-5)
        assert r["style_probs"] == pytest.approx(sp.tolist(), abs=1e-5)


def test_the_paper_autorater_reports_its_parse_failures(real_backend, task_rows, capsys):
    """The paper mode (a generated JSON reply) on a 135M model: every reply kept, a row whose rating cannot be read
    stays NaN with parsed=False, and the compliance rate is the count over the raw replies."""
    from styleeval.autorater import parse_robust

    judge = Autorater(backend=real_backend, mode="paper", progress=False)
    res = judge.rate(*map(list, zip(*task_rows[:3], strict=True)))
    replies = [r["reply"] for r in res]
    assert all(isinstance(reply, str) and reply for reply in replies)
    parsed = [r["parsed"] for r in res]
    assert parsed == [None not in parse_robust(reply) for reply in replies]  # the count over the raw replies
    assert res.compliance_rate == pytest.approx(sum(parsed) / len(parsed))
    for r in res:
        assert r["parsed"] or (math.isnan(r["meaning"]) and math.isnan(r["style"]))
    print(f"paper mode on {REAL_WEIGHTS}: {len(parsed) - sum(parsed)} of {len(parsed)} replies unreadable")
