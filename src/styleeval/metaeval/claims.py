"""What the paper claims of its LLM rows, answered with a measured model (``styleeval reproduce-paper --model``).

Four Markdown sections, every number computed from a :class:`~styleeval.metaeval.measured.Measurement`:
:func:`format_compliance` (how often the paper-mode judge answers in the format its parser reads, against the
expected mode's every row), :func:`logprob_against_autorater` (LogProb against the same model as autorater on
content, with bootstrap intervals and Williams tests), :func:`logprob_by_size` (the paper's drop of LogProb from 8B
to 1B on the test set, and where the measured model falls) and :func:`disagreements` (the test-set rows where LogProb
and people disagree most, token by token). :func:`size_figure` draws correlation against parameter count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from styleeval.explain import token_table
from styleeval.metaeval.measured import PAPER_PARAMETERS, Measurement, parameters, rank_gaps
from styleeval.stats.compare import williams_test

CONTENT_COLUMNS = [("Test set (ALL)", "style_gap_testset", "all"), ("Mir (sys)", "mir_yelp", "all"),
                   ("Lai (sys)", "lai_formality", "system"), ("Ze. (sys)", "ziegenbein_appropriateness", "system"),
                   ("Alv. (sys)", "asset", "all"), ("Lai (ref)", "lai_formality", "reference"),
                   ("Ze. (ref)", "ziegenbein_appropriateness", "reference")]
"""The content columns the claims are checked on (Table 4's ALL, then Table 3's)."""
STYLE_COLUMNS = [("Mir", "mir_yelp", "all"), ("Lai", "lai_formality", "all"),
                 ("Ze.", "ziegenbein_appropriateness", "all"), ("Alv.", "asset", "all")]
"""Table 5's columns (style strength)."""
PAPER_TESTSET_LOGPROB = {"8b": 0.63, "3b": 0.54, "1b": 0.37}
"""Table 4, ALL column: LogProb's Spearman with human content on the test set."""
PAPER_TESTSET_AUTORATER = {"70b": 0.78, "8b": 0.67, "3b": 0.31}
"""Table 4, ALL column: the paper-mode autorater's."""
PAPER_STYLE_LOGPROB = {"8b": (0.5, 0.28, -0.02), "3b": (0.46, 0.28, -0.01), "1b": (0.41, 0.31, -0.03)}
"""Table 5, Mir, Lai and Alv. (the columns whose data are in the mirror): LogProb style."""
PAPER_STYLE_AUTORATER = {"70b": (0.45, 0.6, 0.6), "8b": (0.34, 0.55, 0.32), "3b": (0.29, 0.37, 0.23)}
"""Table 5, Mir, Lai and Alv.: the paper-mode autorater's style."""
SURPRISING = -2.5
"""A token whose content log-probability is below this (the best of the three instructions gives it less than 8%) is
marked as surprising to the model in :func:`disagreements`."""


def _rho(record: dict[str, Any] | None, ci: bool = True) -> str:
    """``0.28 [0.20, 0.36]`` (``*``: not significant at 0.05), or ``–``."""
    if record is None:
        return "–"
    mark = "" if record["spearman_p"] < 0.05 else "*"
    text = f"{record['spearman']:.2f}{mark}"
    if ci and math.isfinite(record.get("ci_low", math.nan)):
        text += f" [{record['ci_low']:.2f}, {record['ci_high']:.2f}]"
    return text


