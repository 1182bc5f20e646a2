"""Evaluate and compare style-transfer systems: per-row scores of every metric, per-system means with bootstrap
confidence intervals, paired significance tests between systems (approximate randomization or paired bootstrap,
Holm-adjusted per metric), WMT-style significance clusters, and, when the input carries human ratings
(``human_<dimension>`` columns), the system-level agreement of each metric with them.

>>> rows = [{"system": system, "source": source, "rewrite": rewrite, "style": "formal"}
...         for system, source, rewrite in [
...             ("copy", "gimme the report", "gimme the report"), ("copy", "thx a lot", "thx a lot"),
...             ("copy", "u coming?", "u coming?"), ("formal", "gimme the report", "Please send me the report."),
...             ("formal", "thx a lot", "Thank you very much."), ("formal", "u coming?", "Are you coming?")]]
>>> report = evaluate_systems(rows, metrics=["s_chrf", "s_ter"])
>>> print(report.systems[["system", "metric", "n", "score"]].round(2).to_string(index=False))
system metric  n  score
  copy s_chrf  3  100.0
formal s_chrf  3   54.8
  copy  s_ter  3    0.0
formal  s_ter  3  125.0
>>> list(report.pairs.columns[:4])   # then delta, its CI, p, the Holm-adjusted p and whether it is significant
['metric', 'system_a', 'system_b', 'n_pairs']
>>> text = report.to_markdown()     # also report.plot("tradeoff.png"), write_outputs(report, "out/")
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from styleeval import progress as shown
from styleeval.backends import BackendError, verify_shared
from styleeval.errors import RowError, UserError, advising, rows_named_by
from styleeval.files.shards import Shard
from styleeval.labels import counted
from styleeval.metrics import Metric, get_metric
from styleeval.metrics.registry import SYSTEM_METRICS, check_distinct_labels
from styleeval.scoring import ScoresCache, ScoringInputs, score_dataset
from styleeval.scoring.score import ShardError
from styleeval.stats.settings import DEFAULT_SETTINGS, TestSettings
from styleeval.systems.comparison import check_test_settings, compare_systems, noter
from styleeval.systems.inputs import (
    BASELINES,
    HUMAN_REFERENCE,
    CorpusInputs,
    SystemRow,
    baseline_rows,
    check_baseline_names,
    check_labels,
    check_rows,
    first_sources,
    input_warnings,
)
from styleeval.systems.report import SystemsReport

DEFAULT_METRICS = SYSTEM_METRICS
"""LogProb content and style with the default model, the autorater's expected mode, S-BLEU and S-chrF."""


