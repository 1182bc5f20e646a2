"""The one scoring run: rows in, values out, chunk by chunk, resumable and sharded, whatever the caller.

A :class:`ScoringRun` holds the rules every path from rows to scores follows (``styleeval score`` / ``autorate``'s
:class:`~styleeval.files.runner.FileRun`, :func:`~styleeval.scoring.score.score_dataset` behind ``metaeval`` and
``evaluate``, the Space's batch):

- **groups**: the caller hands rows in groups that a chunk never splits (a source's rows: one prompt, one tree; a
  row alone where nothing is shared);
- **shard** (``K/N``): group ``j`` of the run goes to shard ``j mod N`` (a row alone is group ``j`` when it is row
  ``j``), so N jobs share the work with no coordinator;
- **resume**: the rows the :class:`Sink` already holds are skipped (a group keeps the rest);
- **chunks** (:class:`ChunkPlan`, :func:`timed_chunks`): about ``seconds`` of work each, at least ``floor`` rows
  (full batches), at most ``cap``, sized as the work goes; no score depends on them;
- each chunk is scored through the :class:`Executor` (:data:`IN_PROCESS`: here, one chunk after the other;
  :class:`ThreadPool`: several at once, handed back in order) and handed to the sink as soon as it is done, so a
  killed run loses at most the chunks in flight.

Sinks: :class:`MemorySink` (here), the scores cache's partial and shard files
(:class:`~styleeval.scoring.cache.CacheSink`), a record file (:class:`~styleeval.files.runner.FileRun`).

>>> sink = MemorySink()
>>> run = ScoringRun(lambda rows: [10 * r for r in rows], sink, ChunkPlan(seconds=3600, cap=4, floor=1, first=2))
>>> run.run([[0, 1], [2, 3], [4, 5, 6]])  # rows scored
7
>>> [sorted(c) for c in sink.chunks]  # a group is never split: the last chunk passes the cap by less than a group
[[0, 1], [2, 3, 4, 5, 6]]
>>> from types import SimpleNamespace
>>> again = ScoringRun(lambda rows: [10 * r for r in rows], sink, shard=SimpleNamespace(index=1, count=2))
>>> again.run([[0, 1], [2, 3], [4, 5, 6], [7]])  # groups 1 and 3 are shard 1/2's; rows 2, 3 are held: row 7 alone
1
>>> sink.values[7]
70
"""

from __future__ import annotations

import contextvars
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Generic, Protocol, TypeVar

R = TypeVar("R")
V = TypeVar("V")
T = TypeVar("T")

FULL_CHUNK_ROWS = 32
"""Fewest rows in a chunk of ``score``, ``autorate`` and the meta-evaluation's LLM metrics (unless the caller's cap
is lower): an LLM backend batches a chunk's rows together, and smaller chunks leave its batches part-empty, which
makes each row slower, which made the next chunk smaller still (measured on SmolLM2-135M, a loaded machine: chunks
of 2 rows after the first; docs/benchmarks.md, "Chunks")."""


def timed_chunks(items: Iterable[Any], seconds: float, cap: int, first: int = 8, floor: int = 1,
                 weight: Callable[[Any], int] | None = None) -> Iterator[list[Any]]:
    """Consecutive chunks of ``items`` (any iterable, read as the chunks are asked for): the first of ``first``
    rows, then each sized to about ``seconds`` of the caller's work on the previous one (timed between yields), never
    fewer than ``floor`` rows (but the last chunk) nor more than ``cap`` (``cap`` wins over ``floor``). An item counts
    as ``weight(item)`` rows (default 1; a source's run of rows counts its rows, and a chunk ends with the item that
    brings it to its size: it may pass the size by less than one item). Used wherever finished rows are
    saved as they come (``score``, ``autorate``, the meta-evaluation's LLM metrics). Scores never depend on it.

    >>> [len(c) for c in timed_chunks(range(10), seconds=3600, cap=4, first=2)]
    [2, 4, 4]
    >>> [[len(run) for run in c] for c in timed_chunks([[1, 2], [3, 4], [5]], seconds=3600, cap=3, weight=len)]
    [[2, 2], [1]]
    """
    count = weight or (lambda _: 1)
    it = iter(items)
    size = max(1, min(cap, max(first, floor)))
    while True:
        chunk, rows = [], 0
        for item in it:  # up to the first item that brings the chunk to ``size`` rows: a run is never split
            chunk.append(item)
            rows += count(item)
            if rows >= size:
                break
        if not chunk:
            return
        start = time.perf_counter()
        yield chunk
        rate = rows / max(time.perf_counter() - start, 1e-6)
        size = max(1, min(cap, max(floor, int(rate * seconds))))


