"""Bar charts of a meta-evaluation (matplotlib, Agg backend): Figure 2 style groups, tasks, datasets."""

from __future__ import annotations

import itertools
import math
import textwrap
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval.figures import fit_title, save_figure
from styleeval.labels import (
    dataset_label,
    figure_metric_label,
    mark_figure,
    metric_label,
    random_weight_metrics,
    signed_label,
)
from styleeval.metaeval.data import DIMENSIONS
from styleeval.metaeval.grouping import Group, group_averages
from styleeval.stats.correlation import spearman

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#800000", "#fdae6b", "#f0027f", "#393b79", "#808000", "#6baed6", "#bcbddc", "#d6616b",
           "#f032e6", "#7fc97f")
"""The metrics' colours: matplotlib's tab10, then 10 colours each chosen among matplotlib's qualitative palettes as
the farthest from those before it (none too light for a bar on white): any two at least 67 apart in 0-255 RGB (tab10's
own closest pair; before, tab20c's darkest greens and blues sat 23-40 from tab10's: R-BLEU and S-Paper-BLEU were
two near-identical greens)."""


def metric_colors(metrics: Sequence[str]) -> dict[str, tuple]:
    """One colour per metric, chosen by its name: a metric has the same colour in every figure of every run (the
    CLI's and the Space's), whatever else is compared beside it, and two metrics of one figure never share one (up to
    20). The palette is :data:`PALETTE`; a name's colour is ``crc32(name) % 20``, and where two names of ``metrics``
    want the same colour, the later one in alphabetical order takes the next free one (the same choice in every
    figure with both).

    >>> colors = metric_colors(["s_bleu", "s_chrf", "s_paper_bleu"])
    >>> all(colors[m] == metric_colors(["logprob_content", "s_ter", m])[m] for m in colors)
    True
    """
    from matplotlib.colors import to_rgba  # noqa: PLC0415 - heavy (matplotlib)

    palette = [to_rgba(c) for c in PALETTE]
    taken: dict[int, str] = {}
    for name in sorted(set(map(str, metrics))):
        slot = zlib.crc32(name.encode("utf-8")) % len(palette)
        for step in range(len(palette)):
            if (slot + step) % len(palette) not in taken:
                slot = (slot + step) % len(palette)
                break
        taken.setdefault(slot, name)  # more than 20 metrics: colours repeat
    chosen = {name: slot for slot, name in taken.items()}
    return {m: palette[chosen.get(str(m), zlib.crc32(str(m).encode("utf-8")) % len(palette))] for m in metrics}


def _save(fig, path: str | Path) -> Path | None:
    """``fig`` written at ``path`` (in the format its extension names) and closed; ``None`` without a figure."""
    if fig is None:
        return None
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    save_figure(fig, path)
    plt.close(fig)
    return Path(path)


def _bars(matrix: pd.DataFrame, title: str, ylabel: str = "Spearman correlation",
          colors: dict[str, tuple] | None = None, low: pd.DataFrame | None = None,
          high: pd.DataFrame | None = None, result=None, rows: dict[str, list[str]] | None = None):
    """Grouped bars, one colour per metric; ``result`` labels the metrics (negated, random weights: a warning on
    the figure), ``rows`` adds to each column's tick label which rows it is on (:meth:`SharedRows.parts
    <styleeval.metaeval.runner.SharedRows.parts>`). The matplotlib figure; ``None`` when there is no correlation
    to plot."""
    matrix = matrix.dropna(how="all")
    if matrix.empty:
        return None
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    label = result.label if result is not None else metric_label
    n_bars = len(matrix.columns) * max(1, len(matrix))
    longest = max(len(str(c)) for c in matrix.columns)  # a column's name is never wrapped: each needs its room
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 2.0 + 0.18 * n_bars,
                                                  1.6 + len(matrix.columns) * (0.075 * longest + 0.3))), 4.5))
    n_metrics = len(matrix)
    width = 0.8 / n_metrics
    x = np.arange(len(matrix.columns))
    for k, (metric, row) in enumerate(matrix.iterrows()):
        values = row.to_numpy(dtype=float)
        yerr = None
        if low is not None and high is not None:  # the bootstrap 95% CI as error bars
            lo = low.loc[metric, matrix.columns].to_numpy(dtype=float)
            hi = high.loc[metric, matrix.columns].to_numpy(dtype=float)
            if np.isfinite(lo).any():
                yerr = np.vstack([np.clip(values - lo, 0, None), np.clip(hi - values, 0, None)])
                yerr = np.nan_to_num(yerr)
        ax.bar(x + (k - (n_metrics - 1) / 2) * width, values, width, label=label(str(metric)),
               color=(colors or {}).get(str(metric)), yerr=yerr, capsize=2 if yerr is not None else 0,
               error_kw={"elinewidth": 0.8})
    ax.set_xticks(x)
    ax.set_xticklabels([_tick_label(str(c), (rows or {}).get(c), 0.8 * fig.get_size_inches()[0] / len(x))
                        for c in matrix.columns], fontsize=8.5)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.legend(fontsize=7, ncol=2, frameon=False)
    ax.set_ylabel(ylabel)
    fit_title(ax, title)  # wrapped to lie inside the figure
    _separate_tick_labels(ax)
    if result is not None:
        mark_figure(fig, [m for m in result.random_weights if m in set(map(str, matrix.index))])
    return fig


