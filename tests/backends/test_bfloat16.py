"""The bfloat16 engine (``dtype="bfloat16"``: weights and body in bfloat16, the LM head and log-softmax in float32,
the default ``head_dtype``) against a naive bfloat16 loop, on the tiny random model and on real weights
(SmolLM2-135M); how far a bfloat16 score moves with its batch-mates; what its signature says.

What "equal" can mean in bfloat16. A bfloat16 number keeps 8 significant bits: every operation rounds by up to
2^-8 of its result, a logit of ~20 by up to 0.08. Two bfloat16 computations of the same score that differ in any
detail (one sequence or a batch, the prompt's KV cache or not, another kernel) round differently, and through 30
layers a flipped rounding grows: they differ per token by about what either differs from exact arithmetic on the
same weights. So the tolerance is measured, not assumed: ``floor`` is what the naive bfloat16 loop (one sequence per
forward pass, no cache, transformers' own kernels, the LM head in float32 on its last hidden state as the engine's)
differs from the float32 loop on the same bfloat16 weights (the exact answer for these weights up to float32
rounding, ~3e-5 per token: 1000x below). Measured here (printed by the tests): tiny model (10 rows), per token mean
0.019, max 0.092, content up to 0.008; SmolLM2-135M (the longest rewrite of every task of the test set and an empty
rewrite) mean 0.033, max 0.31, style up to 0.003, content up to 0.28: the empty rewrite's, whose content is its one
end-of-turn token (the six others' up to 0.023); the test runs four of those rows (:func:`real16`). The engine must be as close to exact as the naive loop is (mean
within 1.5x, largest token within 2x, content and style within 2x), which an engine bug breaks by far (reading a token's
log-probability one position off moves it by 5.6 on average on the tiny model).

Rule 1 (a score does not depend on batch-mates, chunking or order) holds in bfloat16 as in float32, to the bit: the
engine's attention computes each query on its own keys with fixed-shape reductions and its matmuls have at least
64 token rows (styleeval.backends.local.invariant; before it, torch's CPU attention summed over the batch's padded
key length and a row's content moved by up to 0.041 on 48 test-set rows of SmolLM2-135M).
"""

from __future__ import annotations

import copy
import random

import pytest
import torch
from _slow import CONTEXT_INSTRUCTIONS, naive_token_logprobs

from styleeval import LogProb
from styleeval.backends.local import LocalBackend
from styleeval.gguf_files import REAL_WEIGHTS
from styleeval.logprob import logprob_equations
from styleeval.signature import Signature

CONTEXTS = tuple(CONTEXT_INSTRUCTIONS)


class Reference:
    """A bfloat16 model with, per row and context, the exact token log-probabilities (the naive loop in float32 on
    the bfloat16 weights) and the naive bfloat16 loop's (float32 head on its last hidden state, as the engine)."""

    def __init__(self, model16, tokenizer, rows, end_of_turn, backend: LocalBackend | None = None):
        self.model, self.tokenizer, self.rows, self.backend = model16, tokenizer, rows, backend
        self._shuffled: list | None = None
        wide = copy.deepcopy(model16).float()
        self.exact = [{c: naive_token_logprobs(wide, tokenizer, *r, c, end_of_turn) for c in CONTEXTS} for r in rows]
        del wide
        self.naive = [{c: naive_token_logprobs(model16, tokenizer, *r, c, end_of_turn, float_head=True)
                       for c in CONTEXTS} for r in rows]
        self.floor = self.errors(self.naive)

    def errors(self, got) -> dict[str, float]:
        """Per-token mean and max |got - exact|, and the largest content and style differences."""
        diffs = [abs(a - b) for g, e in zip(got, self.exact, strict=True) for c in CONTEXTS
                 for a, b in zip(g[c], e[c], strict=True)]
        scores = [_scores(g) for g in got]
        exact = [_scores(e) for e in self.exact]
        return {"mean": sum(diffs) / len(diffs), "max": max(diffs),
                "content": _largest_score_diff(scores, exact, 0), "style": _largest_score_diff(scores, exact, 1)}

    def score(self, lp: LogProb, order=None) -> list[dict[str, list[float]]]:
        return token_logprobs(lp, self.rows, order)

    def shuffled(self) -> list[dict[str, list[float]]]:
        """The default bfloat16 engine's token log-probabilities of every row, scored in one call in a shuffled
        order (:data:`SHUFFLED`), back in row order: computed once per model, the scoring that the naive loop test
        checks against the exact answer and the base that Rule 1's test compares every other batching with."""
        if self._shuffled is None:
            self._shuffled = self.score(_engine(self), shuffled_order(len(self.rows), SHUFFLED))
        return self._shuffled


