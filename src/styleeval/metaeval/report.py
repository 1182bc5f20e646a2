"""``correlations.csv``, ``report.md`` (tables laid out like the paper's) and the plots of a meta-evaluation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval.escaping import md_cell, md_code, spreadsheet_safe
from styleeval.figures import FIGURE_FORMATS, figure_link
from styleeval.labels import (
    RANDOM_WEIGHTS,
    SYSTEM_SCORE,
    counted,
    dataset_label,
    model_worth_lines,
    random_weights_warning,
    system_score_legend,
    system_statistic,
    with_warning,
)
from styleeval.metaeval.grouping import Group, column_key, paper_groups, summarize_group
from styleeval.metaeval.hybrids import hybrid
from styleeval.metaeval.plots import plot_datasets, plot_groups, plot_metric_heatmap, plot_tasks
from styleeval.metaeval.runner import MetaevalResult
from styleeval.stats.compare import significance_matrix

ALPHA = 0.05
"""The significance level of the tables' markers."""


def significance_marker(p: float, alpha: float = ALPHA) -> str:
    """``"*"`` when the correlation is *not* significant at ``alpha`` (the paper's convention), else ``""``."""
    return "*" if not (p < alpha) else ""


def format_correlation(r: float, p: float, digits: int = 2, alpha: float = ALPHA) -> str:
    """``0.52`` or ``-0.14*`` as in the paper's tables; ``–`` for a missing value."""
    if r is None or not np.isfinite(r):
        return "–"
    return f"{r:.{digits}f}{significance_marker(p, alpha)}"



