"""The scoring plan: which tokens are computed once, which rows share a forward pass, in what order -- plain integers
and lists, no torch, so that any backend that scores (prompt, continuation) pairs can reuse it.

:class:`~styleeval.backends.local.engine.ScoringEngine` is this plan's executor on torch (tensors, KV caches, the
decoder, the LM head); :mod:`~styleeval.backends.llamacpp` reuses its grouping of rows by prompt. A plan is made of
the rows' token ids and lengths alone, never of numbers a model computed, so it never changes a score: the engine
gives every row the same bits whatever the plan (within the guarantee its module docstring states), and these
functions only decide how much work is shared.

The steps, in the order the engine takes them:

1. :func:`shared_prefix_length`: the tokens every prompt starts with (a chat template's system turn), run once;
2. :func:`prefix_groups`: rows sorted by prompt (:func:`prefix_order`), a run of them grouped when their prompts share ``min_shared`` more
   tokens (the autorater's instructions per target style), each group's own prefix run once on top of the global one;
3. :func:`pack_continuations`: the continuations that follow one prompt packed after it as a token tree (each branch
   a chain hanging off the prompt's last token), so the prompt runs once; :func:`tree_positions` and
   :func:`read_positions` place a row's nodes and the hidden states it reads;
4. :func:`longest_first` and :func:`batches`: a group's rows sorted longest first and cut into batches under a token
   budget (:class:`Budget`, which the executor may halve on out-of-memory: the next batch is cut under the new one);
5. :func:`rows_by_key`: rows with the same key (a prompt, a pair) gathered, so that each is computed once and the
   result goes back to every row that asked for it, in input order (:func:`pack_continuations` gathers a prompt's
   rows so).

llama.cpp (:mod:`~styleeval.backends.llamacpp`) shares prompts otherwise: its numbers depend on how tokens are cut
into calls, so every pair is computed in a fixed layout of its own (``split_point``: the prompt's head in 16-token
blocks whose KV cache is kept while the next pairs share them, then the prompt's last one or two tokens and the
continuation in one call). It reuses :func:`rows_by_key` (each distinct pair, or prompt, evaluated once),
:func:`prefix_order` (shared blocks side by side, a prompt's blocks prefilled once for all its continuations) and
:func:`reusable_prefix` (the whole blocks of the KV cache a prompt can keep). It does not reuse the token trees or
shared passes: measured on SmolLM2-135M Q4_1 (the test set's first 4 rows of two files, three rewrites each, under
the three instructions: 24 prompts, 72 pairs), a prompt's continuations evaluated in one llama.cpp call, one
sequence each after the prompt's blocks, give other bits than each pair's own layout for 33 of the 72 pairs (logits
up to 1.99 apart, a scored token's log-probability up to 0.52 nat), so a score would depend on its batch-mates. What
sharing would save is small: the prompt tokens computed again for each continuation are 87 of the 2,841 tokens fed
(3%), in 177 calls instead of 129.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from styleeval.backends.base import common_prefix_length

K = TypeVar("K", bound=Hashable)


@dataclass
class Budget:
    """One call's token budget per forward pass and rows per LM-head block: halved on out-of-memory for the rest of
    the call, never for the engine's later calls (whose batches must not depend on this one)."""

    batch_tokens: int
    head_rows: int


@dataclass(frozen=True)
class PackedPrompt:
    """One prompt and the continuations that follow it, packed as a token tree: ``tokens[j]`` is node ``j``, its
    parent ``parents[j]`` (``-1``: the prompt's last token); ``targets[r]`` is scored after ``reads[r]`` (``-1``: the
    prompt's end; ``j``: node ``j``). ``members`` are the caller's rows, in order; their continuations' targets follow
    each other in ``targets``."""

    prompt: tuple[int, ...]
    members: list[int]
    tokens: list[int]
    parents: list[int]
    reads: list[int]
    targets: list[int]


