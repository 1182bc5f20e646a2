"""Command-line options shared by the sub-commands: ``styleeval score`` and ``styleeval autorate``'s file in, file
out, resumable; ``--allow-missing``, ``--no-plots`` and ``--figure-format`` of ``evaluate`` and ``metaeval``. The
model and backend options come from :mod:`styleeval.options` (one declaration for the CLI, the evaluate modules and
the metric specs)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from styleeval.errors import UserError
from styleeval.escaping import terminal_text
from styleeval.figures import FIGURE_FORMATS
from styleeval.labels import RANDOM_WEIGHTS, counted, has_random_weights
from styleeval.progress import enabled
from styleeval.run import FULL_CHUNK_ROWS


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def probability(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (a significance level)."""
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def progress_choice(args: argparse.Namespace) -> bool | None:
    """``--no-progress``: ``False``; else ``None``, progress where stderr is a terminal (:mod:`styleeval.progress`)."""
    return False if args.no_progress else None


def file_progress(args: argparse.Namespace) -> bool:
    """The progress bar of ``score`` / ``autorate``: none with ``-q``, else only where stderr is a terminal (never
    into a file or a pipe)."""
    return enabled(False if args.quiet else None)


def check_out_dir(out: Path) -> None:
    """``--out`` must be (or be creatable as) a folder: no part of it is a file (checked before any work, which would
    otherwise be lost at the end)."""
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                raise UserError(f"--out {out}: {path} is a file, not a folder; choose another --out")
            return


def add_file_arguments(p: argparse.ArgumentParser, verb: str, chunk_size: int | str) -> None:
    """IN, --out, --style, --chunk-size, --max-rows, --overwrite, --quiet; ``chunk_size``: the default rows per chunk,
    or text saying what it is (then ``--chunk-size`` defaults to ``None``: the scorer's own)."""
    p.add_argument("input", metavar="IN",
                   help="input file: .csv or .jsonl with columns source, rewrite, style (other columns are carried "
                   "through to OUT); - reads standard input")
    p.add_argument("--out", "-o", required=True, metavar="OUT",
                   help="output file: JSONL, or CSV when it ends in .csv; resumed when it exists; - writes JSONL to "
                   "standard output")
    p.add_argument("--encoding", default="utf-8", help="encoding of IN (default: utf-8), e.g. latin-1")
    p.add_argument("--style", help="one target style for every row (overrides a style column)")
    p.add_argument("--chunk-size", type=positive_int, default=chunk_size if isinstance(chunk_size, int) else None,
                   help=f"the most rows {verb} and appended to OUT at a time (default: {chunk_size}); a chunk is "
                   f"about 5 seconds of work, at least {FULL_CHUNK_ROWS} rows")
    p.add_argument("--max-rows", type=int, default=None,
                   help=f"{verb.removesuffix('d')} at most this many new rows in this run, then stop (rerun to continue)")
    p.add_argument("--overwrite", action="store_true", help="start OUT afresh instead of resuming it")
    p.add_argument("--shard", metavar="K/N", default=None,
                   help=f"{verb.removesuffix('d')} only the rows whose number is K modulo N (0 <= K < N), for job arrays: "
                   "each shard writes its own OUT; styleeval merge puts them together")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")