def evaluate_systems(
    rows: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None,
    metrics: Sequence[str | Metric] | str = DEFAULT_METRICS,
    *,
    dataset: str | None = None,
    limit: int | None = None,
    style: str | None = None,
    settings: TestSettings = DEFAULT_SETTINGS,
    sort_by: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
    data_dir: str | Path | None = None,
    baselines: bool = True,
    test_baselines: bool = False,
) -> SystemsReport:
    """Score every row with every metric and compare the systems (see the module docstring).

    Args:
        rows: dicts or a DataFrame with ``source``, ``rewrite``, ``style`` (or ``style=``), ``system``, optional
            ``source_id``, ``reference``/``references`` (for ``r_*`` metrics) and ``human_<dimension>`` ratings.
        metrics: registry specs, as in the meta-evaluation (``logprob_content``, ``s_chrf``, ``precomputed:...``) or
            metric objects: a list, or one comma-separated string as on the command line.
        dataset: instead of ``rows``, a rated corpus whose systems are compared (``"lai_formality"``: its 9 systems
            with their references and human ratings; :func:`~styleeval.systems.dataset.dataset_rows`), read from
            ``data_dir``.
        limit: only the first ``limit`` sources (in the order the rows first give them), every system's rows of
            them; the report says so.
        settings: the paired test (``"ar"``: approximate randomization, ``trials`` shufflings; ``"bootstrap"``:
            paired bootstrap, ``n_boot`` resamples), the significance level ``alpha`` of the Holm-adjusted p-values,
            the bootstrap resamples ``n_boot`` of the CIs and the ``seed`` of every random draw (default: sacrebleu's,
            12345: the corpus metrics' p-values are those ``sacrebleu --paired-ar`` prints, where no shuffle ties):
            a :class:`~styleeval.stats.TestSettings`, checked when made.
        sort_by: the metric systems are ranked by in the report (default: the first metric).
        cache_dir: where per-row scores are kept (a killed run resumes; a rerun with more metrics computes only the
            new ones); ``None``: not kept.
        progress: progress bars on stderr (the metric being computed, its rows, the comparison); ``None``: where
            stderr is a terminal.
        log: a callback for notes as they happen.
        data_dir: the local corpus mirror of metrics that read corpus files (``lai:<score>``), as in the
            meta-evaluation.
        baselines: add the reference points :data:`~styleeval.systems.inputs.BASELINES` (``(copy source)``: every
            source copied; ``(human reference)``: the first reference, where the rows have references), scored by
            every metric on the sources the systems are compared on (:func:`~styleeval.systems.inputs.
            baseline_rows`), shown in the report marked as baselines (``report.baselines``).
        test_baselines: compare the baselines as systems too (paired tests, clusters, rankings); by default they are
            left out of them.
    """
    check_test_settings(settings)  # before any scoring
    rows = _input_rows(rows, dataset, style, data_dir)
    checked, objs, order, data, subset = _prepare(rows, metrics, style, data_dir, limit, baselines)
    given = [r for r in checked if r.system not in BASELINES]  # the input's rows (the baselines' come after)
    notes: list[str] = []
    note = noter(notes, log)
    if subset:
        note(f"evaluated on {subset}: every system's rows of them, {counted(len(given), 'row')}")
    for warning in input_warnings(given, any(m.needs_references for m in objs)):  # shown as warnings (the CLI: "styleeval evaluate: warning: ...")
        warnings.warn(warning, stacklevel=2)
        notes.append(str(warning))  # and kept in the report's notes
    cache = ScoresCache(cache_dir)
    scores = pd.DataFrame({"row": [r.row for r in checked], "system": [r.system for r in checked],
                           "source_id": [r.source_id for r in checked]})
    signatures: dict[str, str] = {}  # the row scores' (compared at the end of the run)
    system_signatures: dict[str, str] = {}  # what the report prints: the system score's too (corpus scorer)
    better: dict[str, bool] = {}
    corpus: dict[str, CorpusInputs] = {}
    not_computed: dict[str, str] = {}
    progress = shown.enabled(progress)
    metrics_bar = shown.bar(objs, desc="metrics", unit="metric", progress=progress)
    for metric in metrics_bar:
        metrics_bar.set_postfix_str(metric.label)  # shown while its model loads, before its rows' bar
        try:
            # "loading model ..." where a metric's model loads (torch, weights); advice as a metric spec takes it
            with shown.watched(progress), advising("spec", metric.name), _input_rows_named(checked, order):
                signatures[metric.label] = str(metric.signature)
                system_signatures[metric.label] = str(metric.system_signature)
                values = score_dataset(metric, data, cache, progress=progress)
        except ShardError:
            raise
        except (UserError, BackendError) as err:  # weights, extras, a server, bad options; a bug keeps its traceback
            err = _input_row(err, checked, order)
            signatures.pop(metric.label, None)
            system_signatures.pop(metric.label, None)
            same = next((label for label, why in not_computed.items() if why == str(err)), None)
            not_computed[metric.label] = str(err)
            message = f"{metric.label}: not computed ({f'the same cause as {same}' if same else err})"
            if metric is objs[-1] and not better and not any(r.human for r in checked):
                notes.append(message)  # nothing was computed: the error that ends the run says it, once
            else:
                note(message)
            continue
        column = np.full(len(checked), np.nan)
        column[order] = values
        scores[metric.label] = column
        better[metric.label] = metric.higher_is_better
        if metric.aggregate == "corpus":
            corpus[metric.label] = CorpusInputs(metric, [r.source for r in checked], [r.rewrite for r in checked],
                                                [r.references for r in checked])
        missing = int(np.isnan(column[:len(given)]).sum())
        if missing:
            why = " (no reference)" if metric.needs_references else ""
            note(f"{metric.label}: {missing} of {counted(len(given), 'row')} {'has' if missing == 1 else 'have'} no "
                 f"score{why}; {'it is' if missing == 1 else 'they are'} left out and counted")
        if metric.needs_references and any(r.system == HUMAN_REFERENCE for r in checked):
            note(f"{metric.label}: the baseline {HUMAN_REFERENCE} is not scored: it is one of the references, and "
                 "scored against them it would be scored against itself (a perfect score that means nothing)")
    _check_unchanged(objs, signatures, cache, data.fingerprint)
    for column in sorted({k for r in checked for k in r.human}):
        scores[column] = [r.human.get(column, np.nan) for r in checked]
        better[column] = True
    if len(scores.columns) == 3:
        raise UserError(_nothing_computed(not_computed))
    report = compare_systems(scores, system_signatures, better, settings=settings, sort_by=sort_by, notes=notes,
                             log=log, corpus=corpus, progress=progress,
                             baselines=[b for b in BASELINES if any(r.system == b for r in checked)],
                             test_baselines=test_baselines)
    report.not_computed = not_computed
    report.texts = pd.DataFrame({"source": [r.source for r in checked], "rewrite": [r.rewrite for r in checked],
                                 "style": [r.style for r in checked], "references": [r.references for r in checked]})
    report.subset = subset
    return report


