"""`styleeval metaeval`: correlate metrics with human ratings and write the paper-style report.

    styleeval metaeval --datasets style_gap_testset,lai_formality --metrics s_bleu,s_chrf \
        --dimension content --out results/

writes ``results/correlations.csv``, ``results/wmt_kendall.csv``, ``results/report.md`` and the figures
(``results/*.png``, or ``.pdf`` / ``.svg`` with ``--figure-format``). Metric scores are cached per (metric signature,
dataset fingerprint) under ``--cache-dir`` so re-running is instant and an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from styleeval.commands._options import (
    add_allow_missing,
    add_figure_options,
    add_model_argument,
    check_out_dir,
    metric_specs,
    missing_metrics_status,
    non_negative_int,
    positive_int,
    progress_choice,
)
from styleeval.errors import UserError
from styleeval.escaping import terminal_text
from styleeval.files.records import iter_records
from styleeval.labels import counted


def _csv_list(value: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


SUMMARY = "correlate metrics with human ratings (paper-style tables and plots)"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the `metaeval` sub-command."""
    from styleeval.corpora import SPECS, rating_corpora  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)
    from styleeval.metaeval.statistics import STATISTICS  # noqa: PLC0415 - heavy (pandas, via styleeval.metaeval.statistics)
    from styleeval.metrics.registry import DEFAULT_METRICS, NAMESPACES, available_metrics  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics.registry)

    p = subparsers.add_parser(
        "metaeval",
        help=SUMMARY,
        description="Correlate metric scores with human ratings on the rated corpora and write "
        "correlations.csv, report.md and plots.",
    )
    p.add_argument("--datasets", type=_csv_list, default=None,
                   help=f"comma-separated corpora (default: those of the rating corpora present: "
                   f"{', '.join(rating_corpora())})")
    p.add_argument("--metrics", type=_csv_list, default=None,
                   help="comma-separated metric specs, options as name:key=value (default: "
                   f"{','.join(DEFAULT_METRICS)}); available: {', '.join(available_metrics())}"
                   f"{''.join(f', {ns}:<{member}>' for ns, (_, _, member) in NAMESPACES.items())} (lai:<score>: Lai "
                   "et al.'s released scores, e.g. lai:comet), precomputed:file=FILE:column=COLUMN")
    add_model_argument(p)
    p.add_argument("--scores", action="append", default=[], metavar="FILE",
                   help="a CSV/JSONL file of precomputed scores keyed by the corpus row 'id': each other column becomes "
                   "a metric (repeatable); one column: precomputed:file=FILE:column=NAME")
    p.add_argument("--dimension", choices=("content", "style", "fluency"), default="content",
                   help="the human ratings metrics are compared with (default: content)")
    p.add_argument("--style-words", choices=("corpus", "authors"), default="corpus",
                   help="target-style words given to LLM metrics: the corpus's (default) or the authors' run "
                   "scripts' where they differ (" + ", ".join(
                       f"{n}: {', '.join(s.authors_style_words.values())}" for n, s in SPECS.items()
                       if s.authors_style_words) + ")")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--data-dir", default=None, help="local corpus mirror (default: $STYLEEVAL_DATA_DIR or download)")
    p.add_argument("--cache-dir", default=None,
                   help="scores cache (default: scores/ in styleeval's cache, $STYLEEVAL_CACHE or ~/.cache/styleeval)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the scores cache")
    p.add_argument("--bootstrap", type=non_negative_int, default=1000, help="bootstrap resamples for the 95%% CI (0: none)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    p.add_argument("--analysis", choices=("paper", "lai"), default="paper",
                   help="paper: the correlation tables of Pauli et al. (default); lai: Lai et al. (2022)'s analyses on "
                   "lai_formality (inter-annotator agreement, system-level r, per-input tau-like, top/last-N, "
                   "directions) -> OUT/lai.csv and OUT/lai.md; use lai:<score> metrics for Lai's own scores")
    add_allow_missing(p, datasets=True)
    p.add_argument("--hybrids", action="store_true",
                   help="add Mukherjee et al.'s hybrid metrics (oracle and cross-validated by source) to the report")
    p.add_argument("--leaderboard", action="store_true",
                   help="also write leaderboard.csv/.md/.png (or --figure-format): every metric ranked and clustered "
                   "per corpus and human dimension (content, style, fluency where rated) by each registered "
                   f"statistic: {', '.join(STATISTICS.names())} (docs/metaeval.md)")
    p.add_argument("--leaderboard-dimensions", default=None, metavar="DIMS",
                   help="only these human dimensions in the leaderboard, comma-separated (content, style, fluency; "
                   "default: all that the corpora rate); the others are not computed")
    p.add_argument("--leaderboard-bootstrap", type=non_negative_int, default=200, metavar="N",
                   help="bootstrap resamples of the leaderboard's CIs (default 200; 0: none)")
    p.add_argument("--leaderboard-trials", type=positive_int, default=200, metavar="N",
                   help="PERM-BOTH permutations behind the leaderboard's clusters (default 200; WMT uses 1000, which "
                   "takes about 5x as long)")
    add_figure_options(p, "groups, tasks, datasets, metrics_heatmap; leaderboard; lai_figure3/4")
    p.add_argument("--no-progress", "--quiet", "-q", action="store_true", dest="no_progress",
                   help="hide progress (bars where stderr is a terminal, else one line per step done)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the meta-evaluation described by ``args``; returns the exit status."""
    from styleeval.metaeval import run_metaeval, write_report  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval)
    from styleeval.scoring import ScoresCache, default_cache_dir  # noqa: PLC0415 - heavy (numpy, via styleeval.scoring)

    check_out_dir(Path(args.out))  # before any work: all of it would be lost at the end otherwise
    from styleeval.metrics.registry import DEFAULT_METRICS  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics.registry)

    defaults = args.metrics is None
    metrics = metric_specs(DEFAULT_METRICS if defaults else args.metrics, args.model)
    for file in args.scores:  # metric objects, not specs: no --model to apply
        metrics += _score_file_metrics(file)
    args.metrics = metrics
    start = time.perf_counter()
    cache = ScoresCache(None if args.no_cache else (args.cache_dir or default_cache_dir()))
    if args.analysis == "lai":
        from styleeval.metaeval.lai import run_lai  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.lai)

        if args.datasets and args.datasets != ["lai_formality"]:
            raise UserError("--analysis lai runs on lai_formality only (give --datasets lai_formality or leave it out)")
        result = run_lai(args.metrics, args.dimension, args.data_dir, cache, args.out,
                         progress=progress_choice(args), plots=not args.no_plots,
                         figure_format=args.figure_format)
        figures = "; figures: " + ", ".join(result.attrs.get("figures", [])) if result.attrs.get("figures") else ""
        print(f"{len(result)} numbers -> {Path(args.out) / 'lai.csv'}, {Path(args.out) / 'lai.md'}{figures} "
              f"({time.perf_counter() - start:.1f}s)")
        return 0
    run_on = functools.partial(  # the run's meta-evaluation on a human dimension (the leaderboard runs the others)
        run_metaeval, datasets=args.datasets or None, metrics=args.metrics, data_dir=args.data_dir, cache=cache,
        n_boot=args.bootstrap, seed=args.seed, progress=progress_choice(args), style_words=args.style_words)
    result = run_on(dimension=args.dimension,
                    log=lambda msg: print(f"note: {terminal_text(msg, lines=True)}", file=sys.stderr),
                    allow_missing=args.allow_missing)
    paths = write_report(result, args.out, plots=not args.no_plots, hybrids=args.hybrids,
                         figure_format=args.figure_format)
    if args.leaderboard:
        _leaderboard(args, result, run_on, cache)
    elapsed = time.perf_counter() - start
    print(f"{len(result.correlations)} correlations, cache {counted(cache.hits, 'hit')} / {counted(cache.misses, 'miss', 'misses')}, "
          f"{elapsed:.1f}s -> {paths['report'].parent}")
    return missing_metrics_status("metaeval", result.failed_metrics, paths["report"].parent, args.allow_missing,
                                  defaults=defaults)


