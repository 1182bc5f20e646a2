"""Evaluate and compare style-transfer systems: per-row scores of every metric, per-system means with bootstrap
confidence intervals, paired significance tests between systems (approximate randomization or paired bootstrap,
Holm-adjusted per metric), WMT-style significance clusters, and, when the input carries human ratings
(``human_<dimension>`` columns), the system-level agreement of each metric with them.

>>> report = evaluate_systems(rows, metrics=["s_bleu", "s_chrf"])          # doctest: +SKIP
>>> report.systems          # system, metric, n, n_missing, mean, ci_low, ci_high, cluster
>>> report.pairs            # metric, system_a, system_b, n_pairs, mean_a, mean_b, delta, ci_low, ci_high, p, ...
>>> print(report.to_markdown()); report.plot("tradeoff.png")
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from styleeval import stats
from styleeval.systems.report import HUMAN_PREFIX, SystemsReport

DEFAULT_METRICS = ("logprob_content", "logprob_style", "autorater_meaning", "autorater_style", "s_bleu", "s_chrf")
"""LogProb content and style with the default model, the autorater's expected mode, S-BLEU and S-chrF."""
TESTS = ("ar", "bootstrap")
SYSTEM_COLUMNS = ["system", "metric", "n", "n_missing", "mean", "ci_low", "ci_high", "cluster"]
PAIR_COLUMNS = ["metric", "system_a", "system_b", "n_pairs", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p",
                "p_adjusted", "significant"]


@dataclass(frozen=True)
class SystemRow:
    """One input row: a system's rewrite of a source (``source_id`` pairs rows across systems)."""

    row: int
    where: str
    system: str
    source_id: str
    source: str
    rewrite: str
    style: str
    references: list[str] | None = None
    human: Mapping[str, float] = field(default_factory=dict)


def check_rows(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, style: str | None = None) -> list[SystemRow]:
    """Input rows (dicts or a DataFrame) validated: ``source``, ``rewrite``, ``style`` (or ``style=``), ``system``;
    optional ``source_id`` (default: the source text), ``reference`` / ``references`` and ``human_<dimension>``
    ratings. A ``ValueError`` names the row: a missing or empty value, a duplicate (system, source_id)."""
    records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
    out: list[SystemRow] = []
    seen: dict[tuple[str, str], str] = {}
    for i, record in enumerate(records):
        where = str(record.get("_where") or f"row {i}")
        values = {}
        for column in ("source", "rewrite", "style", "system"):
            value = style if column == "style" and style is not None else record.get(column)
            if column == "system" and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and not (isinstance(value, float) and math.isnan(value)):
                value = str(value)
            if not isinstance(value, str) or (column != "rewrite" and not value.strip()):
                hint = {"style": " (or give one style for all rows: --style / style=)",
                        "system": " (or one file per system: --system-from-filename)"}.get(column, "")
                raise ValueError(f"{where}: {column!r} is missing or empty{hint}")
            values[column] = value
        source_id = record.get("source_id")
        source_id = values["source"] if source_id is None or source_id == "" else str(source_id)
        key = (values["system"], source_id)
        if key in seen:
            raise ValueError(f"{where}: system {key[0]!r} has a second row for source {source_id!r:.60} (first at "
                             f"{seen[key]}); give each input one row per system, or distinct source_id values")
        seen[key] = where
        refs = record.get("references", record.get("reference"))
        if isinstance(refs, str):
            refs = [refs] if refs.strip() else None
        elif refs is not None and not (isinstance(refs, float) and math.isnan(refs)):
            refs = [str(r) for r in refs] or None
        else:
            refs = None
        human = {}
        for column, value in record.items():
            if isinstance(column, str) and column.startswith(HUMAN_PREFIX) and value not in (None, ""):
                try:
                    human[column] = float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"{where}: {column} must be a number, got {value!r:.40}") from None
        out.append(SystemRow(i, where, values["system"], source_id, values["source"], values["rewrite"],
                             values["style"], refs, human))
    if not out:
        raise ValueError("no rows to evaluate")
    return out


