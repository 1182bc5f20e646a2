"""``styleeval autorate``: LLM-as-autorater ratings for every row of a CSV / JSONL file, resumable.

    styleeval autorate rewrites.csv --model 3b --out ratings.jsonl [--mode paper] [--base-url URL]

The loop itself is the library function :func:`styleeval.io.autorate_file` (the one behind ``styleeval score``).
"""

from __future__ import annotations

import argparse
import math
import sys

from styleeval.commands.score import _positive

EPILOG = """\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row, source, rewrite, style, meaning, style_rating, parsed, reply (paper mode),
meaning_probs / style_probs (expected mode), signature. A rating paper mode could not read is left empty (null);
the summary reports the compliance rate. Rows already in OUT are skipped, so an interrupted run is resumed by
running the same command again.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``autorate`` sub-command."""
    p = subparsers.add_parser(
        "autorate",
        help="LLM-as-autorater 1-5 ratings of meaning and style for a CSV/JSONL file (resumable)",
        description="Rate each rewrite's meaning preservation and style on a 1-5 scale with an instruct LLM.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="IN", help="input file: .csv or .jsonl with columns source, rewrite, style")
    p.add_argument("--out", "-o", required=True, metavar="OUT",
                   help="output file: JSONL, or CSV when it ends in .csv; resumed when it exists")
    p.add_argument("--model", "-m", default=None,
                   help="preset (1b, 3b, 8b), Hub id or local path; with --base-url the served model name "
                   "(default: 1b locally, the server's only model with --base-url)")
    p.add_argument("--mode", choices=("expected", "paper"), default="expected",
                   help="expected: rating distributions read from the model (never breaks format; default); "
                   "paper: the authors' generated JSON reply")
    p.add_argument("--prompt", choices=("paper-small", "paper-70b"), default="paper-small",
                   help="the judge prompt (default: paper-small, the authors' 1B/3B/8B prompt)")
    p.add_argument("--parser", choices=("robust", "authors"), default="robust", help="paper mode's reply parser")
    p.add_argument("--base-url", default=None, help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer id or path (expected mode on a server renders prompts locally)")
    p.add_argument("--style", help="one target style for every row (overrides a style column)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:N or mps (local model)")
    p.add_argument("--dtype", default="float32", help="float32 (default), bfloat16 or float16 (local model)")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (paper-70b)")
    p.add_argument("--max-concurrency", type=_positive, default=8, help="requests in flight (server)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request before a retry (server)")
    p.add_argument("--chunk-size", type=_positive, default=64,
                   help="rows rated and appended to OUT at a time (default: 64)")
    p.add_argument("--max-rows", type=int, default=None,
                   help="rate at most this many new rows in this run, then stop (rerun to continue)")
    p.add_argument("--overwrite", action="store_true", help="start OUT afresh instead of resuming it")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval autorate``; returns the exit status (bad input raises ``ValueError``)."""
    from styleeval.io import AUTORATER_RECORDS, autorate_file, read_scores

    options = {"mode": args.mode, "prompt": args.prompt, "parser": args.parser, "seed": args.seed}
    if args.base_url:
        options.update(base_url=args.base_url, tokenizer=args.tokenizer, max_concurrency=args.max_concurrency,
                       timeout=args.timeout)
    else:
        options.update(device=args.device, dtype=args.dtype)
        if args.tokenizer:
            options["tokenizer"] = args.tokenizer
    try:
        result = autorate_file(args.input, args.out, args.model, style=args.style, chunk_size=args.chunk_size,
                               max_rows=args.max_rows, overwrite=args.overwrite, progress=not args.quiet,
                               **options)
    except FileNotFoundError as err:
        raise ValueError(str(err)) from err
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished chunks are in {args.out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    if args.quiet:
        return 0
    log = f"{result.output}: {result.scored} rows rated now, {result.skipped} already there"
    if not result.complete:
        log += f", {result.remaining} left (run the same command again to continue)"
    print(log, file=sys.stderr)
    if result.complete:
        records = read_scores(result.output, AUTORATER_RECORDS)
        parsed = [r for r in records if str(r["parsed"]).lower() == "true"]
        means = {}
        for key in ("meaning", "style_rating"):
            values = [r[key] for r in records if not math.isnan(r[key])]
            means[key] = sum(values) / len(values) if values else math.nan
        print(f"mean meaning {means['meaning']:.4f}  mean style {means['style_rating']:.4f}  compliance "
              f"{len(parsed) / len(records):.3f} ({len(records)} rows)", file=sys.stderr)
    if result.signature:
        print(f"signature: {result.signature}", file=sys.stderr)
    return 0
