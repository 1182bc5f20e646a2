"""Batch-invariant attention: a token's attention output as a function of its own sequence only.

torch's CPU attention (``scaled_dot_product_attention``) reduces over the keys in an order that follows the padded
(or token-tree packed) key length, so a row's output moved with its batch-mates (``../shared/notes`` measured it:
1.8e-7 in float32, 2e-3 in bfloat16, growing through the layers). Here every query is computed on its **own key
sequence in logical order** (the shared prefix, its prompt, its ancestors, itself: exactly the keys it may see,
gathered, never interleaved with a batch-mate's or a sibling's), with every reduction over a fixed shape:

- scores: ``Q K^T`` per virtual row (one logical sequence), a GEMM of at least 64 rows (the query slots times the
  query heads sharing a key head), whose entries do not depend on its shape from there (tested);
- softmax: the maximum over all its keys (exact in any order), ``exp(s - max)`` flushed to 0 below ``exp(-87)``
  (:func:`_flushed_exp`), the sum over each 64-key block, then the blocks' sums added one after another from the
  first key;
- values: ``(Wq x 64) @ (64 x d)`` per block, added in the same order.

In a pass of token trees, virtual rows of like size are computed together (query slots: the least giving 64 product
rows, doubled as needed; keys: a multiple of 64), so the work follows each sequence's length, not the longest's.
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
BLOCK = 64  # keys per reduction block
MIN_ROWS = 64  # token rows per pass (and LM-head block) at least: the GEMMs' row-invariant regime
KEYWORD = "styleeval_layout"  # the forward pass's keyword that carries the Layout to every attention layer


@dataclass(frozen=True)
class KeySequence:
    """One logical sequence of a pass: ``keys`` (indices into its batch row's key axis, in logical order) and its
    ``queries`` ((index into the row's query axis, rank), rank = the query's own key's index in ``keys``)."""

    keys: list[int]
    queries: list[tuple[int, int]]


@dataclass(frozen=True)
class Rows:
    """Virtual rows of one shape, computed together (:class:`Layout`): virtual row ``r`` is one logical sequence, its
    query slots ``s`` (rank ``rank[r, s]``: the index of the query's own key in its keys) and its key slots ``j``
    (logical key ``j``), padded to ``rank.shape[1]`` queries (>= :data:`MIN_ROWS` rows in each product, the heads
    sharing a key counted) and to a multiple of :data:`BLOCK` keys. ``bias`` (R, 1, 1, Wq, Lk): 0 where a query
    sees a key, ``-inf`` elsewhere. Unless the rows are the batch rows themselves (``gather`` is ``None``), the
    :class:`Gather` says where they come from."""

    rank: torch.Tensor
    bias: torch.Tensor
    gather: Gather | None = None

    @property
    def keys(self) -> int:
        """Lk: key slots per virtual row, a multiple of :data:`BLOCK`."""
        return self.bias.shape[-1]


@dataclass(frozen=True)
class Gather:
    """Indices of flat ``(row, head, position)`` vectors, computed once per pass: ``query`` (R*heads*Wq) into the
    pass's queries (B, heads, n, d) seen as (B*heads*n, d), ``key`` (R*kv_heads*Lk) into its keys and values (B,
    kv_heads, L, d) likewise (padding slots point at position 0: masked keys, discarded queries); a real query's
    outputs, ``source`` in the virtual rows' output (R*heads*Wq, d), go to ``target`` in the attention's output
    (B*n*heads, d)."""

    query: torch.Tensor
    key: torch.Tensor
    source: torch.Tensor
    target: torch.Tensor


@dataclass(frozen=True)
class Layout:
    """Where every query's keys are, for one forward pass (built once, read by every layer) of a model with
    ``heads`` query heads and ``kv_heads`` key heads: its virtual rows, one :class:`Rows` per shape. Where every
    batch row is one sequence in buffer order (plain rows, a prompt with one continuation) the virtual rows are the
    batch rows themselves (one :class:`Rows`, nothing gathered); otherwise each logical sequence is a virtual row,
    grouped with those of its padded query count and key count."""

    groups: tuple[Rows, ...]
    query_len: int  # queries per batch row
    key_len: int  # keys per batch row the pass must hand over (its cached prefix and its tokens)
    heads: int
    kv_heads: int


def _blocks(n: int) -> int:
    return max(1, -(-n // BLOCK)) * BLOCK


def attention_heads(config) -> tuple[int, int]:
    """``(query heads, key heads)`` of a model of ``config`` (equal without grouped-query attention)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = getattr(text, "num_attention_heads", None) or 1
    return heads, getattr(text, "num_key_value_heads", None) or heads


def _width(queries: int, group: int) -> int:
    """A virtual row's padded query count: the least that gives its products :data:`MIN_ROWS` rows (``group`` query
    heads share a key head), doubled until it holds ``queries`` (few shapes, at most twice the work)."""
    width = -(-MIN_ROWS // group)
    while width < queries:
        width *= 2
    return width


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


@dataclass(frozen=True)
class Pass:
    """The shape of one forward pass: ``query_len`` queries per batch row after ``prefix_len`` cached keys,
    ``key_len`` keys per row, a model of ``heads`` query and ``kv_heads`` key heads; the bias in ``dtype`` on
    ``device``."""

    query_len: int
    key_len: int
    prefix_len: int = 0
    heads: int = 1
    kv_heads: int = 1
    device: torch.device | str = "cpu"
    dtype: torch.dtype = torch.float32


def build_layout(rows: Sequence[Sequence[KeySequence]], shape: Pass) -> Layout:
    """The :class:`Layout` of a pass of ``shape`` whose batch row ``b`` holds the sequences ``rows[b]``."""
    group = shape.heads // shape.kv_heads
    if all(_in_buffer_order(shape.prefix_len, seqs) for seqs in rows):
        width = max(shape.query_len, _width(0, group))
        rank = torch.zeros((len(rows), width), dtype=torch.long)
        for b, seqs in enumerate(rows):
            n = len(seqs[0].queries)
            rank[b, :n] = torch.arange(shape.prefix_len, shape.prefix_len + n)
        rank = rank.to(shape.device)
        return Layout((Rows(rank, _bias(rank, _blocks(shape.key_len), shape.dtype)),), shape.query_len, shape.key_len,
                      shape.heads, shape.kv_heads)
    by_shape: dict[tuple[int, int], list[tuple[int, KeySequence]]] = {}
    for b, seqs in enumerate(rows):
        for seq in seqs:
            by_shape.setdefault((_width(len(seq.queries), group), _blocks(len(seq.keys))), []).append((b, seq))
    groups = tuple(_gathered(by_shape[size], *size, shape) for size in sorted(by_shape))
    return Layout(groups, shape.query_len, shape.key_len, shape.heads, shape.kv_heads)


def _gathered(sequences: list[tuple[int, KeySequence]], width: int, keys: int, shape: Pass) -> Rows:
    """The :class:`Rows` of ``sequences`` ((batch row, sequence)), ``width`` query and ``keys`` key slots each."""
    count = len(sequences)
    row = torch.tensor([b for b, _ in sequences], dtype=torch.long)
    query = torch.zeros((count, width), dtype=torch.long)
    key = torch.zeros((count, keys), dtype=torch.long)
    rank = torch.zeros((count, width), dtype=torch.long)
    real = torch.zeros((count, width), dtype=torch.bool)
    for r, (_, seq) in enumerate(sequences):
        if seq.queries:
            query[r, : len(seq.queries)] = torch.tensor([q for q, _ in seq.queries])
            rank[r, : len(seq.queries)] = torch.tensor([k for _, k in seq.queries])
            real[r, : len(seq.queries)] = True
        key[r, : len(seq.keys)] = torch.tensor(seq.keys)
    heads, kv_heads = (torch.arange(h)[None, :, None] for h in (shape.heads, shape.kv_heads))
    query_at = (row[:, None, None] * shape.heads + heads) * shape.query_len + query[:, None]  # (R, heads, Wq)
    key_at = (row[:, None, None] * shape.kv_heads + kv_heads) * shape.key_len + key[:, None]  # (R, kv, Lk)
    slot = torch.arange(count * shape.heads * width).view(count, shape.heads, width)
    source = slot.transpose(1, 2)[real].reshape(-1)  # a real query's heads side by side, as in the output
    target = ((row[:, None, None] * shape.query_len + query[:, :, None]) * shape.heads
              + torch.arange(shape.heads))[real]
    device = shape.device
    gather = Gather(query_at.reshape(-1).to(device), key_at.reshape(-1).to(device), source.to(device),
                    target.reshape(-1).to(device))
    rank = rank.to(device)
    return Rows(rank, _bias(rank, keys, shape.dtype), gather)


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


UNDERFLOW = {torch.float32: -87.0, torch.float64: -708.0}  # exp(x) is a normal number above these


def _flushed_exp(scores: torch.Tensor) -> torch.Tensor:
    """``exp(max(scores, u)) - exp(u)`` in place, ``u`` = :data:`UNDERFLOW`: exactly 0 for the masked keys
    (``-inf``) and wherever ``exp`` would be sub-normal, ``exp(scores)`` elsewhere (``exp(u)`` is below half an ulp
    of any weight above ``2^-100``, so those are unchanged; the largest weight is 1). libm's exp takes a slow path
    for sub-normal and zero results: measured 25x slower there, which made it a third of the attention's time."""
    low = UNDERFLOW[scores.dtype]
    # exp(u) by the same vectorized kernel as the scores' (a whole number of vectors, like every row of scores):
    # a scalar exp may round otherwise on some instruction sets, which would leave masked weights sub-normal, not 0
    floor = torch.full((BLOCK,), low, dtype=scores.dtype, device=scores.device).exp_()[0]
    return scores.clamp_(min=low).exp_().sub_(floor)


def _attend(query, key, value, layout: Layout, scaling: float, softcap: float | None,
            window: int | None) -> torch.Tensor:
    """Attention of every query on its virtual row's keys (:class:`Layout`); (B, n, heads, d) in ``query``'s dtype."""
    b, heads, n, d = query.shape
    if key.shape[2] != layout.key_len:  # a cache that dropped keys: refuse rather than attend to the wrong ones
        raise RuntimeError(f"attention got {key.shape[2]} keys per row where the layout counts {layout.key_len}")
    if n != layout.query_len:
        raise RuntimeError(f"attention got {n} queries per row where the layout counts {layout.query_len}")
    if (heads, key.shape[1]) != (layout.heads, layout.kv_heads):
        raise RuntimeError(f"the layout was built for {layout.heads} query and {layout.kv_heads} key heads, the "
                           f"attention has {heads} and {key.shape[1]}")
    wide = torch.float64 if query.dtype == torch.float64 else torch.float32
    if layout.groups[0].gather is None:  # the batch rows themselves, in buffer order
        rows = layout.groups[0]
        out = _attend_rows(_pad(query, rows.rank.shape[1], wide), _pad(key, rows.keys, wide),
                           _pad(value, rows.keys, wide), rows, scaling, softcap, window)
        return out[:, :, :n].transpose(1, 2).to(query.dtype)
    flat_q, flat_k, flat_v = (t.reshape(-1, d) for t in (query, key, value))  # views where contiguous
    result = query.new_zeros(b * n * heads, d)
    for rows in layout.groups:
        count, width = rows.rank.shape
        at = rows.gather
        q = flat_q.index_select(0, at.query).to(wide).view(count, heads, width, d)
        k, v = (t.index_select(0, at.key).to(wide).view(count, -1, rows.keys, d) for t in (flat_k, flat_v))
        out = _attend_rows(q, k, v, rows, scaling, softcap, window).view(-1, d)  # (R*heads*Wq, d)
        result.index_copy_(0, at.target, out.index_select(0, at.source).to(query.dtype))
    return result.view(b, n, heads, d)


def _attend_rows(q, k, v, rows: Rows, scaling: float, softcap: float | None, window: int | None) -> torch.Tensor:
    """(R, heads, Wq, d): per virtual row, scores ``Q K^T`` (GEMMs of >= 64 rows, whose entries do not depend on the
    shape there: tests/backends/local/test_invariance.py), the bias, the maximum over the row (exact in any order),
    ``exp(s - max)`` (:func:`_flushed_exp`), then per block of :data:`BLOCK` keys its sum and its
    ``(Wq x 64) @ (64 x d)`` product, the blocks added one after another from the first key."""
    count, heads, width, d = q.shape
    kv_heads, keys = k.shape[1], rows.keys
    group = heads // kv_heads
    scores = torch.matmul(q.reshape(count, kv_heads, group * width, d), k.transpose(-1, -2))
    scores.mul_(scaling)  # (R, kv, g*Wq, Lk), this call's own: in place
    if softcap is not None:  # Gemma-2's attention logit soft-capping, as transformers computes it
        scores = torch.tanh(scores / softcap) * softcap
    bias = rows.bias if window is None else _bias(rows.rank, keys, scores.dtype, window)
    scores = scores.view(count, kv_heads, group, width, keys).add_(bias)
    scores = scores.sub_(scores.amax(dim=-1, keepdim=True)).view(count, kv_heads, group * width, keys)
    weights = _flushed_exp(scores)
    blocks = keys // BLOCK
    sums = weights.view(count, kv_heads, group * width, blocks, BLOCK).sum(dim=-1)
    total, out = sums[..., 0], torch.matmul(weights[..., :BLOCK], v[:, :, :BLOCK])
    for j in range(1, blocks):  # the blocks added in key order, one after another
        total = total + sums[..., j]
        out = out + torch.matmul(weights[..., j * BLOCK : (j + 1) * BLOCK], v[:, :, j * BLOCK : (j + 1) * BLOCK])
    return (out / total.unsqueeze(-1)).view(count, heads, width, d)


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
