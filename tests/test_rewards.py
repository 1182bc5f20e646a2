"""LogProb as a TRL reward (issue 49): the reward equals LogProb.score on the same rows, plain and conversational
completions alike; rows LogProb cannot score get the floor; TRL's GRPOTrainer trains two steps with it."""

from __future__ import annotations

import logging
import math
import threading
import warnings

import datasets
import numpy as np
import pytest
import trl
from transformers import AutoModelForCausalLM, AutoTokenizer

from styleeval import LogProb
from styleeval.errors import UserError
from styleeval.rewards import STYLE_WEIGHT, LogProbReward, completion_text, default_floor

FLOOR = default_floor(1.0, STYLE_WEIGHT)

SOURCES = ["gimme the report now.", "the food was cold lol", "meeting's on tuesday, don't be late"]
COMPLETIONS = ["Please send me the report.", "The food was served cold.", "The meeting is on Tuesday."]
STYLES = ["formal", "formal", "polite"]


@pytest.fixture(scope="module")
def reward(tiny_model_dir):
    return LogProbReward(model=str(tiny_model_dir))


@pytest.fixture(scope="module")
def expected(reward):
    """LogProb.score on the same backend (the weights shared), the obviously-correct path."""
    return LogProb(backend=reward.logprob.backend, progress=False).score(SOURCES, COMPLETIONS, STYLES)


def call(reward, completions, sources=SOURCES, styles=STYLES, **extra):
    return reward(prompts=[f"Rewrite: {s}" for s in sources], completions=completions, source=list(sources),
                  style=list(styles), **extra)


def test_the_reward_is_logprobs_content_and_style_weighted(reward, expected):
    got = call(reward, COMPLETIONS)
    want = [row["content"] + STYLE_WEIGHT * row["style_strength"] for row in expected]
    assert got == want  # the same numbers, not close ones
    assert all(math.isfinite(v) for v in got) and len(set(got)) == 3


@pytest.mark.parametrize(("weights", "dimension", "key"), [((1.0, 0.0), "content", "content"),
                                                          ((0.0, 1.0), "style", "style_strength")])
def test_each_dimension_alone_equals_logprob_score(reward, expected, weights, dimension, key):
    alone = LogProbReward(backend=reward.logprob.backend, content_weight=weights[0], style_weight=weights[1])
    assert call(alone, COMPLETIONS) == [row[key] for row in expected]
    assert alone.__name__ == f"logprob_{dimension}"


def test_conversational_completions_score_as_their_text(reward):
    chats = [[{"role": "assistant", "content": text}] for text in COMPLETIONS]
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": text}]}] for text in COMPLETIONS]
    prompts = [[{"role": "user", "content": f"Rewrite: {s}"}] for s in SOURCES]
    plain = call(reward, COMPLETIONS)
    assert reward(prompts=prompts, completions=chats, source=SOURCES, style=STYLES) == plain
    assert reward(prompts=prompts, completions=parts, source=SOURCES, style=STYLES) == plain


def test_a_rows_reward_does_not_depend_on_its_batch_mates(reward):
    """The same bits alone, together or backwards, as every LogProb score of the local engine (its attention and
    matmuls are batch-invariant: tests/backends/local/test_invariance.py); llama.cpp's backend too (tests/backends)."""
    together = call(reward, COMPLETIONS)
    alone = [call(reward, [c], [s], [y])[0] for c, s, y in zip(COMPLETIONS, SOURCES, STYLES, strict=True)]
    backwards = call(reward, COMPLETIONS[::-1], SOURCES[::-1], STYLES[::-1])[::-1]
    assert alone == together and backwards == together
    assert call(reward, COMPLETIONS) == together  # the same call twice: the same bits


def test_rows_logprob_cannot_score_get_the_floor_and_the_others_their_score(reward):
    too_long = "word " * 600  # past the tiny model's 512-token context
    completions = ["", "   \n", too_long, COMPLETIONS[0], [{"role": "assistant", "content": None}]]
    sources = [SOURCES[0]] * 5
    styles = ["formal"] * 5
    metrics, extra = {}, {}
    got = call(reward, completions, sources, styles, log_metric=metrics.__setitem__, log_extra=extra.__setitem__,
               trainer_state=object(), completion_ids=[[1]] * 5)
    assert got[:3] == [FLOOR] * 3 and got[4] == FLOOR
    assert got[3] == call(reward, [COMPLETIONS[0]], [SOURCES[0]], ["formal"])[0]
    assert metrics["logprob/floored"] == 4 / 5
    assert metrics["logprob/content"] == extra["logprob_content"][3]
    assert [math.isnan(v) for v in extra["logprob_style"]] == [True, True, True, False, True]