def _separate_tick_labels(ax) -> None:
    """Tick labels of the x axis that overlap (columns too narrow for their names, on the widest figure) turned 30
    degrees, anchored at their right end under their column."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
    if any(a.x1 + 2 > b.x0 for a, b in itertools.pairwise(boxes)):
        for label in ax.get_xticklabels():
            label.set(rotation=30, ha="right", rotation_mode="anchor")
        fig.tight_layout()


def _tick_label(column: str, rows: list[str] | None, inches: float) -> str:
    """A column's name over which rows it is on (``(n = 100)``, or what the rows were cut to, a part a line), wrapped
    to the ``inches`` a column has (8.5 pt text)."""
    if rows is None:
        return column
    width = max(12, int(inches * 72 / (8.5 * 0.55)))
    text = "(" + ",\n".join(rows) + ")"
    return "\n".join([column, *(line for part in text.split("\n") for line in textwrap.wrap(part, width))])


def plot_groups(result, groups: Sequence[Group], path: str | Path) -> Path | None:
    """Average correlation per metric and group (system / reference / test set), like the paper's Figure 2."""
    avg = group_averages(result.correlations, groups, result.metrics)
    avg.columns = [g.title for g in groups]
    return _save(_bars(avg, f"Average correlation per data group ({result.dimension})",
                       colors=metric_colors(result.metrics), result=result), path)


def _matrices(result, rows: pd.DataFrame, columns: list[str], column_of) -> tuple[pd.DataFrame, ...]:
    """Spearman, CI low and CI high as metric x column matrices; ``column_of(row)`` names a row's column."""
    mats = [pd.DataFrame(np.nan, index=result.metrics, columns=columns) for _ in range(3)]
    for r in rows.itertuples():
        col = column_of(r)
        if col is not None and col in columns:
            for mat, value in zip(mats, (r.spearman, r.ci_low, r.ci_high), strict=True):
                mat.loc[r.metric, col] = value
    return tuple(mats)


def _rows_of(result, rows: pd.DataFrame, column_of) -> dict[str, list[str]]:
    """Each column's rows (:attr:`MetaevalResult.shared
    <styleeval.metaeval.runner.MetaevalResult.shared>`): ``n = 50``, or what they were cut to."""
    out = {}
    for r in rows.itertuples():
        col, scope = column_of(r), result.shared.get((r.dataset, r.subset))
        if col is not None and scope is not None:
            out[col] = scope.parts()
    return out


def plot_tasks(result, path: str | Path) -> Path | None:
    """:func:`tasks_figure` at ``path``; ``None`` and no file when the test set is not in the run."""
    return _save(tasks_figure(result), path)


def tasks_figure(result):
    """Correlation per task of the constructed test set (and its ALL column), with bootstrap CIs: in each column every
    metric on the same rows (``result.shared_correlations``), under the column's name which rows: ``(n = 100)``, or
    what they were cut to where fewer than all (``result.shared``). ``None`` when the test set is not in the run."""
    corr = result.shared_correlations
    labels = {"all": "ALL"}
    for ds, tasks in result.task_subsets.items():
        if result.dataset_kinds.get(ds) == "testset":
            labels.update({t: t for t in tasks})
    test = corr[corr.dataset.map(lambda d: result.dataset_kinds.get(d) == "testset")]
    column_of = lambda r: labels.get(r.subset)  # noqa: E731
    mat, low, high = _matrices(result, test, list(labels.values()), column_of)
    title = (f"Test set: correlation per task ({result.dimension})\nin each column every metric on the same rows; where "
             "these are fewer than all, which ones is written under the column")
    return _bars(mat, title, colors=metric_colors(result.metrics), low=low, high=high, result=result,
                 rows=_rows_of(result, test, column_of))


