"""``styleeval stel``: run style-similarity measures on the STEL tasks and write a results table.

    styleeval stel --method char3gram,word_length,punctuation,share_cased,edit_distance --out results/stel/

writes ``results.md`` (accuracy and undecided share per component), ``results.csv`` and ``predictions.tsv`` (one
row per task: ID, component, correct answer, then each method's answer: 1, 2 or 0 for undecided).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from styleeval import stel
from styleeval.commands._options import progress_choice
from styleeval.progress import stage

SUMMARY = "STEL: can a similarity measure tell style apart? (Wegmann & Nguyen 2021)"
"""What ``styleeval --help`` says of this command."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``stel`` sub-command."""
    p = subparsers.add_parser("stel", help=SUMMARY,
                              description="Run style-similarity measures on the STEL quadruple (or triple) tasks.")
    p.add_argument("--method", required=True,
                   help="comma-separated: char3gram, word_length, punctuation, share_cased, edit_distance, "
                   "embedding[:model] (sentence-transformers; minilm-offline = bundled all-MiniLM-L6-v2), "
                   "encoder:<Hugging Face id> (mean-pooled last layer)")
    p.add_argument("--component", default=None,
                   help="comma-separated style types (default: all loaded): contraction, nbr_substitution, emotives, "
                   "em-subj-pronoun; formality, simplicity with --include-dimensions")
    p.add_argument("--task", choices=("quadruple", "triple"), default="quadruple",
                   help="quadruple: STEL's tasks (two anchors, two alternatives; default); triple: STEL-or-content "
                   "(the alternative in the second anchor's style replaced by that anchor: same content as the first)")
    p.add_argument("--include-dimensions", action="store_true",
                   help="also load the licence-restricted formality/simplicity samples (local use only)")
    p.add_argument("--device", default=None, help="device of model-based methods")
    p.add_argument("--data-dir", default=None, help="local corpus mirror (default: $STYLEEVAL_DATA_DIR or download)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--no-progress", "--quiet", "-q", action="store_true", dest="no_progress",
                   help="hide the progress lines and bars (a model loading, texts embedded)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval stel``; returns the exit status."""
    methods = [m.strip() for m in args.method.split(",") if m.strip()]
    for method in methods:  # unknown names and missing extras: before any work
        stel.check_method(method)
    components = [c.strip() for c in args.component.split(",")] if args.component else None
    with stage("loading the STEL tasks", progress_choice(args)):
        tasks = stel.load_tasks(components, args.data_dir, args.include_dimensions)
    results = {}
    for method in methods:
        results[method] = stel.evaluate(method, tasks=tasks, task=args.task, device=args.device,
                                        progress=progress_choice(args))
        print(f"{method}: {len(results[method])} tasks", file=sys.stderr)
    rows = stel.summarize(results, tasks)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(f"# STEL ({args.task} task)\n\n{stel.markdown_table(rows)}\n", encoding="utf-8")
    with open(out / "results.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["method", "component", "accuracy", "undecided", "n"])
        writer.writeheader()
        writer.writerows(rows)
    with open(out / "predictions.tsv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t")
        writer.writerow(["ID", "component", "correct", *methods])
        for t in tasks:
            writer.writerow([t.id, t.component, t.correct, *(results[m][t.id] for m in methods)])
    print(stel.markdown_table(rows))
    return 0
