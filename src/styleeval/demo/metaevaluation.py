"""The Meta-evaluation tab: the sacrebleu metrics (and the Space's LLM metrics) against the test set's content
ratings, computed once (:func:`content_metaeval`), as a table and figure (:func:`summary_of`) and a leaderboard
(:func:`leaderboard_of`); :func:`metaeval_tab`: all of it, or the tab's message where the corpora cannot be loaded
(:func:`metaeval_unavailable`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from styleeval.demo.messages import for_the_space_owner, log_for_owner
from styleeval.demo.numbers import p_text
from styleeval.labels import RANDOM_MARK, mark_figure, metric_label, shown_label

if TYPE_CHECKING:
    from styleeval.metaeval import MetaevalResult

TAB_METRICS = ("s_bleu", "s_chrf", "s_paper_bleu")
"""The metrics the Meta-evaluation tab correlates with the content ratings (the Space adds its LLM metrics)."""


def content_metaeval(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                     extra_metrics: Sequence[str] = ()) -> MetaevalResult:
    """The meta-evaluation the Meta-evaluation tab shows: ``metrics`` and ``extra_metrics`` against the test set's
    content ratings, without bootstrap intervals."""
    from styleeval.metaeval import run_metaeval  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval)

    return run_metaeval(["style_gap_testset"], [*metrics, *extra_metrics], dimension="content", data_dir=data_dir,
                        n_boot=0)


def metaeval_summary(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                     extra_metrics: Sequence[str] = ()) -> tuple[list[list[Any]], Any]:
    """Correlations with the content ratings on the test set, per task: rows ``[metric, subset, n, spearman, p]``
    and the Figure-2-style plot (a matplotlib figure)."""
    return summary_of(content_metaeval(data_dir, metrics, extra_metrics))


def summary_of(result: MetaevalResult) -> tuple[list[list[Any]], Any]:
    """:func:`metaeval_summary`'s rows and figure from a :func:`content_metaeval` result."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    from styleeval.metaeval.plots import metric_colors  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.plots)

    corr = result.correlations
    mark = {m: metric_label(m) + (RANDOM_MARK if m in result.random_weights else "") for m in result.metrics}
    rows = [[mark[r.metric], r.subset, int(r.n), round(float(r.spearman), 3), p_text(r.spearman_p)]
            for r in corr.itertuples()]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    subsets = list(dict.fromkeys(corr.subset))
    width = 0.8 / max(1, len(result.metrics))
    colors = metric_colors(result.metrics)  # the CLI's figures' colours: one metric, one colour everywhere
    for k, m in enumerate(result.metrics):
        vals = [float(corr[(corr.metric == m) & (corr.subset == s)].spearman.iloc[0])
                if len(corr[(corr.metric == m) & (corr.subset == s)]) else math.nan for s in subsets]
        ax.bar([i + (k - (len(result.metrics) - 1) / 2) * width for i in range(len(subsets))], vals, width,
               label=mark[m], color=colors[m])
    ax.set_xticks(range(len(subsets)))
    ax.set_xticklabels(subsets, rotation=20, ha="right")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("Spearman with content ratings")
    ax.legend(fontsize=7)
    fig.tight_layout()
    mark_figure(fig, result.random_weights)
    return rows, fig


def metaeval_unavailable(error: BaseException) -> str:
    """The Meta-evaluation tab's message when the rated corpora cannot be loaded (Markdown, said in full in the
    page: a visitor can open no file of the repository), in the page's words: no command-line flag, no path of the
    server (``error``, which has both, goes to the Space's log: :func:`~styleeval.demo.messages.log_for_owner`, worded for the Space: what
    to set for it, never the meta-evaluation command's flags)."""
    log_for_owner("the meta-evaluation tab has no data", for_the_space_owner(error))
    return ("**The meta-evaluation is not available in this Space**: it correlates metrics with the human content "
            "ratings of Pauli et al.'s 500-row test set, and this Space could not load those ratings when it "
            "started. The other tabs work without them. *For the Space's owner*: set the variable "
            "`STYLEEVAL_DATA_DIR` to a copy of the corpora on the Space's disk, or give the Space network access so "
            "that it downloads them from their original URLs when it starts; the Space's log says what was missing.")


def metaeval_leaderboard(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                         extra_metrics: Sequence[str] = (), trials: int = 100) -> list[list[Any]]:
    """The metrics leaderboard on the test set's content ratings (:mod:`styleeval.metaeval.leaderboard`): rows
    ``[statistic, metric, value, rank, cluster, n]``, values to 4 significant digits."""
    return leaderboard_of(content_metaeval(data_dir, metrics, extra_metrics), trials)


def leaderboard_of(result: MetaevalResult, trials: int = 100) -> list[list[Any]]:
    """:func:`metaeval_leaderboard`'s rows from a :func:`content_metaeval` result."""
    from styleeval.metaeval.leaderboard import build_leaderboard  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.leaderboard)

    board = build_leaderboard([result], trials=trials)
    return [[r.statistic, shown_label(r.metric, random_weights=r.metric in result.random_weights),
             float(f"{r.value:.4g}"), int(r.rank),
             int(r.cluster) if math.isfinite(r.cluster) else "", int(r.n)] for r in board.itertuples()]


@dataclass
class MetaevalTab:
    """What the Meta-evaluation tab shows: :func:`metaeval_summary`'s rows and figure, :func:`metaeval_leaderboard`'s
    rows; ``message`` (:func:`metaeval_unavailable`) where the corpora could not be loaded, else ``""``."""

    rows: list[list[Any]]
    figure: Any
    board: list[list[Any]]
    message: str = ""

    @property
    def available(self) -> bool:
        return not self.message


def metaeval_tab(extra_metrics: Sequence[str] = ()) -> MetaevalTab:
    """The Meta-evaluation tab, computed (the corpus from ``STYLEEVAL_DATA_DIR``, which the loaders read themselves
    and name when it is wrong); any failure is the tab's message, in the page's words: the demo works without it."""
    try:
        result = content_metaeval(extra_metrics=extra_metrics)  # once: the table, the figure and the leaderboard's
        rows, figure = summary_of(result)
        return MetaevalTab(rows, figure, leaderboard_of(result))
    except Exception as err:
        return MetaevalTab([], None, [], metaeval_unavailable(err))
