"""``styleeval evaluate``: evaluate and compare style-transfer systems, with confidence intervals and significance.

    styleeval evaluate outputs.csv --metrics s_bleu,s_chrf,logprob_content,logprob_style --out report/
    styleeval evaluate sysA.jsonl sysB.jsonl --system-from-filename --style formal --out report/
    styleeval evaluate --dataset lai_formality --metrics s_bleu,s_chrf,r_chrf --limit 20 --out report/

The work is :func:`styleeval.systems.evaluate_systems`; this command reads the files and writes the report.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from styleeval.commands._options import (
    add_allow_missing,
    add_figure_options,
    add_model_argument,
    check_out_dir,
    metric_specs,
    missing_metrics_status,
    non_negative_int,
    positive_int,
    probability,
    progress_choice,
)
from styleeval.errors import UserError
from styleeval.escaping import terminal_text
from styleeval.files.records import iter_records
from styleeval.labels import counted

EPILOG = """\
Each IN (CSV or JSONL) has the columns source, rewrite, style (or --style) and system (or --system-from-filename),
optionally source_id (pairs rows across systems; default: the source text), reference or references (for r_*
metrics) and human_<dimension> ratings (added as rows of the report, with each metric's system-level agreement).
Instead of IN, --dataset NAME compares the systems of a rated corpus: every system's rewrites, the corpus's
references, its human ratings as human_* columns; NAME is a corpus in which several systems rewrote every
source (`styleeval list corpora` marks them "systems"; another NAME is refused, naming them).
--limit N evaluates the first N sources only (every system's rows of them), as the report says.
Every report shows two baselines beside the systems, marked as such: (copy source), every source copied
unchanged (similarity metrics reward copying: where a system lands next to it), and (human reference), the first
reference of each source where the rows have references (not scored by r_* metrics: it is one of the references);
they are left out of the tests, clusters and agreement (--test-baselines to test them; --no-baselines: none).
OUT gets rows.jsonl (every row's texts: source, rewrite, style, references; its scores and the metrics'
signatures), systems.csv (system, metric, aggregate, n, n_missing, score, mean, ci_low, ci_high, cluster; a warning
column with random weights), pairs.csv (paired tests, Holm-adjusted per metric), report.md, report.json and
tradeoff.png (or .pdf / .svg: --figure-format) when a content and a style metric were computed. Per-row scores are kept in OUT/cache: a killed run resumes, a rerun
with more metrics computes only the new ones. The tables on stdout fit the terminal's width ($COLUMNS; 100 columns
when stdout is a file or a pipe): metrics that do not fit go into tables below, or systems become the columns.
"""


SUMMARY = "compare style-transfer systems: means with CIs, paired significance tests, clusters"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``evaluate`` sub-command."""
    from styleeval.metrics.registry import SYSTEM_METRICS as DEFAULT_METRICS  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics.registry)
    from styleeval.stats.resampling import SEED  # noqa: PLC0415 - heavy (numpy, via styleeval.stats.resampling)

    p = subparsers.add_parser(
        "evaluate", help=SUMMARY,
        description="Evaluate and compare style-transfer systems on per-row metric scores.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("inputs", nargs="*", metavar="IN", help="CSV or JSONL files of system outputs (or --dataset)")
    p.add_argument("--dataset", metavar="NAME", default=None,
                   help="instead of IN: the systems of a rated corpus, with its references and human ratings "
                   "(styleeval list corpora: those marked systems), read from --data-dir")
    p.add_argument("--limit", type=positive_int, metavar="N", default=None,
                   help="evaluate only the first N sources (in input order), every system's rows of them")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="folder for the report files")
    p.add_argument("--metrics", default=None,
                   help=f"comma-separated metric specs (default: {','.join(DEFAULT_METRICS)}); as in metaeval, "
                   "e.g. logprob_content:model=3b, s_chrf, precomputed:file=F:column=C")
    add_model_argument(p)
    p.add_argument("--style", help="one target style for every row (overrides a style column)")
    p.add_argument("--system-from-filename", action="store_true",
                   help="each IN holds one system, named after its file (without the extension)")
    p.add_argument("--test", choices=("ar", "bootstrap"), default="ar",
                   help="ar: paired approximate randomization (10,000 trials, default); bootstrap: paired bootstrap")
    p.add_argument("--alpha", type=probability, default=0.05, help="significance level after Holm's adjustment (0.05)")
    p.add_argument("--sort-by", default=None, help="the metric systems are ranked by (default: the first)")
    p.add_argument("--seed", type=non_negative_int, default=SEED,
                   help=f"seed of the bootstrap and randomization draws (default: sacrebleu's, {SEED}: the corpus "
                   "metrics' p-values are those sacrebleu --paired-ar / --paired-bs prints where no shuffle ties)")
    p.add_argument("--encoding", default="utf-8", help="encoding of IN (default: utf-8)")
    p.add_argument("--data-dir", default=None,
                   help="local corpus mirror for --dataset and for metrics that read corpus files (lai:<score>; "
                   "default: $STYLEEVAL_DATA_DIR or download)")
    add_figure_options(p, "tradeoff.png")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="what goes to stdout: the systems table, score [95%% CI] (cluster) per metric (text, default), "
                   "or report.json's content (json); the files in --out are the same either way")
    p.add_argument("--no-baselines", action="store_false", dest="baselines",
                   help="leave out the baselines: (copy source), every source copied, and (human reference), the "
                   "first reference where the rows have references; by default every report shows where they land "
                   "on every metric, marked as baselines")
    p.add_argument("--test-baselines", action="store_true",
                   help="compare the baselines as systems (paired tests, clusters, rankings); by default they are "
                   "shown beside the systems and left out of them")
    add_allow_missing(p)
    p.add_argument("--no-progress", "--quiet", "-q", action="store_true", dest="no_progress",
                   help="hide progress bars")
    p.add_argument("--shard", metavar="K/N", default=None,
                   help="job arrays: score only the LLM metrics' rows of every source j with j mod N = K (0 <= K < N) "
                   "into OUT/cache, and write no report; then run the same command without --shard (same --out) "
                   "to put the shards together (a shard not run or not finished is named)")
    p.set_defaults(func=run)