def _input_rows(rows: Iterable[Mapping[str, Any]] | pd.DataFrame | None, dataset: str | None, style: str | None,
                data_dir: str | Path | None) -> Iterable[Mapping[str, Any]] | pd.DataFrame:
    """``rows``, or the rows of corpus ``dataset`` (:func:`~styleeval.systems.dataset.dataset_rows`): exactly one
    of them, and no ``style`` with a corpus (:func:`~styleeval.systems.dataset.check_input_choice`)."""
    from styleeval.systems.dataset import check_input_choice, dataset_rows  # noqa: PLC0415 - heavy (datasets, via styleeval.systems.dataset)

    check_input_choice(rows is not None, dataset, style)
    return rows if dataset is None else dataset_rows(dataset, data_dir)


def _prepare(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, metrics: Sequence[Any] | str, style: str | None,
             data_dir: str | Path | None, limit: int | None = None,
             baselines: bool = True) -> tuple[list[SystemRow], list[Any], list[int], Any, str]:
    """The checked rows (those of the first ``limit`` sources: :func:`first_sources`; then, with ``baselines``, the
    baselines' rows: :func:`~styleeval.systems.inputs.baseline_rows`), the metric objects (specs
    built here: unknown names and missing extras fail before the rows are read; metric objects as given), the
    scoring inputs: rows sorted by source, so that every system's rewrite of a source lands in one scoring call (one
    prompt, one tree), with ``order`` mapping them back; and what ``limit`` kept (``""``: every row)."""
    if isinstance(metrics, str):  # "s_chrf,s_bleu", as on the command line
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    if not metrics:
        raise UserError("give at least one metric")
    objs = [m if isinstance(m, Metric) else get_metric(m, data_dir=None if data_dir is None else str(data_dir))
            for m in metrics]
    checked, subset = first_sources(check_rows(rows, style), limit)
    if baselines:
        check_baseline_names(checked)
        checked = checked + baseline_rows(checked)
    check_distinct_labels(metrics, objs)
    labels = [m.label for m in objs]
    check_labels(labels)
    order = sorted(range(len(checked)), key=lambda i: (checked[i].source_id, checked[i].source, checked[i].style))
    data = ScoringInputs(
        name="systems", ids=[str(checked[i].row) for i in order], sources=[checked[i].source for i in order],
        rewrites=[checked[i].rewrite for i in order], references=[checked[i].references for i in order],
        styles=[checked[i].style for i in order], source_ids=[checked[i].source_id for i in order],
    )
    return checked, objs, order, data, subset


