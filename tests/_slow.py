"""Slow, obviously-correct computations that the fast paths are tested against: one full forward pass per sequence,
no batching, no padding, no cache, the prompt rendered by the tokenizer's own chat template."""

from __future__ import annotations

import torch

from styleeval.autorater.prompts import PROMPTS
from styleeval.chat import SYSTEM_PROMPT, TEMPLATE_KWARGS

CONTEXT_INSTRUCTIONS = {
    "style": "Rewrite the following sentence to be {style}: {source}",
    "paraphrase": "Paraphrase the following sentence: {source}",
    "repeat": "Repeat the following sentence: {source}",
}
"""The paper's three instructions (Table 2), verbatim."""

GUARD_INSTRUCTIONS = {
    "echo": "Repeat the following sentence: Rewrite the following sentence to be {style}: {source}",
    "unsourced": "Rewrite the following sentence to be {style}:",
}
"""The prompt guard's two instructions (docs/training.md, "The prompt guard"), written out."""


def prompt_ids(tokenizer, messages) -> list[int]:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **TEMPLATE_KWARGS)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def naive_token_logprobs(model, tokenizer, source, rewrite, style, context, end_of_turn_id,
                         float_head: bool = False) -> list[float]:
    """Log-probabilities of the rewrite's tokens and the end-of-turn token after the instruction ``context``: one
    forward pass over prompt + rewrite, log-softmax over the whole vocabulary in float32. ``float_head``: the LM head
    applied in float32 to the last hidden state (the upcast weights: what the engine's default head computes for a
    bfloat16 model) instead of the model's own head, whose logits come out in the model's dtype."""
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user",
                 "content": {**CONTEXT_INSTRUCTIONS, **GUARD_INSTRUCTIONS}[context].format(style=style, source=source)}]
    prompt = prompt_ids(tokenizer, messages)
    target = tokenizer(rewrite, add_special_tokens=False)["input_ids"] + [end_of_turn_id]
    ids = torch.tensor([prompt + target])
    with torch.no_grad():
        if float_head:
            hidden = model.get_decoder()(input_ids=ids).last_hidden_state[0]
            logits = hidden.float() @ model.get_output_embeddings().weight.float().T
        else:
            logits = model(input_ids=ids).logits[0]
        logp = torch.log_softmax(logits.float(), dim=-1)
    return [logp[len(prompt) - 1 + j, token].item() for j, token in enumerate(target)]


def slow_rating_logprobs(model, tokenizer, source, rewrite, style, best: int | None = None):
    """The expected-mode autorater's two rating distributions before the softmax, by their definition: one full
    forward pass per (row, rating), the prompt rendered with the chat template, the scaffold + rating appended as
    text, log-softmax over the vocabulary in float64, the log-probabilities of the rating's tokens after the tokens
    the five ratings share summed. Returns (meaning log-probs [5], style log-probs [5], the number of tokens a
    rating spans at most); the style scaffold names ``best`` (1-5), by default the meaning distribution's argmax."""
    prompt = prompt_ids(tokenizer, PROMPTS["paper-small"].messages(source, rewrite, style))
    spans = []

    def logprobs(scaffold):
        encoded = [tokenizer(scaffold + r, add_special_tokens=False)["input_ids"] for r in "12345"]
        shared = 0
        while all(len(e) > shared for e in encoded) and len({e[shared] for e in encoded}) == 1:
            shared += 1
        spans.extend(len(e) - shared for e in encoded)
        out = []
        for e in encoded:
            ids = torch.tensor([prompt + e])
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0].double()
            lp = torch.log_softmax(logits, dim=-1)
            start = len(prompt) + shared
            out.append(sum(float(lp[j - 1, ids[0, j]]) for j in range(start, ids.shape[1])))
        return torch.tensor(out, dtype=torch.float64)

    meaning = logprobs('{"meaning": ')
    best = int(meaning.argmax()) + 1 if best is None else best
    return meaning, logprobs('{"meaning": ' + str(best) + ', "style": '), max(spans)


def slow_expected(model, tokenizer, source, rewrite, style, best: int | None = None):
    """The expected-mode autorater by its definition (:func:`slow_rating_logprobs`, then a softmax over the five
    ratings); returns (meaning, style, meaning probabilities, style probabilities)."""
    meaning_lp, style_lp, _ = slow_rating_logprobs(model, tokenizer, source, rewrite, style, best)
    meaning, style_p = torch.softmax(meaning_lp, dim=0), torch.softmax(style_lp, dim=0)
    ratings = torch.arange(1, 6, dtype=torch.float64)
    return float((meaning * ratings).sum()), float((style_p * ratings).sum()), meaning, style_p