def test_a_lone_surrogate_in_a_completion_gets_the_floor_and_in_a_column_is_refused_naming_the_row(reward):
    """Issue 59, item 8: tokenizers' bare TypeError ("TextEncodeInput must be ...") on main. A completion is the
    policy's output: floored as the docs promise for rows LogProb cannot score; the dataset's columns are the user's
    input: refused naming the row, as the CLI refuses the same text."""
    bad = "bad \ud800 text"
    metrics = {}
    got = call(reward, [bad, COMPLETIONS[1], [{"role": "assistant", "content": bad}]], log_metric=metrics.__setitem__)
    assert got[0] == got[2] == FLOOR and got[1] == call(reward, [COMPLETIONS[1]], [SOURCES[1]], [STYLES[1]])[0]
    assert metrics["logprob/floored"] == 2 / 3
    with pytest.raises(UserError, match=r"^row 2: column 'source' holds a lone surrogate \(U\+D800 at character 4\)"):
        call(reward, COMPLETIONS, [SOURCES[0], SOURCES[1], bad])
    with pytest.raises(UserError, match=r"^row 0: column 'style' holds a lone surrogate \(U\+DC80 at character 1\)"):
        call(reward, COMPLETIONS, styles=["f\udc80rmal", "formal", "formal"])
    with pytest.raises(UserError, match=r"^rewrites\[1\] holds a lone surrogate \(U\+D800 at character 4\), which "
                                        r"is not text"):  # LogProb itself, as the CLI: one line naming the row
        reward.logprob.score(SOURCES[:2], [COMPLETIONS[0], bad], "formal")


def test_the_default_floor_is_below_the_worst_content_and_style():
    assert FLOOR == -10.0 - STYLE_WEIGHT == -34.0
    assert default_floor(1.0, 0.0) == -10.0 and default_floor(0.0, 1.0) == -1.0


def test_a_given_floor_is_the_floor(reward):
    mine = LogProbReward(backend=reward.logprob.backend, floor=-3.5)
    alone = call(reward, [COMPLETIONS[1]], [SOURCES[1]], [STYLES[1]])[0]  # the one row scored: the same batch
    assert call(mine, ["", COMPLETIONS[1], ""]) == [-3.5, alone, -3.5]


def test_a_truncated_completion_is_scored_as_the_text_it_is(reward):
    whole, cut = "The food was served cold.", "The food was served"
    got = call(reward, [whole, cut], [SOURCES[1]] * 2, ["formal"] * 2)
    assert all(math.isfinite(v) and v != FLOOR for v in got)


def test_one_style_for_every_row_and_other_column_names(reward):
    fixed = LogProbReward(backend=reward.logprob.backend, source_column="informal", style="formal")
    got = fixed(prompts=SOURCES, completions=COMPLETIONS, informal=SOURCES)
    assert got == call(reward, COMPLETIONS, styles=["formal"] * 3)


def test_the_signature_is_logprobs_with_the_weights_and_logged_once(reward, caplog):
    assert reward.signature == (f"{reward.logprob.signature}|reward:1*content+{STYLE_WEIGHT:g}*style"
                                f"|floor:{FLOOR:g}")
    fresh = LogProbReward(backend=reward.logprob.backend)
    with caplog.at_level(logging.INFO, logger="styleeval.rewards"):
        call(fresh, COMPLETIONS)
        call(fresh, COMPLETIONS)
    assert [r.getMessage() for r in caplog.records] == [f"LogProb reward scored by {fresh.signature}"]


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(on_overflow="error"), "on_overflow: set by the reward"),
    (dict(content_weight=True), "content_weight must be a finite number >= 0, got True"),
    (dict(floor=False), "floor must be a finite number, got False"),
    (dict(style_weight="24"), "style_weight must be a finite number >= 0, got '24'"),
    (dict(content_weight=1e308, style_weight=1e308), "the default floor of content_weight=1e.308, style_weight=1e.308 "
                                                     "is -inf: give smaller weights or floor="),
    (dict(source_column="prompt"), "source_column='prompt': TRL never passes 'prompt' to a reward as a dataset column"),
    (dict(style_column="completion_ids"), "style_column='completion_ids': TRL never passes"),
    (dict(progress=True), "progress: set by the reward"),
    (dict(style_weight=math.nan), "style_weight must be a finite number >= 0"),
    (dict(content_weight=-1), "content_weight must be a finite number >= 0, got -1"),
    (dict(floor=math.inf), "floor must be a finite number"),
    (dict(content_weight=0, style_weight=0), "both 0"),
    (dict(style=""), "style must be a non-empty string"),
])
def test_bad_options_are_refused_naming_them(reward, kwargs, message):
    with pytest.raises(UserError, match=message):
        LogProbReward(backend=reward.logprob.backend, **kwargs)


def test_bad_calls_are_refused_naming_the_column_and_the_row(reward):
    with pytest.raises(UserError, match=r"no dataset column 'source' for the reward \(columns passed: text\): add it "
                                        r"to the dataset or set source_column"):
        reward(prompts=SOURCES, completions=COMPLETIONS, text=SOURCES, log_metric=print)
    with pytest.raises(UserError, match="column 'style' has 2 values for 3 completions"):
        reward(prompts=SOURCES, completions=COMPLETIONS, source=SOURCES, style=STYLES[:2])
    with pytest.raises(UserError, match="row 1: column 'source' is '', not a non-empty text"):
        reward(prompts=SOURCES, completions=COMPLETIONS, source=["a", "", "c"], style=STYLES)
    with pytest.raises(UserError, match="completion 1: expected a string or a list of chat messages, got int"):
        completion_text(3, 1)


