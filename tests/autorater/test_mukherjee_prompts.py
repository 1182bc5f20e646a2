"""Issue 62: Mukherjee et al.'s judge prompts (their Tables 10-13) in the autorater: the paper's text for sentiment,
the generalisation for other styles, expected mode against a plain forward pass, paper mode on a judge trained to
known replies, the metrics (autorater_fluency) and their refusals."""

from __future__ import annotations

import json
import math

import pytest
import torch

from styleeval.autorater import Autorater
from styleeval.autorater.prompts import PROMPTS, DimensionPrompt
from styleeval.errors import UserError
from styleeval.metrics import get_metric
from styleeval.random_weights import build_model
from styleeval.testing import train_replies

S1, S2 = "so he can charge a bloody fortune for them.", "so he can charge a fair amount of money for them."
# The paper's Tables 10-13 as printed (paragraphs joined by blank lines, S1 and S2 on lines of their own).
TABLE_10 = (
    "Sentiment transfer task: transfer the sentiment of a sentence (from positive to negative or negative to positive) "
    "while keeping the rest of the sentiment-independent content unchanged.\n\nPlease rate the sentiment transfer "
    "accuracy of the negative to positive sentiment transfer task between the following English source sentence S1 "
    "and the sentiment-transferred sentence S2. Use a scale of 1 to 5, where 1 indicates that the sentiment in S1 is "
    "completely identical to the sentiment in S2, and 5 indicates that the sentiment has been completely transferred "
    f"to the target sentiment in S2.\n\nS1: {S1}\nS2: {S2}\n\nSentiment transfer accuracy rating (on a scale of 1 to "
    "5) =")
TABLE_11 = (
    "Sentiment transfer task: transfer the sentiment of a sentence (from positive to negative or negative to positive) "
    "while keeping the rest of the sentiment-independent content unchanged.\n\nPlease act as a binary classifier to "
    "evaluate the sentiment transfer accuracy of the positive to negative sentiment transfer task in English. "
    "Determine whether the target sentiment has been successfully transferred to the generated sentence (S2) from the "
    "source sentence (S1). If the target sentiment has been successfully transferred to S2, output '1'. If the target "
    f"sentiment has not been successfully transferred to S2, output '0'.\n\nS1: {S1}\nS2: {S2}\n\nSentiment transfer "
    "accuracy classification (0 or 1) =")
TABLE_12 = (
    "Sentiment transfer task: transfer the sentiment of a sentence (from positive to negative or negative to positive) "
    "while keeping the rest of the content unchanged.\n\nPlease rate the content preservation between the following "
    "English source sentence S1 and the sentiment-transferred sentence S2 for the negative to positive sentiment "
    "transfer task on a scale of 1 to 5, where 1 indicates very low content preservation and 5 indicates very high "
    "content preservation. To determine the content preservation between these two sentences, consider only the "
    "information conveyed by the sentences and ignore any differences in sentiment due to the negative to positive "
    f"sentiment transfer.\n\nS1: {S1}\nS2: {S2}\n\nContent Preservation rating (on a scale of 1 to 5) =")
TABLE_13 = ("Please rate the fluency of the following English sentence S on a scale of 1 to 5, where 1 represents poor "
            f"fluency, and 5 represents excellent fluency.\n\nS: {S2}\n\nFluency rating (on a scale of 1 to 5) =")


def user(messages):
    assert len(messages) == 1 and messages[0]["role"] == "user"
    return messages[0]["content"]


def test_the_papers_prompts_verbatim_for_sentiment():
    likert, binary = PROMPTS["mukherjee"], PROMPTS["mukherjee-binary"]
    assert likert.dimensions == ("style", "meaning", "fluency") and binary.dimensions == ("style",)
    assert user(likert.messages(S1, S2, "positive", "style")) == TABLE_10
    assert user(binary.messages(S1, S2, "negative", "style")) == TABLE_11  # Table 11 is printed positive to negative
    assert user(likert.messages(S1, S2, "Positive", "meaning")) == TABLE_12
    assert user(likert.messages(S1, S2, "negative", "fluency")) == TABLE_13
    assert binary.ratings == ("0", "1") and likert.ratings == ("1", "2", "3", "4", "5")


def test_other_styles_get_the_generalised_words():
    text = user(PROMPTS["mukherjee"].messages("hey u", "Hello, you.", "formal", "style"))
    assert text.startswith("Style transfer task: transfer the style of a sentence (to a more formal style) while "
                           "keeping the rest of the style-independent content unchanged.\n\nPlease rate the style "
                           "transfer accuracy of the formal style transfer task")
    assert text.endswith("S1: hey u\nS2: Hello, you.\n\nStyle transfer accuracy rating (on a scale of 1 to 5) =")
    assert "sentiment" not in text
    with pytest.raises(UserError, match="rates style, not meaning"):
        PROMPTS["mukherjee-binary"].messages("a", "b", "formal", "meaning")


ROWS = (["give me the report now.", "the food was cold."], ["Could you send me the report?", "Lovely food."],
        ["polite", "positive"])


def slow_ratings(model, tokenizer, text: str, ratings: tuple[str, ...]) -> torch.Tensor:
    """The obviously correct path: the chat rendered by the tokenizer's template, one forward pass, the next-token
    probabilities of the rating tokens renormalised over them."""
    ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                        tokenize=True, return_dict=False)
    candidates = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in ratings]
    assert all(len(c) == 1 for c in candidates)
    with torch.no_grad():
        logits = model(torch.tensor([list(ids)])).logits[0, -1].double()
    return torch.softmax(logits[[c[0] for c in candidates]], dim=-1)


