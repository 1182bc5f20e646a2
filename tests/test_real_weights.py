"""A real chat model: SmolLM2-135M-Instruct (the ``smollm2-135m`` preset), fetched as a user gets it and loaded once
per test run (the session's ``real_backend``). The engine against a naive unbatched transformers loop on the same
weights, under the three instructions, on rows of every task of the test set, batched and chunked differently; the
autorater in both modes; what the signature names.

No fixed float32 tolerance: on this 30-layer model float32's own rounding is ~1e-5 per log-probability and moves with
the CPU's kernels (AVX2, AVX-512, an AMX Xeon's). Every comparison is with the exact answer (the same definition
computed in float64) under a bound derived from what float32 itself reaches on the machine the test runs on: the
naive float32 loop's distance from float64 (the ``floor``), and from it, by the equations' own arithmetic, the
largest distance a score may have."""

from __future__ import annotations

import copy
import math
import random

import pytest
import torch
from _slow import CONTEXT_INSTRUCTIONS, naive_token_logprobs, slow_rating_logprobs

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
def wide(real_backend):
    """The same weights in float64: the exact answer's model (about 1.1 GB, kept for this module's tests)."""
    return copy.deepcopy(real_backend.model).double()


@pytest.fixture(scope="module")
def exact(real_backend, wide, task_rows):
    """Each row's per-token log-probabilities under each instruction by the naive loop in float64 (the exact answer
    for these weights), and the largest difference of the same loop in float32 from it, over every token of every
    row and instruction (a few hundred): float32's own rounding on this 30-layer model with this CPU's kernels, the
    floor no float32 computation goes below."""
    model, tok = real_backend.model, real_backend.tokenizer
    eot = tok.convert_tokens_to_ids("<|im_end|>")  # ChatML's end of turn, named here, not detected
    exact = [{c: naive_token_logprobs(wide, tok, *row, c, eot) for c in CONTEXT_INSTRUCTIONS} for row in task_rows]
    floor = max(abs(a - b) for row, want in zip(task_rows, exact, strict=True) for c in CONTEXT_INSTRUCTIONS
                for a, b in zip(naive_token_logprobs(model, tok, *row, c, eot), want[c], strict=True))
    assert 0 < floor < 1e-3  # float32 rounding, not a defect of the reference (measured 2.9e-5 on an EPYC)
    return exact, floor


def float32_bound(floor: float) -> float:
    """The most a float32 computation of a log-probability may be from the exact one: four times the naive float32
    loop's largest distance on the running CPU. Another float32 computation of the same network (the engine's tiles
    and packed sequences, the naive loop's one sequence) rounds as many products and sums of the same magnitudes in
    another order, so its error has the naive loop's scale, but not within a fixed factor of it: measured engine /
    naive ratios 1.31 on an AMD EPYC with AVX-512 (2.57e-5 / 1.96e-5), 2.14 on an AMD EPYC with AVX2 only (4.29e-5 /
    2.00e-5, 2026-11-28: twice the floor failed there). An empirical factor, not a derivation (issue 56 stays open for
    one); a defect of the engine (a wrong position, mask or token) moves log-probabilities by far more. 1e-5 where
    the floor is smaller still."""
    return max(4 * floor, 1e-5)


@pytest.mark.parametrize("options", [{}, {"max_batch_rows": 1}, {"batch_tokens": 96, "pipeline_rows": 2},
                                     {"pack_prompts": False, "reuse_prefix": False}],
                         ids=["default", "one-row-batches", "small-batches-and-chunks", "no-sharing"])
def test_the_engine_equals_a_naive_loop_on_real_weights(real_backend, task_rows, exact, options):
    """Per token, the float32 engine is as close to the exact (float64) answer as the naive float32 loop is
    (:func:`float32_bound`; measured: the naive float32 loop up to ~3e-5 from float64, the engine up to ~3e-5).
    Content and style follow by the equations' arithmetic from the row's largest token error ``w``: content is a
    mean of maxima (each 1-Lipschitz), so within ``w``; style a mean of exp(style) - max(exp(paraphrase),
    exp(repeat)) with every log-probability <= 0, so within 2 w e^w."""
    reference, floor = exact
    order = list(range(len(task_rows)))
    random.Random(len(options)).shuffle(order)
    lp = LogProb(real_backend.model, tokenizer=real_backend.tokenizer, progress=False, **options)
    got = lp.score(*map(list, zip(*[task_rows[i] for i in order], strict=True)), return_tokens=True)
    worst = 0.0
    for k, i in enumerate(order):
        tokens = got[k]["tokens"]
        assert len(tokens) == len(reference[i]["style"]), f"row {i}: the engine scored another number of tokens"
        w = max(abs(t[context] - s) for context in CONTEXT_INSTRUCTIONS
                for t, s in zip(tokens, reference[i][context], strict=True))
        worst = max(worst, w)
        best = [max(v) for v in zip(*reference[i].values(), strict=True)]
        assert abs(got[k]["content"] - sum(best) / len(best)) <= w + 1e-12, f"row {i}"
        gain = [math.exp(s) - max(math.exp(p), math.exp(r)) for s, p, r in zip(*reference[i].values(), strict=True)]
        assert abs(got[k]["style_strength"] - sum(gain) / len(gain)) <= 2 * w * math.exp(w) + 1e-12, f"row {i}"
    print(f"{options}: engine {worst:.2e} from float64, the naive float32 loop {floor:.2e}")
    assert worst <= float32_bound(floor)
    assert got[order.index(len(task_rows) - 1)]["tokens"][0]["token"] == "<|im_end|>"