def _present(m: Measurement, columns: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [c for c in columns if c[1] in m.data]


def format_compliance(measurements: Sequence[Measurement]) -> str:
    """Per corpus and dimension: the paper-mode replies whose rating could be read, against the expected mode."""
    m0 = measurements[0]
    lines = [f"#### Does the judge answer in the paper's format? ({m0.model})", "",
             "Paper mode: the authors' prompt and a generated reply, read by the parser (`parser=robust`); expected "
             "mode: the reply scaffold is teacher-forced and the five rating probabilities read, so a rating is read "
             "on every row by construction. The paper dropped its 1B judge because it answered in the wrong format "
             "over 50% of the time.", "",
             "| corpus | dimension | paper mode: rating read | expected mode: rating read |", "|---|---|---|---|"]
    for m in measurements:
        expected = m.autorater("expected")
        for name in m.data:
            read = m.readable(name)
            if read is None:
                continue
            k, n = read
            scored = m.result.scores.get((name, expected))
            rated = np.isfinite(m.result.human[name])
            got = "–" if scored is None else f"{int(np.isfinite(scored[rated]).sum())} of {n}"
            lines.append(f"| {name} | {m.dimension} | {k} of {n} ({100 * k / n:.1f}%) | {got} |")
    return "\n".join(lines)


def logprob_against_autorater(m: Measurement, published: dict[tuple[str, str], tuple[str, str]]) -> str:
    """Content: LogProb against the same model as autorater (both modes), per column, with the paper's 3B beside
    (``published``: (dataset, subset) -> the paper's LogProb 3b and LLM-as-A 3b values)."""
    logprob = m.logprob
    expected = m.autorater("expected")
    paper = m.autorater("paper")
    lines = [f"#### Does LogProb beat the same model as autorater on content? ({m.model})", "",
             "Spearman with the human content rating [95% bootstrap interval, 1000 resamples, seed 0]; `*` not "
             "significant at 0.05. Williams: one-sided p that LogProb's Pearson correlation with people exceeds the "
             "expected-mode autorater's, on the rows both score (as report.md's Williams tests). The paper's 3B "
             "(LogProb / paper-mode autorater) beside.", "",
             f"| column | n | {logprob} | {expected} | {paper} | Williams p | paper: LogProb 3b / LLM-as-A 3b |",
             "|---|---|---|---|---|---|---|"]
    wins = total = 0
    for label, dataset, subset in _present(m, CONTENT_COLUMNS):
        a, b = m.cell(logprob, dataset, subset), m.cell(expected, dataset, subset)
        if a is None and b is None:
            continue
        williams = "–"
        if a is not None and b is not None:
            idx = m.data[dataset].subsets("content")[subset]
            human = m.result.human[dataset][idx]
            test = williams_test(human, m.result.scores[dataset, logprob][idx], m.result.scores[dataset, expected][idx])
            williams = f"{test.p:.3g} (n = {test.n})"
            total += 1
            wins += a["spearman"] > b["spearman"]
        ours = (a or b)["n"]
        lp3, aa3 = published.get((dataset, subset), ("–", "–"))
        lines.append(f"| {label} | {ours} | {_rho(a)} | {_rho(b)} | {_rho(m.cell(paper, dataset, subset), False)} | "
                     f"{williams} | {lp3} / {aa3} |")
    if total:
        lines += ["", f"LogProb's Spearman is above the expected-mode autorater's in {wins} of {total} columns."]
    return "\n".join(lines)


def logprob_by_size(m: Measurement) -> str:
    """Table 4's ALL column for LogProb from 8B down, and the measured model's value with its interval."""
    logprob = m.logprob
    record = m.cell(logprob, "style_gap_testset", "all")
    lines = [f"#### Does LogProb's drop from 8B to 1B on the test set continue at {m.model}?", ""]
    paper = ", ".join(f"{size.upper()} {value:.2f}" for size, value in PAPER_TESTSET_LOGPROB.items())
    if record is None:
        return "\n".join([*lines, f"The paper: {paper}. Not measured: the test set is not in this run."])
    low, high, one_b = record["ci_low"], record["ci_high"], PAPER_TESTSET_LOGPROB["1b"]
    if math.isfinite(high) and high < one_b:
        verdict = f"it continues: the interval lies below the 1B's {one_b:.2f}"
    elif math.isfinite(low) and low > one_b:
        verdict = f"it does not: the interval lies above the 1B's {one_b:.2f}"
    else:
        verdict = f"not distinguishable from the 1B's {one_b:.2f}: the interval contains it"
    lines.append(f"The paper (Table 4, ALL, n = 500): {paper}. {m.model}: {_rho(record)} (n = {record['n']}): "
                 f"{verdict}.")
    return "\n".join(lines)


def _mean_cells(m: Measurement, label: str, columns: Sequence[tuple[str, str, str]]) -> float | None:
    values = [m.cell(label, d, s) for _lab, d, s in columns]
    if any(v is None for v in values) or not values:
        return None
    return float(np.mean([v["spearman"] for v in values]))  # type: ignore[index]


SIZE_PANELS = ("content: test set, ALL (Table 4)", "style: mean of Mir, Lai, Alv. (Table 5)")
"""The size figure's two panels: content on the test set (Table 4, ALL) and style (Table 5, the mean of the columns
whose data are in the mirror)."""
MODEL_MARKERS = (("s", "D"), ("^", "v"), ("P", "X"), ("p", "h"), ("<", ">"))
"""Markers of the measured models' points in the size figure, one pair per model in the order given (cycled): the
first for LogProb and the paper-mode autorater (told apart by colour), the second for the expected mode."""


def size_points(measured: Sequence[tuple[Measurement | None, Measurement | None]]
                ) -> dict[str, list[tuple[str, float, float]]]:
    """The measured points of the size figure: panel (:data:`SIZE_PANELS`) -> (row label, parameters, Spearman) of
    every measured row whose model's parameter count is known (:func:`~styleeval.metaeval.measured.parameters`), model
    after model in the order given (each model's autorater in paper mode, in expected mode, then LogProb)."""
    style_columns = [c for c in STYLE_COLUMNS if c[0] != "Ze."]
    points: dict[str, list[tuple[str, float, float]]] = {panel: [] for panel in SIZE_PANELS}
    for content, style in measured:
        m = content or style
        size = None if m is None else parameters(m.model)
        if size is None:
            continue
        for panel, meas in zip(SIZE_PANELS, (content, style), strict=True):
            for row in [] if meas is None else meas.rows:
                if panel == SIZE_PANELS[0]:
                    value = (meas.cell(row.label, "style_gap_testset", "all") or {}).get("spearman")  # type: ignore
                else:
                    value = _mean_cells(meas, row.label, style_columns)  # type: ignore[arg-type]
                if value is not None and math.isfinite(value):
                    points[panel].append((row.label, size, value))
    return points


def size_figure(measured: Sequence[tuple[Measurement | None, Measurement | None]], path: str | Path) -> Path | None:
    """Spearman with people against parameter count, the paper's models and the measured ones (``measured``: each
    model's content and style measurements, in the order given): content on the test set (Table 4, ALL) and style
    (Table 5, mean of Mir, Lai and Alv.). A model whose parameter count is unknown is left out; ``None`` (nothing
    written) when no measured model's is known."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    shown = [(content, style) for content, style in measured
             if (content or style) is not None and parameters((content or style).model) is not None]  # type: ignore
    if not shown:
        return None
    models = [(content or style).model for content, style in shown]  # type: ignore[union-attr]
    markers = {model: MODEL_MARKERS[k % len(MODEL_MARKERS)] for k, model in enumerate(models)}
    points = size_points(shown)
    colors = {"paper": "#ff7f0e", "expected": "#2ca02c", "": "#1f77b4"}
    panels = [(SIZE_PANELS[0], PAPER_TESTSET_LOGPROB, PAPER_TESTSET_AUTORATER),
              (SIZE_PANELS[1], {k: float(np.mean(v)) for k, v in PAPER_STYLE_LOGPROB.items()},
               {k: float(np.mean(v)) for k, v in PAPER_STYLE_AUTORATER.items()})]
    rows = {row.label: row for content, style in shown for m in (content, style) if m is not None for row in m.rows}
    several = len(models) > 1
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8 if several else 4), sharey=True)
    for ax, (title, lp, aa) in zip(axes, panels, strict=True):
        for name, paper_points, color in (("LogProb", lp, "#1f77b4"), ("LLM-as-A (paper mode)", aa, "#ff7f0e")):
            xs = sorted(paper_points, key=PAPER_PARAMETERS.get)
            ax.plot([PAPER_PARAMETERS[x] for x in xs], [paper_points[x] for x in xs], "o-", color=color,
                    label=f"{name}, paper (Llama 3.x)")
        for label, size, value in points[title]:
            row = rows[label]
            marker = markers[row.model][1 if row.mode == "expected" else 0]
            ax.plot([size], [value], marker, color=colors[row.mode], markersize=8, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("parameters")
        ax.set_title(title, fontsize=10)
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Spearman with human ratings")
    fig.suptitle(f"LLM metrics against model size: the paper's Llama 3.x and {', '.join(models)}", fontsize=11)
    if several:  # one legend for both panels, under them: inside, it would cover the points
        handles: dict[str, Any] = {}
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        fig.legend(handles.values(), handles.keys(), fontsize=7, loc="lower center", ncol=3, frameon=False)
        fig.tight_layout(rect=(0, 0.06 * math.ceil(len(handles) / 3), 1, 1))
    else:
        axes[1].legend(fontsize=8, loc="lower right")
        fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


MARKDOWN_SPECIAL = "\\`*_[]<>|~&"
"""ASCII punctuation that Markdown (CommonMark, GitHub's tables and strikethrough) may read as markup in a row's text:
backslash-escaped by :func:`_escape`."""


def _escape(text: str) -> str:
    """``text`` shown literally in a Markdown list item: :data:`MARKDOWN_SPECIAL` backslash-escaped, line breaks as
    spaces."""
    return "".join(f"\\{ch}" if ch in MARKDOWN_SPECIAL else " " if ch in "\r\n" else ch for ch in text)


def marked_rewrite(table: Sequence[dict[str, Any]]) -> str:
    """The rewrite as the model read it: every token whose content log-probability is below :data:`SURPRISING` in
    bold (``<b>``: Markdown's ``**`` does not open before punctuation inside a word, as in ``don't``), with it in
    parentheses."""
    parts = []
    for tok in table:
        text = tok["token"]
        if tok["content"] < SURPRISING and text.strip():
            lead = text[: len(text) - len(text.lstrip())]
            parts.append(f"{_escape(lead)}<b>{_escape(text.strip())}</b> ({tok['content']:.1f})")
        else:
            parts.append(_escape(text))
    return "".join(parts).strip()


def disagreements(m: Measurement, engine: Callable[[], Any], count: int = 20) -> str:
    """The ``count`` test-set rows where LogProb's content rank and the human rank differ most, each with the rewrite
    as the model read it (:func:`marked_rewrite`, from :func:`styleeval.explain.token_table`); ``engine()`` gives the
    :class:`~styleeval.LogProb` that scored them (called only when LogProb has scores there). ``""`` when it has
    none."""
    logprob = m.logprob
    data = m.data.get("style_gap_testset")
    scores = m.result.scores.get(("style_gap_testset", logprob))
    if data is None or scores is None:
        return ""
    human = m.result.human["style_gap_testset"]
    gaps = rank_gaps(human, scores)
    ranked = int(np.isfinite(gaps).sum())
    order = [int(i) for i in np.argsort(-np.abs(np.nan_to_num(gaps)), kind="stable")[:min(count, ranked)]]
    if not order:
        return ""
    rows = engine().score([data.sources[i] for i in order], [data.rewrites[i] for i in order],
                        [data.styles[i] for i in order], return_tokens=True)
    over = sum(gaps[i] > 0 for i in order)
    lines = [f"#### Where {logprob} and people disagree most on content (test set)", "",
             f"The {len(order)} test-set rows with the largest gap between LogProb's content rank and the human content "
             f"rank (both as fractions of the {ranked} rows both rate: +1 = LogProb's best where people rate it worst). "
             f"In {over} of them LogProb rates the rewrite higher than people do, in {len(order) - over} lower. Tokens "
             f"the model finds surprising (content log-probability below {SURPRISING}, the best of the three "
             "instructions giving them under 8%) are in bold with that log-probability; every other token was likely "
             "to the model.", ""]
    for k, (i, row) in enumerate(zip(order, rows, strict=True), 1):
        table = token_table(row)
        lines += [f"{k}. **{data.tasks[i]}** ({data.systems[i]}), human content {human[i]:.2f}, LogProb "
                  f"{scores[i]:.2f}, rank gap {gaps[i]:+.2f}, row `{data.ids[i]}`  ",
                  f"   source: {_escape(data.sources[i])}  ",
                  f"   rewrite: {marked_rewrite(table)}"]
    return "\n".join(lines)

