"""``styleeval merge``: the output files of a sharded ``score`` / ``autorate`` run (``--shard K/N``) as one file.

    styleeval merge scores.0.jsonl scores.1.jsonl scores.2.jsonl scores.3.jsonl --input rewrites.csv --out scores.jsonl

The work is :func:`styleeval.files.shards.merge_shards`.
"""

from __future__ import annotations

import argparse
import sys

from styleeval.errors import UserError
from styleeval.files.shards import merge_shards
from styleeval.labels import counted

EPILOG = """\
The shard files must carry one signature, no row twice and, together, every row (up to the largest row, or every
row of --input): otherwise nothing is written and the error names the rows, the files and the missing shard. With
--input, every record's source, rewrite, style and carried columns (the input's other columns) must be those of
its input row (shards of another input, or of runs with another --style, are refused naming the row and the field).
OUT may be neither a shard nor the input, under any name. The merged file has the records in input order, with the
records one unsharded run would have written: byte for byte when styleeval's engine scored them (a row's scores
never depend on its batch-mates); through a server, each score as the server computed it (a server's sums may
depend on which requests share its batch). CSV shards merged into JSONL carry the input's types (numbers,
booleans, nulls, lists) in its other columns only with --input: without it those columns are written as the CSV's
text ("0", "true", "" for null).
"""


SUMMARY = "merge the output files of a sharded score/autorate run (--shard K/N) into one"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``merge`` sub-command."""
    p = subparsers.add_parser(
        "merge", help=SUMMARY,
        description="Merge shard files into one output file, checking one signature, no overlap and no gap.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shards", nargs="+", metavar="SHARD", help="the shard files (JSONL or CSV, from --shard K/N)")
    p.add_argument("--out", "-o", required=True, metavar="OUT",
                   help="the merged file: JSONL, or CSV when it ends in .csv")
    p.add_argument("--input", metavar="IN", default=None,
                   help="the input the shards were scored from: every record is checked against its row (source, "
                   "rewrite, style, the other columns), and the row count too (a missing last shard is found even "
                   "when its rows are the last ones); the other columns are written with the input's types")
    p.add_argument("--style", default=None,
                   help="the --style the shards were scored with, if any (checked against every record; without "
                   "it, the input's style column, or one style shared by every shard)")
    p.add_argument("--encoding", default="utf-8", help="encoding of --input (default: utf-8)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval merge``; returns the exit status."""
    try:
        result = merge_shards(args.shards, args.out, input=args.input, style=args.style, encoding=args.encoding)
    except FileNotFoundError as err:
        raise UserError(str(err)) from err
    print(f"{result.output}: {counted(result.rows, 'row')} from {counted(len(result.files), 'file')}",
          file=sys.stderr)
    print(f"signature: {result.signature}", file=sys.stderr)
    return 0
