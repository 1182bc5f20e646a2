"""A metrics leaderboard at the WMT standard: for every corpus and human dimension of a run, every metric's
tie-calibrated pairwise accuracy acc_eq (grouped by source where a corpus has several systems per source), its
system-level pairwise accuracy and soft pairwise accuracy where the corpus has systems, and Spearman's rho; metrics
ranked per statistic and clustered (a new cluster starts at the first metric significantly worse than the best of
the current cluster, PERM-BOTH, one-sided p < alpha). ``--scores`` files enter like any metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from styleeval.metaeval.pairwise import (
    pairwise_accuracy,
    perm_both,
    soft_pairwise_accuracy,
    tie_calibrated_accuracy,
)
from styleeval.metaeval.runner import MetaevalResult
from styleeval.systems.stats import significance_clusters

COLUMNS = ["corpus", "dimension", "statistic", "metric", "value", "ci_low", "ci_high", "rank", "cluster", "n",
           "signature"]
MIN_SYSTEMS = 3


def _spearman(h: np.ndarray, m: np.ndarray) -> float:
    return float(scipy_stats.spearmanr(h, m).statistic) if len(h) > 2 and np.ptp(m) > 0 else math.nan


def _statistics(result: MetaevalResult, dataset: str) -> dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray],
                                                                         float]]:
    """statistic name -> f(human, metric, row indices) for this corpus."""
    sources = np.asarray(result.groups.get(dataset, []), dtype=object)
    systems = np.asarray(result.systems.get(dataset, []), dtype=object)
    per_source = pd.Series(systems).groupby(pd.Series(sources)).nunique() if len(systems) else pd.Series([], float)
    grouped = len(per_source) > 0 and per_source.max() > 2  # several systems per source (Lai's design)
    out: dict[str, Callable] = {
        "acc_eq": lambda h, m, idx: tie_calibrated_accuracy(h, m, sources[idx] if grouped else None)[0],
        "spearman": lambda h, m, idx: _spearman(h, m),
    }
    real_systems = result.dataset_kinds.get(dataset) != "testset"  # the test set's "systems" are rewrite types
    if real_systems and len(set(systems)) >= MIN_SYSTEMS and len(set(systems)) < len(systems) / 2:

        def means(v: np.ndarray, idx: np.ndarray) -> dict[str, float]:
            return pd.Series(v).groupby(systems[idx]).mean().to_dict()

        out["system_pairwise_accuracy"] = lambda h, m, idx: pairwise_accuracy(means(h, idx), means(m, idx))

        def spa(h: np.ndarray, m: np.ndarray, idx: np.ndarray) -> float:
            keys = systems[idx]
            items = {s: (keys == s) for s in set(keys)}  # each system's items, aligned on the source ids
            return soft_pairwise_accuracy({s: dict(zip(sources[idx][mask], h[mask])) for s, mask in items.items()},
                                          {s: dict(zip(sources[idx][mask], m[mask])) for s, mask in items.items()},
                                          trials=200)[0]

        out["soft_pairwise_accuracy"] = spa
    return out


def build_leaderboard(results: Sequence[MetaevalResult], trials: int = 200, seed: int = 0,
                      alpha: float = 0.05) -> pd.DataFrame:
    """The leaderboard of one or more runs (one per human dimension) as a DataFrame with :data:`COLUMNS`."""
    rows = []
    for result in results:
        for dataset in result.dataset_kinds:
            human = result.human.get(dataset)
            names = [m for m in result.metrics if (dataset, m) in result.scores]
            if human is None or not names:
                continue
            for statistic, fn in _statistics(result, dataset).items():
                values, counts = {}, {}
                for name in names:
                    m = result.scores[dataset, name]
                    idx = np.flatnonzero(np.isfinite(human) & np.isfinite(m))
                    if len(idx) < 3:
                        continue
                    values[name] = fn(human[idx], m[idx], idx)
                    counts[name] = len(idx)
                ranked = [n for n in sorted(values, key=lambda n: -values[n]) if math.isfinite(values[n])]

                def worse(head: str, other: str, fn=fn, h=human, scores=result.scores, dataset=dataset) -> bool:
                    x, y = scores[dataset, head], scores[dataset, other]
                    keep = np.flatnonzero(np.isfinite(h) & np.isfinite(x) & np.isfinite(y))
                    p = perm_both(lambda hh, mm: fn(hh, mm, keep), h[keep], x[keep], y[keep], trials=trials,
                                  seed=seed)
                    return p < alpha

                clusters = significance_clusters(ranked, worse) if statistic != "soft_pairwise_accuracy" else \
                    {n: math.nan for n in ranked}  # SPA's own p-values make PERM-BOTH on it too slow to be useful
                for rank, name in enumerate(ranked, start=1):
                    rows.append({"corpus": dataset, "dimension": result.dimension, "statistic": statistic,
                                 "metric": name, "value": values[name], "ci_low": math.nan, "ci_high": math.nan,
                                 "rank": rank, "cluster": clusters[name], "n": counts[name],
                                 "signature": result.signatures.get(name, "")})
            _add_spearman_ci(rows, result, dataset)
    return pd.DataFrame(rows, columns=COLUMNS)


def _add_spearman_ci(rows: list[dict], result: MetaevalResult, dataset: str) -> None:
    """The run's bootstrap CI of Spearman's rho (its correlation table, subset ``all``) on the Spearman rows."""
    table = result.correlations
    if not len(table):
        return
    mine = table[(table["dataset"] == dataset) & (table["subset"] == "all")].set_index("metric")
    for row in rows:
        if row["corpus"] == dataset and row["statistic"] == "spearman" and row["metric"] in mine.index \
                and row["dimension"] == result.dimension:
            row["ci_low"], row["ci_high"] = float(mine.loc[row["metric"], "ci_low"]), \
                float(mine.loc[row["metric"], "ci_high"])


def leaderboard_markdown(board: pd.DataFrame) -> str:
    """One table per corpus and dimension: metrics as rows, statistics as columns ("value (rank/cluster)")."""
    from styleeval.metaeval.labels import DATASET_LABELS, metric_label

    out = ["# Metrics leaderboard", "",
           "Each cell: value (cluster). Clusters per statistic: a new one starts at the first metric significantly "
           "worse than the best of the current one (PERM-BOTH, one-sided p < 0.05). acc_eq: tie-calibrated pairwise "
           "accuracy (grouped by source where a corpus has several systems per source); system_pairwise_accuracy and "
           "soft_pairwise_accuracy: system level. Definitions: docs/metaeval.md.", ""]
    for (corpus, dimension), part in board.groupby(["corpus", "dimension"], sort=False):
        stats = list(dict.fromkeys(part["statistic"]))
        first = part[part["statistic"] == stats[0]].sort_values("rank")
        out += [f"## {DATASET_LABELS.get(corpus, corpus)}: {dimension}", "",
                "| metric | " + " | ".join(stats) + " | n |", "|" + "---|" * (len(stats) + 2)]
        for metric in first["metric"]:
            cells = []
            for s in stats:
                r = part[(part["statistic"] == s) & (part["metric"] == metric)]
                if r.empty:
                    cells.append("–")
                    continue
                r = r.iloc[0]
                cluster = f" ({int(r.cluster)})" if math.isfinite(r.cluster) else ""
                cells.append(f"{r.value:.3f}{cluster}")
            n = int(first[first["metric"] == metric]["n"].iloc[0])
            out.append(f"| {metric_label(metric)} | " + " | ".join(cells) + f" | {n} |")
        out.append("")
    return "\n".join(out)


def write_leaderboard(board: pd.DataFrame, out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """``leaderboard.csv``, ``leaderboard.md`` and ``leaderboard.png`` (acc_eq per corpus and dimension)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "leaderboard.csv", "md": out / "leaderboard.md"}
    board.to_csv(paths["csv"], index=False)
    paths["md"].write_text(leaderboard_markdown(board), encoding="utf-8")
    acc = board[board["statistic"] == "acc_eq"]
    if plots and len(acc):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = list(acc.groupby(["corpus", "dimension"], sort=False))
        fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.5), squeeze=False)
        for ax, ((corpus, dimension), part) in zip(axes[0], panels):
            part = part.sort_values("rank")
            colors = [f"C{int(c) - 1}" if math.isfinite(c) else "grey" for c in part["cluster"]]
            ax.barh(part["metric"][::-1], part["value"][::-1], color=colors[::-1])
            ax.set_title(f"{corpus}: {dimension}", fontsize=9)
            ax.set_xlabel("acc_eq (colour: cluster)")
        fig.tight_layout()
        paths["png"] = out / "leaderboard.png"
        fig.savefig(paths["png"], dpi=110)
        plt.close(fig)
    return paths
