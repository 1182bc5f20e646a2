"""A metrics leaderboard at the WMT standard: for every corpus and human dimension of a run, every metric's value of
every registered statistic that applies to the corpus (:mod:`styleeval.metaeval.statistics`: acc_eq, Spearman,
system-level pairwise accuracy, soft pairwise accuracy); metrics ranked per statistic and clustered (a new cluster
starts at the first metric significantly worse than the best of the current cluster, PERM-BOTH, one-sided
p < alpha). ``--scores`` files enter like any metric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval.metaeval.runner import MetaevalResult
from styleeval.metaeval.statistics import STATISTICS, Corpus
from styleeval.stats.clusters import significance_clusters
from styleeval.stats.pairwise import perm_both

COLUMNS = ["corpus", "dimension", "statistic", "metric", "value", "ci_low", "ci_high", "rank", "cluster", "n",
           "signature"]


def _corpus(result: MetaevalResult, dataset: str) -> Corpus:
    return Corpus(dataset, result.dataset_kinds.get(dataset, ""),
                  np.asarray(result.groups.get(dataset, []), dtype=object),
                  np.asarray(result.systems.get(dataset, []), dtype=object))


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
            corpus = _corpus(result, dataset)
            for statistic in STATISTICS.values():
                if not statistic.applies(corpus):
                    continue
                fn = statistic.compute
                values, counts = {}, {}
                for name in names:
                    m = result.scores[dataset, name]
                    idx = np.flatnonzero(np.isfinite(human) & np.isfinite(m))
                    if len(idx) < 3:
                        continue
                    values[name] = fn(corpus, human[idx], m[idx], idx)
                    counts[name] = len(idx)
                ranked = [n for n in sorted(values, key=lambda n: -values[n]) if math.isfinite(values[n])]

                def worse(head: str, other: str, fn=fn, h=human, scores=result.scores, dataset=dataset,
                          corpus=corpus) -> bool:
                    x, y = scores[dataset, head], scores[dataset, other]
                    keep = np.flatnonzero(np.isfinite(h) & np.isfinite(x) & np.isfinite(y))
                    p = perm_both(lambda hh, mm: fn(corpus, hh, mm, keep), h[keep], x[keep], y[keep],
                                  trials=trials, seed=seed)
                    return p < alpha

                clusters = significance_clusters(ranked, worse) if statistic.clustered else \
                    {n: math.nan for n in ranked}
                for rank, name in enumerate(ranked, start=1):
                    rows.append({"corpus": dataset, "dimension": result.dimension, "statistic": statistic.name,
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
    from styleeval.labels import dataset_label, metric_label

    used = list(dict.fromkeys(board["statistic"]))
    out = ["# Metrics leaderboard", "",
           "Each cell: value (cluster). Clusters per statistic: a new one starts at the first metric significantly "
           "worse than the best of the current one (PERM-BOTH, one-sided p < 0.05). Definitions: docs/metaeval.md.",
           "", *[f"- {s}: {STATISTICS[s].description}" for s in used if s in STATISTICS], ""]
    for (corpus, dimension), part in board.groupby(["corpus", "dimension"], sort=False):
        stats = list(dict.fromkeys(part["statistic"]))
        first = part[part["statistic"] == stats[0]].sort_values("rank")
        out += [f"## {dataset_label(corpus)}: {dimension}", "",
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
