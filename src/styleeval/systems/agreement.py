"""The system-level agreement of each metric with the human ratings of the input (``human_<dimension>``), over
like sets of systems and rows (:func:`agreement_frame`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from styleeval import stats
from styleeval.labels import system_statistic
from styleeval.systems.inputs import CorpusInputs
from styleeval.systems.report import HUMAN_PREFIX, SystemsReport

if TYPE_CHECKING:
    pass



AGREEMENT_COLUMNS = ["human", "metric", "aggregate", "system_score", "negated", "n_systems", "n_rows", "pearson", "pairwise_accuracy",
                     "left_out", "n_systems_own", "pearson_own", "pairwise_accuracy_own"]


def agreement_frame(report: SystemsReport, corpus: Mapping[str, CorpusInputs]) -> pd.DataFrame:
    """System-level agreement of every metric with every human dimension, over like sets: per human dimension, every
    metric on the same systems and rows, those where every metric (that scores any row) and the rating have a
    score, on the sources every such system has (``n_systems``, ``n_rows``; ``left_out`` names the systems left out
    and why). A system's score there is what the systems table computes (``aggregate``: sacrebleu's corpus score or
    the mean of the row scores), recomputed on those rows where they are fewer than the table's; ``pearson`` is
    Pearson's r of the system scores, ``pairwise_accuracy`` the share of system pairs ordered as the humans order
    them (human ties as WMT's Agreement); ``system_score`` names the statistic (``corpus BLEU``, ``mean sentence
    BLEU``, ``mean row score``: :func:`~styleeval.labels.system_statistic`). Lower-is-better metrics are negated (``negated``). ``*_own``: each metric
    on its own systems and rows (the systems table's scores), comparable across metrics only where
    ``n_systems_own`` equals ``n_systems``."""
    humans = [m for m in report.metrics if m.startswith(HUMAN_PREFIX)]
    scored = set(report.systems.loc[report.systems["n"] > 0, "metric"])
    metrics = [m for m in report.signatures if m in scored]
    own = report.systems.pivot(index="system", columns="metric", values="score")
    rows = []
    for human in humans:
        aside = set() if report.baselines_tested else set(report.baseline_names)
        mask, left_out = _like_rows(report.scores, [*metrics, human], aside)
        positions = np.flatnonzero(mask)
        human_scores = _scores_on(report.scores, human, positions, None, own)
        for metric in metrics:
            sign = 1.0 if report.higher_is_better.get(metric, True) else -1.0
            values = _scores_on(report.scores, metric, positions, corpus.get(metric), own, aside)
            r, accuracy = _system_agreement(human_scores, sign * values)
            both = own[[human, metric]].dropna()
            r_own, accuracy_own = _system_agreement(both[human], sign * both[metric])
            aggregate = report.aggregates.get(metric, "mean")
            rows.append({"human": human, "metric": metric, "aggregate": aggregate,
                         "system_score": system_statistic(aggregate, report.signatures.get(metric, "")).label,
                         "negated": sign < 0, "n_systems": len(human_scores), "n_rows": int(mask.sum()),
                         "pearson": r, "pairwise_accuracy": accuracy, "left_out": left_out,
                         "n_systems_own": len(both), "pearson_own": r_own, "pairwise_accuracy_own": accuracy_own})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _like_rows(scores: pd.DataFrame, columns: list[str], aside: set[str] | frozenset[str] = frozenset()
               ) -> tuple[np.ndarray, str]:
    """The rows where every one of ``columns`` has a score, on the sources every system with such a row has; and
    which systems that leaves out, and why (``"reference (no r_chrf score)"``; ``""``: none). The systems ``aside``
    (baselines, not compared) are left out unsaid."""
    values = scores[columns].apply(pd.to_numeric, errors="coerce")
    systems = scores["system"].to_numpy()
    complete = values.notna().all(axis=1).to_numpy() & ~np.isin(systems, list(aside))
    kept = sorted(set(systems[complete]))
    per_source = pd.Series(systems[complete]).groupby(scores["source_id"].to_numpy()[complete]).nunique()
    common = per_source.index[per_source.to_numpy() == len(kept)]
    mask = complete & scores["source_id"].isin(common).to_numpy()
    reasons = []
    for system in sorted(set(systems) - set(kept) - set(aside)):
        mine = values[systems == system]
        unscored = [c for c in columns if mine[c].isna().all()]
        reasons.append(f"{system} (no {', '.join(unscored)} score)" if unscored else
                       f"{system} (no row that every metric and the rating score)")
    return mask, ", ".join(reasons)


def _scores_on(scores: pd.DataFrame, metric: str, positions: np.ndarray, inputs: CorpusInputs | None,
               own: pd.DataFrame, aside: set[str] | frozenset[str] = frozenset()) -> pd.Series:
    """Each system's score of ``metric`` on the rows at ``positions`` of ``scores``: the mean of their row scores, or
    the corpus score: the systems table's where its rows are these (the rows :func:`_shared_sources` compares),
    else recomputed on these."""
    systems = scores["system"].to_numpy()
    if inputs is None:
        values = pd.to_numeric(scores[metric], errors="coerce").to_numpy(float)
        return pd.Series(values[positions]).groupby(systems[positions]).mean()
    table_rows = np.flatnonzero(_like_rows(scores, [metric], aside)[0])
    out = {}
    for system in sorted(set(systems[positions])):
        rows = positions[systems[positions] == system]
        if np.array_equal(rows, table_rows[systems[table_rows] == system]):
            out[system] = float(own.loc[system, metric])
        else:
            out[system] = stats.score_of_rows(inputs.metric.score, inputs.statistics(rows))
    return pd.Series(out, dtype=float)


def _system_agreement(human: pd.Series, metric: pd.Series) -> tuple[float, float]:
    """Pearson's r of two system -> score series (NaN below 3 systems) and their pairwise accuracy."""
    both = pd.concat([human.rename("h"), metric.rename("m")], axis=1).dropna()
    r = stats.pearson(both["h"], both["m"]) if len(both) > 2 else math.nan
    return r, stats.pairwise_accuracy(both["h"].to_dict(), both["m"].to_dict())
