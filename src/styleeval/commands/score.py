"""``styleeval score``: LogProb scores for every row of a CSV / JSONL file, written chunk by chunk, resumable.

    styleeval score rewrites.csv --model 1b --out scores.jsonl [--style polite] [--chunk-size 256]

The loop itself is the library function :func:`styleeval.io.score_file`.
"""

from __future__ import annotations

import argparse
import math
import sys

EPILOG = """\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row (0-based index in IN), source, rewrite, style, content, style_strength, signature.
Rows already in OUT are skipped, so an interrupted run is resumed by running the same command again.
"""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``score`` sub-command."""
    p = subparsers.add_parser(
        "score",
        help="LogProb scores for a CSV/JSONL file of rewrites (resumable)",
        description="Score each rewrite for content preservation and style strength with LogProb.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="IN", help="input file: .csv or .jsonl with columns source, rewrite, style")
    p.add_argument("--out", "-o", required=True, metavar="OUT",
                   help="output file: JSONL, or CSV when it ends in .csv; resumed when it exists")
    p.add_argument("--model", "-m", default=None,
                   help="preset (1b, 3b, 8b), Hub id or local path (default: 1b = meta-llama/Llama-3.2-1B-Instruct)")
    p.add_argument("--style", help="one target style for every row (overrides a style column)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:N or mps (default: cuda when available)")
    p.add_argument("--dtype", default="float32", help="float32 (default), bfloat16 or float16")
    p.add_argument("--revision", default=None, help="model revision (branch, tag or commit) for Hub ids")
    p.add_argument("--batch-tokens", type=_positive, default=None,
                   help="token budget of one forward pass (default: 512 on CPU, 16384 on GPU)")
    p.add_argument("--max-batch-rows", type=_positive, default=None, help="at most this many sequences per pass")
    p.add_argument("--chunk-size", type=_positive, default=256,
                   help="rows scored and appended to OUT at a time (default: 256)")
    p.add_argument("--max-rows", type=int, default=None,
                   help="score at most this many new rows in this run, then stop (rerun to continue)")
    p.add_argument("--no-end-of-turn", dest="end_of_turn", action="store_false",
                   help="do not score the end-of-turn token after each rewrite")
    p.add_argument("--on-overflow", choices=("error", "skip"), default="error",
                   help="a row longer than the model's context: stop with an error, or skip it (empty scores)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from the Hub")
    p.add_argument("--overwrite", action="store_true", help="start OUT afresh instead of resuming it")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval score``; returns the exit status (bad input raises ``ValueError``)."""
    from styleeval.io import read_scores, score_file

    try:
        result = score_file(
            args.input,
            args.out,
            args.model,
            style=args.style,
            chunk_size=args.chunk_size,
            max_rows=args.max_rows,
            overwrite=args.overwrite,
            progress=not args.quiet,
            device=args.device,
            dtype=args.dtype,
            revision=args.revision,
            batch_tokens=args.batch_tokens,
            max_batch_rows=args.max_batch_rows,
            end_of_turn=args.end_of_turn,
            on_overflow=args.on_overflow,
            trust_remote_code=args.trust_remote_code,
        )
    except FileNotFoundError as err:
        raise ValueError(str(err)) from err
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished chunks are in {args.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    if args.quiet:
        return 0
    log = f"{result.output}: {result.scored} rows scored now, {result.skipped} already there"
    if not result.complete:
        log += f", {result.remaining} left (run the same command again to continue)"
    print(log, file=sys.stderr)
    if result.complete:
        records = read_scores(result.output)
        means = {}
        for key in ("content", "style_strength"):
            values = [r[key] for r in records if not math.isnan(r[key])]
            means[key] = sum(values) / len(values) if values else math.nan
        print(f"mean content {means['content']:.4f}  mean style_strength {means['style_strength']:.4f}  "
              f"({len(records)} rows)", file=sys.stderr)
    if result.signature:
        print(f"signature: {result.signature}", file=sys.stderr)
    return 0