def test_numpy_numbers_are_numbers_and_minus_zero_is_zero(reward):
    numpy = LogProbReward(backend=reward.logprob.backend, content_weight=np.int64(1), style_weight=np.float32(24),
                          floor=np.float32(-3.5))
    assert (numpy.content_weight, numpy.style_weight, numpy.floor) == (1.0, 24.0, -3.5)
    one = call(reward, COMPLETIONS[:1], SOURCES[:1], STYLES[:1])[0]
    assert call(numpy, ["", COMPLETIONS[0]], SOURCES[:1] * 2, STYLES[:1] * 2) == [-3.5, one]
    alone = LogProbReward(backend=reward.logprob.backend, content_weight=-0.0, style_weight=1.0)
    assert "|reward:0*content+1*style|floor:-1" in alone.signature and alone.__name__ == "logprob_style"


def test_odd_conversations_score_their_last_assistant_text_or_get_the_floor(reward):
    """TRL's tool loop appends the tool's result and, unless cut away, the policy's answer to it: the answer is scored,
    never the tool's text; content parts whose text is None are empty, like None content."""
    text = COMPLETIONS[0]
    said = [{"role": "assistant", "content": None, "tool_calls": [{}]}, {"role": "tool", "content": "42"},
            {"role": "assistant", "content": text}]
    completions = [said, said[:2], [], [{"role": "assistant", "content": [{"type": "text", "text": None}]}],
                   [{"role": "assistant", "content": [{"type": "image"}, {"type": "text", "text": text}]}]]
    got = call(reward, completions, [SOURCES[0]] * 5, ["formal"] * 5)
    plain = call(reward, [text], [SOURCES[0]], ["formal"])[0]
    assert got[1:4] == [FLOOR] * 3
    assert got[0] == plain and got[4] == plain  # in a batch of two: the same bits as alone


@pytest.mark.parametrize(("completion", "message"), [
    ([{"role": "assistant", "content": [{"type": "text", "text": 3}]}], "completion 0: a text part's text is int"),
    ([{"role": "assistant", "content": 3}], "completion 0: the message's content is int, expected a string or a list"),
    ([{"role": "assistant", "content": {"type": "text", "text": "Hi."}}], "completion 0: the message's content is dict"),
    (["Please send it."], "completion 0: expected a string or a list of chat messages, got list"),
])
def test_malformed_completions_are_refused_naming_what_is_wrong(reward, completion, message):
    with pytest.raises(UserError, match=message):
        call(reward, [completion], SOURCES[:1], STYLES[:1])


def test_two_threads_calling_at_once_leave_the_warning_filters_as_they_were(reward):
    """Each call ignores LogProb's RowsWarning inside ``warnings.catch_warnings``, which swaps the process's filters:
    two calls inside it at once left the ignoring installed for good (seen: 3 threads x 15 calls). The rewards are
    those of one thread alone."""
    completions = [COMPLETIONS[0], "word " * 600, COMPLETIONS[2]]
    alone = call(reward, completions)
    before = list(warnings.filters)
    got: list[list[float]] = []

    def work() -> None:
        got.extend(call(reward, completions) for _ in range(15))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert warnings.filters == before
    assert got == [alone] * 45


# --- TRL's own trainer, two steps on the tiny-random model -------------------------------------------------------
@pytest.mark.parametrize("conversational", [False, True], ids=["plain", "conversational"])
def test_grpo_trainer_runs_two_steps_with_the_reward(tiny_model_dir, reward, tmp_path, conversational):
    sources = SOURCES * 2
    if conversational:
        prompts = [[{"role": "user", "content": f"Rewrite this formally: {s}"}] for s in sources]
    else:
        prompts = [f"Rewrite this formally: {s}\n" for s in sources]
    data = datasets.Dataset.from_dict({"prompt": prompts, "source": sources, "style": ["formal"] * len(sources)})
    config = trl.GRPOConfig(output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=2,
                            max_completion_length=8, learning_rate=1e-3, logging_steps=1, save_strategy="no",
                            report_to="none", use_cpu=True, seed=0, disable_tqdm=True)
    policy = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    before = {k: v.clone() for k, v in policy.named_parameters()}
    trainer = trl.GRPOTrainer(model=policy, reward_funcs=[reward], args=config, train_dataset=data,
                              processing_class=AutoTokenizer.from_pretrained(tiny_model_dir))
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "rewards/logprob/mean" in entry]
    assert len(logged) == 2 and trainer.state.global_step == 2
    assert all(math.isfinite(entry["rewards/logprob/mean"]) and "logprob/content" in entry for entry in logged)
    assert any(not v.equal(before[k]) for k, v in trainer.model.named_parameters())
