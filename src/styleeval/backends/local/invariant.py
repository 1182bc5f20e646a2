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
class Layout:
    """Where every query's keys are, for one forward pass (built once, read by every layer).

    ``key_index`` (S, NB*BLOCK): per sequence, flat key indices (row * key_len + key), padded with ``-1`` (a zero
    key). ``tile_query`` (T, BLOCK): flat query indices (row * query_len + query) of each tile, ``-1`` for an empty
    slot; ``tile_rank`` (T, BLOCK): each query's rank in its sequence (0 for an empty slot); ``tile_seq`` (T,).
    """

    key_index: torch.Tensor
    tile_query: torch.Tensor
    tile_rank: torch.Tensor
    tile_seq: torch.Tensor
    rows: int
    query_len: int
    key_len: int


def build_layout(rows: Sequence[Sequence[KeySequence]], query_len: int, key_len: int,
                 device: torch.device | str = "cpu") -> Layout:
    """The :class:`Layout` of a pass whose batch row ``b`` holds the sequences ``rows[b]``, on ``device``."""
    keys: list[list[int]] = []
    tiles: list[list[int]] = []
    ranks: list[list[int]] = []
    seqs: list[int] = []
    for b, sequences in enumerate(rows):
        for seq in sequences:
            s = len(keys)
            keys.append([b * key_len + k for k in seq.keys])
            for start in range(0, len(seq.queries), BLOCK):
                part = seq.queries[start : start + BLOCK]
                tiles.append([b * query_len + q for q, _ in part] + [-1] * (BLOCK - len(part)))
                ranks.append([r for _, r in part] + [0] * (BLOCK - len(part)))
                seqs.append(s)
    longest = max((len(k) for k in keys), default=1)
    width = -(-longest // BLOCK) * BLOCK
    key_index = torch.full((len(keys), width), -1, dtype=torch.long)
    for s, k in enumerate(keys):
        key_index[s, : len(k)] = torch.tensor(k, dtype=torch.long)
    return Layout(key_index.to(device), torch.tensor(tiles, dtype=torch.long).view(-1, BLOCK).to(device),
                  torch.tensor(ranks, dtype=torch.long).view(-1, BLOCK).to(device),
                  torch.tensor(seqs, dtype=torch.long).to(device), len(rows), query_len, key_len)


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


def _flat(states: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, heads, n, d) -> (B*n + 1, heads, d) in ``dtype``: the last row a zero (where -1 indices point)."""
    b, heads, n, d = states.shape
    flat = states.transpose(1, 2).reshape(b * n, heads, d).to(dtype)
    return torch.cat([flat, flat.new_zeros(1, heads, d)])


def _attend(query, key, value, layout: Layout, scaling: float, softcap: float | None,
            window: int | None) -> torch.Tensor:
    b, heads, n, d = query.shape
    kv_heads = key.shape[1]
    group = heads // kv_heads
    wide = torch.float64 if query.dtype == torch.float64 else torch.float32
    q = _flat(query, wide)[layout.tile_query]  # (T, BLOCK, heads, d)
    index = layout.key_index[layout.tile_seq]  # (T, NB*BLOCK)
    k, v = _flat(key, wide)[index], _flat(value, wide)[index]  # (T, NB*BLOCK, kv_heads, d)
    tiles, blocks = len(q), index.shape[1] // BLOCK
    q = q.view(tiles, BLOCK, kv_heads, group, d).permute(0, 2, 3, 1, 4).unsqueeze(3)  # (T, kv, g, 1, BLOCK, d)
    k = k.view(tiles, blocks, BLOCK, kv_heads, d).permute(0, 3, 1, 2, 4).unsqueeze(2)  # (T, kv, 1, NB, BLOCK, d)
    v = v.view(tiles, blocks, BLOCK, kv_heads, d).permute(0, 3, 1, 2, 4).unsqueeze(2)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scaling  # (T, kv, g, NB, BLOCK q, BLOCK k): fixed-shape GEMMs
    if softcap is not None:  # Gemma-2's attention logit soft-capping, as transformers computes it
        scores = torch.tanh(scores / softcap) * softcap
    slot = torch.arange(blocks * BLOCK, device=query.device).view(1, blocks, 1, BLOCK)
    rank = layout.tile_rank.view(tiles, 1, BLOCK, 1)
    seen = slot <= rank  # (T, NB, BLOCK q, BLOCK k)
    if window is not None:  # a sliding window: the last ``window`` keys, itself included
        seen &= slot > rank - window
    scores = scores.masked_fill(~seen[:, None, None], float("-inf"))
    top = scores.amax(dim=(3, 5), keepdim=True)  # over all the query's keys: exact in any order
    weights = torch.exp(scores - top)
    sums = weights.sum(dim=-1)  # (T, kv, g, NB, BLOCK): one fixed-length reduction per block
    parts = torch.matmul(weights, v)  # (T, kv, g, NB, BLOCK, d)
    total, out = sums[:, :, :, 0], parts[:, :, :, 0]
    for j in range(1, blocks):  # the blocks added in key order, one after another
        total = total + sums[:, :, :, j]
        out = out + parts[:, :, :, j]
    out = (out / total.unsqueeze(-1)).reshape(tiles, heads, BLOCK, d).transpose(1, 2)  # (T, BLOCK, heads, d)
    result = query.new_zeros(b * n + 1, heads, d, dtype=wide)
    result[layout.tile_query.reshape(-1)] = out.reshape(-1, heads, d)  # empty slots land on the last row
    return result[: b * n].view(b, n, heads, d).to(query.dtype)


def install(model) -> None:
    """Give ``model`` the invariant attention (once, when an engine is built; never while scoring): registered as
    ``styleeval_invariant_<its implementation>``, which runs that implementation, with its mask, on any pass
    without a :class:`Layout`. A model whose implementation is neither ``sdpa`` nor ``eager`` (flash attention on
    a GPU, flex) is refused: the invariant attention is written for those two and their masks."""
    from transformers import AttentionInterface  # noqa: PLC0415 - heavy (transformers)
    from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: PLC0415 - heavy
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask, sdpa_mask  # noqa: PLC0415

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


def _eager_forward(model):
    """The model's own eager attention function (each architecture defines its ``eager_attention_forward``)."""
    import importlib  # noqa: PLC0415 - only here

    module = importlib.import_module(type(model).__module__)
    return module.eager_attention_forward
