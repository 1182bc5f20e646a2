"""The comparison of systems on row scores: each system's score with its bootstrap CI, the paired tests of every
pair (Holm-adjusted per metric), WMT-style clusters (:func:`compare_systems`)."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from styleeval import progress as shown
from styleeval import stats
from styleeval.errors import UserError
from styleeval.labels import counted
from styleeval.stats.settings import DEFAULT_SETTINGS, TestSettings
from styleeval.systems.agreement import agreement_frame
from styleeval.systems.inputs import BASELINES, CorpusInputs, magnitude_limit
from styleeval.systems.report import HUMAN_PREFIX, Coverage, SystemsReport, coverage_of, lacking_sources

if TYPE_CHECKING:
    pass

SYSTEM_COLUMNS = ["system", "metric", "aggregate", "n", "n_missing", "score", "mean", "ci_low", "ci_high", "cluster"]
PAIR_COLUMNS = ["metric", "system_a", "system_b", "n_pairs", "score_a", "score_b", "mean_a", "mean_b", "delta",
                "ci_low", "ci_high", "p", "p_adjusted", "significant"]


def _check_scores(scores: pd.DataFrame, labels: list[str]) -> None:
    """The rows :func:`compare_systems` compares: one per (system, source_id), finite or missing (NaN) scores."""
    if scores.empty or not labels:
        raise UserError("no rows to compare: give a frame with the columns row, system, source_id and at least one "
                        "metric column")
    missing = [c for c in ("system", "source_id") if c not in scores.columns]
    if missing:
        raise UserError(f"scores needs the columns {', '.join(missing)}")
    rows = scores["row"] if "row" in scores.columns else pd.Series(range(len(scores)), index=scores.index)
    doubled = scores.duplicated(["system", "source_id"], keep=False)
    if doubled.any():
        first = scores[doubled].iloc[0]
        same = rows[doubled & (scores["system"] == first["system"]) & (scores["source_id"] == first["source_id"])]
        raise UserError(f"system {first['system']!r} has {len(same)} rows for source {first['source_id']!r:.60} "
                        f"(rows {', '.join(map(str, same.tolist()[:5]))}); each system needs one row per source_id, "
                        "or every row would be paired with every other")
    limit = magnitude_limit(len(scores))
    for label in labels:
        values = pd.to_numeric(scores[label], errors="coerce").to_numpy(float)
        bad = np.flatnonzero(np.isinf(values))
        if len(bad):
            raise UserError(f"{label}: {len(bad)} infinite scores (rows {', '.join(map(str, rows.iloc[bad][:5]))})"
                            "; a mean or a test over them is meaningless: fix the scores, or make them missing "
                            "(NaN) to leave the rows out")
        big = np.flatnonzero(np.abs(values) > limit)
        if len(big):
            raise UserError(f"{label}: {len(big)} scores too large to average (rows "
                            f"{', '.join(map(str, rows.iloc[big][:5]))}: {values[big[0]]:.3g}): a mean or a test over "
                            f"{len(values)} rows would overflow (scores must be within +-{limit:.3g}); fix or rescale "
                            "the scores, or make them missing (NaN)")


def check_test_settings(settings: Any) -> None:
    """``settings`` must be a :class:`~styleeval.stats.TestSettings` (whose fields are checked when it is made)."""
    if not isinstance(settings, TestSettings):
        raise UserError(f"settings must be a styleeval.stats.TestSettings (test, alpha, n_boot, trials, seed), got "
                        f"{settings!r:.60}")


def compare_systems(
    scores: pd.DataFrame,
    signatures: Mapping[str, str],
    higher_is_better: Mapping[str, bool] | None = None,
    *,
    settings: TestSettings = DEFAULT_SETTINGS,
    sort_by: str | None = None,
    notes: list[str] | None = None,
    log: Callable[[str], None] | None = None,
    corpus: Mapping[str, CorpusInputs] | None = None,
    progress: bool | None = None,
    baselines: Sequence[str] | None = None,
    test_baselines: bool = False,
) -> SystemsReport:
    """The comparison part of :func:`evaluate_systems`, on per-row scores already computed: ``scores`` has the
    columns ``row``, ``system``, ``source_id`` and one column per metric (or ``human_*`` rating), one row per
    (system, source_id) and no infinite or overflowing score (``UserError`` naming the rows otherwise).

    Per metric, systems are compared on the sources every scored system has (a note names what is left out). A
    system's ``score`` is the mean of its row scores, or for metrics in ``corpus`` sacrebleu's corpus score of its
    rewrites (CI: bootstrap over rows recomputing it; paired tests on sacrebleu's draws, :func:`stats.compare_corpus`).
    Resamples and shuffles are drawn over the sources in the order they first appear in ``scores`` (sacrebleu's: the
    line order of its files), whatever the ids look like.
    Systems are ranked by score and clustered by WMT's rule on the Holm-adjusted p-values. When no pair of a metric
    can be significant (the smallest p its test can give, times Holm's factor for the number of pairs, exceeds
    ``alpha``), a note says so. ``settings``: the test, ``alpha``, ``n_boot``, ``trials`` and ``seed``
    (:class:`~styleeval.stats.TestSettings`). ``progress``: a bar over the metrics compared (``None``: where stderr
    is a terminal).

    ``baselines``: systems of ``scores`` that are reference points, not systems (default: those of
    :data:`~styleeval.systems.inputs.BASELINES`, the copy of the source and a human reference, that ``scores`` has:
    a report's ``scores`` compared again give its numbers). Each gets its score and CI per metric on the sources the
    systems are compared on (those it has a score on), in ``report.baselines``, and is left out of the coverage, the
    tests, the clusters and the agreement; with ``test_baselines`` they are compared as systems (marked in
    ``report.baseline_names`` all the same)."""
    check_test_settings(settings)
    notes = [] if notes is None else notes
    corpus = dict(corpus or {})
    labels = [c for c in scores.columns if c not in ("row", "system", "source_id")]
    _check_scores(scores, labels)
    better = {c: True for c in labels}
    better.update(higher_is_better or {})
    signatures = dict(signatures)
    note = noter(notes, log)
    sort_by = sort_by or labels[0]
    if sort_by not in labels:
        raise UserError(f"sort_by (--sort-by) {sort_by!r} is not among the metrics ({', '.join(labels)})")

    present = set(scores["system"])
    baselines = [b for b in dict.fromkeys(BASELINES if baselines is None else baselines) if b in present]
    aside = [] if test_baselines else baselines  # the baselines shown beside the systems, not compared
    compared = scores[~scores["system"].isin(aside)] if aside else scores
    systems = sorted(compared["system"].unique())
    if not systems:
        raise UserError(f"no system to compare: every row is a baseline's ({', '.join(baselines)})")
    if len(systems) == 1:
        note(f"only one system ({systems[0]}): nothing to compare, no pairs")
    coverage = coverage_of(compared)
    if coverage.cut:
        note(coverage.note())
    appearance = _first_appearance(scores)
    system_rows, pair_rows, aggregates, baseline_rows = [], [], {}, []
    test_signatures: dict[str, str] = {}
    for label in shown.bar(labels, desc="comparing systems", unit="metric", progress=progress):
        inputs = corpus.get(label)
        aggregates[label] = "corpus" if inputs is not None else "mean"
        per_system = {s: _in_input_order(part, appearance)  # every system's rows in one source order
                      for s, part in _shared_sources(scores, label, systems, coverage, note).items()}
        n = len(next(iter(per_system.values()))) if per_system else 0
        pairs = list(itertools.combinations(per_system, 2))
        if not n:
            for a, b in pairs:
                note(f"{label}: systems {a} and {b} share no scored source; not paired")
            pairs = []
        comparison = _comparison(label, inputs, per_system, pairs, n, settings)
        system_rows += [_system_row(scores, label, s, per_system.get(s), comparison, aggregates[label], note)
                        for s in systems]
        metric_pairs = [_pair_row(label, a, b, per_system[a], per_system[b], comparison) for a, b in pairs]
        for pair, adjusted in zip(metric_pairs, stats.holm([p["p"] for p in metric_pairs]), strict=True):
            pair["p_adjusted"] = adjusted
            pair["significant"] = bool(adjusted <= settings.alpha)
        if metric_pairs:
            test_signatures[label] = str(stats.paired_test_signature(
                settings.test, aggregates[label], settings.trials, settings.n_boot, settings.seed,
                exact=2**n <= settings.trials))
            floor = min(r.p_min for r in comparison.pairs.values())
            _note_out_of_reach(label, n, len(metric_pairs), floor, settings, note)
        pair_rows += metric_pairs
        shared = set(next(iter(per_system.values()))["source_id"]) if per_system else set()
        for baseline in aside if not label.startswith(HUMAN_PREFIX) else ():  # a baseline has no human rating
            part = _in_input_order(_baseline_part(scores, label, baseline, shared), appearance)
            result = (_comparison(label, inputs, {baseline: part}, [], len(part), settings) if len(part)
                      else stats.CorpusComparison({}, {}))
            baseline_rows.append(_system_row(scores, label, baseline, part, result, aggregates[label], note))
            if 0 < len(part) < n:
                note(f"{label}: the baseline {baseline} has a score on {len(part)} of the {n} sources the systems "
                     "are compared on; its score is over those")
    systems_frame = pd.DataFrame(system_rows, columns=SYSTEM_COLUMNS[:-1])
    pairs_frame = pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)
    report = SystemsReport(systems_frame, pairs_frame, scores, signatures, better, notes, settings.test,
                           settings.alpha, sort_by,
                           pd.DataFrame(), aggregates, test_signatures, coverage=coverage)
    clusters = {m: _clusters(report, m) for m in labels}
    systems_frame["cluster"] = [clusters[m].get(s, np.nan) for s, m in zip(systems_frame["system"],
                                                                           systems_frame["metric"], strict=True)]
    report.baselines = pd.DataFrame(baseline_rows, columns=SYSTEM_COLUMNS[:-1]).assign(cluster=np.nan)
    report.baseline_names = baselines
    report.baselines_tested = bool(test_baselines and baselines)
    report.agreement = agreement_frame(report, corpus)
    return report


def _baseline_part(scores: pd.DataFrame, label: str, baseline: str, shared: set[str]) -> pd.DataFrame:
    """A baseline's scored rows of ``label`` on the ``shared`` sources (those the systems are compared on), with
    ``_i`` (their positions in ``scores``), as :func:`_shared_sources` gives a system's."""
    frame = scores[["system", "source_id", label]].assign(_i=np.arange(len(scores)))
    keep = ((frame["system"] == baseline) & frame["source_id"].isin(shared)
            & pd.to_numeric(frame[label], errors="coerce").notna())
    return frame[keep.to_numpy()]


def _first_appearance(scores: pd.DataFrame) -> np.ndarray:
    """Each row's source as the rank of its first appearance in ``scores``: the order the input gives the sources,
    which is sacrebleu's (the line order of its files), whatever the ids look like ("10" sorts before "2")."""
    return pd.factorize(scores["source_id"], use_na_sentinel=False)[0]


def _in_input_order(part: pd.DataFrame, appearance: np.ndarray) -> pd.DataFrame:
    """A system's rows (with ``_i``, their positions in ``scores``) in the order their sources first appear: every
    resample and shuffle is drawn over the sources in this order."""
    return part.iloc[np.argsort(appearance[part["_i"].to_numpy()], kind="stable")]


def _shared_sources(scores: pd.DataFrame, label: str, systems: list[str], coverage: Coverage,
                    note: Callable[[str], None]) -> dict[str, pd.DataFrame]:
    """Each scored system's rows of ``label`` (columns system, source_id, the score, ``_i`` = the row's position in
    ``scores``) on the sources every scored system has. Where the metric's own cut is not the input's (``coverage``,
    said once for every metric), a note names the systems that cause it: those with no score on sources that other
    scored systems have."""
    frame = scores[["system", "source_id", label]].assign(_i=np.arange(len(scores)))
    frame = frame[pd.to_numeric(frame[label], errors="coerce").notna()]
    source = pd.factorize(frame["source_id"])[0]  # sources as integers: set operations at numpy speed
    of_system = {s: (frame["system"] == s).to_numpy() for s in systems}
    scored = [s for s in systems if of_system[s].any()]
    for s in sorted(set(systems) - set(scored)):
        note(f"{label}: system {s} has no scored row; it is not ranked or paired")
    common = functools.reduce(np.intersect1d, (source[of_system[s]] for s in scored)) if scored \
        else np.empty(0, dtype=source.dtype)
    shared = np.isin(source, common)
    if (~shared).any() and len(common) != coverage.shared:
        lacking = lacking_sources(frame["system"].astype(str).to_numpy(), frame["source_id"].astype(str).to_numpy(),
                                  scored)
        total = len(np.unique(source))
        who = ", ".join(f"{s} has none on {len(m)}{f' of {total}' if not k else ''} ("
                        f"{', '.join(repr(e) for e in m[:Coverage.EXAMPLES])}{', ...' if len(m) > Coverage.EXAMPLES else ''})"
                        for k, (s, m) in enumerate(lacking.items()))
        note(f"{label}: scores are missing on some sources: {who}; {label} compares the systems on the "
             f"{len(common)} of {counted(total, 'scored source')} that every scored system has: "
             f"{int(shared.sum())} of {counted(len(frame), 'scored row')}")
    return {s: frame[of_system[s] & shared] for s in scored}


def _comparison(label: str, inputs: CorpusInputs | None, per_system: Mapping[str, pd.DataFrame],
                pairs: list[tuple[str, str]], n: int, settings: TestSettings) -> stats.CorpusComparison:
    """Every system's score of ``label`` with its bootstrap CI and the tests of ``pairs``, one structure whatever
    the aggregate: a corpus metric's from its rows' statistics (:func:`_corpus_comparison`), a mean's (a human
    rating's too) by the tests of a mean (:func:`_mean_comparison`; their draws are not sacrebleu's)."""
    if inputs is None:
        return _mean_comparison(label, per_system, pairs, n, settings)
    return _corpus_comparison(inputs, per_system, pairs, settings) if n else stats.CorpusComparison({}, {})


def _corpus_comparison(inputs: CorpusInputs, per_system: Mapping[str, pd.DataFrame], pairs: list[tuple[str, str]],
                       settings: TestSettings) -> stats.CorpusComparison:
    """Corpus scores, CIs and paired tests of a corpus metric: each system's sentence statistics read once, every
    system resampled and shuffled in one matrix product (:func:`stats.compare_corpus` with the metric's score)."""
    statistics = {s: inputs.statistics(part["_i"]) for s, part in per_system.items()}
    return stats.compare_corpus(inputs.metric.score, statistics, pairs, test=settings.test, trials=settings.trials,
                                n_boot=settings.n_boot, seed=settings.seed)


def _mean_comparison(label: str, per_system: Mapping[str, pd.DataFrame], pairs: list[tuple[str, str]], n: int,
                     settings: TestSettings) -> stats.CorpusComparison:
    """Means of the row scores with their bootstrap CIs, and each pair's test of a difference of means (the
    sign-flip test or the paired bootstrap of the mean difference; ``p_min``: :func:`_mean_test_floor`)."""
    systems = {}
    for system, part in per_system.items():
        values = part[label].to_numpy(float)
        low, high = stats.bootstrap_mean_ci(values, n_boot=settings.n_boot, seed=settings.seed)
        systems[system] = (float(values.mean()) if len(values) else math.nan, low, high)
    floor = _mean_test_floor(n, settings) if pairs else math.nan
    results = {}
    for a, b in pairs:
        va, vb = per_system[a][label].to_numpy(float), per_system[b][label].to_numpy(float)
        low, high, p_boot = stats.paired_bootstrap_mean(va, vb, n_boot=settings.n_boot, seed=settings.seed)
        p = stats.approximate_randomization(va, vb, trials=settings.trials, seed=settings.seed) \
            if settings.test == "ar" else p_boot
        results[(a, b)] = stats.PairResult(systems[a][0], systems[b][0], float((va - vb).mean()), low, high, p, floor)
    return stats.CorpusComparison(systems, results)


def _system_row(scores: pd.DataFrame, label: str, system: str, part: pd.DataFrame | None,
                comparison: stats.CorpusComparison, aggregate: str, note: Callable[[str], None]) -> dict[str, Any]:
    """One line of ``systems.csv``: the system's score (corpus or mean) with its bootstrap CI."""
    values = part[label].to_numpy(float) if part is not None else np.array([])
    score, low, high = comparison.systems.get(system, (math.nan, math.nan, math.nan))
    if len(values) == 1:
        note(f"{label}: system {system} has one scored row; its confidence interval is undefined")
    return {"system": system, "metric": label, "aggregate": aggregate,
            "n": len(values), "n_missing": int((scores["system"] == system).sum()) - len(values), "score": score,
            "mean": float(values.mean()) if len(values) else math.nan, "ci_low": low, "ci_high": high}


def _pair_row(label: str, a: str, b: str, part_a: pd.DataFrame, part_b: pd.DataFrame,
              comparison: stats.CorpusComparison) -> dict[str, Any]:
    """One line of ``pairs.csv`` (before Holm; the two systems' rows in the same source order)."""
    va, vb = part_a[label].to_numpy(float), part_b[label].to_numpy(float)
    pair = {"metric": label, "system_a": a, "system_b": b, "n_pairs": len(va), "mean_a": float(va.mean()),
            "mean_b": float(vb.mean())}
    result = comparison.pairs[(a, b)]
    pair.update({k: getattr(result, k) for k in ("score_a", "score_b", "delta", "ci_low", "ci_high", "p")})
    return pair


def _mean_test_floor(n: int, settings: TestSettings) -> float:
    """The smallest p the test of a mean-aggregated metric can give on ``n`` paired rows, whatever they hold."""
    if settings.test == "ar":
        return stats.sign_flip_floor(n, settings.trials, settings.seed)
    return 2 / (settings.n_boot + 1)  # stats.paired_bootstrap_mean's p with no resample on the other side


def _note_out_of_reach(label: str, n: int, pairs: int, floor: float, settings: TestSettings,
                       note: Callable[[str], None]) -> None:
    """The note when no pair of a metric can be significant: the smallest p its test can give with ``n`` paired
    sources (``floor``), times Holm's factor for ``pairs`` pairs (the smallest adjusted p is at least that), exceeds
    alpha. One rule for every statistic (mean, corpus, human ratings; AR and bootstrap)."""
    adjusted = min(1.0, pairs * floor)
    if adjusted > settings.alpha:
        holm = f" ({pairs} pairs: {adjusted:.3g} after Holm's adjustment)" if pairs > 1 else ""
        note(f"{label}: with {n} paired sources the {settings.test} test cannot give p below {floor:.3g}{holm}, "
             f"above alpha = {settings.alpha:g}: no pair can be significant")


def _clusters(report: SystemsReport, metric: str) -> dict[str, int]:
    """WMT's clusters of the ranking: ``better(a, b)`` when the pair is significant and its difference favours a."""
    sign = 1.0 if report.higher_is_better.get(metric, True) else -1.0
    better = set()
    for r in report.pairs.itertuples():
        if r.metric == metric and r.significant:
            better.add((r.system_a, r.system_b) if sign * r.delta > 0 else (r.system_b, r.system_a))
    return stats.significance_clusters(report.ranking(metric), lambda a, b: (a, b) in better)


def noter(notes: list[str], log: Callable[[str], None] | None) -> Callable[[str], None]:
    """``note(message)``: kept in ``notes`` and passed to ``log`` as it happens."""
    def note(message: str) -> None:
        notes.append(message)
        if log is not None:
            log(message)

    return note
