"""What ``styleeval evaluate`` found (:class:`SystemsReport`) and its files: ``rows.jsonl``, ``systems.csv``,
``pairs.csv``, ``report.md``, ``report.json`` and ``tradeoff.png``."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from styleeval.atomic import atomic_path, atomic_write, atomic_write_text, write_error
from styleeval.errors import UserError
from styleeval.escaping import md_cell, md_code, spreadsheet_safe
from styleeval.figures import FIGURE_FORMATS, figure_link, save_figure
from styleeval.labels import (
    RANDOM_WEIGHTS,
    SYSTEM_SCORE,
    SystemStatistic,
    counted,
    mark_figure,
    metric_label,
    model_worth,
    model_worth_lines,
    note_models,
    random_weight_metrics,
    random_weights_warning,
    shown_label,
    system_score_legend,
    system_statistic,
    with_warning,
)
from styleeval.systems.placement import place_labels
from styleeval.terminal import table_blocks, terminal_width, text_table, wrap_text

HUMAN_PREFIX = "human_"
"""Input columns ``human_<dimension>`` are human ratings, compared with the metrics."""

CONTENT_METRICS = ("logprob_content", "autorater_meaning", "human_content")
STYLE_METRICS = ("logprob_style", "autorater_style", "human_style")


@dataclass(frozen=True)
class Coverage:
    """Which sources the systems cover: ``rows`` read, ``sources`` (every source_id of any system), ``shared`` (those
    every system has: the statistics use these, one row per system each) and ``lacking``: system -> the sources it
    lacks (their count, the first ones in input order), for the systems that cause the cut."""

    systems: int
    rows: int
    sources: int
    shared: int
    lacking: dict[str, tuple[int, list[str]]] = field(default_factory=dict)

    EXAMPLES = 3
    """How many of a system's missing sources a note names."""

    @property
    def cut(self) -> bool:
        """Whether some system lacks sources that others have (the statistics use fewer rows than were read)."""
        return bool(self.lacking)

    @property
    def shared_rows(self) -> int:
        """The rows on the shared sources: what the statistics use (one row per system and source)."""
        return self.shared * self.systems

    def who(self, examples: bool = True) -> str:
        """``B lacks 2 of 12 sources ('s3', 's7'), C lacks 1 ('s5')``: the systems that cause the cut, with the
        first sources each lacks (``examples``)."""
        parts = []
        for k, (system, (count, first)) in enumerate(self.lacking.items()):
            shown = ", ".join(repr(e) for e in first[:self.EXAMPLES]) + (", ..." if count > self.EXAMPLES else "")
            of = f" of {counted(self.sources, 'source')}" if not k else ""
            parts.append(f"{system} lacks {count}{of}" + (f" ({shown})" if examples else ""))
        return ", ".join(parts)

    def summary(self) -> str:
        """``9 systems, 680 rows`` or, with a cut, ``9 systems, 680 rows read, 360 compared (the 40 sources every
        system has; lai_REF lacks 40 of 80 sources)``: what the statistics use."""
        read = f"{counted(self.systems, 'system')}, {counted(self.rows, 'row')}"
        if not self.cut:
            return read
        return (f"{read} read, {self.shared_rows} compared (the {counted(self.shared, 'source')} every system has; "
                f"{self.who(examples=False)})")

    def note(self) -> str:
        """The note of a cut: which systems caused it, and what it costs."""
        return (f"the systems do not all cover the same sources: {self.who()}; every metric compares the systems on "
                f"the {self.shared} of {counted(self.sources, 'source')} that every system has: "
                f"{self.shared_rows} of the {counted(self.rows, 'row')} read (give the missing rows, or leave the "
                "incomplete system out, to compare on more)")

    def to_dict(self) -> dict[str, Any]:
        """For ``report.json``."""
        return {"systems": self.systems, "rows": self.rows, "sources": self.sources, "shared_sources": self.shared,
                "shared_rows": self.shared_rows,
                "lacking": {s: {"sources": n, "examples": e[:self.EXAMPLES]} for s, (n, e) in self.lacking.items()}}