def _p_lookup(corr: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    return {(r.metric, r.dataset, r.subset): r.spearman_p for r in corr.itertuples()}


def _fmt(value: float, p: float | None = None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return format_correlation(value, p if p is not None else 0.0)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table, every cell through :func:`~styleeval.escaping.md_cell` (names are untrusted text; the
    numbers' ``*`` and ``**bold**`` markers are left as they are)."""
    lines = ["| " + " | ".join(map(md_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
    return "\n".join(lines)


def group_table(result: MetaevalResult, group: Group) -> str:
    """One of the paper's tables for ``group`` (Table 3 halves, Table 4) as markdown."""
    corr = result.correlations
    summary = summarize_group(corr, group, result.metrics)
    pvals = _p_lookup(corr)
    show_all = group.name == "testset"
    header = ["metric"]
    if show_all:
        header += [f"ALL ({dataset_label(ds)})" for ds in dict.fromkeys(d for d, _ in group.columns)]
    header += [
        (s if group.name == "testset" else dataset_label(d)) for d, s in group.columns
    ] + ["avg", "avg rank"]
    rows = []
    for m in result.metrics:
        row = [result.label(m)]
        if show_all:
            for ds in dict.fromkeys(d for d, _ in group.columns):
                sub = corr[(corr.metric == m) & (corr.dataset == ds) & (corr.subset == "all")]
                row.append(_fmt(sub.spearman.iloc[0], sub.spearman_p.iloc[0]) if len(sub) else "–")
        for col in group.columns:
            v = summary.loc[m, column_key(*col)]
            row.append(_fmt(v, pvals.get((m, *col))))
        avg, rank = summary.loc[m, "avg"], summary.loc[m, "avg_rank"]
        row.append(f"{avg:.2f}" if np.isfinite(avg) else "–")
        row.append(f"{rank:.1f}" if np.isfinite(rank) else "–")
        if any(c != "–" for c in row[1:]):
            rows.append(row)
    n_row = ["n"]
    if show_all:
        n_row += [_n(corr, ds, "all") for ds in dict.fromkeys(d for d, _ in group.columns)]
    n_row += [_n(corr, *col) for col in group.columns] + ["", ""]
    return _md_table(header, rows + [n_row])


def _n(corr: pd.DataFrame, dataset: str, subset: str) -> str:
    """The number of rated rows behind a column; ``100-500`` when its metrics saw different numbers (r_ metrics see
    only the rows with a reference), so that no cell claims more rows than it had."""
    sub = corr[(corr.dataset == dataset) & (corr.subset == subset)]
    if not len(sub):
        return "–"
    low, high = int(sub.n.min()), int(sub.n.max())
    return str(high) if low == high else f"{low}-{high}"


def dataset_table(result: MetaevalResult) -> str:
    """All rated rows of each dataset (``all`` subsets; Table 5's layout), with avg and avg rank."""
    datasets = list(result.dataset_kinds)
    group = Group("all", "All rows per dataset", tuple((d, "all") for d in datasets))
    summary = summarize_group(result.correlations, group, result.metrics)
    pvals = _p_lookup(result.correlations)
    header = ["metric"] + [dataset_label(d) for d in datasets] + ["avg", "avg rank"]
    rows = []
    for m in result.metrics:
        row = [result.label(m)] + [_fmt(summary.loc[m, column_key(*c)], pvals.get((m, *c)))
                                   for c in group.columns]
        avg, rank = summary.loc[m, "avg"], summary.loc[m, "avg_rank"]
        row += [f"{avg:.2f}" if np.isfinite(avg) else "–", f"{rank:.1f}" if np.isfinite(rank) else "–"]
        if any(c != "–" for c in row[1:]):
            rows.append(row)
    rows.append(["n"] + [_n(result.correlations, *c) for c in group.columns] + ["", ""])
    return _md_table(header, rows)


def _column_name(result: MetaevalResult, dataset: str, subset: str) -> str:
    """A (dataset, subset) column's name in the tables: ``Lai``, ``ALL (Test set)``, ``Test set / sentiment``."""
    if subset == "all":
        return f"ALL ({dataset_label(dataset)})" if result.dataset_kinds.get(dataset) == "testset" \
            else dataset_label(dataset)
    return f"{dataset_label(dataset)} / {subset}"


def fewer_rows_note(result: MetaevalResult, columns: list[tuple[str, str]]) -> str | None:
    """Under a table of each metric's own rows: which metrics saw fewer rows than others in a column (``R-BLEU: 100
    of 500 rows in ALL (Test set)``), so that no cell reads as computed on its column's full ``n``."""
    corr = result.correlations
    parts = []
    for dataset, subset in columns:
        sub = corr[(corr.dataset == dataset) & (corr.subset == subset)]
        if len(sub) and sub.n.min() < sub.n.max():
            parts += [f"{result.label(r.metric, numbers=False)} {int(r.n)} of {int(sub.n.max())} in "
                      f"{_column_name(result, dataset, subset)}" for r in sub.itertuples() if r.n < sub.n.max()]
    if not parts:
        return None
    return ("Each metric on the rows it scores; fewer rows than the column's: " + "; ".join(parts) +
            " (reference-based metrics: the rows with a reference).")


def shared_table(result: MetaevalResult) -> str | None:
    """The columns of ``tasks.png`` and ``datasets.png`` whose like rows are fewer than their rated rows (a
    reference-based metric in the run): every metric on those rows, each column named with which rows and how many
    (:meth:`~styleeval.metaeval.runner.SharedRows.describe`). ``None`` where no column was cut."""
    cut = [(d, s) for (d, s), scope in result.shared.items() if scope.restricted
           and (s == "all" or (result.dataset_kinds.get(d) == "testset" and s in result.task_subsets.get(d, ())))]
    if not cut:
        return None
    corr = result.shared_correlations
    values = {(r.metric, r.dataset, r.subset): (r.spearman, r.spearman_p) for r in corr.itertuples()}
    rows = []
    for m in result.metrics:
        row = [result.label(m)] + [_fmt(*values[m, d, s]) if (m, d, s) in values else "–" for d, s in cut]
        if any(c != "–" for c in row[1:]):
            rows.append(row)
    header = ["metric"] + [f"{_column_name(result, d, s)}: {result.shared[d, s].describe()}" for d, s in cut]
    return _md_table(header, rows + [["n"] + [str(result.shared[d, s].n) for d, s in cut]])


def wmt_table(result: MetaevalResult) -> str:
    """Lai et al.'s segment-level Kendall tau-like and system-level Pearson, per dataset and metric, with the
    statistic its system scores are (the ``system score`` column, ``styleeval evaluate``'s wording), then its legend."""
    rows = [
        [dataset_label(r.dataset), result.label(r.metric), f"{r.kendall_like:.3f}", str(r.n_pairs), r.system_score,
         format_correlation(r.system_pearson, r.system_pearson_p), str(r.n_systems)]
        for r in result.wmt.itertuples()
    ]
    table = _md_table(["dataset", "metric", "Kendall tau-like", "pairs", SYSTEM_SCORE, "system-level r", "systems"],
                      rows)
    legend = system_score_legend(system_statistic("mean", result.signatures.get(m, ""))
                                 for m in dict.fromkeys(result.wmt["metric"]))
    return f"{table}\n\n{legend}"  # fixed words (labels.system_statistic), no name in it


def significance_table(result: MetaevalResult, dataset: str, alpha: float = 0.05) -> str | None:
    """Williams test of every pair of metrics on a dataset's rated rows: a cell says whether the row's metric
    correlates significantly better (Pearson, one-sided p < alpha) than the column's.

    Exactly the metrics of the correlation table it sits under (a metric the table skipped, NaN scores or constant,
    is not tested); each pair is tested on the rows both metrics score (and the humans rate), and the n shown is the
    pair's: one line under the table where every pair has the same n, else each cell's own (``0.03 (n = 100)``)."""
    human = result.human.get(dataset)
    table = result.correlations
    in_table = table[(table["dataset"] == dataset) & (table["subset"] == "all")] if len(table) else table
    tested = set(in_table["metric"]) if len(in_table) else set()
    names = [m for m in result.metrics if (dataset, m) in result.scores and m in tested]
    if human is None or len(names) < 2:
        return None
    rated = np.isfinite(human)
    scores = {m: result.scores[dataset, m][rated] for m in names}
    matrix = significance_matrix(human[rated], scores, alpha)
    sizes = {c.n for c in matrix.values()}
    rows = []
    for a in names:
        row = [result.label(a)]
        for b in names:
            if a == b:
                row.append("")
                continue
            c = matrix[a, b]
            p = f"**{c.p:.3f}**" if c.p < alpha else f"{c.p:.2f}" if math.isfinite(c.p) else "–"
            row.append(p if len(sizes) == 1 else f"{p} (n = {c.n})")
        rows.append(row)
    text = _md_table(["A \\ B"] + [result.label(m) for m in names], rows)
    if len(sizes) == 1:
        return f"{text}\n\nEvery pair on the same {counted(sizes.pop(), 'row')} (rated, and scored by both metrics)."
    return (f"{text}\n\nEach pair on the rated rows both metrics score, n in its cell: fewer where one of them "
            "scores fewer rows (a reference-based metric: the rows with a reference).")


def hybrid_table(result: MetaevalResult, folds: int = 5, seed: int = 0) -> str | None:
    """Mukherjee et al.'s hybrids per dataset: Pearson of Hybrid-Simulation and Hybrid-Learned, oracle (fitted on
    the rows it is scored on, as in their paper) and cross-validated by source (no source in both fit and test)."""
    rows = []
    for dataset in result.dataset_kinds:
        names = [m for m in result.metrics if (dataset, m) in result.scores]
        human = result.human.get(dataset)
        if human is None or len(names) < 3:
            continue
        scores = {m: result.scores[dataset, m] for m in names}  # lower-is-better metrics already negated
        groups = result.groups.get(dataset)
        cells = []
        for kind in ("simulation", "learned"):
            for oracle in (True, False):
                try:
                    res = hybrid(kind, scores, human, groups, oracle=oracle, folds=folds, seed=seed)
                    cells.append(f"{res.pearson:.2f}")
                except ValueError:
                    cells.append("–")
        best = max((abs(float(np.corrcoef(*[v[np.isfinite(v) & np.isfinite(human)] for v in (scores[m], human)])[0, 1]))
                    for m in names), default=float("nan"))
        rows.append([dataset_label(dataset), *cells, f"{best:.2f}"])
    if not rows:
        return None
    return _md_table(["dataset", "Simulation (oracle)", "Simulation (CV)", "Learned (oracle)", "Learned (CV)",
                      "best single metric |r|"], rows)


FIGURES = {"groups": "average correlation per group, Figure 2 style",
           "tasks": "per-task correlations on the test set",
           "datasets": "correlations per dataset",
           "metrics_heatmap": "metric vs metric Spearman correlations, the datasets pooled"}
"""The meta-evaluation's figures (file stem: what it shows), each written where it has something to show."""


def write_figures(result: MetaevalResult, out: Path, figure_format: str = "png") -> dict[str, Path]:
    """The figures of :data:`FIGURES` that have something to show, as ``<name>.<figure_format>`` (png, pdf, svg) in
    ``out``: a figure with nothing to show (``tasks`` without the test set in the run, ``metrics_heatmap`` with
    fewer than two metrics scored) is not written. Returns name -> path of those written."""
    groups = paper_groups(result.dataset_kinds, result.task_subsets)
    plotters = {"groups": lambda path: plot_groups(result, groups, path), "tasks": lambda path: plot_tasks(result, path),
                "datasets": lambda path: plot_datasets(result, path),
                "metrics_heatmap": lambda path: plot_metric_heatmap(result, path)}
    written = {name: plotters[name](out / f"{name}.{figure_format}") for name in FIGURES}
    return {name: path for name, path in written.items() if path is not None}


def write_report(result: MetaevalResult, out_dir: str | Path, plots: bool = True,
                 hybrids: bool = False, figure_format: str = "png") -> dict[str, Path]:
    """Write ``correlations.csv``, ``wmt_kendall.csv``, ``report.md`` and the figures that have something to show
    (:func:`write_figures`, in ``figure_format``: png, pdf or svg; report.md links them); returns their paths. A
    figure of :data:`FIGURES` this run does not write (in any format) is removed: OUT never shows an older run's
    figure beside this run's report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "correlations.csv", "wmt": out / "wmt_kendall.csv", "report": out / "report.md"}
    figures = write_figures(result, out, figure_format) if plots else {}
    paths.update(figures)
    random = result.random_weights
    spreadsheet_safe(with_warning(result.correlations, random)).to_csv(paths["csv"], index=False, float_format="%.6g")
    spreadsheet_safe(with_warning(result.wmt, random)).to_csv(paths["wmt"], index=False, float_format="%.6g")
    groups = paper_groups(result.dataset_kinds, result.task_subsets)
    warning = random_weights_warning(random)
    lines = [f"# Meta-evaluation: {result.dimension}", "",
             *([f"> **{RANDOM_WEIGHTS}**: {warning.removeprefix(RANDOM_WEIGHTS + ': ')} (marked [random weights]); "
                "they test the pipeline, their correlations mean nothing.", ""] if warning else []),
             *([*(f"- {md_cell(line)}" for line in models), ""]
               if (models := model_worth_lines(result.signatures)) else []),
             f"Spearman correlation between each metric and the mean human **{result.dimension}** rating. "
             "`*` = not significant at the 0.05 level (the paper's convention). `avg` = mean correlation over the "
             "group's columns, `avg rank` = mean rank of the metric per column (1 = best, among metrics with a "
             "value in every column). `–` = not applicable (no references) or not computed. `n` = rated rows per "
             "column; as in the paper, each metric is correlated on the rows it scores, so where `n` is a range "
             "(`100-500`) the metrics of a column saw different rows (reference-based metrics only the rows with a "
             "reference; the note under a table names them): compare them on the per-dataset and per-task figures, "
             "the section *Every metric on the same rows* (their numbers) or the leaderboard (`--leaderboard`), "
             "which put every metric on the same rows and say which rows where they are fewer than all. Figures show the bootstrap 95% CI as error bars (where "
             "computed) and give each metric one colour in every figure."]
    if result.negated:
        lines += ["", "Metrics where lower means closer to the source (error rates, novelty) are negated before "
                  "correlating and ranking (higher = better), in every table and plot, and labelled `(negated)`: "
                  f"{md_cell(', '.join(result.negated))}."]
    for g in groups:
        lines += ["", f"## {g.title}", "", group_table(result, g)]
        columns = [*((d, "all") for d in dict.fromkeys(d for d, _ in g.columns) if g.name == "testset"), *g.columns]
        note = fewer_rows_note(result, columns)
        lines += ["", md_cell(note)] if note else []
    if result.dataset_kinds:
        lines += ["", "## All rated rows per dataset", "", dataset_table(result)]
        note = fewer_rows_note(result, [(d, "all") for d in result.dataset_kinds])
        lines += ["", md_cell(note)] if note else []
    same = shared_table(result)
    if same:
        lines += ["", "## Every metric on the same rows (the figures' numbers)", "",
                  "The tables above correlate each metric on the rows it scores (the paper's tables), so a "
                  "reference-based metric's cell is on fewer rows than its neighbours'. `tasks.png` and `datasets.png` "
                  "put every metric of a column on the same rows: where a reference-based metric is in the run, these "
                  "are only the rows with a reference, and the other metrics' numbers change with them. Those columns, "
                  "each named with the rows it is on:", "", same]
    if len(result.wmt):
        lines += ["", "## Lai et al. (2022): segment-level Kendall's tau-like and system-level Pearson", "",
                  "Pairs of system outputs for the same source; human ties skipped, metric ties discordant; "
                  "tau averaged over sources. System level: Pearson of the per-system means of the row scores, "
                  "named in the `system score` column (`mean sentence BLEU`: the number `styleeval evaluate`'s "
                  "agreement table gives `s_bleu:agg=mean` on the same systems; its default S-BLEU correlates "
                  "`corpus BLEU`, another statistic, and so for chrF and TER). Every metric of a dataset on the same "
                  "rows: the system outputs that every metric and the humans rate.", "",
                  wmt_table(result)]
    sig_tables = [(d, significance_table(result, d)) for d in result.dataset_kinds]
    if any(t for _, t in sig_tables):
        lines += ["", "## Is metric A better than metric B?", "",
                  "Williams test for dependent correlations (Pearson, each pair on the rated rows both metrics score: "
                  "its n under the table or in its cell): one-sided p that the row's metric correlates better with "
                  "the humans than the column's; **bold** = significant at 0.05. "
                  "`styleeval.stats.compare.paired_bootstrap_correlation` gives a bootstrap CI of the difference."]
        for d, t in sig_tables:
            if t:
                lines += ["", f"### {md_cell(dataset_label(d))}", "", t]
    hyb = hybrid_table(result) if hybrids else None
    if hyb:
        lines += ["", "## Hybrids (Mukherjee et al. 2025)", "", "Pearson with the human ratings of a weighted geometric "
                  "mean of the top-3 metrics (Simulation: weights searched on a grid; Learned: random-forest "
                  "importances). *Oracle* = fitted on the rows it is scored on (the paper's numbers); *CV* = 5 folds "
                  "by source, the honest figure.", "", hyb]
    if result.missing:
        lines += ["", "## Missing cells", "", "These (dataset, metric) cells are empty, so averages and ranks above "
                  "are over fewer columns for the metrics concerned:", ""]
        lines += [f"- {md_cell(dataset_label(d))} / {md_cell(result.label(m, numbers=False))}: {md_cell(why)}"
                  for d, m, why in result.missing]
    if result.signatures:
        lines += ["", "## Metric signatures", "", "Everything that determines each metric's scores (quote these with "
                  "the numbers):", ""]
        lines += [f"- {md_cell(result.label(m, numbers=False))}: {md_code(sig)}" for m, sig in result.signatures.items()]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {md_cell(n)}" for n in result.notes]
    if figures:
        lines += ["", "## Figures", ""] + [f"- {figure_link(path.name, FIGURES[name])}" for name, path in figures.items()]
    lines.append("")
    paths["report"].write_text("\n".join(lines), encoding="utf-8")
    for name in FIGURES:
        for fmt in FIGURE_FORMATS:
            if name not in figures or fmt != figure_format:
                (out / f"{name}.{fmt}").unlink(missing_ok=True)
    return paths
