"""Slow, obviously-correct computations that the fast paths are tested against: one full forward pass per sequence,
no batching, no padding, no cache, the prompt rendered by the tokenizer's own chat template."""

from __future__ import annotations

import copy
import types

import torch

from styleeval.autorater.prompts import PROMPTS
from styleeval.chat import TEMPLATE_KWARGS
from styleeval.logprob.prompts import SYSTEM_PROMPT

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
"""The prompt guard's two instructions (docs/training.md, "The hole, measured, and the prompt guard"), written out."""


FLOAT32_ISLANDS = {"LlamaRMSNorm": "norm", "Qwen2RMSNorm": "norm", "LlamaRotaryEmbedding": "rotary",
                   "Qwen2RotaryEmbedding": "rotary"}
"""The modules that transformers computes in float32 whatever the weights' dtype (an RMSNorm casts its input to
float32 and back; the rotary embedding computes its angles, cosines and sines in float32), by class name."""


def _norm_float64(self, hidden_states):
    """``LlamaRMSNorm.forward`` (transformers 5.24) without its cast to float32."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


def _rotary_float64(self, x, position_ids):
    """``LlamaRotaryEmbedding.forward`` (default RoPE, transformers 5.24) with its angles in ``x``'s dtype."""
    freqs = position_ids[..., None].to(x.dtype) * self.inv_freq.to(device=x.device, dtype=x.dtype)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling


def float64_network(model):
    """A copy of ``model`` that computes its network in float64 from end to end: the weights upcast (exactly) and
    the float32 islands of :data:`FLOAT32_ISLANDS` computed in float64 too, so that two computations of it differ
    only by float64 rounding (unit roundoff 2^-53, 2^-29 of float32's), whatever the CPU's kernels."""
    wide = copy.deepcopy(model).double()
    patched = 0
    for module in wide.modules():
        kind = FLOAT32_ISLANDS.get(type(module).__name__)
        if kind == "rotary":
            assert module.rope_type == "default", module.rope_type
        if kind is not None:
            module.forward = types.MethodType(_norm_float64 if kind == "norm" else _rotary_float64, module)
            patched += 1
    assert patched, f"{type(model).__name__}: no float32 island found; name its modules in FLOAT32_ISLANDS"
    # the naive loop's passes carry no engine layout: the engine's implementation (if one was built) runs SDPA/eager
    attention = wide.config._attn_implementation.removeprefix("styleeval_invariant_")
    assert attention == "sdpa" or attention.startswith("eager"), wide.config._attn_implementation
    return wide


def prompt_ids(tokenizer, messages) -> list[int]:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **TEMPLATE_KWARGS)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def naive_token_logprobs(model, tokenizer, source, rewrite, style, context, end_of_turn_id,
                         float_head: bool = False) -> list[float]:
    """Log-probabilities of the rewrite's tokens and the end-of-turn token after the instruction ``context``: one
    forward pass over prompt + rewrite, log-softmax over the whole vocabulary in float32 (float64 for a float64 model). ``float_head``: the LM head
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
        logp = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
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
