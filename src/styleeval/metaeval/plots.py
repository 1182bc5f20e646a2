"""Bar charts of a meta-evaluation (matplotlib, Agg backend): Figure 2 style groups, tasks, datasets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval.metaeval.grouping import Group, group_averages


def _bars(matrix: pd.DataFrame, title: str, path: Path, ylabel: str = "Spearman correlation") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from styleeval.metaeval.report import metric_label

    matrix = matrix.dropna(how="all")
    n_bars = len(matrix.columns) * max(1, len(matrix))
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 2.0 + 0.18 * n_bars)), 4.5))
    if matrix.empty:
        ax.text(0.5, 0.5, "no correlations to plot", ha="center", va="center", transform=ax.transAxes)
    else:
        n_metrics = len(matrix)
        width = 0.8 / n_metrics
        x = np.arange(len(matrix.columns))
        for k, (metric, row) in enumerate(matrix.iterrows()):
            ax.bar(x + (k - (n_metrics - 1) / 2) * width, row.to_numpy(dtype=float), width,
                   label=metric_label(str(metric)))
        ax.set_xticks(x)
        ax.set_xticklabels([str(c) for c in matrix.columns], rotation=20, ha="right")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.legend(fontsize=7, ncol=2, frameon=False)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_groups(result, groups: Sequence[Group], path: str | Path) -> Path:
    """Average correlation per metric and group (system / reference / test set), like the paper's Figure 2."""
    avg = group_averages(result.correlations, groups, result.metrics)
    avg.columns = [g.title for g in groups]
    return _bars(avg, f"Average correlation per data group ({result.dimension})", Path(path))


def plot_tasks(result, path: str | Path) -> Path:
    """Correlation per task of the constructed test set (and its ALL column)."""
    corr = result.correlations
    cols = [("all", "ALL")]
    for ds, tasks in result.task_subsets.items():
        if result.dataset_kinds.get(ds) == "testset":
            cols += [(t, t) for t in tasks]
    test = corr[corr.dataset.map(lambda d: result.dataset_kinds.get(d) == "testset")]
    mat = pd.DataFrame(np.nan, index=result.metrics, columns=[c for _, c in cols])
    for r in test.itertuples():
        for subset, label in cols:
            if r.subset == subset:
                mat.loc[r.metric, label] = r.spearman
    return _bars(mat, f"Test set: correlation per task ({result.dimension})", Path(path))


def plot_datasets(result, path: str | Path) -> Path:
    """Correlation on all rated rows of each dataset."""
    corr = result.correlations
    mat = pd.DataFrame(np.nan, index=result.metrics, columns=list(result.dataset_kinds))
    for r in corr[corr.subset == "all"].itertuples():
        mat.loc[r.metric, r.dataset] = r.spearman
    return _bars(mat, f"Correlation per dataset ({result.dimension})", Path(path))
