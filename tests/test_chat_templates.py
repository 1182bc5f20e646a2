"""The real chat templates of Llama 3.1/3.2, Qwen2.5, Phi-3.5 and Gemma-2 (the shared folder's chat_templates/,
verbatim: conftest's ``chat_templates`` fixture finds it, docs/testing.md):
LogProb equals a slow per-row reference (apply_chat_template + one forward pass per row and instruction) with the
family's end-of-turn token scored; Gemma's template has no system role, so the system prompt is folded."""

from __future__ import annotations

import pytest
import torch

from styleeval import Autorater, LogProb
from styleeval.logprob import logprob_equations
from styleeval.logprob.prompts import CONTEXTS, SYSTEM_PROMPT, user_message
from styleeval.random_weights import FAMILIES, build_model, build_tokenizer

ROWS = [("give me the report now.", "Could you send me the report, please?", "polite"),
        ("the food was cold.", "The food was wonderfully warm.", "positive"),
        ("ur ready 4 the party??", "Are you ready for the party tonight?", "formal")]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, chat_templates):
    spec = FAMILIES[request.param]
    template = (chat_templates / spec["template"]).read_text(encoding="utf-8")
    tok = build_tokenizer(family=request.param, chat_template=template)
    model = build_model("tiny", vocab_size=len(tok), head_scale=30.0)
    return request.param, spec, tok, model


def _reference(model, tok, eot: int, fold: bool) -> list[tuple[float, float]]:
    out = []
    for source, rewrite, style in ROWS:
        per_context = []
        for ctx in CONTEXTS:
            user = user_message(ctx, source, style)
            messages = ([{"role": "user", "content": f"{SYSTEM_PROMPT}\n\n{user}"}] if fold else
                        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}])
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                           date_string="26 Jul 2024")
            prompt = tok(text, add_special_tokens=False)["input_ids"]
            target = tok(rewrite, add_special_tokens=False)["input_ids"] + [eot]
            with torch.no_grad():
                logits = model(torch.tensor([prompt + target])).logits[0].float()
            logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
            per_context.append(logp.gather(1, torch.tensor(target)[:, None])[:, 0])
        out.append(logprob_equations(*per_context))
    return out


def test_logprob_equals_the_slow_reference(family):
    name, spec, tok, model = family
    eot = tok.convert_tokens_to_ids(spec["eot"])
    lp = LogProb(model, tokenizer=tok, device="cpu", progress=False)
    assert lp.chat.end_of_turn_id == eot  # the family's own end of turn is scored
    assert lp.chat.folds == (name == "gemma-2") and ("|sys:folded|" in lp.signature) == (name == "gemma-2")
    got = lp.score(*map(list, zip(*ROWS, strict=True)))
    want = _reference(model, tok, eot, fold=name == "gemma-2")
    for row, (content, style) in zip(got, want, strict=True):
        assert row["content"] == pytest.approx(content, abs=1e-5)
        assert row["style_strength"] == pytest.approx(style, abs=1e-5)


def test_forced_modes_and_the_autorater(family):
    name, spec, tok, model = family
    folded = LogProb(model, tokenizer=tok, device="cpu", progress=False, system_prompt="fold")
    assert folded.chat.folds and "|sys:folded|" in folded.signature
    if name == "gemma-2":
        with pytest.raises(Exception, match="System role not supported"):
            LogProb(model, tokenizer=tok, device="cpu", progress=False, system_prompt="system")
    judge = Autorater(model, tokenizer=tok, progress=False)  # expected mode: the judge's system message too
    rated = judge.rate([r[0] for r in ROWS], [r[1] for r in ROWS], "polite")
    assert all(1 <= v <= 5 for v in rated.meaning) and ("sys:folded" in rated.signature) == (name == "gemma-2")