@dataclass
class SystemsReport:
    """What :func:`evaluate_systems` found (see the module docstring). ``scores`` has one row per input row (input
    order) with every metric's score; ``signatures`` maps each metric to its signature; ``notes`` says what could not
    be computed and why."""

    systems: pd.DataFrame
    pairs: pd.DataFrame
    scores: pd.DataFrame
    signatures: dict[str, str]
    higher_is_better: dict[str, bool]
    notes: list[str]
    test: str
    alpha: float
    sort_by: str
    agreement: pd.DataFrame
    aggregates: dict[str, str] = field(default_factory=dict)
    """metric -> ``corpus`` (sacrebleu's corpus score) or ``mean`` (the mean of row scores): what ``score`` is."""
    test_signatures: dict[str, str] = field(default_factory=dict)
    """metric -> the signature of its paired tests (``stats.paired_test_signature``)."""
    not_computed: dict[str, str] = field(default_factory=dict)
    """metric -> why it could not be computed (asked for, absent from the tables; ``styleeval evaluate`` exits
    non-zero unless ``--allow-missing``)."""
    texts: pd.DataFrame = field(default_factory=pd.DataFrame)
    """What was scored, one row per row of ``scores`` (same order): ``source``, ``rewrite``, ``style``,
    ``references`` (a list, or ``None``); empty where the report was built from scores alone (``compare_systems``)."""
    subset: str = ""
    """Which sources were evaluated where not all of them (``"the first 5 of 80 sources (--limit 5)"``); ``""``:
    every source of the input."""
    coverage: Coverage | None = None
    """Which sources the systems cover (``None``: computed from ``scores``): the cut to the shared ones, said."""
    baselines: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The baselines shown beside the systems and not compared (``(copy source)``, ``(human reference)``: each
    metric's score [CI] on the sources the systems are compared on), as ``systems``' rows; empty where there are
    none, or where they were tested as systems (then they are in ``systems``)."""
    baseline_names: list[str] = field(default_factory=list)
    """Every baseline of the report, tested or not: the pseudo-systems, marked wherever they are shown."""
    baselines_tested: bool = False
    """Whether the baselines were compared as systems (tests, clusters, rankings: ``test_baselines=True``)."""

    def __post_init__(self) -> None:
        if self.coverage is None:
            self.coverage = coverage_of(self.scores)

    @property
    def metrics(self) -> list[str]:
        """The metric labels with scores, in the order they were asked for (human ratings last)."""
        return list(self.signatures) + [c for c in self.scores.columns if c.startswith(HUMAN_PREFIX)]

    @property
    def random_weights(self) -> list[str]:
        """The metrics computed with random weights (the tiny-random preset): marked wherever they are shown."""
        return random_weight_metrics(self.signatures)

    def label(self, metric: str, negated: bool = False) -> str:
        """``metric``'s label in this report's tables and plots (:func:`~styleeval.labels.shown_label`)."""
        return shown_label(metric, negated, metric in self.random_weights)

    def ranking(self, metric: str | None = None) -> list[str]:
        """Systems with scores best first by ``metric`` (default: the report's ``sort_by``)."""
        metric = metric or self.sort_by
        table = self.systems[(self.systems["metric"] == metric) & (self.systems["n"] > 0)]
        ascending = not self.higher_is_better.get(metric, True)
        return table.sort_values("score", ascending=ascending, kind="stable")["system"].tolist()

    def to_markdown(self) -> str:
        """``report.md``: systems x metrics ("score [lo, hi]" and the cluster), pairs, agreement, signatures, notes."""
        return to_markdown(self)

    def to_text(self, width: int | None = None) -> str:
        """The systems x metrics table for a terminal ("score [lo, hi] (cluster)", columns aligned), best first, then
        the agreement tables, fitted to ``width`` (default: the terminal's; :func:`to_text`)."""
        return to_text(self, width)

    def plot(self, path: str | Path, content: str | None = None, style: str | None = None) -> Path:
        """``tradeoff.png``: systems in the (content, style) plane with CI bars and the Pareto front. A
        :class:`~styleeval.errors.UserError` saying why when the report has no content or no style metric to plot
        (:func:`no_tradeoff_reason`)."""
        written = plot_tradeoff(self, path, content, style)
        if written is None:
            raise UserError(f"no tradeoff figure: {no_tradeoff_reason(self)}")
        return written

    def to_dict(self) -> dict[str, Any]:
        """Everything, for ``report.json``."""
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
                    for r in frame.to_dict("records")]

        warning = random_weights_warning(self.random_weights)
        marked = set(self.baseline_names)
        systems = [{**r, "baseline": True} if r["system"] in marked else r for r in records(self.systems)]
        out = {"warnings": [warning] if warning else [], "random_weights": self.random_weights,
               "test": self.test, "alpha": self.alpha, "sort_by": self.sort_by, "signatures": self.signatures,
               "higher_is_better": self.higher_is_better, "aggregates": self.aggregates,
               "test_signatures": self.test_signatures, "systems": systems,
               "pairs": records(self.pairs), "agreement": records(self.agreement),
               "models": [w.to_dict() for w in model_worth(self.signatures)],
               "coverage": self.coverage.to_dict(), "notes": self.notes,
               "not_computed": self.not_computed, "subset": self.subset}
        if self.baseline_names:  # reference points, not systems: flagged, and said whether they were tested
            out["baselines"] = {"names": self.baseline_names, "tested": self.baselines_tested,
                                "what": baselines_legend(self),
                                "systems": [{**r, "baseline": True} for r in records(self.baselines)]}
        return out


def lacking_sources(systems: np.ndarray, sources: np.ndarray, among: list[str]) -> dict[str, list[str]]:
    """For each of the systems ``among`` that lacks some, the sources (of every row's ``sources``, in the order they
    first appear) that other systems of ``among`` have and it has not: the systems that cut the shared sources."""
    kept = np.isin(systems, among)
    union = list(dict.fromkeys(sources[kept].tolist()))
    out = {}
    for system in among:
        own = set(sources[systems == system].tolist())
        missing = [source for source in union if source not in own]
        if missing:
            out[system] = missing
    return out


def coverage_of(scores: pd.DataFrame) -> Coverage:
    """The :class:`Coverage` of the rows in ``scores`` (columns ``system``, ``source_id``; one row per pair)."""
    systems = scores["system"].astype(str).to_numpy()
    sources = scores["source_id"].astype(str).to_numpy()
    names = sorted(set(systems.tolist()))
    lacking = lacking_sources(systems, sources, names)
    total = len(set(sources.tolist()))
    shared = total - len(set().union(*lacking.values())) if lacking else total
    return Coverage(len(names), len(scores), total, shared, {s: (len(m), m[:Coverage.EXAMPLES])
                                                             for s, m in lacking.items()})


def fmt(value: float, digits: int = 4) -> str:
    """A number for reading: ``digits`` significant digits, ``–`` for NaN."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(map(md_cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
    return "\n".join(lines)


def _cells(report: SystemsReport) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the systems x metrics table ("score [lo, hi] (cluster)"), systems best first."""
    metrics = report.metrics
    cell = {(r.system, r.metric): r for r in report.systems.itertuples()}
    arrow = {m: "↑" if report.higher_is_better.get(m, True) else "↓" for m in metrics}
    ranked = report.ranking()
    aside = list(dict.fromkeys(report.baselines["system"])) if len(report.baselines) else []
    for r in report.baselines.itertuples():
        cell[(r.system, r.metric)] = r
    rows = []
    for system in ranked + sorted(set(report.scores["system"]) - set(ranked) - set(aside)) + aside:
        row = [system]
        for m in metrics:
            r = cell.get((system, m))
            cluster = f" ({int(r.cluster)})" if r is not None and math.isfinite(r.cluster) else ""
            row.append("–" if r is None or not r.n else f"{fmt(r.score)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}]{cluster}")
        rows.append(row)
    return ["system"] + [f"{report.label(m)} {arrow[m]}" for m in metrics], rows


BASELINE_WHAT = {
    "(copy source)": "every source copied unchanged",
    "(human reference)": "the first human reference of each source, not scored by reference-based metrics: against "
                         "the references it would be scored against itself",
}
"""What each baseline is, in the reports' legend (:func:`baselines_legend`)."""


def baselines_legend(report: SystemsReport) -> str:
    """What the report's baselines are and how they were treated (``""``: none): a reference point for every
    number, left out of the tests unless asked; the paper's argument (similarity metrics reward copying) said."""
    names = report.baseline_names
    if not names:
        return ""
    one = len(names) == 1
    what = " and ".join(f"{name} ({BASELINE_WHAT.get(name, 'a baseline')})" for name in names)
    they = "it is" if one else "they are"
    treated = (f"{they} compared as systems here (--test-baselines): in the tests, clusters and rankings"
               if report.baselines_tested else
               f"{they} scored on the sources the systems are compared on and left out of the significance tests, "
               f"clusters, rankings and agreement (to test {'it' if one else 'them'}: --test-baselines, "
               "test_baselines=True)")
    copy = (" Similarity metrics reward copying: a system near (copy source) on a content metric may have changed "
            "little." if "(copy source)" in names else "")
    return f"{what} {'is a baseline, not a system' if one else 'are baselines, not systems'}; {treated}.{copy}"


def to_text(report: SystemsReport, width: int | None = None) -> str:
    """The systems table aligned in columns (names as given, one line each), then the agreement with each human
    rating; a random-weights warning first where a metric has random weights. Fitted to ``width`` (default: the
    terminal's, :func:`~styleeval.terminal.terminal_width`): metrics that do not fit go into tables stacked below,
    each repeating the system column, or, where that makes fewer tables (many metrics, few systems) each comparing
    two systems or more, systems are the columns and metrics the rows (:func:`_systems_blocks`); the agreement tables
    likewise (the metric column repeated), then the legend of their system score column; prose wrapped."""
    width = terminal_width() if width is None else width
    warning = random_weights_warning(report.random_weights)
    out = [*wrap_text(warning, width), ""] if warning else []
    models = model_worth_lines(report.signatures)
    out += [*(line for model in models for line in wrap_text(model, width)), ""] if models else []
    header, rows = _cells(report)
    for k, block in enumerate(_systems_blocks(header, rows, width)):
        out += ([""] if k else []) + block
    if legend := baselines_legend(report):
        out += ["", *wrap_text(legend, width)]
    for title, header, rows in _agreement_tables(report):
        out += ["", *wrap_text(title, width), *text_table(header, rows, width)]
    if len(report.agreement):
        out += ["", *wrap_text(agreement_legend(report), width)]
    return "\n".join(out)


def _systems_blocks(header: list[str], rows: list[list[str]], width: int) -> list[list[str]]:
    """The systems table's blocks fitted to ``width``: systems as rows, the metric columns that do not fit stacked
    in tables below; or metrics as rows and systems as the columns where that makes fewer tables and each of them
    compares systems (holds two or more; a table of one system beside another of the other is two lists, not a
    comparison: two systems that do not fit side by side stay rows, every table showing both)."""
    by_system = table_blocks(header, rows, width)
    by_metric = table_blocks(["metric", *(r[0] for r in rows)], [[m, *(r[k] for r in rows)]
                                                                  for k, m in enumerate(header) if k], width)
    # a block's rule of dashes (its second line) has one run per column: the metric column and its systems
    compares = len(by_metric) == 1 or all(len(block[1].split()) > 2 for block in by_metric)
    return by_metric if len(by_metric) < len(by_system) and compares else by_system


AGREEMENT_TEXT = (
    "Per human rating, every metric is compared on the same systems and rows: those that every metric and the "
    "rating score (systems with a row for every source the others have); n below. A system's score is the one of "
    "the systems table (the system score column), computed on those rows. Pearson r of the system scores, and "
    "pairwise accuracy: the share of system pairs ordered as the humans order them (a human tie counts as right "
    "only on a metric tie, as WMT's Agreement).")


def agreement_legend(report: SystemsReport) -> str:
    """What each statistic of the agreement tables' system score column is (:func:`~styleeval.labels.
    system_score_legend`: the wording ``metaeval``'s system-level r uses too)."""
    return system_score_legend(_statistic(report, r.metric, r.aggregate) for r in report.agreement.itertuples())


def _statistic(report: SystemsReport, metric: str, aggregate: str) -> SystemStatistic:
    return system_statistic(aggregate, report.signatures.get(metric, ""))


def _agreement_tables(report: SystemsReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per human rating: a title (n systems and rows, who is left out and why), the header and the rows of its
    agreement table; a metric's own-systems columns where some metric's own systems are not the table's."""
    out = []
    if not len(report.agreement):
        return out
    for human, part in report.agreement.groupby("human", sort=False):
        first = part.iloc[0]
        title = (f"Agreement with {human}: {counted(first.n_systems, 'system')}, {counted(first.n_rows, 'row')}"
                 + (f" (left out: {first.left_out})" if first.left_out else ""))
        own = bool((part["n_systems_own"] != part["n_systems"]).any())
        header = ["metric", SYSTEM_SCORE, "Pearson r", "pairwise accuracy"]
        if own:
            header += ["r, own systems", "accuracy, own systems", "own systems"]
        rows = []
        for r in part.itertuples():
            row = [report.label(r.metric, bool(r.negated)), r.system_score,  # as compare_systems named it
                   fmt(r.pearson, 3), fmt(r.pairwise_accuracy, 3)]
            if own:
                row += [fmt(r.pearson_own, 3), fmt(r.pairwise_accuracy_own, 3), str(r.n_systems_own)]
            rows.append(row)
        out.append((title, header, rows))
    return out


def to_markdown(report: SystemsReport, figure: str | None = None) -> str:
    """The report: systems x metrics, pairs that differ significantly, agreement with humans, signatures, notes;
    ``figure``: the file name of its tradeoff figure, shown below the systems table."""
    metrics = report.metrics
    header, rows = _cells(report)
    both = pd.concat([report.systems, report.baselines]) if len(report.baselines) else report.systems
    n_row = ["n"] + [", ".join(sorted({str(r.n) for r in both.itertuples() if r.metric == m and r.n}))
                     for m in metrics]
    test = ("paired approximate randomization" if report.test == "ar" else "paired bootstrap")
    corpus = [report.label(m) for m, a in report.aggregates.items() if a == "corpus"]
    aggregate = (f"{md_cell(', '.join(corpus))}: sacrebleu's corpus score of the system's rewrites (paired tests on "
                 f"sacrebleu's draws, ties counted); the others: the mean of the row scores" if corpus
                 else "the mean of the row scores")
    warning = random_weights_warning(report.random_weights)
    out = [
        "# System evaluation", "",
        *([f"> **{RANDOM_WEIGHTS}**: {warning.removeprefix(RANDOM_WEIGHTS + ': ')}; they test the pipeline, their "
           "values mean nothing.", ""] if warning else []),
        *([*(f"- {md_cell(line)}" for line in models), ""] if (models := model_worth_lines(report.signatures)) else []),
        f"{md_cell(report.coverage.summary())}{f': {md_cell(report.subset)}' if report.subset else ''}. Each cell: score [95% bootstrap CI] "
        f"(cluster). Score: {aggregate}. Clusters, WMT's rule: walking down the ranking, a system opens a new cluster "
        f"when any system of the current cluster is significantly better ({test}, Holm-adjusted p <= "
        f"{report.alpha:g}); no system is significantly worse than one of its own cluster, but two systems of "
        f"neighbouring clusters need not differ significantly. Sorted by {md_cell(report.label(report.sort_by))}.", "",
        _table(header, rows + [n_row]), "",
        *([md_cell(legend), ""] if (legend := baselines_legend(report)) else []),
        *([figure_link(figure, "Systems: content preservation vs style strength, with 95% CIs and the Pareto front"),
           ""] if figure else []),
        *([f"The figure's axes are {md_cell(shown)}: this run has no LogProb scores, which the figure shows by default "
           "(add `logprob_content` and `logprob_style` to the metrics to see them).", ""]
          if figure and (shown := axes_instead(report, _pick(report.metrics, CONTENT_METRICS),
                                               _pick(report.metrics, STYLE_METRICS))) else []),
        *([f"No tradeoff figure: {md_cell(reason)}.", ""] if figure is None and (reason := no_tradeoff_reason(report))
          else []),
    ]
    significant = report.pairs[report.pairs["significant"]]
    out += ["## Significant differences", ""]
    if len(significant):
        out.append(_table(["metric", "A", "B", "delta A-B [CI]", "p (Holm)", "pairs"], [
            [report.label(r.metric), r.system_a, r.system_b, f"{fmt(r.delta)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}]",
             fmt(r.p_adjusted, 3), str(r.n_pairs)] for r in significant.itertuples()]))
    else:
        out.append("None at this level.")
    out.append("")
    tables = _agreement_tables(report)
    if tables:
        negated = [metric_label(m) for m in dict.fromkeys(report.agreement.loc[report.agreement["negated"], "metric"])]
        out += ["## Agreement with the human ratings (system level)", "",
                AGREEMENT_TEXT + " " + agreement_legend(report)]  # fixed words, no name in it
        if negated:
            out[-1] += (f" Lower is better for {md_cell(', '.join(negated))}: negated here (its r and accuracy are those of "
                        f"minus the score), so that higher agrees with the humans for every metric.")
        if any("own systems" in header for _, header, _ in tables):
            out[-1] += (" \"Own systems\": a metric on every system it scores (its rows in the systems table), not "
                        "comparable across metrics that score different systems.")
        out.append("")
        for title, header, rows in tables:
            out += [f"### {md_cell(title)}", "", _table(header, rows), ""]
    out += ["## Signatures", ""] + [f"- {md_cell(report.label(m))}: {md_code(s)}"
                                     for m, s in report.signatures.items()]
    out += [f"- {md_cell(report.label(m))} paired test: {md_code(s)}" for m, s in report.test_signatures.items()] + [""]
    if report.notes:
        out += ["## Notes", ""] + [f"- {md_cell(n)}" for n in report.notes] + [""]
    return "\n".join(out)


def _pick(metrics: list[str], wanted: tuple[str, ...]) -> str | None:
    return next((m for m in wanted if m in metrics), None)


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Systems that no other system beats on both coordinates (higher is better on both)."""
    return [s for s, (x, y) in points.items()
            if not any(ox >= x and oy >= y and (ox > x or oy > y) for o, (ox, oy) in points.items() if o != s)]


def no_tradeoff_reason(report: SystemsReport) -> str | None:
    """Why the report has no tradeoff figure (it needs a content and a style metric), or ``None`` when it has one."""
    if _pick(report.metrics, CONTENT_METRICS) is not None and _pick(report.metrics, STYLE_METRICS) is not None:
        return None
    return (f"it plots a content metric ({', '.join(CONTENT_METRICS)}) against a style metric "
            f"({', '.join(STYLE_METRICS)}), and this report has {', '.join(report.metrics) or 'no metric'}; add one "
            "of each (or, in Python, name two of its metrics: report.plot(path, content=..., style=...))")


def plot_tradeoff(report: SystemsReport, path: str | Path, content: str | None = None,
                  style: str | None = None) -> Path | None:
    """``tradeoff.png`` (:func:`tradeoff_figure`) at ``path``, in the format its extension names (``.png``,
    ``.pdf``, ``.svg``: :data:`FIGURE_FORMATS`); ``None`` when the report has no content or no style metric."""
    fig = tradeoff_figure(report, content, style)
    if fig is None:
        return None
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    path = Path(path)
    save_figure(fig, path)
    plt.close(fig)
    return path


def tradeoff_figure(report: SystemsReport, content: str | None = None, style: str | None = None):
    """Systems in the (content, style) plane with their CIs and the Pareto front, each system's name placed where it
    overlaps no other name, no point, no error bar and no line (:func:`~styleeval.systems.placement.place_labels`;
    a leader line where it had to move away), the axes named by metric and what they measure, plain numbers on the
    ticks (no offset or power of ten). Without ``content`` / ``style``, the first of :data:`CONTENT_METRICS` /
    :data:`STYLE_METRICS` the report has: where that is not LogProb, the title says which scores the axes show
    instead. ``None`` when the report has no content or no style metric. The caller saves and closes the figure."""
    metrics = report.metrics
    chosen = (content, style)
    content = content or _pick(metrics, CONTENT_METRICS)
    style = style or _pick(metrics, STYLE_METRICS)
    if content is None or style is None:
        return None
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    table = report.systems.set_index(["system", "metric"])
    points, bars = {}, {}
    for system in report.ranking(content):
        try:
            cx, sy = table.loc[(system, content)], table.loc[(system, style)]
        except KeyError:
            continue
        if math.isfinite(cx["score"]) and math.isfinite(sy["score"]):
            sign_x = 1 if report.higher_is_better.get(content, True) else -1
            sign_y = 1 if report.higher_is_better.get(style, True) else -1
            points[system] = (sign_x * cx["score"], sign_y * sy["score"])
            bars[system] = (cx, sy)
    front = set(pareto_front(points))
    aside = report.baselines.set_index(["system", "metric"]) if len(report.baselines) else None
    marks = {}  # the baselines beside the systems: grey hollow squares, never on the front
    for system in dict.fromkeys(report.baselines["system"]) if aside is not None else ():
        try:
            cx, sy = aside.loc[(system, content)], aside.loc[(system, style)]
        except KeyError:
            continue
        if math.isfinite(cx["score"]) and math.isfinite(sy["score"]):
            marks[system] = (cx, sy)
    tested = [s for s in bars if s in report.baseline_names]  # --test-baselines: systems, marked all the same
    fig, ax = plt.subplots(figsize=(7, 5))
    for system, (cx, sy) in bars.items():
        x, y = cx["score"], sy["score"]
        xerr = [[x - cx["ci_low"]], [cx["ci_high"] - x]] if math.isfinite(cx["ci_low"]) else None
        yerr = [[y - sy["ci_low"]], [sy["ci_high"] - y]] if math.isfinite(sy["ci_low"]) else None
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="s" if system in tested else "o",
                    color="tab:red" if system in front else "tab:blue", capsize=3, elinewidth=1.2)
    for cx, sy in marks.values():
        x, y = cx["score"], sy["score"]
        xerr = [[x - cx["ci_low"]], [cx["ci_high"] - x]] if math.isfinite(cx["ci_low"]) else None
        yerr = [[y - sy["ci_low"]], [sy["ci_high"] - y]] if math.isfinite(sy["ci_low"]) else None
        ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="s", color="tab:gray", mfc="none", capsize=3, elinewidth=1.0)
    if len(front) > 1:
        pts = sorted((bars[s][0]["score"], bars[s][1]["score"]) for s in front)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "--", color="tab:red", linewidth=1)
    ax.margins(0.08)
    ax.ticklabel_format(style="plain", useOffset=False)  # tick labels say the numbers: no "1e-5", no offset
    ax.set_xlabel(_axis_name(report, content, "content preservation"))
    ax.set_ylabel(_axis_name(report, style, "style strength"))
    title = "Systems: content preservation vs style strength\n(95% CIs; red, joined by a dashed line: the Pareto front)"
    shown = axes_instead(report, content if chosen[0] is None else None, style if chosen[1] is None else None)
    if shown:  # said where it is seen: the axes are not LogProb's (report.md says why, in a note under the figure)
        title += f"\naxes: {shown}"
    if marks or tested:
        title += "\nsquares: baselines, not systems" + ("" if tested else " (grey: not in the front or the tests)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    shown_points = {**bars, **marks}
    place_labels(ax, [(p[0]["score"], p[1]["score"]) for p in shown_points.values()], list(shown_points))
    mark_figure(fig, [m for m in (content, style) if m in report.random_weights])
    note_models(fig, {m: report.signatures[m] for m in (content, style) if m in report.signatures})
    return fig


def axes_instead(report: SystemsReport, content: str | None, style: str | None) -> str:
    """What the tradeoff figure's axes show where the run has no LogProb scores (``content`` / ``style``: the metrics
    it picked by default, ``None`` where the caller chose one): ``the human ratings`` or the metrics' names; ``""``
    where the axes are LogProb's or chosen."""
    instead = [m for m, first in ((content, CONTENT_METRICS[0]), (style, STYLE_METRICS[0])) if m and m != first]
    if not instead:
        return ""
    return ("the human ratings" if all(m.startswith(HUMAN_PREFIX) for m in instead)
            else " and ".join(_axis_name(report, m) for m in instead))


def _axis_name(report: SystemsReport, metric: str, what: str = "") -> str:
    """``content preservation: human content ratings (higher is better)``; without ``what``, the metric's name."""
    name = f"human {metric.removeprefix(HUMAN_PREFIX)} ratings" if metric.startswith(HUMAN_PREFIX) else \
        report.label(metric)
    if not what:
        return name
    better = "higher" if report.higher_is_better.get(metric, True) else "lower"
    return f"{what}: {name} ({better} is better)"


def _write_figure(fig: Any, path: Path) -> Path:
    """``fig`` saved at ``path`` through a temporary name that ends in its extension (the format), then closed; a
    failure is one error naming ``path``, the previous file left as it was."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    try:
        with atomic_path(path, suffix=f".tmp{path.suffix}") as tmp:
            save_figure(fig, tmp)
    except OSError as err:
        raise write_error(path, err) from None
    finally:
        plt.close(fig)
    return path


OUTPUTS = ("rows.jsonl", "systems.csv", "pairs.csv", "report.md", "report.json",
           *(f"tradeoff.{fmt}" for fmt in FIGURE_FORMATS))
"""Every file ``styleeval evaluate`` may write in OUT (a rerun removes those it does not write)."""


def write_outputs(report: SystemsReport, out_dir: str | Path, plots: bool = True,
                  figure_format: str = "png") -> dict[str, Path]:
    """Every file of ``styleeval evaluate`` in ``out_dir``, the figure as ``tradeoff.<figure_format>`` (png, pdf or
    svg), shown in report.md; returns their paths. Each file is written under a temporary name and renamed into
    place (a full disk or a read-only OUT is one error naming the path, and the previous run's file stays whole);
    files of :data:`OUTPUTS` this run does not write (a plot, one in another format) are removed, so OUT never mixes
    two runs."""
    out = Path(out_dir)
    paths = {"rows": out / "rows.jsonl", "systems": out / "systems.csv", "pairs": out / "pairs.csv",
             "report": out / "report.md", "json": out / "report.json"}

    random = report.random_weights

    def rows(f) -> None:
        for record in row_records(report):
            clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
            clean["signatures"] = report.signatures
            if random:
                clean["random_weights"] = random
            f.write(json.dumps(clean, ensure_ascii=False, default=_plain) + "\n")

    atomic_write(paths["rows"], rows)
    both = pd.concat([report.systems, report.baselines], ignore_index=True) if len(report.baselines) \
        else report.systems  # the baselines after the systems (their names in parentheses; no cluster)
    systems = both.assign(cluster=both["cluster"].astype("Int64"))  # 2, not 2.0; empty: none
    for name, frame in (("systems", systems), ("pairs", report.pairs)):
        frame = spreadsheet_safe(with_warning(frame, random))
        atomic_write(paths[name], lambda f, frame=frame: frame.to_csv(f, index=False))
    fig = tradeoff_figure(report) if plots else None
    if fig is not None:
        paths["plot"] = _write_figure(fig, out / f"tradeoff.{figure_format}")
    atomic_write_text(paths["report"], to_markdown(report, figure=paths["plot"].name if "plot" in paths else None))
    atomic_write_text(paths["json"], json.dumps(report.to_dict(), indent=1, default=_plain))
    for name in OUTPUTS:
        if out / name not in paths.values():
            (out / name).unlink(missing_ok=True)
    return paths


def row_records(report: SystemsReport) -> list[dict[str, Any]]:
    """``rows.jsonl``'s records before the signatures: each row's ``row``, ``system`` and ``source_id``, what was
    scored (``source``, ``rewrite``, ``style``, ``references``: :attr:`SystemsReport.texts`, where the report has
    them), then every metric's score and the human ratings."""
    scores = report.scores.to_dict("records")
    marked = set(report.baseline_names)
    if marked:  # a baseline's row, flagged: not a system's output
        scores = [{**r, "baseline": True} if r.get("system") in marked else r for r in scores]
    if report.texts.empty:
        return scores
    keys = ("row", "system", "source_id")
    return [{**{k: record[k] for k in keys if k in record}, **texts,
             **{k: v for k, v in record.items() if k not in keys}}
            for record, texts in zip(scores, report.texts.to_dict("records"), strict=True)]


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")
