"""The LLM autorater: the authors' prompts verbatim, both parsers, paper mode on a judge with known replies,
expected mode against a slow hand computation."""

from __future__ import annotations

import math
import random

import pytest
import torch
from _slow import slow_expected
from conftest import JUDGE_REPLIES, JUDGE_REWRITES, JUDGE_SOURCES, JUDGE_STYLE

from styleeval.autorater import Autorater, parse_authors, parse_robust
from styleeval.autorater.prompts import PROMPTS

PAPER_SMALL = (
    "Evaluate the following completion of a task where a 'source sentence' has been rewritten to be more polite in "
    "the style, denoted 'target sentence', Ideally the context and content in the sentence which does not relate to "
    "the style should be preserved. Please evaluate on a Likert scale from 1-5 with 5 being the best: 1) how well "
    "the meaning is preserved and 2) how well the the style is changed. Return only JSON format with the keys "
    "'meaning' , 'style'. Given the 'source sentence': SRC 'target sentence': REW"
)
PAPER_70B = (
    "Evaluate the following completion of a task where a 'source sentence' has been rewritten to be more polite in "
    "the style, denoted 'target sentence', Ideally the context and content in the sentence which does not relate to "
    "the style should be preserved. Please evaluate on a Likert scale from 1-5 with 5 being the best: 1) how well "
    "the meaning is preserved and 2) how well the style is changed. Return in JSON format with the keys 'meaning', "
    "'style'. Given the 'source sentence': SRC 'target sentence': REW"
)


def test_prompts_are_the_authors_verbatim():
    small, big = PROMPTS["paper-small"], PROMPTS["paper-70b"]
    assert small.messages("SRC", "REW", "polite") == [
        {"role": "system", "content": "You are a helpfull assistant"}, {"role": "user", "content": PAPER_SMALL}]
    assert big.messages("SRC", "REW", "polite") == [{"role": "user", "content": PAPER_70B}]
    assert (small.decoding.do_sample, small.decoding.max_new_tokens) == (False, 20)
    assert (big.decoding.do_sample, big.decoding.temperature, big.decoding.top_p) == (True, 0.5, 0.9)


# reply, robust (meaning, style), authors (meaning, style)
REPLIES = [
    ('{"meaning": 4, "style": 5}', (4, 5), (4, 5)),
    ('Here is my evaluation: {"meaning": 3, "style": 2} I hope this helps.', (3, 2), (3, 2)),
    ('```json\n{\n  "meaning": 5,\n  "style": 4\n}\n```', (5, 4), (5, 4)),
    ("{'meaning': 2, 'style': 3}", (2, 3), (None, None)),
    ('{"meaning": "4", "style": "1"}', (4, 1), (4, 1)),
    ('{"meaning": 7, "style": 3}', (None, None), (7, 3)),
    ('{"meaning": 4.5, "style": 3}', (None, None), (4.5, 3)),
    ('{"meaning": 4.0, "style": 3}', (4, 3), (4, 3)),
    ("Return only JSON format with the keys 'meaning' , 'style'. Please evaluate on a Likert scale from 1-5",
     (None, None), (None, None)),
    ('{"meaning": 1-5, "style": 1-5}', (None, None), (None, None)),
    ('{"meaning": 2, "style": 2}\nCorrection: {"meaning": 4, "style": 3}', (4, 3), (2, 2)),
    ('{"meaning": 4, "style": 3, "explanation": "good, but short"}', (4, 3), (4, 3)),
    ('{\n  "meaning": 4,\n  "style": ', (None, None), (4, None)),
    ('{\n  "meaning": 4,\n  "style": 3\n', (4, 3), (4, 3)),
    ('{"meaning": 4, "meaning": 2, "style": 3}', (None, None), (4, 3)),
    ("The meaning is 4 and the style is 5.", (None, None), (None, None)),
    ('"meaning" : 4, "style": 5', (None, None), (None, 5)),
    ('{"meaning": nan, "style": 5}', (None, None), (None, 5)),
    ("", (None, None), (None, None)),
]


@pytest.mark.parametrize("reply,robust,authors", REPLIES)
def test_parsers_on_real_looking_replies(reply, robust, authors):
    assert parse_robust(reply) == tuple(None if v is None else float(v) for v in robust)
    assert parse_authors(reply) == tuple(None if v is None else float(v) for v in authors)


# ----------------------------------------------------------------------------------------------- paper mode


