"""The meta-evaluation harness in three steps: :func:`load_datasets` (the corpora, checked), :func:`score_datasets`
(every metric on every corpus through the scoring layer, cached) and :func:`correlate_datasets` (per subset, plus
Lai et al.'s WMT-style rows); :func:`run_metaeval` runs the three."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from styleeval import progress as shown
from styleeval.backends import BackendError
from styleeval.corpora import MissingFileError, check_corpus_names, load_corpus, rating_corpora
from styleeval.errors import UserError, advising
from styleeval.labels import random_weight_metrics, shown_label, system_statistic
from styleeval.metaeval.data import DIMENSIONS, STYLE_WORDS, RatedData, with_style_words
from styleeval.metrics import Metric, get_metric
from styleeval.metrics.registry import check_distinct_labels
from styleeval.scoring import ScoresCache, score_dataset
from styleeval.stats.correlation import DegenerateScoresError, correlate, kendall_tau_like, system_level
from styleeval.stats.resampling import check_settings

CSV_COLUMNS = ["dataset", "subset", "metric", "dimension", "n", "spearman", "spearman_p", "pearson", "pearson_p",
               "kendall", "kendall_p", "ci_low", "ci_high", "signature"]
WMT_COLUMNS = ["dataset", "subset", "metric", "dimension", "n_pairs", "kendall_like", "n_systems", "system_score",
               "system_pearson", "system_pearson_p"]
"""``wmt_kendall.csv``: ``system_score`` names what ``system_pearson`` correlates (the mean of each system's row scores:
``mean sentence BLEU``, ``mean row score``; :func:`~styleeval.labels.system_statistic`)."""

Loader = Callable[[str], Any]


@dataclass(frozen=True)
class SharedRows:
    """Which rows a column's like-rows correlations (:attr:`MetaevalResult.shared_correlations`) use: those of its
    ``n_rated`` rated rows that every metric of the column scores (:func:`shared_rows`).

    >>> SharedRows(100, 500, ("sentiment", "detoxification"), references=True).describe()
    'sentiment, detoxification: rows with a reference, n = 100 of 500'
    >>> SharedRows(640, 720, references=True).describe(), SharedRows(500, 500).describe()
    ('rows with a reference, n = 640 of 720', 'n = 500')
    """

    n: int
    n_rated: int
    tasks: tuple[str, ...] = ()
    """Where the column pools several tasks and the shared rows lost some of them: the tasks left."""
    references: bool = False
    """The shared rows are exactly the column's rated rows with a reference (reference-based metrics cut it)."""

    @property
    def restricted(self) -> bool:
        """Fewer rows than the column's rated ones."""
        return self.n < self.n_rated

    def parts(self) -> list[str]:
        """:meth:`describe`'s parts: the tasks left (where some were lost), which rows, how many."""
        if not self.restricted:
            return [f"n = {self.n}"]
        which = "rows with a reference" if self.references else "rows every metric scores"
        return [*([", ".join(self.tasks)] if self.tasks else []), which, f"n = {self.n} of {self.n_rated}"]

    def describe(self) -> str:
        """``n = 500``, or which rows remain: ``sentiment, detoxification: rows with a reference, n = 100 of 500``."""
        parts = self.parts()
        return f"{parts[0]}: {', '.join(parts[1:])}" if self.tasks and self.restricted else ", ".join(parts)


