"""One metric's score of every row of a :class:`~styleeval.scoring.inputs.ScoringInputs`, served from or written
to a :class:`~styleeval.scoring.cache.ScoresCache`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from styleeval.metrics import Metric
from styleeval.scoring.cache import ScoresCache
from styleeval.scoring.inputs import ScoringInputs


def score_dataset(metric: Metric, data: ScoringInputs, cache: ScoresCache | None = None, progress: bool = False,
                  flush_seconds: float = 5.0) -> np.ndarray:
    """The metric's score of every row of ``data`` (NaN for rows a reference-based metric cannot score).

    Served from ``cache`` when it holds (signature, fingerprint); otherwise computed and written at once. Metrics
    marked ``incremental`` (the LLM metrics) are scored in chunks of about ``flush_seconds`` of work, each chunk
    appended to the cache's partial file as it finishes, so a killed run loses at most the chunk in flight and the
    next run starts after the last saved row.
    """
    from styleeval.files.runner import timed_chunks

    signature, fingerprint = metric.signature, data.fingerprint
    if cache is not None:
        cached = cache.load(signature, fingerprint, len(data))
        if cached is not None:
            return np.asarray(cached, dtype=float)
    rows = np.flatnonzero(data.has_references) if metric.needs_references else np.arange(len(data))
    scores = np.full(len(data), np.nan)

    def compute(idx: np.ndarray) -> list[float]:
        return metric.compute(
            [data.sources[i] for i in idx],
            [data.rewrites[i] for i in idx],
            [data.references[i] for i in idx] if metric.needs_references else None,
            [data.styles[i] for i in idx] if metric.needs_styles else None,
        )

    if len(rows) and getattr(metric, "needs_ids", False):  # precomputed scores, looked up by row id
        scores[rows] = metric.score_ids([data.ids[i] for i in rows])
    elif len(rows) and getattr(metric, "incremental", False):
        partial = cache.load_partial(signature, fingerprint, len(data)) if cache is not None else {}
        for i, v in partial.items():
            scores[i] = v
        todo = np.array([i for i in rows if i not in partial], dtype=int)
        from tqdm.auto import tqdm

        with tqdm(total=len(rows), initial=len(rows) - len(todo), unit="row", leave=False, disable=not progress,
                  desc=f"{metric.label} on {data.name}") as bar:
            runs = _source_runs(todo, data.source_ids)  # a source's rows stay in one chunk: one prompt, one tree
            for picked in timed_chunks(runs, flush_seconds, cap=256):
                idx = np.concatenate(picked)
                values = compute(idx)
                scores[idx] = values
                if cache is not None:
                    cache.append_partial(signature, fingerprint, idx.tolist(), list(values))
                bar.update(len(idx))
    elif len(rows):
        scores[rows] = compute(rows)
    if len(rows):
        scores[rows] = metric.finalize(scores[rows].tolist())
    if cache is not None:
        cache.save(signature, fingerprint, scores.tolist(), dataset=data.name)
    return scores


def _source_runs(rows: np.ndarray, source_ids: Sequence[str]) -> list[np.ndarray]:
    """``rows`` cut into runs of consecutive rows with one source id (all of ``rows`` when there are no ids)."""
    if len(rows) == 0:
        return []
    ids = [source_ids[i] for i in rows] if len(source_ids) else [None] * len(rows)
    cuts = [k for k in range(1, len(rows)) if ids[k] != ids[k - 1]]
    return np.split(np.asarray(rows, dtype=int), cuts)