def evaluate_systems(
    rows: Iterable[Mapping[str, Any]] | pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    style: str | None = None,
    test: str = "ar",
    alpha: float = 0.05,
    n_boot: int = stats.N_BOOT,
    trials: int = stats.N_TRIALS,
    seed: int = 0,
    sort_by: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    data_dir: str | Path | None = None,
) -> SystemsReport:
    """Score every row with every metric and compare the systems (see the module docstring).

    Args:
        rows: dicts or a DataFrame with ``source``, ``rewrite``, ``style`` (or ``style=``), ``system``, optional
            ``source_id``, ``reference``/``references`` (for ``r_*`` metrics) and ``human_<dimension>`` ratings.
        metrics: registry specs, as in the meta-evaluation (``logprob_content``, ``s_chrf``, ``precomputed:...``).
        test: ``"ar"`` (paired approximate randomization, ``trials`` shufflings) or ``"bootstrap"`` (paired
            bootstrap, ``n_boot`` resamples).
        alpha: significance level of the Holm-adjusted p-values.
        n_boot, seed: bootstrap resamples (CIs) and the seed of every random draw.
        sort_by: the metric systems are ranked by in the report (default: the first metric).
        cache_dir: where per-row scores are kept (a killed run resumes; a rerun with more metrics computes only the
            new ones); ``None``: not kept.
        progress, log: progress bars, and a callback for notes as they happen.
        data_dir: the local corpus mirror of metrics that read corpus files (``lai:<score>``), as in the
            meta-evaluation.
    """
    from styleeval.metrics import get_metric
    from styleeval.scoring import ScoresCache, ScoringInputs, score_dataset

    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not metrics:
        raise ValueError("give at least one metric")
    checked = check_rows(rows, style)
    notes: list[str] = []
    note = _noter(notes, log)

    objs = [get_metric(spec, data_dir=None if data_dir is None else str(data_dir)) for spec in metrics]  # unknown names fail here, before any work
    labels = [m.label for m in objs]
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise ValueError(f"metric(s) {', '.join(dupes)} given twice; name configurations apart with as=NAME")
    # rows sorted by source: every system's rewrite of a source lands in one scoring call (one prompt, one tree)
    order = sorted(range(len(checked)), key=lambda i: (checked[i].source_id, checked[i].source, checked[i].style))
    data = ScoringInputs(
        name="systems", ids=[str(checked[i].row) for i in order], sources=[checked[i].source for i in order],
        rewrites=[checked[i].rewrite for i in order], references=[checked[i].references for i in order],
        styles=[checked[i].style for i in order], source_ids=[checked[i].source_id for i in order],
    )
    cache = ScoresCache(cache_dir)
    scores = pd.DataFrame({"row": [r.row for r in checked], "system": [r.system for r in checked],
                           "source_id": [r.source_id for r in checked]})
    signatures: dict[str, str] = {}
    better: dict[str, bool] = {}
    for metric in objs:
        try:
            signatures[metric.label] = str(metric.signature)
            values = score_dataset(metric, data, cache, progress=progress)
        except ValueError as err:
            signatures.pop(metric.label, None)
            note(f"{metric.label}: not computed ({err})")
            continue
        column = np.full(len(checked), np.nan)
        column[order] = values
        scores[metric.label] = column
        better[metric.label] = metric.higher_is_better
        missing = int(np.isnan(column).sum())
        if missing:
            why = " (no reference)" if metric.needs_references else ""
            note(f"{metric.label}: {missing} of {len(column)} rows have no score{why}; they are left out and counted")
    for column in sorted({k for r in checked for k in r.human}):
        scores[column] = [r.human.get(column, np.nan) for r in checked]
        better[column] = True
    if len(scores.columns) == 3:
        raise ValueError("no metric could be computed: " + "; ".join(notes))
    return compare_systems(scores, signatures, better, test=test, alpha=alpha, n_boot=n_boot, trials=trials,
                           seed=seed, sort_by=sort_by, notes=notes, log=log)