def test_paper_mode_on_a_judge_with_known_replies(judge_model_dir):
    judge = Autorater(str(judge_model_dir), mode="paper", device="cpu", progress=False)
    results = judge.rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE, fallback="mean")
    assert [r["reply"] for r in results] == JUDGE_REPLIES
    assert [r["parsed"] for r in results] == [True, True, False]
    assert results.meaning == [4.0, 2.0, 3.0]  # row 2: the mean of the readable rows (the authors' fallback)
    assert results.style == [2.0, 5.0, 3.5]
    assert results.compliance_rate == pytest.approx(2 / 3)
    assert "mode:paper|prompt:paper-small|parser:robust|decoding:greedy-20|dtype:float32" in results.signature

    raw = judge.rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)  # default: unreadable ratings stay NaN
    assert raw.meaning[:2] == [4.0, 2.0] and math.isnan(raw.meaning[2]) and math.isnan(raw.style[2])

    # the authors' parser needs double quotes: only row 0 counts, the others get its ratings
    authors = Autorater(str(judge_model_dir), mode="paper", parser="authors", progress=False)
    res = authors.rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE, fallback="mean")
    assert res.meaning == [4.0, 4.0, 4.0] and res.style == [2.0, 2.0, 2.0]
    assert [r["parsed"] for r in res] == [True, False, False]
    assert "parser:authors" in res.signature


def test_paper_mode_results_are_in_input_order_whatever_the_batching(judge_model_dir):
    order = [2, 0, 1]
    for batch_size in (1, 2, 16):
        judge = Autorater(str(judge_model_dir), mode="paper", generate_batch_size=batch_size, progress=False)
        res = judge.rate([JUDGE_SOURCES[i] for i in order], [JUDGE_REWRITES[i] for i in order], JUDGE_STYLE)
        assert [r["reply"] for r in res] == [JUDGE_REPLIES[i] for i in order]


def test_paper_mode_on_a_random_model_is_non_compliant(tiny_model, tiny_tokenizer):
    judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, mode="paper", progress=False)
    with pytest.warns(UserWarning, match="no meaning rating could be read"):
        res = judge.rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE, fallback="mean")
    assert res.compliance_rate == 0.0
    assert all(math.isnan(v) for v in res.meaning + res.style)
    assert all(isinstance(r["reply"], str) for r in res)


def test_paper_70b_sampling_repeats_with_the_seed(tiny_model, tiny_tokenizer):
    def replies(seed):
        judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, mode="paper", prompt="paper-70b", seed=seed,
                          max_new_tokens=12, progress=False)
        return [r["reply"] for r in judge.rate(JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE)]

    first = replies(0)
    assert replies(0) == first
    assert replies(1) != first


# ----------------------------------------------------------------------------------------------- expected mode


ROWS = [
    ("give me the report now.", "Could you please send me the report?", "polite"),
    ("the food was cold and the staff rude.", "The food was warm and the staff were lovely.", "positive"),
    ("the meeting was moved to Tuesday afternoon.", "The meeting has been moved to Tuesday afternoon.", "formal"),
    ("ur ready 4 the party tonight??", "Are you ready for the party tonight?", "formal"),
    ("This restaurant was awful.", "", "positive"),
    ("The two presidents met.", "The two presidents strengthened their ties over lunch.", "more detailed"),
]


def _single_digit_tokenizer():
    """A tokenizer whose ratings 1-5 are single tokens after the scaffold (as Llama 3's are)."""
    from styleeval.random_weights import DEFAULT_CORPUS, build_tokenizer

    return build_tokenizer([line for line in DEFAULT_CORPUS if " 4" not in line and "012" not in line])