@dataclass(frozen=True)
class ChunkPlan:
    """How a run cuts its rows into chunks (:func:`timed_chunks`): the first of ``first`` rows, then about
    ``seconds`` of work each, at least ``floor`` rows (but the last), at most ``cap`` (which wins over ``floor``); a
    group of rows counts its rows and is never split."""

    seconds: float = 5.0
    cap: int = 256
    floor: int = FULL_CHUNK_ROWS
    first: int = FULL_CHUNK_ROWS

    def chunks(self, groups: Iterable[Sequence[T]]) -> Iterator[list[T]]:
        """The rows of ``groups`` in chunks, each flattened (read as the chunks are asked for; timed between them)."""
        for chunk in timed_chunks(groups, self.seconds, self.cap, first=self.first, floor=self.floor, weight=len):
            yield [row for group in chunk for row in group]


class Sink(Protocol[R, V]):
    """Where a run's finished chunks go, and what it already holds (the resume point)."""

    def holds(self, row: R) -> bool:
        """Whether ``row`` is finished already (written by this run or an earlier one): a run skips it."""
        ...

    def write(self, rows: list[R], values: Sequence[V]) -> None:
        """Keep the values of a finished chunk (``values[i]`` is ``rows[i]``'s), before the next chunk is scored."""
        ...


class Executor(Protocol):
    """Where chunks are scored: :meth:`map` hands back each chunk with its values, in the chunks' order, as they are
    done (a chunk is asked for only when the one before is handed back, so that chunks are sized by the time the
    work takes)."""

    def map(self, score: Callable[[list[R]], Sequence[V]],
            chunks: Iterable[list[R]]) -> Iterator[tuple[list[R], Sequence[V]]]:
        """``(chunk, score(chunk))`` for each chunk, in order."""
        ...


class InProcess:
    """The executor that scores each chunk here, in the calling thread, one after the other."""

    def map(self, score: Callable[[list[R]], Sequence[V]],
            chunks: Iterable[list[R]]) -> Iterator[tuple[list[R], Sequence[V]]]:
        for rows in chunks:
            yield rows, score(rows)


IN_PROCESS = InProcess()
"""The default executor: :class:`InProcess`."""


class ThreadPool:
    """The executor that scores up to ``workers`` chunks at once in a pool of threads (for a backend that waits on
    something else: a server, a GPU), handing them back in the chunks' order, each as soon as it and every chunk
    before it are done; a chunk that fails stops the run once the chunks before it are handed back (those are kept),
    and the chunks in flight after it are waited for and dropped. Each chunk runs in a copy of the calling thread's
    context (its :mod:`contextvars`: how rows are named in warnings and errors). Scores never depend on it (rule 1:
    nothing shared is mutated while scoring). Chunks are asked for ahead of the work, so the chunk rule sees no time pass between
    them: after the first chunk, each holds the plan's ``cap`` rows.

    >>> sink = MemorySink()
    >>> ScoringRun(lambda rows: [r * r for r in rows], sink, ChunkPlan(cap=2, floor=1, first=1),
    ...            executor=ThreadPool(3)).run([[0], [1], [2], [3], [4]])
    5
    >>> sink.chunks, sink.values[4]
    ([[0], [1, 2], [3, 4]], 16)
    """

    def __init__(self, workers: int) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"ThreadPool needs at least 1 worker, got {workers!r}")
        self.workers = workers

    def map(self, score: Callable[[list[R]], Sequence[V]],
            chunks: Iterable[list[R]]) -> Iterator[tuple[list[R], Sequence[V]]]:
        it = iter(chunks)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="styleeval-scoring") as pool:

            def submit(rows: list[R]) -> tuple[list[R], Future]:  # in the caller's context (its rows' names...)
                return rows, pool.submit(contextvars.copy_context().run, score, rows)

            flying = deque(submit(rows) for rows in islice(it, self.workers))
            while flying:
                rows, done = flying.popleft()
                values = done.result()  # a failed chunk raises here, after the chunks before it were handed back
                flying.extend(submit(more) for more in islice(it, 1))
                yield rows, values


