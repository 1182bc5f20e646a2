"""``styleeval autorate``: LLM-as-autorater ratings for every row of a CSV / JSONL file, resumable.

    styleeval autorate rewrites.csv --model 3b --out ratings.jsonl [--mode paper] [--base-url URL]

The loop itself is the library function :func:`styleeval.files.runner.autorate_file` (the one behind ``styleeval score``).
"""

from __future__ import annotations

import argparse

from styleeval.commands._options import add_file_arguments, column_means, means_line, run_model_file_command
from styleeval.files import AUTORATER_RECORDS, autorate_file
from styleeval.files.records import TornTail, iter_scores
from styleeval.labels import counted
from styleeval.options import AUTORATER_OPTIONS

EPILOG = """\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row, source, rewrite, style, meaning, style_rating, parsed, reply (paper mode),
meaning_probs / style_probs (expected mode), signature. A rating paper mode could not read is left empty (null);
the summary reports the compliance rate. Rows already in OUT are skipped, so an interrupted run is resumed by
running the same command again.
"""


SUMMARY = "LLM-as-autorater 1-5 ratings of meaning and style for a CSV/JSONL file (resumable)"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``autorate`` sub-command."""
    p = subparsers.add_parser(
        "autorate",
        help=SUMMARY,
        description="Rate each rewrite's meaning preservation and style on a 1-5 scale with an instruct LLM.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_file_arguments(p, "rated", chunk_size=64)
    AUTORATER_OPTIONS.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval autorate``; returns the exit status (bad input raises ``UserError``)."""
    def summary(result) -> str:
        means = column_means(iter_scores(result.output, AUTORATER_RECORDS, TornTail()), ("meaning", "style_rating"),
                             count=lambda r: r["parsed"] is True)
        return (f"{means_line(means, '{:.4f}'.format, 'unreadable: null ratings')}  compliance "
                f"{means['counted'] / means['rows']:.3f} ({counted(means['rows'], 'row')})")

    return run_model_file_command(args, autorate_file, AUTORATER_OPTIONS, "rated", summary)
