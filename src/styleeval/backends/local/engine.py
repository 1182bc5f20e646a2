"""The scoring engine: per-token log-probabilities of many (prompt, continuation) pairs under a causal LM.

One batching path for every log-likelihood the project computes (lm-evaluation-harness style). What is shared and
how rows are batched is planned by :mod:`~styleeval.backends.planner` (torch-free: the prefixes, groups, token
trees, batches and their order); this module executes the plan (tensors, KV caches, the decoder, the LM head):

1. the longest token prefix shared by all prompts (the chat template's system turn) is run once and its KV
   cache is reused by every row (a fresh ``DynamicCache`` per batch, expanded to the batch size), and kept for the
   next call with the same prefix while the weights are unchanged (another prefix is run afresh: a score never
   depends on the calls before it);
2. rows are sorted by length (longest first) and packed into batches under a token budget; the suffixes are
   right-padded and get explicit position ids ``P + arange(L)``; which keys a token attends to is the invariant
   attention's layout (:mod:`~styleeval.backends.local.invariant`: a plain row's own tokens causally, after the
   cached prefix; a token tree's node, the prompt and its own ancestors), so no real token ever attends to padding;
3. only the hidden states that predict a continuation token go through the LM head, in float32 (float64 for float64
   weights: a reference computation), gathered across
   batches into blocks of ``head_rows`` (few large GEMMs over the largest weight of the model), and each
   log-probability is ``logit[target] - logsumexp(logits)``;
4. results stay on the device until the call ends, are copied to the host once, and are restored to input order.
   On CUDA out-of-memory the batch is split in half and the token budget halved for the rest of the call (the next
   call starts from the configured budget). Torch's threads are capped at the CPUs the process may use (affinity,
   cgroup quota; :func:`guard_threads`).

With ``pack_prompts=True`` (LogProb's default) :meth:`ScoringEngine.token_logprobs` runs every distinct prompt once:
the continuations that follow one prompt (a source's several rewrites, in meta-evaluation data) are packed after it
as branches of a token tree (:class:`TokenTree`: each branch sees only the prompt and itself, positions follow the
depth), and trees of different prompts share batches.

With ``share_prompts=True`` rows are first grouped by a longer shared prompt prefix (sorted by prompt; a run of
rows forms a group when its common prefix reaches ``min_shared`` tokens past the global one), each group's
prefix is run once on top of the global cache, and batches are packed within groups.

**A row's numbers are the same bits whatever the batch** (rule 1, float32 and bfloat16 alike): its batch-mates, their
number and order, ``batch_tokens`` / ``max_batch_rows``, chunking, the cached prefix's length, prompt packing or
grouping. Two things make it so (measured operation by operation in tests/backends/local/test_invariance.py):
attention is :mod:`~styleeval.backends.local.invariant`'s, every query on its own keys in logical order with
fixed-shape reductions (torch's SDPA summed over the batch's padded or packed key length); and every matmul has at
least :data:`~styleeval.backends.local.invariant.MIN_ROWS` token rows (a pass and an LM-head block are padded to it:
a float32 GEMM of 1-3 rows takes another kernel). What the bits still depend on is signed (``build:``,
:func:`build_tag`): torch's version, the CPU's instruction set (or the GPU), torch's thread count. Outside the
guarantee: float64 weights (a reference computation: a float64 GEMM's rows past a multiple of 4 take another
micro-kernel), a GPU (measured and tested on CPUs only), and rows past a long-context rope's threshold
(``longrope``/``dynamic`` scaling picks its factor from the batch's longest position). The attention holds each
row's scores (heads x queries x keys floats) at once: a row of 8k tokens on a 9-head model takes ~2.4 GB per layer.

Calls may run in any number of threads: a call keeps its own state (its rows, batches, budget, KV caches, head
queue) and never changes the model or the engine; what an engine keeps between calls is immutable and keyed by what
it was computed from (the last global prefix's KV cache: its tokens and :func:`_storage_key` of every weight; the
float32 head copy: the head's storage key), replaced whole, so a call sees one complete entry or computes its own.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from styleeval.backends import planner
from styleeval.backends.base import TokenTree
from styleeval.backends.local import invariant
from styleeval.backends.planner import Budget
from styleeval.errors import UserError
from styleeval.progress import bar as progress_bar


@dataclass(frozen=True)
class _Item:
    index: int  # position in the caller's list
    prompt: tuple[int, ...]  # the prompt's token ids
    tail: list[int]  # continuation[:-1], or a tree's node tokens: fed after the prompt
    targets: torch.Tensor  # (positions, K) token ids scored from the last prompt position on (tree: per read)
    parents: list[int] | None = None  # tree: each node's parent (-1: the prompt's last token); None: no tree
    reads: list[int] | None = None  # tree: the position each target row is read after (-1: prompt end; j: node j)


@dataclass(frozen=True)
class _Row:
    index: int  # position in the caller's list
    suffix: list[int]  # prompt[P:] + continuation[:-1]: the tokens fed after the shared prefix
    start: int  # index in ``suffix`` of the hidden state that predicts the first scored position
    targets: torch.Tensor  # (positions, K) token ids scored at each position: the continuation (K=1) or candidates
    parents: list[int] | None = None
    reads: list[int] | None = None


_EMPTY = torch.empty(0, dtype=torch.float32)
# default LM-head block: below ~750 rows the (hidden x vocab) GEMM ran at 53-79% of the square-matmul peak on this
# project's 2-core CPU (128k vocabulary), at 750-1024 rows at 93-98% (docs/benchmarks.md)
MIN_HEAD_ROWS = 1024


def _cache_keyword(decoder: torch.nn.Module) -> str:
    """The name under which ``decoder`` takes and returns its KV cache: ``cache`` from transformers 5.24 on (which
    deprecates the old name, warning once), ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(decoder.forward).parameters else "past_key_values"


