"""The one scoring run (styleeval.run, issue 60): its chunk, resume and shard rules, on real LogProb numbers of the
tiny random model (never mocked), whatever its sink (memory, the scores cache's files) or its executor."""

from __future__ import annotations

import json
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from styleeval.logprob import LogProb
from styleeval.run import FULL_CHUNK_ROWS, ChunkPlan, MemorySink, ScoringRun, ThreadPool, timed_chunks
from styleeval.scoring.cache import CacheSink, ScoresCache

SOURCES = ["I need the report now.", "Send it.", "we r late again lol", "Stop calling me.", "This is fine."]


def _texts(n: int) -> tuple[list[str], list[str], list[str], list[list[int]]]:
    """``n`` rows (sources, rewrites, styles) and their groups: 1 to 3 rewrites a source, a source's rows adjacent."""
    sources, rewrites, groups, i = [], [], [], 0
    while len(sources) < n:
        group = []
        for k in range(min(1 + i % 3, n - len(sources))):
            group.append(len(sources))
            sources.append(SOURCES[i % len(SOURCES)] + f" ({i})")
            rewrites.append(f"Rewrite {k} of sentence {i}, kindly.")
        groups.append(group)
        i += 1
    return sources, rewrites, ["formal"] * n, groups


@pytest.fixture(scope="module")
def logprob(tiny_model_dir):
    return LogProb(str(tiny_model_dir), device="cpu", progress=False)


def _scorer(logprob, n: int, calls: list[int] | None = None):
    """The LogProb content of a chunk of row numbers (``calls``: the size of each chunk scored)."""
    sources, rewrites, styles, _ = _texts(n)

    def score(rows: list[int]) -> list[float]:
        if calls is not None:
            calls.append(len(rows))
        return logprob.score([sources[r] for r in rows], [rewrites[r] for r in rows],
                             [styles[r] for r in rows]).content
    return score


class Killed(Exception):
    """What a kill -9 after some chunks leaves: the chunks the sink got, nothing else."""


# -- the chunk rule ------------------------------------------------------------------------------------------------
def test_a_slow_machine_keeps_chunks_full():
    """The spiral of issue 45: a slow first chunk (a loaded machine) made the next chunks 2 rows, which were slower per
    row. Whatever the time per row, a chunk holds at least ``floor`` rows (the last excepted) and at most ``cap``."""
    sizes = []
    for chunk in timed_chunks(range(100), seconds=1e-9, cap=40, first=8, floor=32):
        time.sleep(0.001)  # far more than 1e-9 s of work per row: the time-based size is 0
        sizes.append(len(chunk))
    assert sizes == [32, 32, 32, 4]
    assert [len(c) for c in timed_chunks(range(10), seconds=1e-9, cap=3, floor=32)] == [3, 3, 3, 1]  # cap wins


def test_runs_of_a_source_are_counted_by_rows_and_never_split():
    runs = [list(range(n)) for n in (3, 1, 2, 5, 1, 1, 4)]
    chunks = list(timed_chunks(runs, seconds=1e-9, cap=100, first=4, floor=4, weight=len))
    assert [sum(map(len, c)) for c in chunks] == [4, 7, 6]  # a run that would pass the size starts a new chunk...
    assert [run for c in chunks for run in c] == runs  # ... unless the chunk is empty: no run is split or lost


@pytest.mark.parametrize("floor", [1, 7])
def test_the_floor_is_the_callers(floor):
    assert {len(c) for c in timed_chunks(range(7 * 5), seconds=1e-9, cap=64, first=floor, floor=floor)} == {floor}


def test_a_plan_cuts_groups_into_flat_chunks_by_the_chunk_rule():
    """ChunkPlan.chunks is timed_chunks over groups (a group counts its rows, is never split), each chunk flattened;
    the default plan's first chunk and floor are FULL_CHUNK_ROWS."""
    groups = [list(range(j * 10, j * 10 + n)) for j, n in enumerate((3, 1, 2, 5, 1, 1, 4))]
    chunks = list(ChunkPlan(seconds=1e-9, cap=100, floor=4, first=4).chunks(groups))
    assert chunks == [[0, 1, 2, 10], [20, 21, 30, 31, 32, 33, 34], [40, 50, 60, 61, 62, 63]]
    assert (ChunkPlan().first, ChunkPlan().floor, ChunkPlan().cap) == (FULL_CHUNK_ROWS, FULL_CHUNK_ROWS, 256)


