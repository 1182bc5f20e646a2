"""``styleeval score``: LogProb scores for every row of a CSV / JSONL file, written chunk by chunk, resumable.

    styleeval score rewrites.csv --model 1b --out scores.jsonl [--style polite] [--chunk-size 256]
    styleeval score rewrites.csv --base-url http://127.0.0.1:8000/v1 --out scores.jsonl   # on a vLLM server

The loop itself is the library function :func:`styleeval.files.runner.score_file`.
"""

from __future__ import annotations

import argparse

from styleeval.commands._options import (
    add_file_arguments,
    add_model_arguments,
    backend_options,
    column_means,
    positive_int,
    run_file_command,
)

EPILOG = """\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row (0-based index in IN), source, rewrite, style, content, style_strength, signature.
Rows already in OUT are skipped, so an interrupted run is resumed by running the same command again.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``score`` sub-command."""
    p = subparsers.add_parser(
        "score",
        help="LogProb scores for a CSV/JSONL file of rewrites (resumable)",
        description="Score each rewrite for content preservation and style strength with LogProb.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_file_arguments(p, "scored", chunk_size=256)
    add_model_arguments(p)
    p.add_argument("--variant", choices=("default", "authors"), default="default",
                   help="default, or authors: the authors' LogProp.py procedure (their hand-written Llama 3 prompt, "
                   "first rewrite token not scored)")
    p.add_argument("--head-dtype", choices=("float32", "bfloat16", "float16"), default=None,
                   help="precision of the LM head and softmax (bfloat16 with --dtype bfloat16: the authors' numbers)")
    p.add_argument("--revision", default=None, help="model revision (branch, tag or commit) for Hub ids")
    p.add_argument("--batch-tokens", type=positive_int, default=None,
                   help="token budget of one forward pass (default: 512 on CPU, 16384 on GPU)")
    p.add_argument("--max-batch-rows", type=positive_int, default=None, help="at most this many sequences per pass")
    p.add_argument("--no-end-of-turn", dest="end_of_turn", action="store_false",
                   help="do not score the end-of-turn token after each rewrite")
    p.add_argument("--on-overflow", choices=("error", "skip"), default="error",
                   help="a row longer than the model's context: stop with an error, or skip it (empty scores)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from the Hub")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval score``; returns the exit status (bad input raises ``ValueError``)."""
    from styleeval.files import read_scores, score_file

    options = backend_options(args)
    options.update(variant=args.variant, revision=args.revision, end_of_turn=args.end_of_turn,
                   on_overflow=args.on_overflow, head_dtype=args.head_dtype, batch_tokens=args.batch_tokens,
                   max_batch_rows=args.max_batch_rows, trust_remote_code=args.trust_remote_code or None)

    def summary(result) -> str:
        records = read_scores(result.output)
        means = column_means(records, ("content", "style_strength"))
        return (f"mean content {means['content']:.4f}  mean style_strength {means['style_strength']:.4f}  "
                f"({len(records)} rows)")

    return run_file_command(
        args,
        lambda: score_file(args.input, args.out, args.model, style=args.style, chunk_size=args.chunk_size,
                           max_rows=args.max_rows, overwrite=args.overwrite, progress=not args.quiet,
                           encoding=args.encoding, **options),
        "scored", summary,
    )