def _storage_key(tensor: torch.Tensor) -> tuple[int, int]:
    """Where ``tensor``'s data lives and how often it was modified in place: changes on ``.to()``,
    ``load_state_dict``, an optimizer step (what a cache computed from the tensor must be dropped on)."""
    return tensor.data_ptr(), tensor._version


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup CPU quota (containers, CI runners)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        quota, period = open("/sys/fs/cgroup/cpu.max").read().split()[:2]
        if quota != "max":
            n = min(n, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def guard_threads() -> None:
    """Keep torch's intra-op threads within :func:`available_cpus` (more threads than cores makes matmuls on a
    shared CPU several times slower); an explicit ``OMP_NUM_THREADS`` / ``torch.set_num_threads`` below it stays."""
    if os.environ.get("OMP_NUM_THREADS"):
        return
    cpus = available_cpus()
    if torch.get_num_threads() > cpus:
        torch.set_num_threads(cpus)


def build_tag(device: torch.device) -> str:
    """What a score's bits depend on beyond the weights, the dtype and the inputs: torch's version, the kernels'
    instruction set (CPU) or the GPU and CUDA version, and torch's thread count (a GEMM's split and a reduction's
    order follow it): ``torch2.13.0+cpu-avx2-t2``. The signature carries it (``build:``), so a resume or a cache never
    mixes bits of two builds; within one build a row's scores are the same bits in any batch (module docstring)."""
    if device.type == "cuda":
        where = f"cuda{torch.version.cuda}-{torch.cuda.get_device_name(device).replace(' ', '_')}"
    else:
        where = torch.backends.cpu.get_cpu_capability().lower()
    return f"torch{torch.__version__}-{where}-t{torch.get_num_threads()}"


class ScoringEngine:
    """Computes per-token log-probabilities of continuations given prompts with a Hugging Face causal LM.

    Args:
        model: a ``*ForCausalLM`` model (its decoder backbone and output embeddings are used directly).
        batch_tokens: token budget of one batch (rows x padded suffix length).
        max_batch_rows: upper bound on rows per batch (``None``: only the token budget limits).
        head_rows: scored positions per LM-head GEMM, gathered across batches (``None``: the larger of
            ``batch_tokens`` and 1024). The head's logits take ``head_rows x vocab`` floats.
        reuse_prefix: run the prefix shared by all prompts once and reuse its KV cache.
        share_prompts: also group rows whose prompts share a longer prefix (e.g. the autorater's instructions
            per target style, or one prompt with several continuations) and run each group's prefix once;
            batches are then formed within a group.
        min_shared: tokens past the global prefix that a group must share to be worth its own prefix pass.
        head_dtype: ``None`` (default): logits and log-softmax in float32. ``torch.bfloat16`` or ``torch.float16``:
            the logits and the softmax are computed and rounded in that precision, and the log is taken of the
            rounded probability (what the authors' LogProb script did; needed only to match their numbers).
        pack_prompts: run every distinct prompt once, its continuations packed after it as a token tree.
        progress: show a progress bar over rows.
    """

    def __init__(
        self,
        model,
        batch_tokens: int = 1024,
        max_batch_rows: int | None = None,
        head_rows: int | None = None,
        reuse_prefix: bool = True,
        share_prompts: bool = False,
        min_shared: int = 16,
        head_dtype: torch.dtype | None = None,
        pack_prompts: bool = False,
        progress: bool = False,
    ) -> None:
        if batch_tokens < 1:
            raise UserError(f"batch_tokens must be positive, got {batch_tokens}")
        guard_threads()
        if max_batch_rows is not None and max_batch_rows < 1:
            raise UserError(f"max_batch_rows must be positive, got {max_batch_rows}")
        self.model = model
        invariant.install(model)  # once, here: a scoring pass never changes the model
        self._heads = invariant.attention_heads(model.config)
        self.decoder = model.get_decoder()
        self._cache_name = _cache_keyword(self.decoder)
        self.batch_tokens = int(batch_tokens)
        self.max_batch_rows = max_batch_rows
        if head_rows is not None and head_rows < 1:
            raise UserError(f"head_rows must be positive, got {head_rows}")
        self.head_rows = int(head_rows) if head_rows is not None else max(self.batch_tokens, MIN_HEAD_ROWS)
        self.reuse_prefix = reuse_prefix
        self.share_prompts = share_prompts and reuse_prefix
        self.min_shared = int(min_shared)
        if head_dtype not in (None, torch.float32, torch.bfloat16, torch.float16):
            raise UserError(f"head_dtype must be None, float32, bfloat16 or float16, got {head_dtype}")
        self.head_dtype = None if head_dtype == torch.float32 else head_dtype
        self.pack_prompts = pack_prompts
        self.progress = progress
        self._head_weight: tuple[tuple[int, int], torch.Tensor] | None = None  # (weights key, float32 head)
        self._no_out_dtype = False
        # the last global prefix's KV cache, kept across calls: ((its tokens, the weights' storage keys), cache)
        self._prefix_memo: tuple[tuple[tuple[int, ...], tuple], list[tuple[torch.Tensor, torch.Tensor]]] | None = None

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def build(self) -> str:
        """:func:`build_tag` of this engine's device, now."""
        return build_tag(self.device)

    # -- public -------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def token_logprobs(
        self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> list[torch.Tensor]:
        """Log-probability of every continuation token given its prompt and the preceding continuation tokens.

        Returns one float32 CPU tensor per pair (float64 for float64 weights), in input order, of length
        ``len(continuation)``.
        Every prompt must have at least one token; an empty continuation gives an empty tensor.
        """
        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        for i, p in enumerate(prompts):
            if len(p) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
        if self.pack_prompts:
            return self._packed_token_logprobs(prompts, continuations)
        results: list[torch.Tensor | None] = [None] * len(prompts)
        items = []
        for i, cont in enumerate(continuations):
            if len(cont) == 0:
                results[i] = _EMPTY
            else:
                items.append(_Item(i, tuple(prompts[i]), list(cont[:-1]),
                                   torch.tensor(list(cont), dtype=torch.long)[:, None]))
        for index, logprobs in self._run(items):
            results[index] = logprobs[:, 0]
        return results  # type: ignore[return-value]

    def _packed_token_logprobs(
        self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> list[torch.Tensor]:
        """:meth:`token_logprobs` with one token tree per distinct prompt (:func:`planner.pack_continuations`): its
        continuations are branches, chains of nodes hanging off the prompt's last token."""
        packed = planner.pack_continuations(prompts, continuations)
        items = [_Item(k, tree.prompt, tree.tokens, torch.tensor(tree.targets, dtype=torch.long)[:, None],
                       tree.parents, tree.reads) for k, tree in enumerate(packed)]
        results = [_EMPTY] * len(prompts)
        for k, logprobs in self._run(items):
            members = packed[k].members
            pieces = logprobs[:, 0].split([len(continuations[i]) for i in members])
            for i, piece in zip(members, pieces, strict=True):
                results[i] = piece
        return results

    @torch.inference_mode()
    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           share_prompts: bool | None = None) -> torch.Tensor:
        """Log-probability of each candidate token as the next token after each prompt (``share_prompts``: this
        call's grouping by longer shared prefixes; ``None``: the engine's default).

        The same batching, prefix sharing and float32 head as :meth:`token_logprobs`; the log-softmax is over the
        whole vocabulary (renormalise over the candidates if needed). Returns a float32 CPU tensor of shape
        ``(len(prompts), len(candidates))`` in input order. Used by the autorater's expected mode.
        """
        candidates = [int(c) for c in candidates]
        if not candidates:
            raise ValueError("candidates must hold at least one token id")
        for i, p in enumerate(prompts):
            if len(p) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
        out = torch.empty((len(prompts), len(candidates)), dtype=self._head_float())
        if not prompts:
            return out
        cand = torch.tensor(candidates, dtype=torch.long)[None, :]
        for index, logprobs in self._run([_Item(i, tuple(p), [], cand) for i, p in enumerate(prompts)],
                                         share_prompts):
            out[index] = logprobs[0]
        return out

    @torch.inference_mode()
    def tree_logprobs(self, trees: Sequence[TokenTree],
                      share_prompts: bool | None = None) -> list[list[torch.Tensor]]:
        """Next-token log-probabilities of candidate tokens at several points of a token tree after each prompt.

        Each :class:`TokenTree` is packed into one sequence (its prompt, then its nodes in order) whose attention
        layout lets a node see only the prompt and its own ancestors (:func:`invariant.tree_sequences`), with
        position ids that follow the tree's depth, so every branch is scored exactly as if it were the only continuation -- in one forward pass,
        with the prompt computed once. Returns, per tree, one float32 tensor per read (its candidates' log-probs).
        """
        items = []
        for i, tree in enumerate(trees):
            if len(tree.prompt) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
            parents = [int(p) for _, p in tree.nodes]
            j = planner.first_bad_parent(parents)
            if j is not None:
                raise ValueError(f"tree {i}: node {j} has parent {parents[j]}; parents must come first")
            widths = {len(c) for _, c in tree.reads}
            if len(widths) == 1:  # every read has as many candidates: one tensor call
                targets = torch.tensor([list(c) for _, c in tree.reads], dtype=torch.long)
            else:
                targets = torch.zeros((len(tree.reads), max(widths, default=1)), dtype=torch.long)
                for r, (_, cands) in enumerate(tree.reads):
                    targets[r, : len(cands)] = torch.tensor(list(cands), dtype=torch.long)
            items.append(_Item(i, tuple(tree.prompt), [t for t, _ in tree.nodes], targets, parents,
                               [int(p) for p, _ in tree.reads]))
        out: list[list[torch.Tensor]] = [[] for _ in trees]
        for index, logprobs in self._run(items, share_prompts):
            reads = trees[index].reads
            out[index] = [logprobs[r, : len(cands)] for r, (_, cands) in enumerate(reads)]
        return out

    # -- internals ----------------------------------------------------------------------------------------
    def _groups(self, items: list[_Item], global_len: int, share: bool) -> list[tuple[int, list[_Item]]]:
        """``[(prefix length, items)]``: one group for all items, or (``share``) :func:`planner.prefix_groups`."""
        if not share:
            return [(global_len, items)]
        return [(n, [items[k] for k in group])
                for n, group in planner.prefix_groups([it.prompt for it in items], global_len, self.min_shared)]

    def _run(self, items: list[_Item], share_prompts: bool | None = None):
        """Score ``items`` in budget-packed batches, longest first within each prompt group; yields
        ``(item.index, (positions, K) tensor)`` (K: the most candidates any item reads, padded with token 0).

        The decoder runs batch by batch; the hidden states that predict a scored token are gathered across batches
        and go through the LM head in blocks of :attr:`head_rows` rows (the head's weight is the largest matrix of
        the model: few large GEMMs instead of one small one per batch). The plan (which prefixes run once, the groups,
        the batches) is :mod:`~styleeval.backends.planner`'s; everything the call changes is its own
        (:class:`~styleeval.backends.planner.Budget`, the caches of its groups, its :class:`_HeadQueue`)."""
        if not items:
            return
        global_len = planner.shared_prefix_length([it.prompt for it in items]) if self.reuse_prefix else 0
        width = max(it.targets.shape[1] for it in items)
        budget = Budget(self.batch_tokens, self.head_rows)
        bar = progress_bar(total=len(items), desc="scoring", unit="seq", progress=self.progress)
        order: list[tuple[int, int]] = []  # (item index, scored positions), in the order of the head's rows
        head = _HeadQueue(self, width, budget)  # results stay on the device: one copy to the host per call
        global_cache = self._run_prefix(list(items[0].prompt[:global_len])) if global_len > 0 else None
        try:
            share = self.share_prompts if share_prompts is None else share_prompts and self.reuse_prefix
            for prefix_len, group in self._groups(items, global_len, share):
                cache = global_cache
                if prefix_len > global_len:  # the group's own shared prompt, run once on top of the global one
                    cache = self._extend_prefix(global_cache, list(group[0].prompt[global_len:prefix_len]),
                                                global_len)
                rows = [_Row(it.index, list(it.prompt[prefix_len:]) + it.tail, len(it.prompt) - prefix_len - 1,
                             it.targets, it.parents, it.reads) for it in group]
                rows = [rows[k] for k in planner.longest_first([len(r.suffix) for r in rows])]
                for span in planner.batches([len(r.suffix) for r in rows], budget, self.max_batch_rows):
                    batch = rows[span.start : span.stop]
                    for done, hidden, targets in self._score_batch_safely(batch, prefix_len, cache, budget):
                        order += [(row.index, len(row.targets)) for row in done]
                        head.add(hidden, targets)
                    bar.update(len(batch))
            logprobs = head.finish()
        finally:
            bar.close()
        host = logprobs.cpu()
        offset = 0
        for index, count in order:
            yield index, host[offset : offset + count]
            offset += count

    def _extend_prefix(self, cache, tokens: list[int], start: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The KV cache of ``cache``'s tokens followed by ``tokens`` (positions from ``start``)."""
        from transformers import DynamicCache  # noqa: PLC0415 - heavy (transformers)

        width = max(len(tokens), invariant.MIN_ROWS)  # padded after the tokens, which never see the padding
        ids = torch.zeros((1, width), dtype=torch.long)
        ids[0, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        positions = torch.arange(start, start + width, device=self.device)
        shape = invariant.Pass(width, start + width, start, *self._heads, self.device, self._head_float())
        kwargs = {invariant.KEYWORD: invariant.build_layout([invariant.plain_sequences(start, len(tokens))], shape)}
        # every key kept (a config's sliding-window cache would drop the oldest: the layout counts them all)
        kwargs[self._cache_name] = DynamicCache(list(cache)) if cache is not None else DynamicCache()
        end = start + len(tokens)
        # the padding repeats the last position: never past the model's positions or a long-context rope's threshold
        out = self.decoder(input_ids=ids.to(self.device), position_ids=positions.clamp(max=end - 1)[None],
                           cache_position=positions, use_cache=True, **kwargs)
        return [(layer.keys[:, :, :end], layer.values[:, :, :end]) for layer in out[self._cache_name].layers]

    def _run_prefix(self, prefix: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The KV cache of ``prefix``, run in one pass, or the previous call's when it was the same prefix under the
        same weights. A different prefix is run afresh, never sliced from or extended onto the kept one: float
        sums over another length round differently, and a score must not depend on which call came before."""
        key = (tuple(prefix), self._weights_key())
        kept = self._prefix_memo  # read once: another call may replace it (whole) meanwhile
        if kept is not None and kept[0] == key:
            return kept[1]
        cache = self._extend_prefix(None, prefix, 0)
        self._prefix_memo = (key, cache)
        return cache

    def _weights_key(self) -> tuple:
        """:func:`_storage_key` of every parameter and buffer: a kept prefix cache is used only while it is unchanged."""
        return tuple(_storage_key(t) for t in (*self.model.parameters(), *self.model.buffers()))

    def _score_batch_safely(self, batch: list[_Row], prefix_len: int, prefix_cache, budget: Budget):
        """``[(rows, hidden, targets)]``: :meth:`_score_batch` of ``batch``, or of its halves after an out-of-memory
        error (the call's token budget is then halved for the rest of the call)."""
        try:
            return [self._score_batch(batch, prefix_len, prefix_cache)]
        except torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            budget.batch_tokens = max(1, budget.batch_tokens // 2)
            warnings.warn(
                f"out of memory on a batch of {len(batch)} rows; halving it for the rest of this call "
                f"(batch_tokens={budget.batch_tokens})",
                stacklevel=2,
            )
            half = len(batch) // 2
            return (self._score_batch_safely(batch[:half], prefix_len, prefix_cache, budget)
                    + self._score_batch_safely(batch[half:], prefix_len, prefix_cache, budget))

    def _score_batch(self, batch: list[_Row], prefix_len: int, prefix_cache):
        """Run the decoder on ``batch``; returns ``(batch, hidden, targets)``: the hidden states that predict a scored
        token, all rows' in order, (N, H), and the token ids read at each, (N, K) (K padded with token 0)."""
        from transformers import DynamicCache  # noqa: PLC0415 - heavy (transformers)

        device = self.device
        n_rows = len(batch)
        longest = max(len(r.suffix) for r in batch)
        width = max(longest, -(-invariant.MIN_ROWS // n_rows))  # >= MIN_ROWS token rows
        ids = torch.zeros((n_rows, width), dtype=torch.long)
        for b, row in enumerate(batch):
            ids[b, : len(row.suffix)] = torch.tensor(row.suffix, dtype=torch.long)
        ids = ids.to(device)
        positions = torch.arange(prefix_len, prefix_len + width, device=device)
        position_ids = positions.unsqueeze(0).expand(n_rows, -1)
        kwargs = {}
        if any(r.parents is not None for r in batch):  # a node sees the prefix, the prompt and its own ancestors
            position_ids = self._tree_positions(batch, prefix_len, width).to(device)  # positions follow the depth
        position_ids = position_ids.clamp(max=prefix_len + longest - 1)  # padding: never past a real position
        kwargs[invariant.KEYWORD] = invariant.build_layout(
            [invariant.plain_sequences(prefix_len, len(r.suffix)) if r.parents is None
             else invariant.tree_sequences(prefix_len, r.start + 1, r.parents) for r in batch],
            invariant.Pass(width, prefix_len + width, prefix_len, *self._heads, device, self._head_float()))
        if prefix_cache is not None:
            # a fresh cache per batch: a forward pass extends the cache it is given in place
            kwargs[self._cache_name] = DynamicCache(  # no config: every key kept (no sliding-window layers)
                [(k.expand(n_rows, -1, -1, -1), v.expand(n_rows, -1, -1, -1)) for k, v in prefix_cache])
        hidden = self.decoder(
            input_ids=ids,
            position_ids=position_ids,
            cache_position=positions,
            use_cache=prefix_cache is not None,
            **kwargs,
        ).last_hidden_state

        counts = torch.tensor([len(r.targets) for r in batch], dtype=torch.long)
        row_idx = torch.repeat_interleave(torch.arange(n_rows), counts)
        pos_idx = self._read_positions(batch)
        k = max(r.targets.shape[1] for r in batch)  # trees may read different numbers of candidates: pad with 0
        targets = torch.cat([torch.nn.functional.pad(r.targets, (0, k - r.targets.shape[1])) for r in batch])
        targets = targets.to(device)
        return batch, hidden[row_idx.to(device), pos_idx.to(device)], targets

    @staticmethod
    def _tree_positions(batch: list[_Row], prefix_len: int, width: int) -> torch.Tensor:
        """Position ids (B, L): a node's is its prompt's end plus its depth (:func:`planner.tree_positions`), any
        other token's (and the padding's) its index after the prefix. Which keys each token sees is the invariant
        layout's (:func:`invariant.tree_sequences`): no attention mask is built."""
        position_ids = torch.arange(prefix_len, prefix_len + width).repeat(len(batch), 1)
        for b, row in enumerate(batch):  # one slice per row
            if row.parents:
                trunk = row.start + 1  # prompt tokens in the suffix
                nodes = planner.tree_positions(trunk, row.parents)
                position_ids[b, trunk : trunk + len(nodes)] = torch.tensor(nodes, dtype=torch.long) + prefix_len
        return position_ids

    @staticmethod
    def _read_positions(batch: list[_Row]) -> torch.Tensor:
        """The suffix index of every hidden state read, all rows' in order (:func:`planner.read_positions`)."""
        return torch.tensor([i for r in batch for i in planner.read_positions(r.start, len(r.targets), r.reads)],
                            dtype=torch.long)

    def _head_float(self) -> torch.dtype:
        """The dtype of the head's logits and log-softmax when no ``head_dtype`` rounds them: float64 for float64
        weights (a reference computation, whose every step keeps float64), else float32."""
        weight = self.model.get_output_embeddings().weight
        return torch.float64 if weight.dtype == torch.float64 else torch.float32

    def _head_logprobs(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """``log softmax(lm_head(hidden))[targets]`` in float32 (float64 for float64 weights), on the scored
        positions only.

        ``hidden`` is (N, H) and ``targets`` (N, K): K token ids read at each of the N positions. The rows are
        padded to a multiple of :data:`invariant.MIN_ROWS` (a GEMM of 1-3 rows rounds otherwise than a larger one; a
        float64 GEMM's rows past a multiple of 4 take another micro-kernel).
        """
        n = len(hidden)
        extra = -(-n // invariant.MIN_ROWS) * invariant.MIN_ROWS - n  # a whole number of 64-row tiles
        if extra:
            hidden = torch.cat([hidden, hidden.new_zeros(extra, hidden.shape[1])])
            targets = torch.cat([targets, targets.new_zeros(extra, targets.shape[1])])
        return self._head_block(hidden, targets)[:n]

    def _head_block(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """:meth:`_head_logprobs` of at least :data:`invariant.MIN_ROWS` rows."""
        head = self.model.get_output_embeddings()
        if self.head_dtype is not None:
            return self._rounded_head_logprobs(hidden, head, targets)
        logits = self._half_head_float_logits(hidden, head.weight)
        if logits is None:
            weight = head.weight
            key = _storage_key(weight)
            kept = self._head_weight  # read once: another call may replace it (whole) meanwhile
            wide = self._head_float()
            if kept is None or kept[0] != key:  # float32 copy of a half head, made once per head storage
                kept = self._head_weight = (key, weight if weight.dtype == wide else weight.to(wide))
            logits = torch.nn.functional.linear(hidden.to(wide), kept[1])
        bias = getattr(head, "bias", None)
        if bias is not None:
            logits = logits + bias.to(logits.dtype)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        picked = logits.gather(1, targets)
        # logsumexp in place on the (N, vocab) logits, which nothing else reads: one buffer instead of three
        top = logits.amax(dim=-1, keepdim=True)
        total = logits.sub_(top).exp_().sum(dim=-1, keepdim=True)
        return picked - (top + total.log())

    def _rounded_head_logprobs(self, hidden: torch.Tensor, head, targets: torch.Tensor) -> torch.Tensor:
        """``log(softmax(lm_head(hidden)))[targets]`` with logits and probabilities rounded to ``head_dtype``."""
        dtype = self.head_dtype
        weight = head.weight.to(dtype)
        logits = torch.nn.functional.linear(hidden.to(dtype), weight)
        bias = getattr(head, "bias", None)
        if bias is not None:
            logits = logits + bias.to(dtype)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        probs = torch.softmax(logits, dim=-1)  # rounded to ``dtype``, as in the authors' script
        return probs.gather(1, targets).float().log()

    def _half_head_float_logits(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor | None:
        """On CUDA, a bf16/fp16 head as one tensor-core GEMM with float32 accumulation and float32 output.

        The products of half-precision inputs are exact in float32, so this equals the float32 GEMM of the
        upcast inputs up to summation order, without a float32 copy of the head. ``None`` where unsupported.
        """
        if hidden.device.type != "cuda" or weight.dtype not in (torch.bfloat16, torch.float16) or self._no_out_dtype:
            return None
        try:
            return torch.mm(hidden.to(weight.dtype), weight.t(), out_dtype=torch.float32)
        except (RuntimeError, TypeError, NotImplementedError):
            self._no_out_dtype = True
            return None


class _HeadQueue:
    """Hidden states waiting for the LM head (with the token ids read at each): the head runs on blocks of
    ``budget.head_rows`` rows as they fill up and on the rest at :meth:`finish`; the log-probabilities stay on the
    device, in the order the rows arrived."""

    def __init__(self, engine: ScoringEngine, width: int, budget: Budget) -> None:
        self.engine, self.width, self.budget = engine, width, budget
        self.hidden: list[torch.Tensor] = []
        self.targets: list[torch.Tensor] = []
        self.waiting = 0
        self.done: list[torch.Tensor] = []

    def add(self, hidden: torch.Tensor, targets: torch.Tensor) -> None:
        if not len(hidden):
            return
        self.hidden.append(hidden)
        self.targets.append(torch.nn.functional.pad(targets, (0, self.width - targets.shape[1])))
        self.waiting += len(hidden)
        if self.waiting >= self.budget.head_rows:
            self._flush(everything=False)

    def finish(self) -> torch.Tensor:
        """All log-probabilities, (rows, width), in arrival order."""
        if self.waiting:
            self._flush(everything=True)
        if not self.done:
            return torch.empty((0, self.width), dtype=torch.float32)
        return torch.cat(self.done)

    def _flush(self, everything: bool) -> None:
        hidden, targets = torch.cat(self.hidden), torch.cat(self.targets)
        start = 0
        while start < len(hidden) and (everything or len(hidden) - start >= self.budget.head_rows):
            size = self.budget.head_rows
            try:
                self.done.append(self.engine._head_logprobs(hidden[start : start + size], targets[start : start + size]))
            except torch.OutOfMemoryError:
                if size == 1:
                    raise
                if hidden.device.type == "cuda":
                    torch.cuda.empty_cache()
                self.budget.head_rows = max(1, size // 2)
                warnings.warn(f"out of memory in the LM head on {size} rows; halving it for the rest of this call "
                              f"(head_rows={self.budget.head_rows})", stacklevel=3)
                continue
            start += size
        self.hidden, self.targets = ([hidden[start:]], [targets[start:]]) if start < len(hidden) else ([], [])
        self.waiting = len(hidden) - start
