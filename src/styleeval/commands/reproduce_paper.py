"""``styleeval reproduce-paper``: Tables 3, 4 and 5 of Pauli et al. (2025) beside ours, as far as weights and data
allow.

    styleeval reproduce-paper --data-dir ../shared/data [--write docs/reproduction.md] [--online] [--model M ...]

The work is :func:`styleeval.metaeval.paper.reproduce`.
"""

from __future__ import annotations

import argparse
import os

from styleeval.errors import UserError
from styleeval.hub import go_offline

SUMMARY = "the paper's Tables 3-5 (Pauli et al. 2025) computed and printed beside the published values"
"""What ``styleeval --help`` says of this command."""

EPILOG = """\
Every row of the three tables (and of Table 8, fluency) is attempted with the metric that implements it (s_paper_bleu for the paper's NLTK
BLEU, logprob_content:model=8b for LogProb 8b, ...); cells that cannot be computed say why (missing weights,
ratings not public, metric not implemented), and each row's status column says which cell has which status. What
to install or run is said once, below the tables and on stderr, never in every row: METEOR's WordNet where it is
missing, and --model smollm2-135m where the LLM rows need the paper's Llama weights (a real 135M model from the
package index, no Hub account: those rows measured with it, shown as measured, never counted). A corpus that cannot be loaded is said once, in one line on stderr and
below the tables, and its cells say "not computed (corpus not loaded)"; when none can be loaded, the command stops
with exit status 2 and writes nothing. Without --online the Hugging Face clients run offline: models that are
not in the local cache are reported as missing instead of being downloaded. Scores are cached, so a rerun is
instant. With --model (repeatable), the paper's LLM rows are also measured with each model given, one after
another: their rows sit under the paper's in that order, each model's claims follow the tables, and one figure
(beside --write's file) puts every model whose size is known beside the paper's 1B-70B; a model given twice is
refused. Needs the embeddings extra (pip install 'styleeval[embeddings]') for the cosine rows. Lai et al.'s style
classifiers (their Table 2) are shown from their released scores and, with --classifier, computed from the weights.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``reproduce-paper`` sub-command."""
    p = subparsers.add_parser("reproduce-paper", help=SUMMARY, epilog=EPILOG,
                              description="Reproduce Tables 3, 4 and 5 of Pauli et al. (2025), \"Mind the Style "
                              "Gap\", as far as weights and data allow.",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=None,
                   help="local corpus mirror (default: $STYLEEVAL_DATA_DIR, else the corpora are downloaded)")
    p.add_argument("--cache-dir", default=None,
                   help="scores cache (default: scores/ in styleeval's cache, $STYLEEVAL_CACHE or ~/.cache/styleeval)")
    p.add_argument("--no-cache", action="store_true", help="compute every score again")
    p.add_argument("--online", action="store_true", help="allow Hugging Face downloads")
    p.add_argument("--no-progress", "-q", action="store_true", help="no progress bars")
    p.add_argument("--write", default=None, metavar="FILE",
                   help="also write the comparison as Markdown to FILE (the sections after the tables are kept)")
    p.add_argument("--model", action="append", default=[], dest="models", metavar="MODEL",
                   help="also measure the paper's LLM rows (LogProb, the autorater in paper and expected mode) with "
                   "MODEL (a preset such as smollm2-135m, an id, a folder or a .gguf file): shown under the paper's "
                   "rows as measured, never counted as reproduced, with the paper's claims answered; repeatable "
                   "(--model smollm2-135m --model qwen2.5-coder-0.5b --model qwen2.5-coder-1.5b: each model's rows "
                   "in the order given, one size figure with every model's points); SmolLM2-135M on every corpus: "
                   "about 50 minutes on 2 cores, the 1.5B hours, resumable (the scores cache keeps every finished "
                   "chunk), seconds once cached")
    p.add_argument("--classifier", action="append", default=[], metavar="NAME=FOLDER",
                   help="Lai et al.'s classifier NAME (r-pt16, c-pt16, c-gyafc) converted to FOLDER: its Table 2 row is "
                   "computed from the weights beside their released scores (repeatable; how to convert their "
                   "checkpoints: the table's note)")
    p.set_defaults(func=run)


def classifier_folders(given: list[str]) -> dict[str, str]:
    """``--classifier NAME=FOLDER`` options as a dict; a wrong NAME, a missing folder or NAME twice is a
    :class:`~styleeval.errors.UserError` naming it."""
    names = ("r-pt16", "c-pt16", "c-gyafc")
    out: dict[str, str] = {}
    for item in given:
        name, sep, folder = item.partition("=")
        if not sep or name.strip() not in names:
            raise UserError(f"--classifier {item}: write NAME=FOLDER with NAME one of {', '.join(names)}")
        if not os.path.isdir(os.path.expanduser(folder.strip())):
            raise UserError(f"--classifier {item}: {folder.strip()} is not a folder (convert the checkpoint first)")
        if name.strip() in out:
            raise UserError(f"--classifier {name.strip()} is given twice; give it once")
        out[name.strip()] = os.path.expanduser(folder.strip())
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval reproduce-paper``; returns the exit status."""
    if not args.online:  # before the Hugging Face clients are imported (styleeval.metaeval imports them)
        go_offline()
    from styleeval.metaeval.paper import Options, reproduce  # noqa: PLC0415 - heavy (pandas, via styleeval.metaeval)

    return reproduce(Options(data_dir=args.data_dir or os.environ.get("STYLEEVAL_DATA_DIR") or None,
                             cache_dir=args.cache_dir, no_cache=args.no_cache, online=args.online,
                             no_progress=args.no_progress, write=args.write,
                             models=tuple(args.models), classifiers=classifier_folders(args.classifier)))
