"""The guards of LogProb as a reward (issue 63): the guarded reward is its stated equation on a naive loop (the tiny
random-weight model, and the real 135M), plain LogProb is untouched by it, and on the real 135M the degenerate outputs
that gamed issue 49's runs (the instruction echoed) and run 3 (the source, then itself again) rank below the rated
rewrites of fixed test-set rows. The repeat guard's rule is Python's ``str.count`` on token runs."""

from __future__ import annotations

import math
import random
import re
import string
import warnings

import pytest
from _slow import CONTEXT_INSTRUCTIONS, GUARD_INSTRUCTIONS, naive_token_logprobs

from styleeval import LogProb
from styleeval.errors import UserError
from styleeval.logprob import NotFiniteWarning
from styleeval.logprob.metric import REPEAT_SPAN, self_repeat
from styleeval.logprob.prompts import PROMPT_SETS
from styleeval.rewards import STYLE_WEIGHT, LogProbReward

FLOOR = -100.0
"""A floor below every tiny-model row, so that a floored row cannot pass for a scored one."""

ROWS = [  # (source, completion, style): real rewrites, a copy, the instruction echoed with and without the source
    ("gimme the report now.", "Could you please send me the report?", "polite"),
    ("gimme the report now.", "gimme the report now.", "polite"),
    ("gimme the report now.", "Rewrite the following sentence to be polite: gimme the report now.", "polite"),
    ("gimme the report now.", "Rewrite the following sentence to be polite:", "polite"),
    ("the food was cold lol", "The food was served cold.", "formal"),
    ("the food was cold lol", "Rewrite the following sentence to be formal:", "formal"),
    ("the food was cold lol", "the food was cold lol Rewritten sentence in a formal style.", "formal"),
    ("the food was cold lol", "formal formal formal formal formal", "formal"),
    ("gimme the report now.", "to be polite:", "polite"),  # pieces of the instruction: the tiny model's guarded rows
    ("gimme the report now.", "be polite", "polite"),
]


def by_the_equation(model, tokenizer, eot, rows, content_weight=1.0, style_weight=STYLE_WEIGHT, floor=FLOOR):
    """The guarded reward of each row as docs/training.md states it, from a naive loop (one forward pass per row and
    context, float64 arithmetic):

        C = 1/N sum_i log max(p_i^s, p_i^pa, p_i^r)            S = 1/N sum_i (p_i^s - max(p_i^pa, p_i^r))
        P = max(1/N sum_i log p_i^echo, 1/N sum_i log p_i^unsourced)
        reward = content_weight * C + style_weight * S if P < C, else floor

    Returns (reward, C, S, P) per row."""
    out = []
    for source, rewrite, style in rows:
        lp = {c: naive_token_logprobs(model, tokenizer, source, rewrite, style, c, eot)
              for c in (*CONTEXT_INSTRUCTIONS, *GUARD_INSTRUCTIONS)}
        n = len(lp["style"])
        content = sum(max(s, p, r) for s, p, r in zip(lp["style"], lp["paraphrase"], lp["repeat"], strict=True)) / n
        style_ = sum(math.exp(s) - max(math.exp(p), math.exp(r))
                     for s, p, r in zip(lp["style"], lp["paraphrase"], lp["repeat"], strict=True)) / n
        prompt = max(sum(lp["echo"]) / n, sum(lp["unsourced"]) / n)
        value = content_weight * content + style_weight * style_ if prompt < content else floor
        out.append((value, content, style_, prompt))
    return out


def call(reward, rows, **extra):
    sources, completions, styles = (list(x) for x in zip(*rows, strict=True))
    return reward(prompts=[f"Rewrite: {s}" for s in sources], completions=completions, source=sources, style=styles,
                  **extra)


def test_the_guards_instructions_are_the_ones_written_out():
    for context, instruction in GUARD_INSTRUCTIONS.items():
        got = PROMPT_SETS["paper"].user_message(context, "a b.", "polite")
        assert got == instruction.format(source="a b.", style="polite")