@dataclass
class MetaevalResult:
    """Everything the report needs: the correlation table, WMT-style table, dataset kinds and notes."""

    dimension: str
    metrics: list[str]
    correlations: pd.DataFrame
    """Spearman per dataset, subset and metric, each metric on its own rated rows (the paper's tables: ``n`` says
    how many)."""
    wmt: pd.DataFrame
    """Lai et al.'s segment-level tau-like and system-level Pearson, every metric of a dataset on the same system
    rows (:func:`shared_rows`)."""
    dataset_kinds: dict[str, str] = field(default_factory=dict)
    task_subsets: dict[str, list[str]] = field(default_factory=dict)
    negated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)
    missing: list[tuple[str, str, str]] = field(default_factory=list)  # (dataset, metric, why): cells left empty
    failed_metrics: dict[str, str] = field(default_factory=dict)
    """metric label -> why it could not be computed (on every corpus, or on the corpora named): a requested metric
    missing from the tables, which ``styleeval metaeval`` treats as an error unless ``--allow-missing``."""
    scores: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (dataset, metric) -> per-row scores
    human: dict[str, np.ndarray] = field(default_factory=dict)  # dataset -> human ratings of the dimension
    groups: dict[str, list[str]] = field(default_factory=dict)  # dataset -> source id of each row
    systems: dict[str, list[str]] = field(default_factory=dict)  # dataset -> system of each row
    shared_correlations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CSV_COLUMNS))
    """As :attr:`correlations`, but per dataset and subset every metric on the same rows (:func:`shared_rows`):
    what the per-task and per-dataset plots compare."""
    shared: dict[tuple[str, str], SharedRows] = field(default_factory=dict)
    """(dataset, subset) -> which rows its :attr:`shared_correlations` use (fewer than all where a reference-based
    metric is in the run): what every label of those numbers says."""

    @property
    def random_weights(self) -> list[str]:
        """The metrics computed with random weights (the tiny-random preset): marked wherever they are shown."""
        return random_weight_metrics(self.signatures)

    def label(self, metric: str, numbers: bool = True) -> str:
        """``metric``'s label in this run's tables and plots (:func:`~styleeval.labels.shown_label`): a random-weights
        mark, and ``(negated)`` for a lower-is-better metric where ``numbers`` are shown (its scores are negated
        before correlating and ranking)."""
        return shown_label(metric, numbers and metric in self.negated, metric in self.random_weights)


def _load(name: str, loader: Loader | None, data_dir: str | os.PathLike[str] | None) -> Any:
    if loader is not None:
        return loader(name)

    return load_corpus(name, data_dir)


def run_metaeval(
    datasets: Sequence[str] | None = None,
    metrics: Sequence[str | Metric] = ("s_bleu",),
    dimension: str = "content",
    data_dir: str | os.PathLike[str] | None = None,
    cache: ScoresCache | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool | None = None,
    loader: Loader | None = None,
    log: Callable[[str], None] | None = None,
    style_words: str = "corpus",
    allow_missing: bool = False,
) -> MetaevalResult:
    """Correlate every metric with the human ``dimension`` ratings on every subset of every dataset.

    Args:
        datasets: corpus names for ``styleeval.corpora.load_corpus`` (or for ``loader``); repeated names count once.
            ``None``: every rating corpus whose data is present (an absent one is skipped with a note naming it;
            a corpus named explicitly and absent is an error).
        metrics: metric specs (``s_bleu``, ``logprob_content:model=1b``, ``...:as=LP-1B``) or metric objects.
        dimension: ``content``, ``style`` or ``fluency``.
        data_dir: local mirror of the corpora (default ``$STYLEEVAL_DATA_DIR`` or download).
        cache: scores cache (``None``: no caching).
        n_boot, seed: bootstrap resamples and seed of the Spearman confidence interval.
        progress: progress bars on stderr (``None``: where stderr is a terminal, else one line per corpus x metric
            scored and per corpus correlated: :func:`styleeval.progress.steps`).
        loader: ``name -> rows`` replacing ``load_corpus`` (hand-made data in tests); may return a
            :class:`RatedData` directly (reused across runs).
        log: called with each note (skipped dataset, metric or subset) as it happens.
        style_words: ``corpus`` (the corpus's target-style words) or ``authors`` (the words of the authors' run
            scripts where they differ, e.g. ASSET's "simplified": :func:`~styleeval.metaeval.data.authors_style_words`).
        allow_missing: a dataset that cannot be loaded (missing file, checksum failure) or has no ``dimension``
            ratings is skipped with a note and listed in ``result.missing``, instead of an error.

    An unknown dataset name is always an error. A metric that cannot run (weights that cannot be loaded, a server
    that does not answer) is noted once and its cells are listed in ``result.missing``; degenerate subsets
    (constant or NaN scores) are skipped with a note, never written as NaN rows. Scores of metrics with
    ``higher_is_better = False`` (TER, PINC) are negated before correlating.
    """
    if dimension not in DIMENSIONS:
        raise UserError(f"dimension must be one of {', '.join(DIMENSIONS)}, got {dimension!r}")
    check_settings(n_boot=n_boot, seed=seed)
    metric_objs = [m if isinstance(m, Metric) else get_metric(m, data_dir=data_dir) for m in metrics]
    check_distinct_labels(metrics, metric_objs)
    names = [m.label for m in metric_objs]
    result = MetaevalResult(dimension, names, pd.DataFrame(columns=CSV_COLUMNS), pd.DataFrame(columns=WMT_COLUMNS))
    result.negated = [m.label for m in metric_objs if not m.higher_is_better]

    def note(msg: str) -> None:
        result.notes.append(msg)
        if log is not None:
            log(msg)

    loaded = load_datasets(datasets, dimension, metric_objs, result, note, data_dir=data_dir, loader=loader,
                           style_words=style_words, allow_missing=allow_missing)
    scores = score_datasets(loaded, metric_objs, result, note, cache=cache, progress=progress)
    correlate_datasets(loaded, metric_objs, scores, result, note, n_boot=n_boot, seed=seed, progress=progress)
    return result