# -- resume ----------------------------------------------------------------------------------------------------------
def test_a_run_killed_after_two_chunks_resumes_to_the_bytes_of_an_uninterrupted_one(logprob, tmp_path):
    """A run into the scores cache killed after its second chunk keeps those chunks in the partial file; the rerun
    scores only the rows it lacks, whole groups first to last, and the scores, the partial file's rows and the
    finished cache entry are bit for bit an uninterrupted run's."""
    n = 40
    _, _, _, groups = _texts(n)
    plan = ChunkPlan(seconds=1e-9, cap=8, floor=8, first=8)
    cache, whole = ScoresCache(tmp_path / "killed"), ScoresCache(tmp_path / "whole")

    score = _scorer(logprob, n)
    written: list[int] = []

    def dies_on_third(rows: list[int]) -> list[float]:
        if len(written) == 2:
            raise Killed
        written.append(len(rows))
        return score(rows)

    with pytest.raises(Killed):
        ScoringRun(dies_on_third, CacheSink(cache, "sig", "fp", n), plan).run(groups)
    partial = cache.partial_path("sig", "fp")
    kept = [json.loads(line)["rows"] for line in partial.read_text(encoding="utf-8").splitlines()]
    assert [len(rows) for rows in kept] == written and 16 <= sum(written) < n

    calls: list[int] = []
    resumed = CacheSink(cache, "sig", "fp", n)
    assert sorted(resumed.values) == sorted(r for rows in kept for r in rows)  # the resume point: what was written
    scored = ScoringRun(_scorer(logprob, n, calls), resumed, plan).run(groups)
    assert scored == sum(calls) == n - sum(written)  # only the rows the killed run had not written
    assert all(r in resumed.values for r in range(n))

    uninterrupted = CacheSink(whole, "sig", "fp", n)
    assert ScoringRun(score, uninterrupted, plan).run(groups) == n
    assert [resumed.values[r] for r in range(n)] == [uninterrupted.values[r] for r in range(n)]  # bit for bit
    assert CacheSink(cache, "sig", "fp", n).values == CacheSink(whole, "sig", "fp", n).values  # as read back
    cache.save("sig", "fp", [resumed.values[r] for r in range(n)], dataset="toy")
    whole.save("sig", "fp", [uninterrupted.values[r] for r in range(n)], dataset="toy")
    assert cache.path("sig", "fp").read_bytes() == whole.path("sig", "fp").read_bytes()


def test_a_group_half_held_is_finished_whole_and_nothing_held_is_scored(logprob):
    """Resume keeps a group together: the rows of a group that the sink lacks are one group of the rerun (one
    prompt, one tree); rows the sink holds are never scored again, and their values are kept as they were."""
    n = 12
    _, _, _, groups = _texts(n)  # [[0], [1, 2], [3, 4, 5], [6], ...]
    held = {1: -1.0, 4: -2.0, 6: -3.0}
    sink = MemorySink(dict(held))
    run = ScoringRun(_scorer(logprob, n), sink, ChunkPlan(seconds=1e-9, cap=2, floor=1, first=1))
    assert list(run.pending(groups[:4])) == [[0], [2], [3, 5]]
    calls: list[int] = []
    run.score = _scorer(logprob, n, calls)
    assert run.run(groups) == n - len(held)
    assert all(sink.values[r] == v for r, v in held.items())
    assert [k for chunk in sink.chunks for k in chunk] == [r for r in range(n) if r not in held]
    assert [3, 5] in sink.chunks and [9, 10, 11] in sink.chunks  # a group's rest in one chunk; the cap is 2, but
    # a group is never split


# -- shards ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [2, 3])
def test_shards_merge_to_the_unsharded_run(logprob, tmp_path, count):
    """N runs with shard K/N share the work: every group in exactly one shard (group j in shard j mod N), no group
    split; the shard files of the cache, merged, hold bit for bit the values of the run without shard."""
    n = 30
    _, _, _, groups = _texts(n)
    score = _scorer(logprob, n)
    whole = MemorySink()
    ScoringRun(score, whole).run(groups)
    cache = ScoresCache(tmp_path)
    for k in range(count):
        shard = SimpleNamespace(index=k, count=count)
        sink = CacheSink(cache, "sig", "fp", n, shard)
        run = ScoringRun(score, sink, ChunkPlan(seconds=1e-9, cap=4, floor=4, first=4), shard=shard)
        assert run.run(groups) == sum(len(g) for g in groups[k::count])
        assert sorted(sink.values) == sorted(r for g in groups[k::count] for r in g)
    merged, found, got = cache.load_shards("sig", "fp", n)
    assert (found, got) == ([f"{k}/{count}" for k in range(count)], count)
    assert merged == whole.values  # bit for bit


