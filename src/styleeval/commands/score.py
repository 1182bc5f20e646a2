"""``styleeval score``: LogProb scores for every row of a CSV / JSONL file, written chunk by chunk, resumable.

    styleeval score rewrites.csv --model 1b --out scores.jsonl [--style polite] [--chunk-size 256]
    styleeval score rewrites.csv --base-url http://127.0.0.1:8000/v1 --out scores.jsonl   # on a vLLM server

The loop itself is the library function :func:`styleeval.files.runner.score_file`.
"""

from __future__ import annotations

import argparse

from styleeval.commands._options import add_file_arguments, column_means, means_line, run_model_file_command
from styleeval.files import score_file
from styleeval.files.records import LOGPROB_RECORDS, TornTail, iter_scores
from styleeval.options import LOGPROB_OPTIONS

EPILOG = """\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row (0-based index in IN), source, rewrite, style, content, style_strength, signature.
Rows already in OUT are skipped, so an interrupted run is resumed by running the same command again.
"""


def _number(value: float) -> str:
    """Four significant digits, never ``-0.0000``."""
    text = f"{value:.4g}"
    return "0" if text in ("-0", "0") else text


SUMMARY = "LogProb scores for a CSV/JSONL file of rewrites (resumable)"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``score`` sub-command."""
    p = subparsers.add_parser(
        "score",
        help=SUMMARY,
        description="Score each rewrite for content preservation and style strength with LogProb.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_file_arguments(p, "scored", chunk_size=256)
    LOGPROB_OPTIONS.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval score``; returns the exit status (bad input raises ``UserError``)."""
    def summary(result) -> str:
        means = column_means(iter_scores(result.output, LOGPROB_RECORDS, TornTail()), ("content", "style_strength"))
        return means_line(means, _number, "skipped: NaN scores")

    return run_model_file_command(args, score_file, LOGPROB_OPTIONS, "scored", summary)
