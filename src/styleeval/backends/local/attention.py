"""Attention for the scoring engine's batches: right-padded rows after a shared prefix need only a lower-right causal
mask, so no (batch, 1, L, P + L) mask is built.

A row of a batch holds ``L`` new tokens after ``P`` cached prefix tokens, right-padded. Query ``i`` sits at position
``P + i`` and may see keys ``0 .. P + i``: the causal mask aligned to the lower right of the (L, P + L) score matrix.
Real tokens never see padding (it comes after them), so that one mask, shared by every row and head, is exact. The
engine runs its plain batches (no token trees) under :func:`lower_right_attention` (a ``transformers`` attention
implementation registered as :data:`NAME`, with a mask function that builds nothing):

- on CUDA, ``torch.nn.attention.bias.causal_lower_right`` lets SDPA pick the flash or memory-efficient kernel (key and
  value heads are repeated for grouped-query attention first: those kernels' lower-right path takes equal heads);
- elsewhere, one (L, P + L) boolean mask per shape, with ``enable_gqa`` so that key/value heads are not copied.

Token-tree batches pass their own 4D mask, which ``transformers`` uses as given; this function then defers to the
library's SDPA attention (measured on this CPU: SDPA with that mask and ``enable_gqa`` was 7% slower than the library's
copy of the key/value heads, median of 8 interleaved Lai chunks, SmolLM2-135M shape; without a mask, ``enable_gqa``
makes plain batches 12% faster). Models with sliding-window layers, soft-capped attention or a non-SDPA implementation are
left untouched.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import torch

NAME = "styleeval_lower_right"
_REGISTERED = False


@lru_cache(maxsize=64)
def _mask(q_len: int, kv_len: int, device: str) -> torch.Tensor:
    """(q_len, kv_len) boolean lower-right causal mask: query i sees keys 0 .. kv_len - q_len + i."""
    q = torch.arange(q_len, device=device)[:, None]
    k = torch.arange(kv_len, device=device)[None, :]
    return k <= q + (kv_len - q_len)


def lower_right_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
    """A ``transformers`` attention function: SDPA with a lower-right causal mask when no mask is given."""
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    groups = query.shape[1] // key.shape[1]
    if attention_mask is not None:  # a token-tree batch's own 4D mask
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    q_len, kv_len = query.shape[2], key.shape[2]
    if query.device.type == "cuda":
        from torch.nn.attention.bias import causal_lower_right

        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)
        if q_len == 1:
            out = sdpa(query, key, value, scale=scaling)
        elif q_len == kv_len:
            out = sdpa(query, key, value, is_causal=True, scale=scaling)
        else:
            out = sdpa(query, key, value, attn_mask=causal_lower_right(q_len, kv_len), scale=scaling)
    else:
        out = sdpa(query, key, value, attn_mask=_mask(q_len, kv_len, str(query.device)), scale=scaling,
                   enable_gqa=groups > 1)
    return out.transpose(1, 2).contiguous(), None


def _no_mask(*args, **kwargs):
    return None


def _register() -> None:
    global _REGISTERED
    if not _REGISTERED:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface

        AttentionInterface.register(NAME, lower_right_attention)
        AttentionMaskInterface.register(NAME, _no_mask)
        _REGISTERED = True


def supports_lower_right(model) -> bool:
    """Whether ``model`` runs SDPA attention with plain causal masks (no sliding window, no soft-capping)."""
    config = model.config
    if getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    if getattr(config, "attn_logit_softcapping", None):
        return False
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        return all(t == "full_attention" for t in layer_types)
    return getattr(config, "sliding_window", None) is None or getattr(config, "use_sliding_window", True) is False


@contextmanager
def lower_right_attention_for(model, enabled: bool = True):
    """Run ``model`` with :func:`lower_right_attention` inside the block (when :func:`supports_lower_right`), then
    restore its attention implementation."""
    if not enabled or not supports_lower_right(model):
        yield False
        return
    _register()
    config = model.config
    previous = config._attn_implementation
    config._attn_implementation = NAME
    try:
        yield True
    finally:
        config._attn_implementation = previous