def compare_systems(
    scores: pd.DataFrame,
    signatures: Mapping[str, str],
    higher_is_better: Mapping[str, bool] | None = None,
    *,
    test: str = "ar",
    alpha: float = 0.05,
    n_boot: int = stats.N_BOOT,
    trials: int = stats.N_TRIALS,
    seed: int = 0,
    sort_by: str | None = None,
    notes: list[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> SystemsReport:
    """The comparison part of :func:`evaluate_systems`, on per-row scores already computed: ``scores`` has the
    columns ``row``, ``system``, ``source_id`` and one column per metric (or ``human_*`` rating)."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    notes = [] if notes is None else notes
    better = {c: True for c in scores.columns if c not in ("row", "system", "source_id")}
    better.update(higher_is_better or {})
    signatures = dict(signatures)
    note = _noter(notes, log)

    labels = [c for c in scores.columns if c not in ("row", "system", "source_id")]
    sort_by = sort_by or labels[0]
    if sort_by not in labels:
        raise ValueError(f"sort_by {sort_by!r} is not among the metrics ({', '.join(labels)})")

    systems = sorted(scores["system"].unique())
    if len(systems) == 1:
        note(f"only one system ({systems[0]}): nothing to compare, no pairs")
    system_rows, pair_rows = [], []
    for label in labels:
        per_system = {s: scores.loc[scores["system"] == s, ["source_id", label]] for s in systems}
        for s in systems:
            values = per_system[s][label].to_numpy(float)
            kept = values[~np.isnan(values)]
            low, high = stats.bootstrap_mean_ci(kept, n_boot=n_boot, seed=seed)
            if len(kept) == 1:
                note(f"{label}: system {s} has one scored row; its confidence interval is undefined")
            system_rows.append({"system": s, "metric": label, "n": len(kept), "n_missing": len(values) - len(kept),
                                "mean": float(kept.mean()) if len(kept) else math.nan, "ci_low": low,
                                "ci_high": high})
        scored = [s for s in systems if per_system[s][label].notna().any()]
        for s in sorted(set(systems) - set(scored)):
            note(f"{label}: system {s} has no scored row; it is not ranked or paired")
        metric_pairs = []
        for a, b in itertools.combinations(scored, 2):
            joined = per_system[a].merge(per_system[b], on="source_id", suffixes=("_a", "_b")).dropna()
            if joined.empty:
                note(f"{label}: systems {a} and {b} share no scored source; not paired")
                continue
            va, vb = joined[f"{label}_a"].to_numpy(float), joined[f"{label}_b"].to_numpy(float)
            low, high, p_boot = stats.paired_bootstrap_mean(va, vb, n_boot=n_boot, seed=seed)
            p = stats.approximate_randomization(va, vb, trials=trials, seed=seed) if test == "ar" else p_boot
            metric_pairs.append({"metric": label, "system_a": a, "system_b": b, "n_pairs": len(joined),
                                 "mean_a": float(va.mean()), "mean_b": float(vb.mean()),
                                 "delta": float((va - vb).mean()), "ci_low": low, "ci_high": high, "p": p})
        for pair, adjusted in zip(metric_pairs, stats.holm([p["p"] for p in metric_pairs])):
            pair["p_adjusted"] = adjusted
            pair["significant"] = bool(adjusted < alpha)
        pair_rows += metric_pairs
    systems_frame = pd.DataFrame(system_rows, columns=SYSTEM_COLUMNS[:-1])
    pairs_frame = pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)
    report = SystemsReport(systems_frame, pairs_frame, scores, signatures, better, notes, test, alpha, sort_by,
                           pd.DataFrame())
    clusters = {m: _clusters(report, m) for m in labels}
    systems_frame["cluster"] = [clusters[m].get(s, np.nan) for s, m in zip(systems_frame["system"],
                                                                           systems_frame["metric"])]
    report.agreement = _agreement(report)
    return report


def _noter(notes: list[str], log: Callable[[str], None] | None) -> Callable[[str], None]:
    """``note(message)``: kept in ``notes`` and passed to ``log`` as it happens."""
    def note(message: str) -> None:
        notes.append(message)
        if log is not None:
            log(message)

    return note


def _clusters(report: SystemsReport, metric: str) -> dict[str, int]:
    significant = {(r.system_a, r.system_b) for r in report.pairs.itertuples()
                   if r.metric == metric and r.significant}
    return stats.significance_clusters(
        report.ranking(metric), lambda a, b: (a, b) in significant or (b, a) in significant)


def _agreement(report: SystemsReport) -> pd.DataFrame:
    """System-level agreement of every metric with every human dimension: Pearson r of the system means and
    pairwise accuracy (lower-is-better metrics negated)."""
    humans = [m for m in report.metrics if m.startswith(HUMAN_PREFIX)]
    rows = []
    means = report.systems.pivot(index="system", columns="metric", values="mean")
    for human in humans:
        for metric in report.signatures:
            sign = 1.0 if report.higher_is_better.get(metric, True) else -1.0
            both = means[[human, metric]].dropna()
            r = stats.pearson(both[human], sign * both[metric]) if len(both) > 2 else math.nan
            acc = stats.pairwise_accuracy(both[human].to_dict(), (sign * both[metric]).to_dict())
            rows.append({"human": human, "metric": metric, "n_systems": len(both), "pearson": r,
                         "pairwise_accuracy": acc})
    return pd.DataFrame(rows, columns=["human", "metric", "n_systems", "pearson", "pairwise_accuracy"])