def _leaderboard(args: argparse.Namespace, first, run_on: Callable[..., Any], cache) -> None:
    """``--leaderboard``: :func:`~styleeval.metaeval.leaderboard.leaderboard_across_dimensions` of the run ``first``
    (``run_on(dimension=...)``: the same run on another dimension), written to OUT."""
    from styleeval.metaeval.leaderboard import leaderboard_across_dimensions, write_leaderboard  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.leaderboard)

    board = leaderboard_across_dimensions(
        first, run_on, _leaderboard_dimensions(args.leaderboard_dimensions), trials=args.leaderboard_trials,
        seed=args.seed, n_boot=args.leaderboard_bootstrap, progress=progress_choice(args),
        cache_dir=None if cache.root is None else cache.root / "leaderboard",
        note=lambda message: print(f"note: {message}", file=sys.stderr))
    paths = write_leaderboard(board, args.out, plots=not args.no_plots, figure_format=args.figure_format)
    print(f"leaderboard: {counted(len(board), 'row')} -> {paths['md']}")


def _leaderboard_dimensions(text: str | None) -> list[str] | None:
    """``--leaderboard-dimensions``: a comma list, or ``None`` for ``all`` (also when not given)."""
    if text is None or text.strip() == "all":
        return None
    return [d.strip() for d in text.split(",") if d.strip()]


def _score_file_metrics(file: str) -> list:
    """A precomputed metric for every column of FILE except ``id``, named after the column. Built from the file and
    the column's name (:func:`styleeval.metrics.precomputed.from_file`), never from a spec written with it: a column
    named ``m:column=rand2`` is the column ``m:column=rand2``, not an option."""
    from styleeval.metrics.precomputed import from_file  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics.precomputed)

    if not Path(file).is_file():
        raise UserError(f"--scores {file}: no such file")
    for where, record in iter_records(file):
        columns = [c for c in record if c != "id"]
        if where == "header" or columns:
            if "id" not in record:
                raise UserError(f"{file}: a score file needs an 'id' column (the corpus row ids)")
            return [from_file(file, column) for column in columns]
    raise UserError(f"{file}: no scores")
