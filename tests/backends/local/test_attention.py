"""The engine's lower-right causal attention (no per-batch 4D mask): exact against the library's own masks."""

from __future__ import annotations

import pytest
import torch

from styleeval.backends.local.attention import (
    NAME,
    lower_right_attention,
    lower_right_attention_for,
    supports_lower_right,
)
from styleeval.backends.local.engine import ScoringEngine
from styleeval.chat import CONTEXTS, ChatFormat, user_message


class _Module:
    num_key_value_groups = 2


def test_lower_right_equals_a_materialised_mask():
    torch.manual_seed(0)
    b, heads, kv_heads, q_len, kv_len, dim = 3, 4, 2, 5, 9, 8
    q = torch.randn(b, heads, q_len, dim)
    k, v = torch.randn(b, kv_heads, kv_len, dim), torch.randn(b, kv_heads, kv_len, dim)
    out, _ = lower_right_attention(_Module(), q, k, v, None, scaling=0.3)
    assert out.shape == (b, q_len, heads, dim)
    # by hand: query i (position kv_len - q_len + i) sees keys 0 .. kv_len - q_len + i
    kk, vv = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
    scores = (q @ kk.transpose(-1, -2)) * 0.3
    allowed = torch.arange(kv_len)[None, :] <= torch.arange(q_len)[:, None] + (kv_len - q_len)
    want = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ vv
    assert torch.allclose(out, want.transpose(1, 2), atol=1e-6)


def test_engine_uses_it_exactly_and_restores_the_model(tiny_model, tiny_tokenizer, rows):
    chat = ChatFormat(tiny_tokenizer)
    sources, rewrites, styles = map(list, zip(*rows[:10]))
    prompts = [p for ctx in CONTEXTS for p in chat.prompt_ids([user_message(ctx, s, st)
                                                             for s, st in zip(sources, styles)])]
    targets = chat.rewrite_ids(rewrites) * len(CONTEXTS)
    seen = []
    hook = tiny_model.model.layers[0].register_forward_pre_hook(
        lambda *_: seen.append(tiny_model.config._attn_implementation))
    try:
        fast = ScoringEngine(tiny_model, batch_tokens=200).token_logprobs(prompts, targets)
        used = set(seen)
        seen.clear()
        library = ScoringEngine(tiny_model, batch_tokens=200, lower_right=False).token_logprobs(prompts, targets)
    finally:
        hook.remove()
    assert used == {NAME} and set(seen) == {"sdpa"}
    assert tiny_model.config._attn_implementation == "sdpa"
    for a, b in zip(fast, library):
        assert torch.allclose(a, b, atol=1e-5, rtol=0)


def test_models_it_leaves_alone(tiny_model):
    from transformers import MistralConfig, MistralForCausalLM

    assert supports_lower_right(tiny_model)
    sliding = MistralForCausalLM(MistralConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                                               num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                               sliding_window=8, attn_implementation="sdpa"))
    assert not supports_lower_right(sliding)
    eager = type(tiny_model)(tiny_model.config.__class__(**{**tiny_model.config.to_dict(),
                                                            "attn_implementation": "eager"}))
    assert not supports_lower_right(eager)
    with lower_right_attention_for(eager) as active:
        assert not active and eager.config._attn_implementation == "eager"
    with pytest.raises(RuntimeError), lower_right_attention_for(tiny_model) as active:
        assert active and tiny_model.config._attn_implementation == NAME
        raise RuntimeError("boom")
    assert tiny_model.config._attn_implementation == "sdpa"