@pytest.mark.parametrize("tokenizer_kind", ["mixed", "single"])
def test_expected_mode_equals_the_slow_hand_computation(tokenizer_kind, tiny_tokenizer):
    from styleeval.random_weights import build_model

    tok = tiny_tokenizer if tokenizer_kind == "mixed" else _single_digit_tokenizer()
    model = build_model("tiny", vocab_size=len(tok), head_scale=3.0, seed=1)
    if tokenizer_kind == "single":
        tails = [tok('{"meaning": ' + r, add_special_tokens=False)["input_ids"] for r in "12345"]
        assert len({len(t) for t in tails}) == 1  # the one-token fast path is what runs
    expected = [slow_expected(model, tok, *row) for row in ROWS]
    rng = random.Random(0)
    for batch_tokens in (64, 100000):  # one row per batch / every row in one batch
        order = list(range(len(ROWS)))
        rng.shuffle(order)
        judge = Autorater(model, tokenizer=tok, mode="expected", batch_tokens=batch_tokens, progress=False)
        assert judge._scaffold_tree() is not None  # one packed tree pass per row
        res = judge.rate(*[[ROWS[i][k] for i in order] for k in range(3)])
        judge._tree_cache = None  # force the two-pass route (what the server backend does)
        two_pass = judge.rate(*[[ROWS[i][k] for i in order] for k in range(3)])
        assert two_pass.meaning == pytest.approx(res.meaning, abs=1e-6)
        assert two_pass.style == pytest.approx(res.style, abs=1e-6)
        assert res.compliance_rate == 1.0
        for row, i in zip(res, order, strict=True):
            meaning, style, mp, sp = expected[i]
            assert row["meaning"] == pytest.approx(meaning, abs=1e-5)
            assert row["style"] == pytest.approx(style, abs=1e-5)
            assert row["meaning_probs"] == pytest.approx(mp.tolist(), abs=1e-5)
            assert row["style_probs"] == pytest.approx(sp.tolist(), abs=1e-5)
            assert sum(row["meaning_probs"]) == pytest.approx(1.0)
            assert 1.0 <= row["meaning"] <= 5.0 and row["parsed"] is True


def test_expected_mode_single_row_and_signature(tiny_model, tiny_tokenizer):
    judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    res = judge.rate(["a b"], ["a c"], "formal")
    assert len(res) == 1 and set(res[0]) == {"meaning", "style", "parsed", "meaning_probs", "style_probs"}
    assert res.signature.startswith("autorater|model:<model object>@local|mode:expected|prompt:paper-small|"
                                    "parser:none|decoding:scaffold|dtype:float32|tmpl:")
    assert res.signature.endswith(f"|backend:local|build:{judge.backend.identity.build}|version:0.1.0")
    assert judge.rate([], [], "formal") == []


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mode": "judge"}, "mode: unknown mode 'judge'"),
        ({"prompt": "paper-1b"}, "prompt: unknown judge prompt 'paper-1b'"),
        ({"parser": "strict"}, "parser: unknown parser 'strict'"),
        ({"device": "tpu"}, "device"),
        ({"max_new_tokens": 0}, "max_new_tokens must be positive"),
    ],
)
def test_bad_options_are_clear_errors(tiny_model, tiny_tokenizer, kwargs, match):
    with pytest.raises(ValueError, match=match):
        Autorater(tiny_model, tokenizer=tiny_tokenizer, progress=False, **kwargs)


def test_bad_rows_are_clear_errors(tiny_model, tiny_tokenizer):
    judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    with pytest.raises(ValueError, match="rewrites has 1 rows but 2 were expected"):
        judge.rate(["a", "b"], ["c"], "formal")
    with pytest.raises(ValueError, match=r"styles\[1\] is empty"):
        judge.rate(["a", "b"], ["c", "d"], ["formal", " "])
    with pytest.raises(ValueError, match=r"sources\[0\] is None"):
        judge.rate([None], ["c"], "formal")
    with pytest.raises(ValueError, match="fallback must be"):
        judge.rate(["a"], ["c"], "formal", fallback="median")


def test_engine_prompt_groups_are_exact(tiny_model, tiny_tokenizer):
    """Grouping rows by a longer shared prompt (share_prompts) changes nothing but the work done."""
    from styleeval.backends.local.engine import ScoringEngine

    rng = random.Random(3)
    base = tiny_tokenizer("Rewrite the following sentence to be polite: ", add_special_tokens=False)["input_ids"]
    prompts, conts = [], []
    for k in range(24):
        source = tiny_tokenizer(f"sentence number {k % 5} about the cat", add_special_tokens=False)["input_ids"]
        prompts.append([1, 2, 3] + base[: rng.randint(3, len(base))] + source)
        conts.append([rng.randrange(10, 500) for _ in range(rng.randint(0, 6))])
    plain = ScoringEngine(tiny_model, batch_tokens=64).token_logprobs(prompts, conts)
    for budget in (16, 64, 4096):
        grouped = ScoringEngine(tiny_model, batch_tokens=budget, share_prompts=True, min_shared=2)
        for a, b in zip(plain, grouped.token_logprobs(prompts, conts), strict=True):
            assert torch.allclose(a, b, atol=1e-5)
        cands = grouped.candidate_logprobs(prompts, [5, 6, 7])
        ref = ScoringEngine(tiny_model, reuse_prefix=False).candidate_logprobs(prompts, [5, 6, 7])
        assert torch.allclose(cands, ref, atol=1e-5)
