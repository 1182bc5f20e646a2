"""``styleeval build-datasets``: the Hub dataset folders, ``<out>/<name>/data/<config>.parquet`` beside each
dataset card.

    styleeval build-datasets                                # every dataset into ./datasets/
    styleeval build-datasets asset stel --out /tmp/ds       # the cards are copied into /tmp/ds/<name>/
    styleeval build-datasets stel --include-restricted      # + STEL formality/simplicity (local use only)
    styleeval build-datasets --allow-missing                # exit 0 although a dataset's sources are missing

The cards come with the package (:func:`styleeval.bundled.dataset_card`); the work is
:func:`styleeval.corpora.configs.write_dataset_folder`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from styleeval.bundled import dataset_card
from styleeval.commands._options import check_out_dir

SUMMARY = "build the Hub dataset folders (Parquet files beside each dataset card)"
"""What ``styleeval --help`` says of this command."""
MISSING_EXIT = 1
"""The exit status when a dataset was skipped for missing sources (without ``--allow-missing``), as ``metaeval`` and
``evaluate`` exit for a metric that could not be computed."""

EPILOG = """\
Sources come from --data-dir / $STYLEEVAL_DATA_DIR (a local mirror) or are downloaded and checksummed. Afterwards
datasets.load_dataset("<out>/<name>", "<config>") works offline. A dataset whose sources are missing (e.g. the
Ziegenbein ratings file, absent from a mirror) is reported and skipped, the others are built, and the command exits
with status 1 unless --allow-missing; it exits with status 1 too when a dataset fails (a corrupt file) or none is
built.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``build-datasets`` sub-command."""
    from styleeval.corpora import corpus_names  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)
    from styleeval.corpora.configs import RESTRICTED_DIR  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    p = subparsers.add_parser("build-datasets", help=SUMMARY, epilog=EPILOG,
                              description="Write the Hub dataset folders: <out>/<name>/data/<config>.parquet next to "
                              "each dataset card.", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"datasets to build (default: all of {', '.join(corpus_names())})")
    p.add_argument("--out", type=Path, default=Path("datasets"),
                   help="root folder (default: datasets/ in the current folder; in a checkout, its datasets/ folder "
                   "when run from its root)")
    p.add_argument("--data-dir", default=None, help="local mirror of the sources (else $STYLEEVAL_DATA_DIR)")
    p.add_argument("--include-restricted", action="store_true",
                   help=f"also write STEL's licence-restricted samples to <name>/{RESTRICTED_DIR}/ "
                   "(local use only; never published)")
    p.add_argument("--allow-missing", action="store_true",
                   help="exit 0 when a dataset is skipped because its sources are missing (e.g. the Ziegenbein "
                   "ratings file, absent from a mirror); without it the other datasets are still built, the skipped "
                   f"ones are named on stderr and the exit status is {MISSING_EXIT}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval build-datasets``; returns the exit status."""
    from datasets import disable_progress_bars  # noqa: PLC0415 - heavy (datasets)

    from styleeval.corpora import CorpusError, MissingFileError, check_corpus_names, corpus_names  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)
    from styleeval.corpora._files import local_data_dir  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)
    from styleeval.corpora.configs import write_dataset_folder  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    check_corpus_names(args.names)
    disable_progress_bars()
    check_out_dir(args.out)
    local_data_dir(args.data_dir)  # a data folder that is not there: one line now (a CorpusError)
    failed, built, skipped = [], [], []
    for name in args.names or list(corpus_names()):
        print(f"{name}:")
        try:
            write_dataset_folder(name, args.out, dataset_card(name), args.data_dir,
                                 include_restricted=args.include_restricted)
            built.append(name)
        except MissingFileError as err:  # e.g. Ziegenbein's ratings, absent from a mirror: skipped, the rest built
            print(f"  note: {name} skipped: {err}", file=sys.stderr)
            skipped.append(name)
        except CorpusError as err:
            print(f"  FAILED: {err}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"not built: {', '.join(failed)}", file=sys.stderr)
        return 1
    if not built:
        print("styleeval build-datasets: nothing was built: no source file could be read or downloaded. Point "
              "--data-dir (or STYLEEVAL_DATA_DIR) at a local mirror laid out like ../shared/data, or run with network "
              "access", file=sys.stderr)
        return 1
    if skipped and not args.allow_missing:
        them, its = ("it", "its") if len(skipped) == 1 else ("them", "their")
        print(f"styleeval build-datasets: error: {', '.join(skipped)} not built: {its} sources are missing (see "
              f"above). The other datasets are in {args.out}; get the missing files (from their source URLs, or point "
              f"--data-dir at a mirror that has them), leave {them} out of the names, or pass --allow-missing to "
              f"accept the folders without {them}", file=sys.stderr)
        return MISSING_EXIT
    return 0