def test_the_preset_signs_by_its_content(real_backend, task_rows):
    lp = LogProb(backend=real_backend, progress=False)
    sig = lp.score(*map(list, zip(*task_rows[:1], strict=True))).signature
    assert SIGNED in sig and "dtype:float32" in sig and "backend:local" in sig
    from styleeval.labels import has_random_weights

    assert not has_random_weights(sig)
    assert real_backend.model.config.num_hidden_layers == 30 and real_backend.model.config.vocab_size == 49152
    assert PRESETS[REAL_WEIGHTS].sha256.startswith(SIGNED.rsplit("-", 1)[1])


def test_the_expected_autorater_equals_its_definition_on_real_weights(real_backend, wide, task_rows, exact):
    """The expected-mode judge against its definition computed in float64 (the exact answer), within what float32
    reaches. ``eps``: the largest float32 error of a log-probability on this CPU, the larger of the token floor
    (the LogProb test's, a few hundred tokens) and the naive float32 loop's error on these rows' rating log-probs
    (the judge's prompt is longer). The engine's rating log-probabilities are then within ``eta = m *
    float32_bound(eps)`` (a rating spans at most ``m`` tokens), so each probability of the softmax is within
    ``exp(2 eta) - 1`` of the exact one and the expected rating, sum((r - 3) dp) with sum(dp) = 0, within twice that.
    (The issue's fixed 1e-5 against the float32 loop failed on an AMX Xeon by 1.09e-5; measured here on an EPYC: the
    engine 1e-6 to 8e-6 from float64, the float32 loop 2e-6 to 9e-6.)"""
    model, tok = real_backend.model, real_backend.tokenizer
    picked = [task_rows[i] for i in (0, 4)]  # the definition costs ten full passes a row, twice
    judge = Autorater(backend=real_backend, mode="expected", progress=False)
    res = judge.rate(*map(list, zip(*picked, strict=True)))
    assert res.compliance_rate == 1.0 and SIGNED in res.signature
    eps, span, references = exact[1], 1, []
    for row in picked:
        meaning_lp, style_lp, m = slow_rating_logprobs(wide, tok, *row)
        best = int(meaning_lp.argmax()) + 1
        narrow_meaning, narrow_style, _ = slow_rating_logprobs(model, tok, *row, best=best)
        eps = max(eps, float((narrow_meaning - meaning_lp).abs().max()), float((narrow_style - style_lp).abs().max()))
        span = max(span, m)
        mp, sp = torch.softmax(meaning_lp, dim=0), torch.softmax(style_lp, dim=0)
        ratings = torch.arange(1, 6, dtype=torch.float64)
        references.append((best, (float(mp @ ratings), float(sp @ ratings), mp, sp)))
    eta = span * float32_bound(eps)
    prob_bound = math.expm1(2 * eta)
    for r, (best, (meaning, style, mp, sp)) in zip(res, references, strict=True):
        assert max(range(5), key=r["meaning_probs"].__getitem__) + 1 == best  # the style scaffold names one rating
        errors = {"meaning": abs(r["meaning"] - meaning), "style": abs(r["style"] - style),
                  "meaning_probs": max(abs(a - b) for a, b in zip(r["meaning_probs"], mp.tolist(), strict=True)),
                  "style_probs": max(abs(a - b) for a, b in zip(r["style_probs"], sp.tolist(), strict=True))}
        print(f"from float64: {errors}; eps {eps:.2e}, bounds {prob_bound:.2e} / {2 * prob_bound:.2e}")
        assert errors["meaning_probs"] <= prob_bound and errors["style_probs"] <= prob_bound, errors
        assert errors["meaning"] <= 2 * prob_bound and errors["style"] <= 2 * prob_bound, errors


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
