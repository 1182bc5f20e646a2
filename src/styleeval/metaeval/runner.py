"""The meta-evaluation harness: load corpora, score them with metrics (cached), correlate per subset."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from styleeval.metaeval.cache import ScoresCache
from styleeval.metaeval.correlation import DegenerateScoresError, correlate, kendall_tau_like, system_level
from styleeval.metaeval.data import DIMENSIONS, STYLE_WORDS, RatedData, with_style_words
from styleeval.metrics import Metric, get_metric

CSV_COLUMNS = ["dataset", "subset", "metric", "dimension", "n", "spearman", "spearman_p", "pearson", "pearson_p",
               "kendall", "kendall_p", "ci_low", "ci_high"]
WMT_COLUMNS = ["dataset", "subset", "metric", "dimension", "n_pairs", "kendall_like", "n_systems",
               "system_pearson", "system_pearson_p"]
DEFAULT_DATASETS = ("style_gap_testset", "lai_formality", "mir_yelp", "asset", "ziegenbein_appropriateness")

Loader = Callable[[str], Any]


@dataclass
class MetaevalResult:
    """Everything the report needs: the correlation table, WMT-style table, dataset kinds and notes."""

    dimension: str
    metrics: list[str]
    correlations: pd.DataFrame
    wmt: pd.DataFrame
    dataset_kinds: dict[str, str] = field(default_factory=dict)
    task_subsets: dict[str, list[str]] = field(default_factory=dict)
    negated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _progress(iterable, total: int, desc: str, enabled: bool):
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False)


def score_dataset(metric: Metric, data: RatedData, cache: ScoresCache | None = None) -> np.ndarray:
    """The metric's score of every row of ``data`` (NaN for rows a reference-based metric cannot score).

    Served from ``cache`` when it holds (signature, fingerprint); otherwise computed and written at once.
    """
    signature, fingerprint = metric.signature, data.fingerprint
    if cache is not None:
        cached = cache.load(signature, fingerprint, len(data))
        if cached is not None:
            return np.asarray(cached, dtype=float)
    rows = np.flatnonzero(data.has_references) if metric.needs_references else np.arange(len(data))
    scores = np.full(len(data), np.nan)
    if len(rows):
        values = metric.compute(
            [data.sources[i] for i in rows],
            [data.rewrites[i] for i in rows],
            [data.references[i] for i in rows] if metric.needs_references else None,
            [data.styles[i] for i in rows] if metric.needs_styles else None,
        )
        scores[rows] = values
    if cache is not None:
        cache.save(signature, fingerprint, scores.tolist(), dataset=data.name)
    return scores


def _load(name: str, loader: Loader | None, data_dir: str | os.PathLike[str] | None) -> Any:
    if loader is not None:
        return loader(name)
    from styleeval.corpora import load_corpus

    return load_corpus(name, data_dir)


def run_metaeval(
    datasets: Sequence[str] = DEFAULT_DATASETS,
    metrics: Sequence[str | Metric] = ("s_bleu",),
    dimension: str = "content",
    data_dir: str | os.PathLike[str] | None = None,
    cache: ScoresCache | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
    loader: Loader | None = None,
    log: Callable[[str], None] | None = None,
    style_words: str = "corpus",
) -> MetaevalResult:
    """Correlate every metric with the human ``dimension`` ratings on every subset of every dataset.

    Args:
        datasets: corpus names for ``styleeval.corpora.load_corpus`` (or for ``loader``).
        metrics: metric specs (``s_bleu``, ``logprob_content:model=1b``) or metric objects.
        dimension: ``content``, ``style`` or ``fluency``.
        data_dir: local mirror of the corpora (default ``$STYLEEVAL_DATA_DIR`` or download).
        cache: scores cache (``None``: no caching).
        n_boot, seed: bootstrap resamples and seed of the Spearman confidence interval.
        progress: show progress bars.
        loader: ``name -> rows`` replacing ``load_corpus`` (hand-made data in tests); may return a
            :class:`RatedData` directly (reused across runs).
        log: called with each note (skipped dataset, metric or subset) as it happens.
        style_words: ``corpus`` (the corpus's target-style words) or ``authors`` (the words of the authors' run
            scripts where they differ, e.g. ASSET's "simplified": :data:`~styleeval.metaeval.data.AUTHORS_STYLE_WORDS`).

    Datasets that cannot be loaded or have no ratings in ``dimension`` (e.g. Ziegenbein et al. without its
    ratings file), metrics that cannot run (missing weights) and degenerate subsets (constant or NaN scores)
    are skipped with a note, never written as NaN rows. Scores of metrics with ``higher_is_better = False``
    (TER) are negated before correlating.
    """
    if dimension not in DIMENSIONS:
        raise ValueError(f"dimension must be one of {', '.join(DIMENSIONS)}, got {dimension!r}")
    if style_words not in STYLE_WORDS:
        raise ValueError(f"style_words must be one of {', '.join(STYLE_WORDS)}, got {style_words!r}")
    metric_objs = [m if isinstance(m, Metric) else get_metric(m) for m in metrics]
    names = [m.name for m in metric_objs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"metric names must be unique in one run, got duplicates: {', '.join(dupes)}")
    result = MetaevalResult(dimension, names, pd.DataFrame(columns=CSV_COLUMNS), pd.DataFrame(columns=WMT_COLUMNS))
    result.negated = [m.name for m in metric_objs if not m.higher_is_better]

    def note(msg: str) -> None:
        result.notes.append(msg)
        if log is not None:
            log(msg)

    loaded: list[RatedData] = []
    for name in datasets:
        try:
            rows = _load(name, loader, data_dir)
        except (OSError, ValueError, KeyError) as err:
            note(f"skipped dataset {name}: it could not be loaded ({err})")
            continue
        data = rows if isinstance(rows, RatedData) else RatedData.from_rows(rows, name)
        data, reworded = with_style_words(data, style_words)
        if reworded:
            note(f"{name}: target styles of {reworded} rows worded as in the authors' scripts "
                 f"({', '.join(sorted(set(data.styles)))})")
        if not np.isfinite(data.human[dimension]).any():
            note(f"skipped dataset {name}: it has no {dimension} ratings")
            continue
        loaded.append(data)

    if not loaded:
        raise ValueError("no dataset could be used: " + "; ".join(result.notes))

    scores: dict[tuple[str, str], np.ndarray] = {}
    pairs = [(d, m) for d in loaded for m in metric_objs]
    for data, metric in _progress(pairs, len(pairs), "scoring", progress):
        if metric.needs_references and not data.has_references.any():
            continue  # no references in this corpus: the paper's "–"
        try:
            scores[data.name, metric.name] = score_dataset(metric, data, cache)
        except ValueError as err:
            note(f"skipped {metric.name} on {data.name}: {err}")

    records, wmt_records = [], []
    for data in _progress(loaded, len(loaded), "correlating", progress):
        subsets = data.subsets(dimension)
        result.dataset_kinds[data.name] = data.kind
        result.task_subsets[data.name] = [s for s in subsets if s in set(data.tasks) and s != "all"]
        human = data.human[dimension]
        for metric in metric_objs:
            if (data.name, metric.name) not in scores:
                continue
            values = scores[data.name, metric.name]
            if not metric.higher_is_better:
                values = -values
            applicable = data.has_references if metric.needs_references else np.ones(len(data), bool)
            for subset, idx in subsets.items():
                idx = idx[applicable[idx]]
                if not len(idx):
                    continue
                label = f"{metric.name} on {data.name}/{subset} ({dimension})"
                try:
                    c = correlate(human[idx], values[idx], n_boot=n_boot, seed=seed, label=label)
                except DegenerateScoresError as err:
                    note(f"skipped {err}")
                    continue
                records.append({"dataset": data.name, "subset": subset, "metric": metric.name,
                                "dimension": dimension, **c.as_dict()})
            wmt = _wmt_row(data, metric.name, dimension, human, values, applicable)
            if wmt is not None:
                wmt_records.append(wmt)
    result.correlations = pd.DataFrame(records, columns=CSV_COLUMNS)
    result.wmt = pd.DataFrame(wmt_records, columns=WMT_COLUMNS)
    return result


def _wmt_row(data: RatedData, metric: str, dimension: str, human: np.ndarray, values: np.ndarray,
             applicable: np.ndarray) -> dict[str, Any] | None:
    """Lai et al.'s segment-level tau-like and system-level Pearson on the system outputs (>= 3 systems).

    Not computed on the constructed test set, whose "systems" are construction types, not systems.
    """
    if data.kind == "testset":
        return None
    rows = np.flatnonzero(np.isfinite(human) & ~data.is_reference & applicable & np.isfinite(values))
    systems = [data.systems[i] for i in rows]
    if len(set(systems)) < 3:
        return None
    try:
        tau, n_pairs = kendall_tau_like(human[rows], values[rows], [data.source_ids[i] for i in rows])
        r, p, n_sys = system_level(human[rows], values[rows], systems)
    except DegenerateScoresError:
        return None
    subset = "system" if data.kind == "mixed" else "all"
    return {"dataset": data.name, "subset": subset, "metric": metric, "dimension": dimension, "n_pairs": n_pairs,
            "kendall_like": tau, "n_systems": n_sys, "system_pearson": r,
            "system_pearson_p": p if math.isfinite(p) else math.nan}