def shared_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens shared by every prompt, keeping at least one token of each prompt outside the prefix (the token whose
    hidden state predicts the first continuation token is run with the row).

    >>> shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6]]), shared_prefix_length([[1, 2, 3], [1, 2, 3]])
    (3, 2)
    >>> shared_prefix_length([[7], [7, 8]]), shared_prefix_length([])
    (0, 0)
    """
    if not prompts:
        return 0
    return max(0, min(common_prefix_length(prompts), min(len(p) for p in prompts) - 1))


def prefix_order(keys: Sequence[Sequence]) -> list[int]:
    """Rows (indices into ``keys``: token sequences, or tuples of them) sorted by key, ties in input order: rows
    whose prompts share a prefix come side by side, so what they share is computed once while it is kept.

    >>> prefix_order([[1, 2, 9], [5], [1, 2], [1, 2, 3]])
    [2, 3, 0, 1]
    """
    return sorted(range(len(keys)), key=lambda i: tuple(keys[i]))


def prefix_groups(prompts: Sequence[Sequence[int]], global_len: int, min_shared: int) -> list[tuple[int, list[int]]]:
    """``[(prefix length, rows)]``: the rows (indices into ``prompts``) sorted by prompt (ties in input order) and
    cut into runs whose common prefix goes at least ``min_shared`` tokens past the global prefix ``global_len``: a
    row joins the run when what it shares with the run goes that far and at least half as far past ``global_len``
    as the run's rows so far share (the run's prefix then shrinks to it, so a chain of halvings stays one run); a
    group whose prefix does not is run on the global prefix alone. Each prefix keeps one token of every prompt
    outside it.

    >>> prefix_groups([[1, 2, 3, 9], [5, 5], [1, 2, 3, 4, 7], [1, 2, 6]], 0, 2)
    [(2, [2, 0, 3]), (0, [1])]
    >>> prefix_groups([[1, 2, 3, 9], [5, 5], [1, 2, 3, 4, 7], [1, 2, 6]], 0, 3)
    [(3, [2, 0]), (0, [3]), (0, [1])]
    >>> chain = [[*range(n), 99] for n in (16, 8, 4, 2)]  # each shares half of what the run before it shares
    >>> prefix_groups(chain, 0, 1)
    [(2, [0, 1, 2, 3])]
    """
    ordered = prefix_order(prompts)
    if not ordered:
        return []
    groups: list[tuple[int, list[int]]] = []
    members, shared = [ordered[0]], len(prompts[ordered[0]]) - 1
    for i in ordered[1:]:
        common = min(shared, common_prefix_length([prompts[members[-1]], prompts[i]]), len(prompts[i]) - 1)
        if common - global_len >= max(min_shared, (shared - global_len) // 2):
            members.append(i)
            shared = common
        else:
            groups.append((shared, members))
            members, shared = [i], len(prompts[i]) - 1
    groups.append((shared, members))
    return [(max(global_len, n) if n - global_len >= min_shared else global_len, g) for n, g in groups]


def rows_by_key(keys: Sequence[K], rows: Sequence[int] | None = None) -> dict[K, list[int]]:
    """Each distinct key and the rows (indices into ``keys``; only ``rows`` where given) that have it, keys in the
    order first seen: what is computed once per key and given back to each of its rows.

    >>> rows_by_key(["b", "a", "b", "c"]), rows_by_key(["b", "a", "b", "c"], rows=[2, 3])
    ({'b': [0, 2], 'a': [1], 'c': [3]}, {'b': [2], 'c': [3]})
    """
    out: dict[K, list[int]] = {}
    for i in range(len(keys)) if rows is None else rows:
        out.setdefault(keys[i], []).append(i)
    return out


def pack_continuations(prompts: Sequence[Sequence[int]],
                       continuations: Sequence[Sequence[int]]) -> list[PackedPrompt]:
    """One :class:`PackedPrompt` per distinct prompt (in the order first seen) holding its non-empty continuations as
    branches: continuation ``c`` is the chain ``c[:-1]`` hanging off the prompt's last token, its targets ``c`` read
    after the prompt's end and after each of its nodes (the last token is only read, never fed). Empty
    continuations are in no tree (a prompt followed by none is in none).

    >>> [tree] = pack_continuations([[3], [1, 2], [1, 2], [1, 2]], [[], [7, 8, 9], [], [5]])
    >>> tree.members, tree.tokens, tree.parents, tree.reads, tree.targets
    ([1, 3], [7, 8], [-1, 0], [-1, 0, 1, -1], [7, 8, 9, 5])
    """
    scored = [i for i, cont in enumerate(continuations) if len(cont)]
    packed = []
    for prompt, members in rows_by_key([tuple(p) for p in prompts], scored).items():
        tokens: list[int] = []
        parents: list[int] = []
        reads: list[int] = []
        targets: list[int] = []
        for i in members:
            cont = [int(t) for t in continuations[i]]
            base = len(tokens)  # index of this chain's first node
            chain = len(cont) - 1  # the last token is only read, never attended to
            reads += [-1, *range(base, base + chain)]
            parents += [-1, *range(base, base + chain - 1)][:chain]
            tokens += cont[:-1]
            targets += cont
        packed.append(PackedPrompt(prompt, members, tokens, parents, reads, targets))
    return packed


def first_bad_parent(parents: Sequence[int]) -> int | None:
    """The first node whose parent is neither ``-1`` (the prompt) nor an earlier node; ``None`` when every one is.

    >>> first_bad_parent([-1, 0, 0, 1]), first_bad_parent([-1, 1]), first_bad_parent([-2])
    (None, 1, 0)
    """
    return next((j for j, p in enumerate(parents) if not -1 <= p < j), None)


def tree_positions(trunk: int, parents: Sequence[int]) -> list[int]:
    """The positions of a token tree's nodes fed after ``trunk`` prompt tokens (positions ``0..trunk-1``): a node's
    is the prompt's last position plus its depth, so a branch sits where it would alone.

    >>> tree_positions(3, [-1, 0, 1, -1, 3])
    [3, 4, 5, 3, 4]
    """
    depth: list[int] = []
    for parent in parents:
        depth.append(1 if parent < 0 else depth[parent] + 1)
    return [trunk - 1 + d for d in depth]


def read_positions(start: int, count: int, reads: Sequence[int] | None = None) -> list[int]:
    """Indices, in a row's fed tokens, of the hidden states that predict its ``count`` targets: ``start`` (the
    prompt's last token) and the tokens after it for a plain row; for a tree (``reads``), ``start`` for a read at
    the prompt's end, else the node's own index (nodes follow the prompt, from ``start + 1``).

    >>> read_positions(4, 3), read_positions(4, 3, [-1, 0, 2])
    ([4, 5, 6], [4, 5, 7])
    """
    if reads is None:
        return list(range(start, start + count))
    return [start if r < 0 else start + 1 + r for r in reads]


def longest_first(lengths: Sequence[int]) -> list[int]:
    """Rows (indices into ``lengths``) sorted longest first, rows of one length in input order.

    >>> longest_first([3, 9, 3, 12])
    [3, 1, 0, 2]
    """
    return sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)


def batch_rows(longest: int, batch_tokens: int, max_batch_rows: int | None = None) -> int:
    """Rows of a batch whose longest row has ``longest`` tokens: as many as fit ``batch_tokens`` (rows x longest), at
    least one, at most ``max_batch_rows``.

    >>> batch_rows(100, 1024), batch_rows(100, 1024, 4), batch_rows(5000, 1024), batch_rows(0, 8)
    (10, 4, 1, 8)
    """
    size = max(1, batch_tokens // max(longest, 1))
    return size if max_batch_rows is None else min(size, max_batch_rows)


def batches(lengths: Sequence[int], budget: Budget, max_batch_rows: int | None = None) -> Iterator[range]:
    """Consecutive batches of rows sorted longest first (``lengths``, :func:`longest_first`), each cut by
    :func:`batch_rows` under ``budget.batch_tokens`` as it is when the batch is asked for (an executor that halves
    the budget on out-of-memory gets smaller batches from then on).

    >>> [list(b) for b in batches([9, 5, 5, 4, 1], Budget(18, 64))]
    [[0, 1], [2, 3, 4]]
    """
    pos = 0
    while pos < len(lengths):
        size = batch_rows(lengths[pos], budget.batch_tokens, max_batch_rows)
        yield range(pos, min(pos + size, len(lengths)))
        pos += size


def reusable_prefix(cached: Sequence[int], wanted: Sequence[int], block: int = 1) -> int:
    """How many of the tokens a KV cache holds (``cached``) can be kept for ``wanted``: their common prefix, cut to
    whole blocks of ``block`` tokens (a backend whose numbers depend on how tokens are cut into calls keeps only
    blocks computed exactly as it would compute them afresh).

    >>> reusable_prefix([1, 2, 3, 4, 5], [1, 2, 3, 4, 9], 2), reusable_prefix([1, 2, 3], [1, 2, 3, 4], 1)
    (4, 3)
    """
    same = common_prefix_length([cached, wanted])
    return same - same % block