@pytest.fixture(scope="module")
def tiny(tiny_model_dir, tiny_model, tiny_tokenizer):
    reward = LogProbReward(model=str(tiny_model_dir), guard="prompt", floor=FLOOR)
    return reward, by_the_equation(tiny_model, tiny_tokenizer, tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>"), ROWS)


def test_the_guarded_reward_is_its_equation_on_a_naive_loop(tiny):
    reward, want = tiny
    metrics = {}
    got = call(reward, ROWS, log_metric=metrics.__setitem__)
    guarded = [w[0] == FLOOR for w in want]
    assert any(guarded) and not all(guarded), "the rows must take both branches of the guard"
    assert metrics["logprob/guarded"] == sum(guarded) / len(ROWS) == metrics["logprob/floored"]
    for i, (g, (value, *_)) in enumerate(zip(got, want, strict=True)):
        assert (g == FLOOR) == (value == FLOOR), f"row {i}: the guard's verdict differs from the equation's"
        assert abs(g - value) < 1e-4, f"row {i}: {g} against {value}"  # float32 rounding (the engine's batches)


def test_the_guarded_scores_are_the_equations_terms(tiny):
    reward, want = tiny
    sources, completions, styles = (list(x) for x in zip(*ROWS, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotFiniteWarning)  # a floored row's -inf is the guard's verdict, not overflow
        rows = reward.logprob.score(sources, completions, styles)
    for i, (row, (value, content, style, prompt)) in enumerate(zip(rows, want, strict=True)):
        assert abs(row["prompt_reading"] - prompt) < 1e-5, f"row {i}"
        if value == FLOOR:
            assert (row["content"], row["style_strength"]) == (-math.inf, -1.0), f"row {i}"
        else:
            assert abs(row["content"] - content) < 1e-5 and abs(row["style_strength"] - style) < 1e-5, f"row {i}"


def test_plain_logprob_is_untouched_and_signs_apart(tiny):
    """The guard is an option of the reward's scorer: plain LogProb (the evaluation metric) scores as before, and the
    two never share a signature (a cache or a comparison cannot mix them)."""
    reward, want = tiny
    plain = LogProb(backend=reward.logprob.backend, progress=False)
    sources, completions, styles = (list(x) for x in zip(*ROWS, strict=True))
    rows = plain.score(sources, completions, styles)
    assert "guard" not in str(plain.signature) and "prompt_reading" not in rows[0]
    assert str(reward.logprob.signature) == str(plain.signature).replace("|first:yes|", "|first:yes|guard:prompt|")
    assert "|guard:prompt|" in reward.signature and reward.__name__ == "logprob_guarded"
    for i, (row, (_, content, style, _)) in enumerate(zip(rows, want, strict=True)):
        assert abs(row["content"] - content) < 1e-5 and abs(row["style_strength"] - style) < 1e-5, f"row {i}"
    unguarded = LogProbReward(backend=reward.logprob.backend, floor=FLOOR)
    assert all(v != FLOOR for v in call(unguarded, ROWS))  # the same rows, the plain reward: nothing floored


def test_an_unknown_guard_is_refused_naming_the_choices(tiny):
    for wrong in ("echo", "repeat+prompt", "prompt+"):
        with pytest.raises(UserError, match=f"guard must be None or one of 'prompt', 'repeat', 'prompt\\+repeat', "
                                            f"got '{re.escape(wrong)}'"):
            LogProb(backend=tiny[0].logprob.backend, guard=wrong)


# --- the repeat guard ----------------------------------------------------------------------------------------------
def words_of(text: str) -> list[str]:
    """A text's words as the guard compares them, written out: split at white space, punctuation cut from both ends,
    casefolded, the empty ones dropped."""
    out = []
    for word in text.split():
        while word and word[0] in string.punctuation:
            word = word[1:]
        while word and word[-1] in string.punctuation:
            word = word[:-1]
        if word:
            out.append(word.casefold())
    return out


def repeats_by_str_count(rewrite: str, source: str, span: int = REPEAT_SPAN) -> bool:
    """The repeat guard's rule through Python's ``str.count`` (occurrences without overlap, left to right): each word
    one character, every run of ``span`` words of the rewrite that holds a letter counted in both texts."""
    vocabulary: dict[str, str] = {}
    code = lambda words: "".join(vocabulary.setdefault(w, chr(0x4E00 + len(vocabulary))) for w in words)  # noqa: E731
    words = words_of(rewrite)
    text, base = code(words), code(words_of(source))
    runs = {text[i:i + span] for i in range(len(text) - span + 1)
            if any(c.isalpha() for word in words[i:i + span] for c in word)}
    return any(text.count(run) >= 2 and text.count(run) > base.count(run) for run in runs)


def test_self_repeat_is_str_count_on_word_runs():
    rng = random.Random(0)
    vocabulary = ["it", "It", "is", "late.", "late", "--", "1,000", "9:00", "Rewrite:", "no,", "No!"]
    seen = {True: 0, False: 0}
    for _ in range(3000):
        words, span = rng.sample(vocabulary, rng.randint(1, 4)), rng.choice([1, 2, 3, REPEAT_SPAN])
        rewrite = rng.choice([" ", "\n", "  "]).join(rng.choice(words) for _ in range(rng.randint(0, 20)))
        source = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        want = repeats_by_str_count(rewrite, source, span)
        assert self_repeat(rewrite, source, span) is want, (rewrite, source, span)
        seen[want] += 1
    assert min(seen.values()) > 300, seen  # both verdicts, often


def test_self_repeat_counts_words_without_overlap_against_the_source():
    run = "one two three four"
    assert self_repeat(f"{run}. {run}", "") and self_repeat(f"{run}\n\nRewrite: {run.upper()}!", run)
    assert not self_repeat(f"{run} {run}", f"{run}, {run}")  # the source holds the repetition: kept
    assert not self_repeat(" ".join(["no"] * 7), "") and self_repeat(" ".join(["no"] * 8), "")  # 7: one run of 4
    assert not self_repeat("1,000 2,000 3,000 4,000 1,000 2,000 3,000 4,000", "")  # no word with a letter
    assert not self_repeat("The fee is 1,000 dollars and the deposit is 1,000 dollars.", "fee 1k, deposit 1k")
    assert not self_repeat("The meeting is from 9:00 a.m. to 11:00 a.m.", "meeting 9 to 11")
    assert not self_repeat(run, "") and not self_repeat("", run)
    with pytest.raises(ValueError, match="span must be at least 1"):
        self_repeat(run, run, span=0)


REPEAT_ROWS = [  # the tiny model's rows for the repeat guard: run 3's shape, a kept repetition of the source, rewrites
    ("gimme the report now, ok", "gimme the report now, ok\n\nRewrite: gimme the report now, ok", "polite"),
    ("no, no, no, no, no, no, no, no!", "No, no, no, no, no, no, no, no.", "formal"),
    ("gimme the report now.", "Could you please send me the report?", "polite"),
    ("the food was cold lol", "The food was served cold. The food was served cold.", "formal"),
    ("fee 1k, deposit 1k", "The fee is 1,000 dollars and the deposit is 1,000 dollars.", "formal"),
]


def test_the_repeat_guard_is_its_equation_on_a_naive_loop(tiny_model_dir, tiny_model, tiny_tokenizer):
    """``guard="prompt+repeat"``: the prompt guard's reward (the naive loop of :func:`by_the_equation`), floored
    where the rewrite repeats itself by the str.count rule on its words; ``guard="repeat"``: plain LogProb's bits
    where it does not floor, no prompt contexts read."""
    eot = tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>")
    rows = ROWS + REPEAT_ROWS
    want = by_the_equation(tiny_model, tiny_tokenizer, eot, rows)
    repeats = [repeats_by_str_count(rewrite, source) for source, rewrite, _ in rows]
    assert repeats[len(ROWS):] == [True, False, False, True, False], "the rows must take both branches"
    both = LogProbReward(model=str(tiny_model_dir), guard="prompt+repeat", floor=FLOOR)
    metrics = {}
    got = call(both, rows, log_metric=metrics.__setitem__)
    floored = [value == FLOOR or repeated for (value, *_), repeated in zip(want, repeats, strict=True)]
    assert metrics["logprob/guarded"] == sum(floored) / len(rows)
    for i, (g, (value, *_), f) in enumerate(zip(got, want, floored, strict=True)):
        assert (g == FLOOR) == f, f"row {i}: the guards' verdict differs from the equations'"
        assert f or abs(g - value) < 1e-4, f"row {i}: {g} against {value}"
    sources, completions, styles = (list(x) for x in zip(*rows, strict=True))
    plain = LogProb(backend=both.logprob.backend, progress=False).score(sources, completions, styles)
    alone = LogProb(backend=both.logprob.backend, guard="repeat", progress=False).score(sources, completions, styles)
    assert "prompt_reading" not in alone[0] and [row["self_repeat"] for row in alone] == repeats
    assert "|guard:repeat|" in str(alone.signature) and "|guard:prompt+repeat|" in both.signature
    for i, (a, p, repeated) in enumerate(zip(alone, plain, repeats, strict=True)):
        want_row = (-math.inf, -1.0) if repeated else (p["content"], p["style_strength"])
        assert (a["content"], a["style_strength"]) == want_row, f"row {i}"  # to the bit


# --- the real 135M -----------------------------------------------------------------------------------------------
TESTSET_ROWS = ("style_gap_testset/anno3/q24", "style_gap_testset/anno4/q4", "style_gap_testset/anno6/q29")
"""Rated rewrites of the test set (catchy, polite, formal; people rated each >= 4 on content and style) on whose rows
the 135M's plain reward ranks the instruction echo (with and without the source) above the rewrite and the guarded one
ranks every degenerate output below it, each by a margin of the guard (P - C) of at least 0.06. On the
whole test set the copy and the suffixed copy still beat many rewrites, guard or not (docs/training.md, "The prompt
guard": that is the weights', not the echo's); these rows are among those where they do not."""


def degenerate_outputs(source: str, style: str) -> dict[str, str]:
    return {"copy": source, "echo": f"Rewrite the following sentence to be {style}: {source}",
            "echo line": f"Rewrite the following sentence to be {style}:",
            "suffix": f"{source} Rewritten sentence in a {style} style.", "style word": " ".join([style] * 5),
            "empty": ""}


def test_on_real_weights_degenerate_outputs_rank_below_the_rewrites(real_backend, data_dir):
    from styleeval.corpora import load_corpus

    data = {row["id"]: row for row in load_corpus("style_gap_testset", data_dir)}
    guarded = LogProbReward(backend=real_backend, guard="prompt")
    plain = LogProbReward(backend=real_backend)
    for row_id in TESTSET_ROWS:
        row = data[row_id]
        outputs = {"rewrite": row["rewrite"], **degenerate_outputs(row["source"], row["target_style"])}
        assert list(outputs)[:4] == ["rewrite", "copy", "echo", "echo line"]
        rows = [(row["source"], text, row["target_style"]) for text in outputs.values()]
        got = dict(zip(outputs, call(guarded, rows), strict=True))
        rewrite, echo, line = call(plain, [rows[0], rows[2], rows[3]])
        assert echo > rewrite and line > rewrite, f"{row_id}: the plain reward's hole is not there"
        beaten = [kind for kind in outputs if kind != "rewrite" and got[kind] >= got["rewrite"]]
        assert not beaten, f"{row_id}: {', '.join(beaten)} rank at or above the rewrite ({got})"


REPEAT_TESTSET_ROWS = ("style_gap_testset/anno6/q16", "style_gap_testset/anno3/q35", "style_gap_testset/anno6/q7")
"""Rated rewrites of the test set (formality, catchy, formality; people rated each >= 4 on content and style) on whose
rows run 3's output shape outranks the rewrite under the prompt guard alone (by 0.3 or more, scripts/reward_hole.py)
and every degenerate output ranks below it with both guards (by 0.2 or more). On the whole test set the repeat guard
floors 496 of the 500 self-repeats and none of the rated rewrites; the copy and the suffixed copy still beat many
rewrites (docs/training.md, "The repeat guard"): these rows are among those where they do not."""


def test_on_real_weights_the_repeat_guard_closes_run_3s_hole(real_backend, data_dir):
    """Run 3's outputs (the source, then itself again after "Rewrite:") outrank the rated rewrite under the prompt
    guard alone on these rows, and rank below it with both guards, with every other degenerate output."""
    from styleeval.corpora import load_corpus

    data = {row["id"]: row for row in load_corpus("style_gap_testset", data_dir)}
    prompt_only = LogProbReward(backend=real_backend, guard="prompt")
    both = LogProbReward(backend=real_backend, guard="prompt+repeat")
    for row_id in REPEAT_TESTSET_ROWS:
        row = data[row_id]
        outputs = {"rewrite": row["rewrite"], **degenerate_outputs(row["source"], row["target_style"]),
                   "self repeat": f"{row['source']}\n\nRewrite: {row['source']}"}
        rows = [(row["source"], text, row["target_style"]) for text in outputs.values()]
        rewrite, repeated = call(prompt_only, [rows[0], rows[-1]])
        assert repeated > rewrite, f"{row_id}: the prompt guard's hole is not there ({repeated} <= {rewrite})"
        got = dict(zip(outputs, call(both, rows), strict=True))
        beaten = [kind for kind in outputs if kind != "rewrite" and got[kind] >= got["rewrite"]]
        assert not beaten, f"{row_id}: {', '.join(beaten)} rank at or above the rewrite ({got})"
        assert got["rewrite"] == rewrite  # the rewrite itself is not touched by the repeat guard, to the bit


def test_on_real_weights_the_guarded_reward_is_its_equation(real_backend):
    """One real row of each branch (a rewrite scored, the echo floored), against the naive loop in float32."""
    model, tok = real_backend.model, real_backend.tokenizer
    rows = [ROWS[0], ROWS[3]]
    want = by_the_equation(model, tok, tok.convert_tokens_to_ids("<|im_end|>"), rows, floor=-34.0)
    got = call(LogProbReward(backend=real_backend, guard="prompt"), rows)
    assert want[0][0] != -34.0 and want[1][0] == -34.0 == got[1]
    assert abs(got[0] - want[0][0]) < 1e-3  # float32: the engine's batches against one sequence (24 x style)
