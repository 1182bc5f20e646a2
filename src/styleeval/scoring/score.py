"""One metric's score of every row of a :class:`~styleeval.scoring.inputs.ScoringInputs`, served from or written
to a :class:`~styleeval.scoring.cache.ScoresCache`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from styleeval.errors import RowError, UserError, rows_named_by
from styleeval.files.shards import Shard
from styleeval.metrics import Metric
from styleeval.progress import bar as progress_bar
from styleeval.run import FULL_CHUNK_ROWS, ChunkPlan, MemorySink, ScoringRun
from styleeval.scoring.cache import CacheSink, ScoresCache
from styleeval.scoring.inputs import ScoringInputs
from styleeval.validation import empty_rewrites_told


def score_dataset(metric: Metric, data: ScoringInputs, cache: ScoresCache | None = None, progress: bool = False,
                  flush_seconds: float = 5.0, shard: Shard | None = None,
                  min_chunk_rows: int = FULL_CHUNK_ROWS) -> np.ndarray:
    """The metric's score of every row of ``data`` (NaN for rows a reference-based metric cannot score).

    Served from ``cache`` when it holds (signature, fingerprint); otherwise computed and written at once. Metrics
    marked ``incremental`` (the LLM metrics) are scored in chunks of about ``flush_seconds`` of work, at least
    ``min_chunk_rows`` rows (so that the backend's batches stay full however slow the machine is) and at most 256
    rows, never splitting a source's rows; each chunk is appended to the cache's partial file as it finishes, so a
    killed run loses at most the chunk in flight and the next run starts after the last saved row. Empty rewrites
    are not warned about here (rows in scoring order): the caller says it of its input, as the input names its rows.

    With ``shard`` (``K/N``, an incremental metric and a cache), only the shard's rows are scored, into the shard's
    own file, and NaN is returned for the rest: N jobs share the work with no coordinator (a source's rows stay in
    one shard: source run ``j`` of the data goes to shard ``j mod N``). A run without ``shard`` then takes the
    shards' rows; when shard files exist but miss rows, it raises :class:`ShardError` naming the missing shards
    instead of scoring them itself.

    A :class:`~styleeval.errors.RowError` or :class:`~styleeval.errors.RowsWarning` names the row by its position
    in ``data`` (whatever the chunk it was in); callers that reordered their rows into ``data`` map it back.
    """

    signature, fingerprint = metric.signature, data.fingerprint
    if shard is not None and (cache is None or cache.root is None or not getattr(metric, "incremental", False)):
        raise UserError(f"{metric.label}: only the LLM metrics are sharded, into a cache folder")
    if cache is not None:
        cached = cache.load(signature, fingerprint, len(data))
        if cached is not None:
            return np.asarray(cached, dtype=float)
    rows = np.flatnonzero(data.has_references) if metric.needs_references else np.arange(len(data))
    scores = np.full(len(data), np.nan)

    def compute(idx: Sequence[int]) -> list[float]:
        try:
            with empty_rewrites_told(), rows_named_by(lambda i: int(idx[i])):  # a warning names data's rows
                return metric.compute(
                    [data.sources[i] for i in idx],
                    [data.rewrites[i] for i in idx],
                    [data.references[i] for i in idx] if metric.needs_references else None,
                    [data.styles[i] for i in idx] if metric.needs_styles else None,
                )
        except RowError as err:  # a row of the chunk: named as a row of ``data`` (its position)
            if not 0 <= err.row < len(idx):
                raise
            raise err.at(int(idx[err.row])) from err

    if len(rows) and getattr(metric, "needs_ids", False):  # precomputed scores, looked up by row id
        scores[rows] = metric.score_ids([data.ids[i] for i in rows])
    elif len(rows) and getattr(metric, "incremental", False):
        runs = _source_runs(rows, data.source_ids)  # a source's rows stay in one chunk: one prompt, one tree
        sink = MemorySink() if cache is None else CacheSink(cache, signature, fingerprint, len(data), shard)
        run = ScoringRun(compute, sink, ChunkPlan(flush_seconds, cap=max(256, min_chunk_rows), floor=min_chunk_rows,
                                                  first=min_chunk_rows), shard=shard)  # source run j: shard j mod N
        picked = list(run.select(runs))
        if shard is not None:
            rows = np.concatenate(picked) if picked else np.empty(0, dtype=int)
        elif cache is not None:  # rows the shards of a sharded run have scored
            sink.values.update(_shards_complete(metric.label, cache, signature, fingerprint, len(data), runs))
        todo = list(run.pending(picked))
        with progress_bar(total=len(rows), initial=len(rows) - sum(map(len, todo)), unit="row", progress=progress,
                          desc=f"{metric.label} on {data.name}" + (f" (shard {shard})" if shard else "")) as bar:
            run.score_chunks(todo, bar.update)
        for i, v in sink.values.items():
            scores[i] = v
        if shard is not None:
            return scores  # the whole is put together by a run without shard
    elif len(rows):
        scores[rows] = compute(rows)
    if len(rows):
        scores[rows] = metric.finalize(scores[rows].tolist())
    if cache is not None:
        cache.save(signature, fingerprint, scores.tolist(), dataset=data.name)
    return scores


class ShardError(UserError):
    """Shard files of a sharded run miss rows (a shard not run, or not finished)."""


def _shards_complete(label: str, cache: ScoresCache, signature: str, fingerprint: str, n: int,
                     runs: list[np.ndarray]) -> dict[int, float]:
    """The rows of the shard files of (signature, dataset), when there are any; rows they miss raise
    :class:`ShardError` naming the shards to run."""
    merged, found, count = cache.load_shards(signature, fingerprint, n)
    if not found:
        return {}
    missing = sorted({j % count for j, run in enumerate(runs) if not all(int(i) in merged for i in run)})
    if missing:
        absent = [f"{k}/{count}" for k in missing if f"{k}/{count}" not in found]
        unfinished = [f"{k}/{count}" for k in missing if f"{k}/{count}" in found]
        what = "; ".join(part for part in (
            f"shard {', '.join(absent)} {'has' if len(absent) == 1 else 'have'} not run" if absent else "",
            f"shard {', '.join(unfinished)} {'is' if len(unfinished) == 1 else 'are'} not finished"
            if unfinished else "") if part)
        raise ShardError(f"{label}: {what} (run `styleeval evaluate ... --shard K/N` with the same --out for each, "
                         f"then this command again; found {', '.join(found)} in {cache.path(signature, fingerprint).parent})")
    return merged


def _source_runs(rows: np.ndarray, source_ids: Sequence[str]) -> list[np.ndarray]:
    """``rows`` cut into runs of consecutive rows with one source id (all of ``rows`` when there are no ids)."""
    if len(rows) == 0:
        return []
    ids = [source_ids[i] for i in rows] if len(source_ids) else [None] * len(rows)
    cuts = [k for k in range(1, len(rows)) if ids[k] != ids[k - 1]]
    return np.split(np.asarray(rows, dtype=int), cuts)