def run_file_command(args: argparse.Namespace, run: Callable[[], Any], verb: str,
                     summary: Callable[[Any], str | None]) -> int:
    """Run a resumable file command: ``run()`` returns a result with ``output``, ``scored``, ``skipped``,
    ``remaining``, ``complete`` and ``signature``; ``summary(result)`` is printed once the file is complete."""
    try:
        result = run()  # a run whose first chunk fails leaves no OUT (files.runner opens OUT at its first write)
    except FileNotFoundError as err:
        raise UserError(str(err)) from err
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished chunks are in {args.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    if args.quiet:
        return 0

    log = f"{result.output}: {counted(result.scored, 'row')} {verb} now, {result.skipped} already there"
    if not result.complete:
        log += f", {result.remaining} left (run the same command again to continue)"
    print(log, file=sys.stderr)

    warning = f"{RANDOM_WEIGHTS}: " if has_random_weights(result.signature) else ""
    if result.complete and str(args.out) != "-" and result.scored + result.skipped:  # a shard without rows: no OUT
        line = summary(result)
        if line:
            print(warning + line, file=sys.stderr)
    if result.signature:
        print(f"signature: {result.signature}", file=sys.stderr)
    return 0


def run_model_file_command(args: argparse.Namespace, run_file: Callable[..., Any], options: dict[str, Any],
                           verb: str, summary: Callable[[Any], str | None]) -> int:
    """:func:`run_file_command` of ``run_file(IN, OUT, model, ...)`` (``score_file``, ``autorate_file``) with the
    arguments of :func:`add_file_arguments` and the scorer's ``options`` (name -> value, ``model`` among them)."""
    options = dict(options)
    model = options.pop("model", None)
    return run_file_command(
        args,
        lambda: run_file(args.input, args.out, model, style=args.style, chunk_size=args.chunk_size,
                         max_rows=args.max_rows, overwrite=args.overwrite, progress=file_progress(args),
                         encoding=args.encoding, shard=args.shard, **options),
        verb, summary,
    )


def column_means(records: Iterable[dict[str, Any]], keys: tuple[str, ...],
                 count: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Mean of each column over the records (read once, in constant memory), NaN values left out (NaN when none is
    left); ``"over"``: how many values each mean is over; ``"rows"``: how many records; with ``count``,
    ``"counted"``: how many records it is true of."""
    sums = dict.fromkeys(keys, 0.0)
    seen = dict.fromkeys(keys, 0)
    rows = counted = 0
    for r in records:
        rows += 1
        counted += bool(count is not None and count(r))
        for key in keys:
            if r[key] is not None and not math.isnan(r[key]):
                sums[key] += r[key]
                seen[key] += 1
    out = {key: sums[key] / seen[key] if seen[key] else math.nan for key in keys}
    return {**out, "over": seen, "rows": rows, "counted": counted}


def means_line(means: dict[str, Any], shown: Callable[[float], str], left_out: str) -> str:
    """The summary of :func:`column_means`: every mean with how many rows it is over and how many were left out
    (``left_out`` says which, and why: ``"skipped: NaN scores"``), once for all where the counts agree.

    >>> print(means_line({"content": -2.051, "style": 0.5, "over": {"content": 1, "style": 1}, "rows": 2}, str,
    ...                  "skipped: NaN scores"))
    mean content -2.051  mean style 0.5 (over 1 of 2 rows; 1 skipped: NaN scores)
    >>> print(means_line({"content": -2.0, "over": {"content": 1}, "rows": 1}, str, "skipped"))
    mean content -2.0 (over 1 row, none skipped)
    """
    rows, over = means["rows"], means["over"]

    def count(k: int) -> str:
        if k == rows:
            return f"over {counted(rows, 'row')}, none {left_out.split(':')[0]}"
        return f"over {k} of {counted(rows, 'row')}; {rows - k} {left_out}"

    if len(set(over.values())) == 1:
        return "  ".join(f"mean {key} {shown(means[key])}" for key in over) + f" ({count(next(iter(over.values())))})"
    return "  ".join(f"mean {key} {shown(means[key])} ({count(k)})" for key, k in over.items())


def add_model_argument(p: argparse.ArgumentParser) -> None:
    """``--model`` of ``evaluate`` and ``metaeval``: the model of every LLM metric whose spec names none
    (:func:`styleeval.metrics.registry.with_model`)."""
    p.add_argument("--model", default=None, metavar="MODEL",
                   help="the model of every LLM metric (logprob_*, autorater_*, ppl) whose spec names none: a preset "
                   "(smollm2-135m: a real 135M chat model fetched on first use, no Hub account; 1b, 3b, 8b: the "
                   "paper's; qwen-1.5b; tiny-random: random weights, pipeline only), a Hub id, a local folder or a "
                   ".gguf file; a spec's own model= wins (logprob_content:model=3b)")


def metric_specs(specs: Iterable[Any], model: str | None) -> list[Any]:
    """The run's metrics: specs stripped, with ``--model`` applied; metric objects (``--scores`` columns) as they
    are."""
    from styleeval.metrics.registry import with_model  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    out = [s.strip() if isinstance(s, str) else s for s in specs if not isinstance(s, str) or s.strip()]
    return out if model is None else with_model(out, model)


MISSING_METRICS_EXIT = 1
"""The exit status of a report written without a requested metric (without ``--allow-missing``)."""


def add_allow_missing(p: argparse.ArgumentParser, datasets: bool = False) -> None:
    """``--allow-missing``: a report without a requested metric that could not be computed exits 0 (``datasets``:
    and a dataset that cannot be loaded is left out instead of stopping the run)."""
    first = ("report without datasets that cannot be loaded (the report lists the missing cells) instead of stopping "
             "with an error, and " if datasets else "")
    p.add_argument("--allow-missing", action="store_true",
                   help=f"{first}exit 0 when a requested (or default) metric could not be computed (weights that "
                   "cannot be had, a server that does not answer); without it the report is still written, the "
                   f"metric is named on stderr and the exit status is {MISSING_METRICS_EXIT}")


def add_figure_options(p: argparse.ArgumentParser, figures: str) -> None:
    """``--no-plots`` and ``--figure-format`` (png, pdf, svg) for the command's ``figures``."""
    p.add_argument("--no-plots", action="store_true", help=f"skip the figures ({figures})")
    p.add_argument("--figure-format", choices=FIGURE_FORMATS, default="png",
                   help="the figures' format: png (default), or pdf / svg (vector, for a paper; PDF fonts embedded "
                   "as TrueType); report.md links the files written")


def missing_metrics_status(command: str, failed: dict[str, str], out: Any, allow_missing: bool,
                           defaults: bool = False) -> int:
    """The exit status of a written report: :data:`MISSING_METRICS_EXIT` with one line on stderr naming each metric
    that could not be computed and why (each cause once, after the metrics it stopped; ``defaults``: the metrics
    were the command's defaults, not named by the user), unless ``allow_missing`` (then 0, the notes already said
    it)."""
    if not failed or allow_missing:
        return 0

    causes: dict[str, list[str]] = {}
    for label, why in failed.items():
        causes.setdefault(why, []).append(label)
    kind = "default" if defaults else "requested"
    count = f"{len(failed)} {kind} metric{'' if len(failed) == 1 else 's'}"
    if len(causes) == 1:
        named = f"{', '.join(failed)}: {next(iter(causes))}"
    else:
        named = "; ".join(f"{', '.join(labels)}: {why}" for why, labels in causes.items())
    named = terminal_text(named, lines=True)
    it = "it" if len(failed) == 1 else "them"
    leave = "choose the metrics with --metrics" if defaults else f"leave {it} out of --metrics"
    print(f"styleeval {command}: error: {count} could not be computed ({named}). The report in {out} lacks {it}; fix "
          f"the cause, {leave}, or pass --allow-missing to accept the report without {it}", file=sys.stderr)
    return MISSING_METRICS_EXIT