# -- executors -------------------------------------------------------------------------------------------------------
class OneWorker:
    """An executor of the test's own (the seam a thread pool or a distributed one plugs into): each chunk scored on
    a worker thread, handed back in order."""

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def map(self, score, chunks):
        def on_worker(rows):
            self.threads.add(threading.current_thread().name)
            return score(rows)

        with ThreadPoolExecutor(1, thread_name_prefix="scoring") as pool:
            for rows in chunks:
                yield rows, pool.submit(on_worker, rows).result()


def test_another_executor_gives_the_same_values_into_the_same_sink(logprob):
    n = 20
    _, _, _, groups = _texts(n)
    here, there = MemorySink(), MemorySink()
    plan = ChunkPlan(seconds=1e-9, cap=6, floor=6, first=6)
    ScoringRun(_scorer(logprob, n), here, plan).run(groups)
    executor = OneWorker()
    ScoringRun(_scorer(logprob, n), there, plan, executor=executor).run(groups)
    assert executor.threads and all(name.startswith("scoring") for name in executor.threads)
    assert there.values == here.values and there.chunks == here.chunks


def test_a_thread_pool_scores_chunks_at_once_into_the_values_and_order_of_one_thread(logprob):
    n = 24
    _, _, _, groups = _texts(n)
    plan = ChunkPlan(seconds=1e-9, cap=5, floor=5, first=5)  # chunks of the cap either way: the same cut
    here, there = MemorySink(), MemorySink()
    ScoringRun(_scorer(logprob, n), here, plan).run(groups)
    score, threads, at_once, lock = _scorer(logprob, n), set(), [0, 0], threading.Lock()

    def on_worker(rows):
        with lock:
            at_once[0] += 1
            at_once[1] = max(at_once)
        threads.add(threading.current_thread().name)
        time.sleep(0.05)  # the chunks overlap
        try:
            return score(rows)
        finally:
            with lock:
                at_once[0] -= 1

    assert ScoringRun(on_worker, there, plan, executor=ThreadPool(3)).run(groups) == n
    assert there.chunks == here.chunks and list(there.values) == [r for c in here.chunks for r in c]  # in order
    assert there.values == here.values  # bit for bit
    assert at_once[1] > 1 and all(name.startswith("styleeval-scoring") for name in threads)


def test_a_chunk_that_fails_in_a_pool_stops_the_run_with_every_chunk_before_it_kept(logprob):
    n = 24
    _, _, _, groups = _texts(n)
    plan = ChunkPlan(seconds=1e-9, cap=5, floor=5, first=5)
    whole = MemorySink()
    ScoringRun(_scorer(logprob, n), whole, plan).run(groups)
    score, sink = _scorer(logprob, n), MemorySink()

    def third_fails(rows):
        if rows == whole.chunks[2]:
            raise Killed("chunk 3")
        return score(rows)

    with pytest.raises(Killed, match="chunk 3"):
        ScoringRun(third_fails, sink, plan, executor=ThreadPool(2)).run(groups)
    assert sink.chunks == whole.chunks[:2]
    assert sink.values == {r: whole.values[r] for c in whole.chunks[:2] for r in c}


def test_a_pooled_chunk_names_its_rows_as_the_caller_does():
    """A warning about a chunk's row made on a worker thread names the caller's row, through the caller's own
    ``rows_named_by`` (a context variable, carried to the worker)."""
    from styleeval.errors import RowsWarning, rows_named_by

    def warns(rows):
        warnings.warn(RowsWarning("row {rows} is odd", [0]), stacklevel=1)
        return rows

    with rows_named_by(lambda i: i + 100), pytest.warns(RowsWarning) as caught:
        ScoringRun(warns, MemorySink(), ChunkPlan(cap=1, floor=1, first=1), executor=ThreadPool(2)).run([[0], [1]])
    assert [str(w.message) for w in caught] == ["row 100 is odd", "row 100 is odd"]


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_a_pool_needs_a_whole_number_of_workers(workers):
    with pytest.raises(ValueError, match="at least 1 worker"):
        ThreadPool(workers)