def read_inputs(paths: list[str], system_from_filename: bool, encoding: str = "utf-8") -> list[dict]:
    """The rows of every input file, each with ``_where`` (file and line) for messages."""
    rows = []
    names = [Path(p).stem for p in paths]
    if system_from_filename and len(set(names)) != len(names):
        raise UserError(f"--system-from-filename: two inputs have the same name ({', '.join(names)})")
    for path, name in zip(paths, names, strict=True):
        for where, record in iter_records(path, encoding=encoding):
            if where == "header":
                continue
            if system_from_filename:
                if record.get("system") not in (None, "", name):
                    raise UserError(f"{path}, {where}: has system {record['system']!r} but "
                                    f"--system-from-filename names it {name!r}")
                record = {**record, "system": name}
            rows.append({**record, "_where": f"{path}, {where}"})
    if not rows:
        raise UserError(f"no rows in {', '.join(paths)}")
    return rows


def input_rows(args: argparse.Namespace) -> list[dict]:
    """The rows to evaluate: IN's (:func:`read_inputs`) or the corpus ``--dataset`` names; exactly one of them
    (:func:`~styleeval.systems.dataset.check_input_choice`, before any file is read)."""
    from styleeval.systems.dataset import check_input_choice, dataset_rows  # noqa: PLC0415 - heavy (datasets, via styleeval.systems.dataset)

    check_input_choice(bool(args.inputs), args.dataset, args.style, files=args.inputs,
                       system_from_filename=args.system_from_filename)
    if args.dataset is None:
        return read_inputs(args.inputs, args.system_from_filename, args.encoding)
    return dataset_rows(args.dataset, args.data_dir)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval evaluate``; returns the exit status (bad input raises ``UserError``)."""
    from styleeval.metrics import get_metric  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics)
    from styleeval.stats import TestSettings  # noqa: PLC0415 - heavy (numpy, via styleeval.stats)
    from styleeval.systems.evaluation import DEFAULT_METRICS, evaluate_systems  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.evaluation)
    from styleeval.systems.report import no_tradeoff_reason, write_outputs  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.report)

    out = Path(args.out)
    check_out_dir(out)
    # built once, before the inputs are read: unknown names, bad options and missing extras fail at once
    specs = DEFAULT_METRICS if args.metrics is None else args.metrics.split(",")
    metrics = [get_metric(spec, data_dir=args.data_dir) for spec in metric_specs(specs, args.model)]
    rows = input_rows(args)
    start = time.perf_counter()
    if args.shard is not None:
        from styleeval.systems.evaluation import score_shard  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.evaluation)

        done = score_shard(rows, metrics, args.shard, out / "cache", style=args.style, progress=progress_choice(args),
                           data_dir=args.data_dir, limit=args.limit, baselines=args.baselines)
        scored = ", ".join(f"{label} {n}" for label, n in done.items()) or "no LLM metric: nothing to shard"
        print(f"shard {args.shard}: rows scored: {scored} ({time.perf_counter() - start:.1f}s) -> {out / 'cache'}; "
              "when every shard is done, run the same command without --shard", file=sys.stderr)
        return 0
    settings = TestSettings(test=args.test, alpha=args.alpha, seed=args.seed)
    report = evaluate_systems(rows, metrics, limit=args.limit, style=args.style, settings=settings,
                              sort_by=args.sort_by, cache_dir=out / "cache", progress=progress_choice(args),
                              data_dir=args.data_dir, baselines=args.baselines, test_baselines=args.test_baselines,
                              log=lambda message: print(f"note: {terminal_text(message, lines=True)}",
                                                        file=sys.stderr))
    paths = write_outputs(report, out, plots=not args.no_plots, figure_format=args.figure_format)
    if not args.no_plots and "plot" not in paths and (reason := no_tradeoff_reason(report)):
        print(f"note: no tradeoff.{args.figure_format}: {reason}", file=sys.stderr)
    if args.format == "json":
        print(paths["json"].read_text(encoding="utf-8"))
    else:
        print(report.to_text())
    subset = f": {terminal_text(report.subset)};" if report.subset else ","
    print(f"{terminal_text(report.coverage.summary())}{subset} {counted(len(report.signatures), 'metric')}, "
          f"{time.perf_counter() - start:.1f}s -> {paths['report']}",
          file=sys.stderr)
    return missing_metrics_status("evaluate", report.not_computed, out, args.allow_missing,
                                  defaults=args.metrics is None)