def plot_datasets(result, path: str | Path) -> Path | None:
    """:func:`datasets_figure` at ``path``."""
    return _save(datasets_figure(result), path)


def datasets_figure(result):
    """Correlation on the rated rows of each dataset (labelled as in the report), with bootstrap CIs: per dataset
    every metric on the same rows (``result.shared_correlations``), under the dataset's name which rows: ``(n =
    640)``, or what they were cut to where fewer than all (``result.shared``)."""
    corr = result.shared_correlations
    labels = {d: dataset_label(d) for d in result.dataset_kinds}
    rows = corr[corr.subset == "all"]
    column_of = lambda r: labels.get(r.dataset)  # noqa: E731
    mat, low, high = _matrices(result, rows, list(labels.values()), column_of)
    title = (f"Correlation per dataset ({result.dimension})\nin each column every metric on the same rows; where "
             "these are fewer than all, which ones is written under the column")
    return _bars(mat, title, colors=metric_colors(result.metrics), low=low, high=high, result=result,
                 rows=_rows_of(result, rows, column_of))


def metric_correlations(result) -> pd.DataFrame:
    """Spearman correlation between every two metrics over the rows both scored (all datasets pooled: each dataset's
    rows together, as one sample; scores of lower-is-better metrics negated, as in the tables). Only the metrics
    with scores (a metric that was not computed has no row or column)."""
    return _metric_correlations(result)[0]


def _metric_correlations(result) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`metric_correlations` and the number of rows behind each."""
    names = [m for m in result.metrics if any((d, m) in result.scores for d in result.dataset_kinds)]
    mat = pd.DataFrame(np.nan, index=names, columns=names)
    n = pd.DataFrame(0, index=names, columns=names)
    for a in names:
        for b in names:
            xs, ys = [], []
            for dataset in result.dataset_kinds:
                if (dataset, a) in result.scores and (dataset, b) in result.scores:
                    xs.append(result.scores[dataset, a])
                    ys.append(result.scores[dataset, b])
            if not xs:
                continue
            x, y = np.concatenate(xs), np.concatenate(ys)
            keep = np.isfinite(x) & np.isfinite(y)
            n.loc[a, b] = int(keep.sum())
            mat.loc[a, b] = spearman(x[keep], y[keep])
    return mat, n


def plot_metric_heatmap(result, path: str | Path) -> Path | None:
    """``metrics_heatmap.png`` (:func:`metric_heatmap_figure`) at ``path``, in the format its extension names;
    ``None`` and no file with fewer than two metrics scored."""
    fig = metric_heatmap_figure(result)
    if fig is None:
        return None
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    save_figure(fig, path, tight=True)
    plt.close(fig)
    return Path(path)


def metric_heatmap_figure(result):
    """The metric-vs-metric Spearman correlations (:func:`metric_correlations`) as a heatmap of the metrics with
    scores (a metric that was not computed has no empty row), each cell's value written on it (9 pt, white on the
    dark cells), the title saying which datasets it pools and on how many rows. ``None`` with fewer than two metrics
    scored. The caller saves and closes the figure (:func:`plot_metric_heatmap` crops it to what is drawn)."""
    mat, n = _metric_correlations(result)
    if len(mat) < 2:
        return None
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    size = len(mat)
    labels = [result.label(m) for m in mat.index]
    longest = max(len(label) for label in labels)
    cell = 0.55  # inches: room for "-0.25" at 9 pt
    fig, ax = plt.subplots(figsize=(cell * size + 0.075 * longest + 1.4, cell * size + 0.065 * longest + 1.1))
    values = mat.to_numpy(dtype=float)
    im = ax.imshow(values, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(size), labels, rotation=40, ha="right", rotation_mode="anchor", fontsize=9)
    ax.set_yticks(range(size), labels, fontsize=9)
    for i in range(size):
        for j in range(size):
            v = values[i, j]
            ax.text(j, i, f"{v:.2f}" if np.isfinite(v) else "–", ha="center", va="center", fontsize=9,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03).ax.tick_params(labelsize=8)
    datasets = [d for d in result.dataset_kinds if any((d, m) in result.scores for m in mat.index)]
    pairs = n.to_numpy()[~np.eye(size, dtype=bool)]
    rows = f"{pairs.min()}" if pairs.min() == pairs.max() else f"{pairs.min()}-{pairs.max()}"
    pooled = (f"the rows of {len(datasets)} datasets pooled: {', '.join(map(dataset_label, datasets))}"
              if len(datasets) > 1 else f"the rows of {', '.join(map(dataset_label, datasets))}")
    columns = int(fig.get_size_inches()[0] * 72 / (9.5 * 0.55))  # characters on a line of the title
    title = ["Metric vs metric: Spearman correlation of their scores", pooled,
             f"{rows} rows per pair (those both metrics score)"]
    ax.set_title("\n".join(textwrap.fill(line, columns) for line in title), fontsize=9.5)
    fig.tight_layout(pad=0.4)
    mark_figure(fig, [m for m in result.random_weights if m in set(mat.index)])
    return fig


def plot_lai_figures(result: pd.DataFrame, out_dir: str | Path, figure_format: str = "png") -> list[Path]:
    """Lai et al.'s Figure 3 (tau-like over the top-/last-N systems, one line per style metric; ``lai_figure3.png``)
    and Figure 4 (system r and segment tau-like of each content metric, ``lai_figure4.png``) from ``lai.csv`` rows,
    in ``figure_format`` (png, pdf, svg). A figure without rows is not written."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    out, paths = Path(out_dir), []
    fig = lai_figure3(result)
    if fig is not None:
        paths.append(save_figure(fig, out / f"lai_figure3.{figure_format}"))
        plt.close(fig)
    fig = lai_figure4(result)
    if fig is not None:
        paths.append(save_figure(fig, out / f"lai_figure4.{figure_format}"))
        plt.close(fig)
    return paths