def load_datasets(datasets: Sequence[str] | None, dimension: str, metrics: Sequence[Metric], result: MetaevalResult,
                  note: Callable[[str], None], *, data_dir: str | os.PathLike[str] | None = None,
                  loader: Loader | None = None, style_words: str = "corpus",
                  allow_missing: bool = False) -> list[RatedData]:
    """Step 1: the corpora with ``dimension`` ratings, worded as ``style_words`` says (see :func:`run_metaeval`);
    skipped ones are noted and listed in ``result.missing``."""
    if style_words not in STYLE_WORDS:
        raise UserError(f"style_words must be one of {', '.join(STYLE_WORDS)}, got {style_words!r}")
    present_only = datasets is None
    datasets = list(dict.fromkeys(rating_corpora() if datasets is None else datasets))
    if loader is None:
        check_corpus_names(datasets, rating=True)

    loaded: list[RatedData] = []
    for name in datasets:
        try:
            rows = _load(name, loader, data_dir)
            data = rows if isinstance(rows, RatedData) else RatedData.from_rows(rows, name)
        except (OSError, UserError) as err:
            if present_only and isinstance(err, MissingFileError):  # the default set: the corpora that are present
                note(f"skipped dataset {name}: its data is not present ({err}); name it in --datasets to make "
                     "its absence an error")
                result.missing += [(name, m.label, "dataset not present") for m in metrics]
                continue
            if not allow_missing:
                raise UserError(f"dataset {name} cannot be used: {err}. Fix the data (see STYLEEVAL_DATA_DIR), "
                                "leave it out of --datasets, or pass --allow-missing to report without it") from err
            note(f"skipped dataset {name}: {err}")
            result.missing += [(name, m.label, "dataset unavailable") for m in metrics]
            continue
        if not np.isfinite(data.human[dimension]).any():  # the corpus does not rate this aspect (the paper's "-")
            note(f"skipped dataset {name}: it has no {dimension} ratings")
            continue
        data, reworded = with_style_words(data, style_words)
        if reworded:
            note(f"{name}: target styles of {reworded} rows worded as in the authors' scripts "
                 f"({', '.join(sorted(set(data.styles)))})")
        loaded.append(data)
    if not loaded:
        raise UserError("no dataset could be used: " + "; ".join(result.notes))
    return loaded