@pytest.mark.parametrize("prompt", ["mukherjee", "mukherjee-binary"])
def test_expected_mode_equals_a_plain_forward_pass(prompt, tiny_model, tiny_tokenizer):
    judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, prompt=prompt, progress=False)
    results = judge.rate(*ROWS)
    spec = PROMPTS[prompt]
    values = torch.tensor([float(r) for r in spec.ratings], dtype=torch.float64)
    for i, row in enumerate(results):
        assert row["parsed"] is True
        for dimension in spec.dimensions:
            probs = slow_ratings(tiny_model, tiny_tokenizer,
                                 user(spec.messages(ROWS[0][i], ROWS[1][i], ROWS[2][i], dimension)), spec.ratings)
            assert row[f"{dimension}_probs"] == pytest.approx(probs.tolist(), abs=1e-6)
            assert row[dimension] == pytest.approx(float((probs * values).sum()), abs=1e-6)
    if prompt == "mukherjee-binary":  # the expected 0/1 verdict: the probability of "1"
        assert results[0]["style"] == pytest.approx(results[0]["style_probs"][1])
        assert math.isnan(results[0]["meaning"]) and "fluency" not in results[0]
    assert results.signature.fields["prompt"] == prompt and results.compliance_rate == 1.0


SHORT = DimensionPrompt("short-test", templates={"style": "S1: {source}\nS2: {rewrite}\nstyle =",
                                                 "meaning": "S1: {source}\nS2: {rewrite}\nmeaning =",
                                                 "fluency": "S: {rewrite}\nfluency ="}, decoding=PROMPTS["mukherjee"].decoding)
"""A prompt set of the same kind as ``mukherjee`` (the same code path: a prompt per dimension, one number each) with
short texts, so that a tiny judge learns its replies in seconds (Mukherjee et al.'s are ~350 tokens each here)."""


@pytest.fixture(scope="module")
def trained_judge(tiny_tokenizer):
    """A tiny judge overfit to answer SHORT's prompts of the two ROWS with known replies (SHORT registered the way a
    prompt is added: one entry of PROMPTS)."""
    tok = tiny_tokenizer
    model = build_model("tiny", vocab_size=len(tok), eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
                        pad_token_id=tok.pad_token_id)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(PROMPTS, SHORT.name, SHORT)
        judge = Autorater(model, tokenizer=tok, mode="paper", prompt=SHORT.name, progress=False)
        replies = {("style", 0): "4", ("meaning", 0): " 5\n\nThe meaning is kept.",
                   ("fluency", 0): "On a scale of 1 to 5: 3", ("style", 1): "6", ("meaning", 1): "2",
                   ("fluency", 1): "Fluent."}
        keys = list(replies)
        prompts = judge.chat.conversation_ids([SHORT.messages(ROWS[0][i], ROWS[1][i], ROWS[2][i], d) for d, i in keys])
        train_replies(model, tok, prompts, [replies[k] for k in keys], steps=150, lr=1e-2)
        yield model, replies


def test_paper_mode_reads_one_number_per_dimension(trained_judge, tiny_tokenizer):
    model, replies = trained_judge
    judge = Autorater(model, tokenizer=tiny_tokenizer, mode="paper", prompt=SHORT.name, progress=False)
    first, second = judge.rate(*ROWS)
    assert json.loads(first["reply"]) == {d: replies[d, 0] for d in ("style", "meaning", "fluency")}
    assert (first["style"], first["meaning"], first["fluency"], first["parsed"]) == (4.0, 5.0, 3.0, True)
    assert math.isnan(second["style"]) and not second["style_parsed"]  # 6 is not on the scale
    assert second["meaning"] == 2.0 and math.isnan(second["fluency"]) and second["parsed"] is False
    filled = judge.rate(*ROWS, fallback="mean")
    assert (filled[1]["style"], filled[1]["fluency"]) == (4.0, 3.0)  # the call's readable mean, per dimension
    assert judge.signature.fields["parser"] == "number" and judge.signature.fields["decoding"] == "greedy-16"
    with pytest.raises(UserError, match="one number each, read by its own parser"):
        Autorater(model, tokenizer=tiny_tokenizer, mode="paper", prompt=SHORT.name, parser="robust")


def test_metrics_of_the_prompt_dimensions(judge_model_dir):
    fluency = get_metric(f"autorater_fluency:model={judge_model_dir}:device=cpu:prompt=mukherjee")
    style = get_metric(f"autorater_style:model={judge_model_dir}:device=cpu:prompt=mukherjee-binary")
    scores = fluency.compute(*ROWS[:2], styles=ROWS[2])
    assert len(scores) == 2 and all(1 <= s <= 5 for s in scores)
    assert all(0 <= s <= 1 for s in style.compute(*ROWS[:2], styles=ROWS[2]))
    assert fluency.signature.name == "autorater_fluency" and fluency.signature.fields["prompt"] == "mukherjee"
    with pytest.raises(UserError, match="prompt paper-small rates meaning and style, not fluency; choose "
                                        "prompt=mukherjee"):
        get_metric(f"autorater_fluency:model={judge_model_dir}")
    with pytest.raises(UserError, match="mukherjee-binary rates style, not meaning"):
        get_metric(f"autorater_meaning:model={judge_model_dir}:prompt=mukherjee-binary")