def lai_figure4(result: pd.DataFrame):
    """Lai et al.'s Figure 4 from ``lai.csv`` rows: each content metric's system-level r and segment tau-like, the
    metrics named as on the other figures (:func:`~styleeval.labels.figure_metric_label`), blue against the source
    and orange against the reference. ``None`` without ``figure 4`` rows. The caller saves and closes the figure."""
    fig4 = result[(result["table"].astype(str) == "figure 4") & (result["subset"] == "all")]
    if fig4.empty:
        return None
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    fig, axes = plt.subplots(1, 2, figsize=(10, max(3.0, 0.35 * fig4["metric"].nunique() + 1.5)), sharey=True)
    metrics = list(dict.fromkeys(fig4["metric"]))
    y = np.arange(len(metrics))
    for ax, level, label in zip(axes, ("system", "segment"), ("System-level Pearson r", "Segment tau-like"),
                                strict=True):
        values = fig4[fig4["level"] == level].set_index("metric")["value"].reindex(metrics)
        ax.barh(y, values.to_numpy(), color=["tab:orange" if m.endswith("-ref") or m.startswith(("r_", "rs_"))
                                             else "tab:blue" for m in metrics])
        ax.set_title(label)
        ax.axvline(0, color="black", linewidth=0.5)
    axes[0].set_yticks(y, [figure_metric_label(m) for m in metrics])
    fig.suptitle("Content metrics against the source (blue) or the reference (orange)")
    fig.tight_layout()
    return fig


def lai_figure3(result: pd.DataFrame):
    """Lai et al.'s Figure 3 from ``lai.csv`` rows: each style metric's segment tau-like with the human ratings of
    the aspect it is for (style) over the top- and last-N systems, the aspect in the title. ``None`` without
    ``figure 3`` rows. The caller saves and closes the figure."""
    fig3 = result[result["table"].astype(str) == "figure 3"]
    if fig3.empty:
        return None
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    colors = metric_colors(list(dict.fromkeys(fig3["metric"])))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), sharey=True)
    for ax, which in zip(axes, ("top", "last"), strict=True):
        for metric, rows in fig3[fig3["subset"].str.startswith(which)].groupby("metric", sort=False):
            n = rows["subset"].str.split("-").str[1].astype(int)
            order = np.argsort(-n.to_numpy())
            ax.plot(n.to_numpy()[order], rows["value"].to_numpy()[order], marker="o", label=figure_metric_label(metric),
                    color=colors[metric])
        ax.set_title(f"{which.capitalize()}-N systems")
        ax.set_xlabel("N (systems sorted by human score)")
        ax.invert_xaxis()
    aspects = " and ".join(dict.fromkeys(fig3["dimension"].astype(str))) if "dimension" in fig3 else "style"
    axes[0].set_ylabel("Kendall's tau-like (segment)")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"Aspect: {aspects}. {aspects.capitalize()} metrics against the human {aspects} ratings, "
                 "over the top- and last-N systems")
    fig.tight_layout()
    return fig