def score_datasets(loaded: Sequence[RatedData], metrics: Sequence[Metric], result: MetaevalResult,
                   note: Callable[[str], None], *, cache: ScoresCache | None = None,
                   progress: bool | None = None) -> dict[tuple[str, str], np.ndarray]:
    """Step 2: every metric's scores of every corpus (``(dataset, metric label) -> scores``, as computed); a metric
    that cannot be set up is noted once and skipped everywhere, one that fails on a corpus is skipped there."""
    scores: dict[tuple[str, str], np.ndarray] = {}
    failed: dict[str, str] = {}
    pairs = [(d, m) for d in loaded for m in metrics]
    for data, metric in shown.steps(pairs, desc=f"scoring ({result.dimension})", unit="corpus x metric",
                                    units="corpus x metric pairs", progress=progress,
                                    name=lambda pair: f"{pair[0].name}, {pair[1].label}"):
        if metric.needs_references and not data.has_references.any():
            continue  # no references in this corpus: the paper's "–"
        if metric.label in failed:
            result.missing.append((data.name, metric.label, failed[metric.label]))
            continue
        try:
            with advising("spec", metric.name):  # advice names the option as a metric spec takes it
                result.signatures.setdefault(metric.label, metric.signature)
                scores[data.name, metric.label] = score_dataset(metric, data, cache,
                                                                   progress=shown.enabled(progress))
        except (UserError, BackendError) as err:  # a metric that cannot be computed; a bug keeps its traceback
            if metric.label not in result.signatures:  # it could not even be set up: skip it everywhere
                failed[metric.label] = str(err)
                result.failed_metrics[metric.label] = str(err)
                note(f"skipped metric {metric.label} on every dataset: {err}")
            else:
                result.failed_metrics[metric.label] = "; ".join(
                    filter(None, [result.failed_metrics.get(metric.label), f"on {data.name}: {err}"]))
                note(f"skipped {metric.label} on {data.name}: {err}")
            result.missing.append((data.name, metric.label, str(err)))
    return scores


def correlate_datasets(loaded: Sequence[RatedData], metrics: Sequence[Metric],
                       scores: dict[tuple[str, str], np.ndarray], result: MetaevalResult,
                       note: Callable[[str], None], *, n_boot: int = 1000, seed: int = 0,
                       progress: bool | None = None) -> None:
    """Step 3: the correlation table (per subset) and the WMT-style rows into ``result``, and the oriented scores
    (lower-is-better metrics negated), human ratings, source ids and systems the leaderboard reads."""
    dimension = result.dimension
    records, wmt_records, shared_records = [], [], []
    for data in shown.steps(loaded, desc=f"correlating ({dimension})", unit="corpus", units="corpora",
                            progress=progress,
                            name=lambda data: data.name):
        subsets = data.subsets(dimension)
        result.dataset_kinds[data.name] = data.kind
        result.task_subsets[data.name] = [s for s in subsets if s in set(data.tasks) and s != "all"]
        human = data.human[dimension]
        oriented: dict[str, np.ndarray] = {}
        for metric in metrics:
            if (data.name, metric.label) not in scores:
                continue
            values = scores[data.name, metric.label]
            if not metric.higher_is_better:
                values = -values
            applicable = data.has_references if metric.needs_references else np.ones(len(data), bool)
            oriented[metric.label] = np.where(applicable, values, np.nan)
            for subset, idx in subsets.items():
                idx = idx[applicable[idx]]
                if not len(idx):
                    continue
                record = _correlation(data, subset, metric.label, dimension, human, values, idx, result, note,
                                      n_boot, seed)
                if record is not None:
                    records.append(record)
            result.scores[data.name, metric.label] = values
        own = {(r["subset"], r["metric"]): r for r in records if r["dataset"] == data.name}
        for subset, idx in subsets.items():  # every metric of a subset on the rows all of them score
            rows, names = shared_rows(human, oriented, idx)
            result.shared[data.name, subset] = _shared_scope(data, idx, rows)
            for name in names:
                record = own.get((subset, name))
                if record is None or record["n"] != len(rows):  # else: its own rows are the shared ones
                    record = _correlation(data, subset, name, dimension, human, oriented[name], rows, result,
                                          lambda message: None, n_boot, seed)
                if record is not None:
                    shared_records.append(record)
        system_rows, names = shared_rows(human, oriented, np.flatnonzero(~data.is_reference))
        for name in names:
            wmt = _wmt_row(data, name, dimension, human, oriented[name], system_rows, result.signatures.get(name, ""))
            if wmt is not None:
                wmt_records.append(wmt)
    result.correlations = pd.DataFrame(records, columns=CSV_COLUMNS)
    result.shared_correlations = pd.DataFrame(shared_records, columns=CSV_COLUMNS)
    result.wmt = pd.DataFrame(wmt_records, columns=WMT_COLUMNS)
    result.human = {d.name: d.human[dimension] for d in loaded}
    result.groups = {d.name: list(d.source_ids) for d in loaded}
    result.systems = {d.name: list(d.systems) for d in loaded}