@dataclass
class MemorySink(Generic[R, V]):
    """A sink in memory: ``values`` (row key -> value; ``key``: a row's key, default the row itself), pre-filled
    with what is already known, and ``chunks``: the keys of each chunk written, in order."""

    values: dict[Hashable, V] = field(default_factory=dict)
    key: Callable[[R], Hashable] = lambda row: row
    chunks: list[list[Hashable]] = field(default_factory=list)

    def holds(self, row: R) -> bool:
        return self.key(row) in self.values

    def write(self, rows: list[R], values: Sequence[V]) -> None:
        keys = [self.key(row) for row in rows]
        self.values.update(zip(keys, values, strict=True))
        self.chunks.append(keys)


class Portion(Protocol):
    """A shard of a run (:class:`~styleeval.files.shards.Shard`): ``index`` of ``count``."""

    index: int
    count: int


@dataclass
class ScoringRun(Generic[R, V]):
    """One run of ``score`` (a chunk of rows -> one value per row, in order) over rows into ``sink``: through
    ``executor``, in chunks of ``plan``, the rows of ``shard`` only (see the module docstring for the rules).

    :meth:`run` is the whole of it; :meth:`select`, :meth:`pending` and :meth:`score_chunks` are its steps, for a
    caller that counts the rows left before the work starts (a progress bar) or selects its rows itself."""

    score: Callable[[list[R]], Sequence[V]]
    sink: Sink[R, V]
    plan: ChunkPlan = field(default_factory=ChunkPlan)
    executor: Executor = IN_PROCESS
    shard: Portion | None = None
    number: Callable[[Sequence[R]], int] | None = None
    """A group's number ``j`` for the shard rule (default: its place among the groups; a run that starts reading
    its input part-way, from a resume point, numbers its groups by their rows)."""

    def select(self, groups: Iterable[Sequence[R]]) -> Iterator[Sequence[R]]:
        """The groups of :attr:`shard`: group ``j`` is shard ``j mod N``'s (every group without a shard)."""
        for j, group in enumerate(groups):
            if self.shard is None or (j if self.number is None else self.number(group)) % self.shard.count \
                    == self.shard.index:
                yield group

    def pending(self, groups: Iterable[Sequence[R]]) -> Iterator[list[R]]:
        """Each group without the rows the sink holds (a group left empty is dropped)."""
        for group in groups:
            left = [row for row in group if not self.sink.holds(row)]
            if left:
                yield left

    def score_chunks(self, groups: Iterable[Sequence[R]], progress: Callable[[int], Any] | None = None) -> int:
        """Score every row of ``groups`` (selected and pending: nothing is skipped here) in chunks, each handed to
        the sink as it is done, then to ``progress`` (its number of rows); the number of rows scored."""
        scored = 0
        for rows, values in self.executor.map(self.score, self.plan.chunks(groups)):
            self.sink.write(rows, values)
            scored += len(rows)
            if progress is not None:
                progress(len(rows))
        return scored

    def run(self, groups: Iterable[Sequence[R]], progress: Callable[[int], Any] | None = None) -> int:
        """The rows of ``groups`` in the shard and not in the sink, scored chunk by chunk into the sink; the number
        of rows scored."""
        return self.score_chunks(self.pending(self.select(groups)), progress)