def _scores(tokens: dict[str, list[float]]) -> tuple[float, float]:
    return logprob_equations(*(torch.tensor(tokens[c]) for c in CONTEXTS))


def _largest_score_diff(got, want, k: int) -> float:
    """The largest |content| (k=0) or |style| (k=1) difference over rows that score a token (an empty rewrite with
    end_of_turn scores one)."""
    return max(abs(a[k] - b[k]) for a, b in zip(got, want, strict=True))


def token_logprobs(lp: LogProb, rows, order=None) -> list[dict[str, list[float]]]:
    """``lp``'s token log-probabilities of ``rows`` (scored in one call, in ``order``), back in row order."""
    order = list(range(len(rows))) if order is None else order
    got = lp.score(*map(list, zip(*[rows[i] for i in order], strict=True)), return_tokens=True)
    out: list = [None] * len(rows)
    for k, i in enumerate(order):
        out[i] = {c: [t[c] for t in got[k]["tokens"]] for c in CONTEXTS}
    return out


SHUFFLED = 3
"""The seed of the order the shared scoring (:meth:`Reference.shuffled`) gives the engine its rows in."""


def shuffled_order(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def largest_move(got, base) -> float:
    """The largest per-token difference between two scorings of the same rows."""
    return max(abs(a - b) for g, e in zip(got, base, strict=True) for c in CONTEXTS
               for a, b in zip(g[c], e[c], strict=True))


@pytest.fixture(scope="module")
def tiny16(tiny_model, tiny_tokenizer, rows):
    model16 = copy.deepcopy(tiny_model).to(torch.bfloat16)
    return Reference(model16, tiny_tokenizer, [*rows[:9], rows[-1]],
                     tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>"))


@pytest.fixture(scope="module")
def real16(real_backend, data_dir):
    """SmolLM2-135M in bfloat16, made once from the session's float32 weights (not loaded again), as a local backend
    that signs as the preset; four rows of the test set's longest rewrites per task (the longest and the shortest of
    them, the one with the shortest source) and an empty rewrite: lengths that differ, so that padding differs. Each
    row is three naive bfloat16 forward passes of the real model besides the engine's (the test's cost: the seven
    tasks' rows and the empty one took about 390 s of CI, these four about half)."""
    from styleeval.corpora import load_corpus

    model16 = copy.deepcopy(real_backend.model).to(torch.bfloat16)
    backend = LocalBackend(REAL_WEIGHTS, dtype="bfloat16", progress=False, loaded=(
        model16, real_backend.tokenizer, real_backend.model_name, real_backend.revision))
    data = load_corpus("style_gap_testset", data_dir)
    picked = []
    for task in sorted(set(data["task"])):
        r = max((r for r in data if r["task"] == task), key=lambda r: len(r["rewrite"]))
        picked.append((r["source"], r["rewrite"], r["target_style"]))
    lengths = [len(rewrite) for _, rewrite, _ in picked]
    kept = sorted({lengths.index(max(lengths)), lengths.index(min(lengths)),
                   min(range(len(picked)), key=lambda i: len(picked[i][0]))})
    rows = [*(picked[i] for i in kept), ("Thanks for nothing.", "", "polite")]
    return Reference(model16, real_backend.tokenizer, rows, real_backend.tokenizer.convert_tokens_to_ids("<|im_end|>"),
                     backend)


def _engine(ref: Reference, pipeline_rows: int | None = None, **options) -> LogProb:
    """A bfloat16 LogProb on ``ref``'s model with the default (float32) head and these engine options."""
    chunks = {} if pipeline_rows is None else {"pipeline_rows": pipeline_rows}
    if ref.backend is None:
        return LogProb(ref.model, tokenizer=ref.tokenizer, dtype="bfloat16", progress=False, **chunks, **options)
    backend = ref.backend if not options else LocalBackend(
        REAL_WEIGHTS, dtype="bfloat16", progress=False,
        loaded=(ref.model, ref.tokenizer, ref.backend.model_name, ref.backend.revision), **options)
    return LogProb(backend=backend, progress=False, **chunks)


def _within_the_floor(got: dict[str, float], floor: dict[str, float]) -> bool:
    """As close to exact as the naive bfloat16 loop: content and style within 2x its largest difference (+1e-3)."""
    return got["content"] <= 2 * floor["content"] + 1e-3 and got["style"] <= 2 * floor["style"] + 1e-3


@pytest.mark.parametrize("which", ["tiny", "real"])
def test_the_bfloat16_engine_equals_a_naive_bfloat16_loop(which, request):
    """As close to the exact answer as the naive bfloat16 loop is (see the module's docstring for why not closer),
    with the default head (float32) and rows in a shuffled order."""
    ref = request.getfixturevalue(f"{which}16")
    lp = _engine(ref)
    assert "|dtype:bfloat16|head:float32|" in lp.signature
    assert {p.dtype for p in lp.backend.model.parameters()} == {torch.bfloat16}  # the body really runs in bfloat16
    got = ref.errors(ref.shuffled())  # the default engine, every row in one call, shuffled (shared with Rule 1's test)
    floor = ref.floor
    print(f"{which}: engine {got}; naive bfloat16 loop (the floor) {floor}")
    assert 0 < floor["mean"] < 0.1 and floor["max"] < 1.0  # the naive loop itself is bfloat16-close to exact
    assert got["mean"] <= 1.5 * floor["mean"] and got["max"] <= 2 * floor["max"]
    assert _within_the_floor(got, floor)


@pytest.mark.parametrize("which", ["tiny", "real"])
def test_a_bfloat16_score_is_the_same_bits_whatever_its_batch_mates(which, request):
    """Rule 1 in bfloat16: other batch-mates, batchings, chunkings and orders, and each row scored alone, give every
    token the same bits (``==``) as the call with every row (the shared shuffled scoring, :meth:`Reference.shuffled`).
    Every row goes through every variant (SmolLM2-135M's four rows of different lengths, the empty rewrite among
    them: each variant is one more bfloat16 scoring of the real model)."""
    ref = request.getfixturevalue(f"{which}16")
    base, rows = ref.shuffled(), ref.rows
    lp = _engine(ref)
    variants = {
        "rows reversed": token_logprobs(lp, rows, list(reversed(range(len(rows))))),
        "one row per batch": token_logprobs(_engine(ref, max_batch_rows=1), rows),
        "small batches and chunks, shuffled": token_logprobs(_engine(ref, batch_tokens=96, pipeline_rows=2), rows,
                                                             shuffled_order(len(rows), 5)),
        "no packing": token_logprobs(_engine(ref, pack_prompts=False), rows),
        "each row alone": [token_logprobs(lp, [row])[0] for row in rows],
    }
    for name, got in variants.items():
        kept = sum(g == e for g, e in zip(got, base, strict=True))
        assert got == base, f"{which}, {name}: {kept}/{len(base)} rows bit-identical (largest move per token " \
                            f"{largest_move(got, base):.2e})"


def test_the_bfloat16_signature_names_its_precision(tiny_model, tiny_tokenizer, real16, real_backend):
    """``dtype:bfloat16`` and the head's precision (float32 by default, ``head:bfloat16`` when asked), and nothing
    else differs from float32's signature: same model, template, tokenizer."""
    float32 = Signature(LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False).signature)
    model16 = copy.deepcopy(tiny_model).to(torch.bfloat16)
    bf16 = Signature(LogProb(model16, tokenizer=tiny_tokenizer, dtype="bfloat16", progress=False).signature)
    rounded_head = Signature(LogProb(model16, tokenizer=tiny_tokenizer, dtype="bfloat16", head_dtype="bfloat16",
                                     progress=False).signature)
    assert (float32.fields["dtype"], float32.fields["head"]) == ("float32", "float32")
    assert (bf16.fields["dtype"], bf16.fields["head"]) == ("bfloat16", "float32")
    assert (rounded_head.fields["dtype"], rounded_head.fields["head"]) == ("bfloat16", "bfloat16")
    assert bf16 != float32
    assert {k for k in float32.fields if float32.fields[k] != bf16.fields[k]} == {"dtype"}
    real = Signature(LogProb(backend=real16.backend, progress=False).signature)
    real32 = Signature(LogProb(backend=real_backend, progress=False).signature)
    assert real.fields["model"] == real32.fields["model"]  # the preset's identity, though made from its weights
    assert {k for k in real.fields if real.fields[k] != real32.fields[k]} == {"dtype"}