def shared_rows(human: np.ndarray, scores: dict[str, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Like sets: of ``rows``, those where the human rating and every metric that scores any of them have a value,
    and those metrics (names of ``scores``, in order). A metric without a score on ``rows`` (a reference-based one
    where no row has a reference) is left out rather than emptying the set."""
    names = [n for n, v in scores.items() if np.isfinite(v[rows]).any()]
    keep = np.isfinite(human[rows])
    for name in names:
        keep &= np.isfinite(scores[name][rows])
    return rows[keep], names


def _shared_scope(data: RatedData, idx: np.ndarray, rows: np.ndarray) -> SharedRows:
    """:class:`SharedRows` of the subset at ``idx`` (its rated rows) whose shared rows are ``rows``: "rows with a
    reference" only where they are exactly those (no metric lost another row)."""
    tasks = list(dict.fromkeys(data.tasks[i] for i in idx))
    left = list(dict.fromkeys(data.tasks[i] for i in rows))
    with_reference = idx[data.has_references[idx]]
    return SharedRows(len(rows), len(idx), tuple(left) if len(tasks) > 1 and len(left) < len(tasks) else (),
                      len(rows) < len(idx) and np.array_equal(rows, with_reference))


def _correlation(data: RatedData, subset: str, metric: str, dimension: str, human: np.ndarray, values: np.ndarray,
                 idx: np.ndarray, result: MetaevalResult, note: Callable[[str], None], n_boot: int,
                 seed: int) -> dict[str, Any] | None:
    """One row of ``correlations.csv`` (``None``, noted, where the scores are degenerate)."""
    label = f"{metric} on {data.name}/{subset} ({dimension})"
    try:
        c = correlate(human[idx], values[idx], n_boot=n_boot, seed=seed, label=label)
    except DegenerateScoresError as err:
        note(f"skipped {err}")
        return None
    return {"dataset": data.name, "subset": subset, "metric": metric, "dimension": dimension, **c.as_dict(),
            "signature": result.signatures.get(metric, "")}


def _wmt_row(data: RatedData, metric: str, dimension: str, human: np.ndarray, values: np.ndarray,
             rows: np.ndarray, signature: str = "") -> dict[str, Any] | None:
    """Lai et al.'s segment-level tau-like and system-level Pearson on the system outputs at ``rows`` (>= 3 systems):
    the rows every metric of the dataset scores (:func:`shared_rows`), so that the metrics of one table are compared
    on the same rows and systems. System level: Pearson of the per-system means of the row scores, named in
    ``system_score`` from the metric's ``signature`` (mean sentence BLEU for S-BLEU, not ``evaluate``'s corpus BLEU).

    Not computed on the constructed test set, whose "systems" are construction types, not systems.
    """
    if data.kind == "testset":
        return None
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
            "kendall_like": tau, "n_systems": n_sys, "system_score": system_statistic("mean", signature).label,
            "system_pearson": r,
            "system_pearson_p": p if math.isfinite(p) else math.nan}
