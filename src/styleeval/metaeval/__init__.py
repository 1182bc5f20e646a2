"""Meta-evaluation of style-transfer metrics against human ratings (Pauli et al., 2025; Lai et al., 2022).

>>> from styleeval.metaeval import run_metaeval, write_report, ScoresCache
>>> result = run_metaeval(["style_gap_testset"], ["s_bleu", "s_paper_bleu"], "content",
...                       cache=ScoresCache("~/.cache/styleeval/scores"))
>>> write_report(result, "out/")   # correlations.csv, report.md, *.png
"""

from __future__ import annotations

from styleeval.metaeval.cache import ScoresCache, default_cache_dir
from styleeval.metaeval.correlation import (
    Correlation,
    DegenerateScoresError,
    bootstrap_ci,
    check_scores,
    correlate,
    format_correlation,
    kendall_tau_like,
    significance_marker,
    system_level,
)
from styleeval.metaeval.data import RatedData
from styleeval.metaeval.grouping import Group, group_averages, paper_groups, summarize_group
from styleeval.metaeval.runner import (
    CSV_COLUMNS,
    DEFAULT_DATASETS,
    MetaevalResult,
    run_metaeval,
    score_dataset,
)


def write_report(result: MetaevalResult, out_dir, plots: bool = True, hybrids: bool = False):
    """Write ``correlations.csv``, ``report.md`` and plots for ``result`` (see :mod:`styleeval.metaeval.report`)."""
    from styleeval.metaeval.report import write_report as _write

    return _write(result, out_dir, plots=plots, hybrids=hybrids)


__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_DATASETS",
    "Correlation",
    "DegenerateScoresError",
    "Group",
    "MetaevalResult",
    "RatedData",
    "ScoresCache",
    "bootstrap_ci",
    "check_scores",
    "correlate",
    "default_cache_dir",
    "format_correlation",
    "group_averages",
    "kendall_tau_like",
    "paper_groups",
    "run_metaeval",
    "score_dataset",
    "significance_marker",
    "summarize_group",
    "system_level",
    "write_report",
]