def _input_rows_named(checked: Sequence[SystemRow], order: Sequence[int]) -> Any:
    """Inside, a :class:`~styleeval.errors.RowsWarning` about a row of the scoring inputs (rows sorted by source:
    :func:`_prepare`; a row skipped as too long, ...) names its input row, as :func:`_input_row` does for errors."""
    return rows_named_by(lambda i: checked[order[i]].row)


def _input_row(err: Exception, checked: Sequence[SystemRow], order: Sequence[int]) -> Exception:
    """A :class:`~styleeval.errors.RowError` of the scoring inputs (rows sorted by source: :func:`_prepare`) as the
    error of its input row, named as the input names it (``outputs.jsonl, line 113``, or ``row 111`` in Python)."""
    if not isinstance(err, RowError) or not 0 <= err.row < len(order):
        return err
    row = checked[order[err.row]]
    return err.at(row.row, row.where)


def score_shard(
    rows: Iterable[Mapping[str, Any]] | pd.DataFrame,
    metrics: Sequence[str | Metric] | str,
    shard: Any,
    cache_dir: str | Path,
    *,
    style: str | None = None,
    progress: bool | None = None,
    data_dir: str | Path | None = None,
    limit: int | None = None,
    baselines: bool = True,
) -> dict[str, int]:
    """Shard ``K/N`` of :func:`evaluate_systems`'s scoring, for job arrays: the LLM metrics' rows of every source
    ``j`` with ``j mod N == K`` are scored into the shard's own files in ``cache_dir`` (resumable); the other
    metrics are fast and left to the run that puts the shards together (``evaluate_systems`` with the same
    ``cache_dir``, ``limit`` and ``baselines``, which names any shard not run or not finished). Returns metric label
    -> rows in this shard."""
    progress = shown.enabled(progress)
    part = Shard.parse(shard)
    assert part is not None
    checked, objs, order, data, _ = _prepare(rows, metrics, style, data_dir, limit, baselines)
    cache = ScoresCache(cache_dir)
    done = {}
    for metric in objs:
        if getattr(metric, "incremental", False):
            try:
                with shown.watched(progress), advising("spec", metric.name), _input_rows_named(checked, order):
                    values = score_dataset(metric, data, cache, progress=progress, shard=part)
            except RowError as err:
                raise _input_row(err, checked, order) from err
            done[metric.label] = int(np.isfinite(values).sum())
    return done


def _check_unchanged(metrics: Sequence[Any], signatures: Mapping[str, str], cache: Any, fingerprint: str) -> None:
    """Probe every shared backend again at the end of the run: a metric whose signature changed meanwhile (a server
    redeployed with other weights) is an error, and its cache entries of this run are removed (they may hold rows
    of either model)."""
    verify_shared()
    changed = [(m.label, signatures[m.label], str(m.signature)) for m in metrics
               if m.label in signatures and str(m.signature) != signatures[m.label]]
    if cache.root is not None:
        for _, old, _ in changed:
            cache.path(old, fingerprint).unlink(missing_ok=True)
            cache.partial_path(old, fingerprint).unlink(missing_ok=True)
    if changed:
        raise UserError("the model behind " + "; ".join(f"{label} changed during this run ({old} is now {new})"
                                                        for label, old, new in changed)
                        + "; its cached scores of this run were removed: run again for the model you want")


def _nothing_computed(not_computed: dict[str, str]) -> str:
    """The error of a run where no metric could be computed: each metric and why it was not (a cause shared by
    several metrics said once, after them); the run's other notes and warnings are not causes, and are shown where
    they are shown otherwise."""
    causes: dict[str, list[str]] = {}
    for label, why in not_computed.items():
        causes.setdefault(why, []).append(label)
    said = "; ".join(f"{', '.join(labels)}: not computed ({why})" for why, labels in causes.items())
    return f"no metric could be computed: {said}" if said else "no metric could be computed"
