"""Meta-evaluation of style-transfer metrics against human ratings (Pauli et al., 2025; Lai et al., 2022).

>>> import tempfile
>>> from styleeval.metaeval import run_metaeval, write_report
>>> result = run_metaeval(["style_gap_testset"], ["s_bleu", "s_paper_bleu"], "content", n_boot=0)
>>> sorted(set(result.correlations.metric)), len(result.correlations) > 0
(['s_bleu', 's_paper_bleu'], True)
>>> paths = write_report(result, tempfile.mkdtemp(), plots=False)
>>> sorted(p.name for p in paths.values())
['correlations.csv', 'report.md', 'wmt_kendall.csv']

The statistics it reports live in :mod:`styleeval.stats`, the scoring pass and its cache in
:mod:`styleeval.scoring`.
"""

from __future__ import annotations

from styleeval.metaeval.data import RatedData
from styleeval.metaeval.grouping import Group, group_averages, paper_groups, summarize_group
from styleeval.metaeval.report import write_report as _write
from styleeval.metaeval.runner import (
    CSV_COLUMNS,
    MetaevalResult,
    correlate_datasets,
    load_datasets,
    run_metaeval,
    score_datasets,
)


def write_report(result: MetaevalResult, out_dir, plots: bool = True, hybrids: bool = False,
                 figure_format: str = "png"):
    """Write ``correlations.csv``, ``report.md`` and the figures (png, pdf or svg) for ``result`` (see
    :mod:`styleeval.metaeval.report`)."""
    return _write(result, out_dir, plots=plots, hybrids=hybrids, figure_format=figure_format)


__all__ = [
    "CSV_COLUMNS",
    "Group",
    "MetaevalResult",
    "RatedData",
    "correlate_datasets",
    "group_averages",
    "load_datasets",
    "paper_groups",
    "run_metaeval",
    "score_datasets",
    "summarize_group",
    "write_report",
]
