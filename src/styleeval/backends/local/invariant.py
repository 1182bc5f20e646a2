"""Batch-invariant attention: a token's attention output as a function of its own sequence only.

torch's CPU attention (``scaled_dot_product_attention``) reduces over the keys in an order that follows the padded
(or token-tree packed) key length, so a row's output moved with its batch-mates (``../shared/notes`` measured it:
1.8e-7 in float32, 2e-3 in bfloat16, growing through the layers). Here every query is computed on its **own key
sequence in logical order** (the shared prefix, its prompt, its ancestors, itself: exactly the keys it may see,
gathered, never interleaved with a batch-mate's or a sibling's), with every reduction over a fixed shape:

- scores: ``(64 queries x d) @ (d x 64 keys)`` blocks (one batched GEMM shape, whatever the batch);
- softmax: the maximum over all its keys (exact in any order), ``exp(s - max)``, the sum over each 64-key block,
  then the blocks' sums added one after another from the first key;
- values: ``(64 x 64) @ (64 x d)`` per block, added in the same order.

So a query's output depends on its query vector and its keys and values only: not on how many rows the batch has,
how long the longest is, where the row sits, which prefix was cached, or whether its prompt was packed as a tree.
The matmuls around attention are row-invariant once a pass has at least :data:`MIN_ROWS` token rows (measured: a
float32 GEMM row differs between 1-3 rows and more on this project's CPUs, not beyond); the engine pads to that.

The engine sets the model's attention implementation to :data:`NAME` once, when it is built (never while scoring):
a forward pass without a :class:`Layout` (``generate``, training, a user's own call) runs transformers' SDPA
attention with the SDPA mask, bit for bit as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from styleeval.errors import UserError

NAME = "styleeval_invariant"  # registered as NAME + "_" + the implementation it falls back to (sdpa, eager)
BLOCK = 64  # keys per reduction block and queries per tile
MIN_ROWS = 64  # token rows per pass (and LM-head block) at least: the GEMMs' row-invariant regime
KEYWORD = "styleeval_layout"  # the forward pass's keyword that carries the Layout to every attention layer


@dataclass(frozen=True)
class KeySequence:
    """One logical sequence of a pass: ``keys`` (indices into its batch row's key axis, in logical order) and its
    ``queries`` ((index into the row's query axis, rank), rank = the query's own key's index in ``keys``)."""

    keys: list[int]
    queries: list[tuple[int, int]]


@dataclass(frozen=True)
class Gather:
    """Where a pass's virtual rows come from (:class:`Layout`): virtual row ``r`` is batch row ``row[r]``'s queries
    at ``query[r]`` and keys at ``key[r]`` (padding slots point at position 0: masked keys, discarded queries); its
    real query slots (flat ``r * Wq + s``) are ``slots``, whose outputs go to flat query indices ``targets``."""

    row: torch.Tensor
    query: torch.Tensor
    key: torch.Tensor
    slots: torch.Tensor
    targets: torch.Tensor


@dataclass(frozen=True)
class Layout:
    """Where every query's keys are, for one forward pass (built once, read by every layer).

    Each *virtual row* ``r`` is one logical sequence: its query slots ``s`` (rank ``rank[r, s]``: the index of the
    query's own key) and its key slots ``j`` (logical key ``j``), padded to at least :data:`BLOCK` queries and to a
    multiple of :data:`BLOCK` keys. Where every batch row is one sequence in buffer order (plain rows, a prompt with
    one continuation) the virtual rows are the batch rows themselves (``gather`` is ``None``); otherwise
    :class:`Gather` says where they come from. ``bias`` (R, 1, 1, Wq, Lk): 0 where a query sees a key, ``-inf``
    elsewhere.
    """

    rank: torch.Tensor
    bias: torch.Tensor
    gather: Gather | None
    keys: int  # Lk: key slots per virtual row, a multiple of BLOCK
    key_len: int  # keys per batch row the pass must hand over (its cached prefix and its tokens)


def _blocks(n: int) -> int:
    return max(1, -(-n // BLOCK)) * BLOCK


def _bias(rank: torch.Tensor, keys: int, dtype: torch.dtype, window: int | None = None) -> torch.Tensor:
    slot = torch.arange(keys, device=rank.device)
    seen = slot <= rank[..., None]
    if window is not None:  # a sliding window: the last ``window`` keys, itself included
        seen &= slot > rank[..., None] - window
    zero = torch.zeros((), dtype=dtype, device=rank.device)
    return torch.where(seen, zero, float("-inf")).to(dtype)[:, None, None]


def _in_buffer_order(prefix_len: int, sequences: Sequence[KeySequence]) -> bool:
    """One sequence whose keys are the row's key axis from 0 and whose query ``t`` has rank ``prefix_len + t``."""
    if len(sequences) != 1:
        return False
    seq = sequences[0]
    return (seq.keys == list(range(len(seq.keys)))
            and all(r == prefix_len + q for q, r in seq.queries) and [q for q, _ in seq.queries] ==
            list(range(len(seq.queries))))


def build_layout(rows: Sequence[Sequence[KeySequence]], query_len: int, key_len: int, prefix_len: int = 0,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> Layout:
    """The :class:`Layout` of a pass whose batch row ``b`` holds the sequences ``rows[b]`` (``query_len`` queries
    per row after ``prefix_len`` cached keys, ``key_len`` keys per row), its bias in ``dtype`` on ``device``."""
    if all(_in_buffer_order(prefix_len, seqs) for seqs in rows):
        width = max(query_len, BLOCK)
        rank = torch.zeros((len(rows), width), dtype=torch.long)
        for b, seqs in enumerate(rows):
            n = len(seqs[0].queries)
            rank[b, :n] = torch.arange(prefix_len, prefix_len + n)
        rank = rank.to(device)
        return Layout(rank, _bias(rank, _blocks(key_len), dtype), None, _blocks(key_len), key_len)
    sequences = [(b, seq) for b, seqs in enumerate(rows) for seq in seqs]
    width = max(BLOCK, max(len(seq.queries) for _, seq in sequences))
    keys = _blocks(max(len(seq.keys) for _, seq in sequences))
    query = torch.zeros((len(sequences), width), dtype=torch.long)
    key = torch.zeros((len(sequences), keys), dtype=torch.long)
    rank = torch.zeros((len(sequences), width), dtype=torch.long)
    slots: list[int] = []
    targets: list[int] = []
    for r, (b, seq) in enumerate(sequences):
        if seq.queries:
            query[r, : len(seq.queries)] = torch.tensor([q for q, _ in seq.queries])
            rank[r, : len(seq.queries)] = torch.tensor([k for _, k in seq.queries])
            slots += range(r * width, r * width + len(seq.queries))
            targets += [b * query_len + q for q, _ in seq.queries]
        key[r, : len(seq.keys)] = torch.tensor(seq.keys)
    rank = rank.to(device)
    gather = Gather(*(torch.as_tensor(t, dtype=torch.long).to(device) for t in
                      ([b for b, _ in sequences], query, key, slots, targets)))
    return Layout(rank, _bias(rank, keys, dtype), gather, keys, key_len)


def plain_sequences(prefix_len: int, length: int) -> list[KeySequence]:
    """A row of ``length`` tokens after ``prefix_len`` cached ones: one causal sequence."""
    return [KeySequence(list(range(prefix_len + length)),
                      [(t, prefix_len + t) for t in range(length)])]


def tree_sequences(prefix_len: int, trunk: int, parents: Sequence[int]) -> list[KeySequence]:
    """A token tree's row: ``trunk`` prompt tokens, then nodes (``parents[j]``: -1 for the prompt's end, else an
    earlier node). One sequence per leaf (the cached prefix, the trunk, the leaf's ancestors and itself); each
    query is computed in the first sequence that holds it (its keys are the same in all of them)."""
    base = list(range(prefix_len + trunk))
    trunk_queries = [(t, prefix_len + t) for t in range(trunk)]
    if not len(parents):
        return [KeySequence(base, trunk_queries)]
    has_child = [False] * len(parents)
    for p in parents:
        if p >= 0:
            has_child[p] = True
    done = [False] * len(parents)
    out = []
    for leaf in range(len(parents)):
        if has_child[leaf]:
            continue
        path = []
        j = leaf
        while j >= 0:
            path.append(j)
            j = int(parents[j])
        path.reverse()
        queries = trunk_queries if not out else []
        for depth, j in enumerate(path):
            if not done[j]:
                done[j] = True
                queries = [*queries, (trunk + j, prefix_len + trunk + depth)]
        out.append(KeySequence(base + [prefix_len + trunk + j for j in path], queries))
    return out


def _invariant_or(fallback):
    """transformers' attention-function signature: with a :class:`Layout` under ``styleeval_layout`` the
    batch-invariant computation (module docstring), else ``fallback`` (the model's own implementation) unchanged."""

    def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None, **kwargs):
        layout = kwargs.pop(KEYWORD, None)
        if layout is None:
            return fallback(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
        scale = query.shape[-1] ** -0.5 if scaling is None else scaling
        return _attend(query, key, value, layout, scale, kwargs.get("softcap"), kwargs.get("sliding_window")), None

    return attention


def _pad(states: torch.Tensor, length: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, heads, n, d) in ``dtype``, zero-padded to ``length`` along n."""
    states = states.to(dtype)
    extra = length - states.shape[2]
    return torch.nn.functional.pad(states, (0, 0, 0, extra)) if extra else states


def _attend(query, key, value, layout: Layout, scaling: float, softcap: float | None,
            window: int | None) -> torch.Tensor:
    """Attention of every query on its virtual row's keys (:class:`Layout`); (B, n, heads, d) in ``query``'s dtype.

    Per virtual row: scores ``Q K^T`` (GEMMs of >= 64 rows, whose entries do not depend on the shape there:
    tests/backends/local/test_invariance.py), the bias, the maximum over the row (exact in any order),
    ``exp(s - max)``, then per block of :data:`BLOCK` keys its sum and its ``(Wq x 64) @ (64 x d)`` product, the
    blocks added one after another from the first key."""
    b, heads, n, d = query.shape
    kv_heads = key.shape[1]
    group = heads // kv_heads
    wide = torch.float64 if query.dtype == torch.float64 else torch.float32
    keys = layout.keys
    if key.shape[2] != layout.key_len:  # a cache that dropped keys: refuse rather than attend to the wrong ones
        raise RuntimeError(f"attention got {key.shape[2]} keys per row where the layout counts {layout.key_len}")
    width, gather = layout.rank.shape[1], layout.gather
    if gather is None:  # the batch rows themselves, in buffer order
        q, k, v = _pad(query, width, wide), _pad(key, keys, wide), _pad(value, keys, wide)
    else:
        row = gather.row[:, None]
        q = query[row, :, gather.query].permute(0, 2, 1, 3).to(wide)  # (R, heads, Wq, d)
        k = key[row, :, gather.key].permute(0, 2, 1, 3).to(wide)  # (R, kv_heads, Lk, d)
        v = value[row, :, gather.key].permute(0, 2, 1, 3).to(wide)
    rows = q.shape[0]
    q = q.reshape(rows, kv_heads, group * width, d)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scaling  # (R, kv, g*Wq, Lk)
    if softcap is not None:  # Gemma-2's attention logit soft-capping, as transformers computes it
        scores = torch.tanh(scores / softcap) * softcap
    bias = layout.bias if window is None else _bias(layout.rank, keys, wide, window)
    scores = scores.view(rows, kv_heads, group, width, keys).add_(bias)  # in place: scores is this call's own
    weights = scores.sub_(scores.amax(dim=-1, keepdim=True)).exp_().view(rows, kv_heads, group * width, keys)
    blocks = keys // BLOCK
    sums = weights.view(rows, kv_heads, group * width, blocks, BLOCK).sum(dim=-1)
    total, out = sums[..., 0], torch.matmul(weights[..., :BLOCK], v[:, :, :BLOCK])
    for j in range(1, blocks):  # the blocks added in key order, one after another
        total = total + sums[..., j]
        out = out + torch.matmul(weights[..., j * BLOCK : (j + 1) * BLOCK], v[:, :, j * BLOCK : (j + 1) * BLOCK])
    out = (out / total.unsqueeze(-1)).view(rows, heads, width, d)
    if gather is None:
        return out[:, :, :n].transpose(1, 2).to(query.dtype)
    real = out.transpose(1, 2).reshape(rows * width, heads, d)[gather.slots].to(query.dtype)
    return query.new_zeros(b * n, heads, d).index_copy_(0, gather.targets, real).view(b, n, heads, d)


def install(model) -> None:
    """Give ``model`` the invariant attention (once, when an engine is built; never while scoring): registered as
    ``styleeval_invariant_<its implementation>``, which runs that implementation, with its mask, on any pass
    without a :class:`Layout`. A model whose implementation is neither ``sdpa`` nor ``eager`` (flash attention on
    a GPU, flex) is refused: the invariant attention is written for those two and their masks."""
    from transformers import AttentionInterface  # noqa: PLC0415 - heavy (transformers)
    from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: PLC0415 - heavy (transformers)
    from transformers.masking_utils import (  # noqa: PLC0415 - heavy (transformers)
        ALL_MASK_ATTENTION_FUNCTIONS,  # noqa: PLC0415 - heavy (transformers)
        eager_mask,
        sdpa_mask,
    )

    current = model.config._attn_implementation
    if current.startswith(NAME + "_"):
        return
    if current not in ("sdpa", "eager"):
        raise UserError(f"the scoring engine needs the model's attention implementation to be 'sdpa' or 'eager', "
                        f"not {current!r}: load it with attn_implementation='sdpa'")
    name = f"{NAME}_{current}" if current == "sdpa" else f"{NAME}_eager_{type(model).__module__.rsplit('.', 1)[-1]}"
    if current == "sdpa":
        fallback, mask = sdpa_attention_forward, sdpa_mask
    else:
        fallback, mask = _eager_forward(model), eager_mask
    AttentionInterface.register(name, _invariant_or(fallback))
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, mask)
    model.set_attn_implementation(name)
    if model.config._attn_implementation != name:  # an architecture outside transformers' attention interface
        raise UserError(f"{type(model).__name__} does not use transformers' attention interface, so the scoring "
                        "engine cannot make its scores independent of their batch; use a model whose architecture "
                        "does (Llama, Qwen2, Mistral, Phi-3, Gemma...)")


def _eager_forward(model):
    """The model's own eager attention function (each architecture defines its ``eager_attention_forward``)."""
    module = importlib.import_module(type(model).__module__)
    return module.eager_attention_forward