def leaderboard_figure(board: pd.DataFrame, statistic: str = "acc_eq"):
    """The leaderboard's ``statistic`` as a grid of bar charts: one row per corpus, one column per human dimension
    (a corpus that does not rate a dimension: an empty cell saying so), metrics by name, best first, with their 95%
    CIs, coloured by significance cluster (one legend for the figure), each panel's number of rows (every metric on
    the same rows) at its top right; sized to be read at page width. Returns the matplotlib figure (the caller saves
    and closes it)."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)
    from matplotlib.patches import Patch  # noqa: PLC0415 - heavy (matplotlib)

    acc = board[board["statistic"] == statistic]
    corpora = list(dict.fromkeys(acc["corpus"]))
    dimensions = [d for d in DIMENSIONS if d in set(acc["dimension"])]
    dimensions += [d for d in dict.fromkeys(acc["dimension"]) if d not in dimensions]
    metrics = max((len(part) for _, part in acc.groupby(["corpus", "dimension"])), default=1)
    panel_height = 0.6 + 0.2 * metrics
    fig, axes = plt.subplots(len(corpora), len(dimensions), squeeze=False, sharex=True,
                             figsize=(3.4 * len(dimensions) + 1.2, panel_height * len(corpora) + 0.9))
    clusters = sorted({int(c) for c in acc["cluster"] if math.isfinite(c)})
    colors = {c: plt.get_cmap("tab10")((c - 1) % 10) for c in clusters}
    for i, corpus in enumerate(corpora):
        for j, dimension in enumerate(dimensions):
            ax = axes[i][j]
            part = acc[(acc["corpus"] == corpus) & (acc["dimension"] == dimension)].sort_values("rank")
            if i == 0:  # above the line of the panel's n (which sits at the default pad, 6 pt): never on it
                ax.set_title(f"{dimension}", fontsize=10, fontweight="bold", pad=17)
            if j == 0:  # placed left of the metric names, however long they are
                ax.set_ylabel(dataset_label(corpus), fontsize=10, fontweight="bold")
            if part.empty:
                ax.set_yticks([])
                ax.text(0.5, 0.5, f"no {dimension} ratings", ha="center", va="center", fontsize=8, color="grey",
                        transform=ax.transAxes)
                continue
            part = part.iloc[::-1]  # best at the top
            values = part["value"].to_numpy(dtype=float)
            low, high = part["ci_low"].to_numpy(dtype=float), part["ci_high"].to_numpy(dtype=float)
            err = np.vstack([np.clip(values - low, 0, None), np.clip(high - values, 0, None)])
            y = np.arange(len(part))
            ax.barh(y, values, color=[colors.get(int(c), "lightgrey") if math.isfinite(c) else "lightgrey"
                                      for c in part["cluster"]],
                    xerr=np.nan_to_num(err), error_kw={"elinewidth": 0.7, "capsize": 1.5})
            ax.set_yticks(y)
            ax.set_yticklabels([signed_label(str(r.metric), r.signature, bool(r.negated)) for r in part.itertuples()],
                               fontsize=7.5)
            ax.tick_params(axis="x", labelsize=7.5)
            ax.set_ylim(-0.6, len(part) - 0.4)
            ax.set_title(f"n = {int(part['n'].max())} rows", loc="right", fontsize=7, color="dimgrey")
    for ax in axes[-1]:
        ax.set_xlabel(f"{statistic} (95% CI)", fontsize=8.5)
    handles = [Patch(color=colors[c], label=f"cluster {c}" + (" (best)" if c == 1 else "")) for c in clusters]
    if (~np.isfinite(acc["cluster"].to_numpy(dtype=float))).any():
        handles.append(Patch(color="lightgrey", label="not ranked (no value)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(6, max(1, len(handles))), fontsize=8, frameon=False,
               title="significance cluster (PERM-BOTH, p < 0.05): metrics in one cluster are not told apart",
               title_fontsize=8)
    fig.tight_layout(rect=(0, 0.06 if handles else 0, 1, 1))
    mark_figure(fig, random_weight_metrics(dict(zip(acc["metric"], acc["signature"].fillna(""), strict=True))))
    return fig
