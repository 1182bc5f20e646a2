#!/usr/bin/env python
"""Build the Hub dataset folders: write ``<out>/<name>/data/<config>.parquet`` next to each dataset card.

    python scripts/build_datasets.py                          # all datasets into datasets/
    python scripts/build_datasets.py asset stel --out /tmp/ds  # copies the cards into /tmp/ds/<name>/
    python scripts/build_datasets.py stel --include-restricted # + STEL formality/simplicity (local only)

Sources come from ``--data-dir`` / ``$STYLEEVAL_DATA_DIR`` (a local mirror) or are downloaded and checksummed.
Afterwards ``datasets.load_dataset("<out>/<name>", "<config>")`` works offline. A dataset whose sources are
missing (e.g. the Ziegenbein ratings file) is reported and the script exits with status 1.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from datasets import disable_progress_bars

from styleeval.corpora import CorpusError, MissingFileError, corpus_names
from styleeval.corpora._files import local_data_dir
from styleeval.corpora.configs import RESTRICTED_DIR, build_configs

REPO_DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def build_one(name: str, out: Path, data_dir: str | None, include_restricted: bool) -> list[Path]:
    """Write the card (copied from the repository when ``out`` is elsewhere) and the Parquet files of ``name``."""
    folder = out / name
    card = REPO_DATASETS / name / "README.md"
    folder.mkdir(parents=True, exist_ok=True)
    if folder.resolve() != card.parent.resolve():
        shutil.copyfile(card, folder / "README.md")
    shutil.rmtree(folder / "data", ignore_errors=True)  # no stale configs
    written = []
    for config, ds in build_configs(name, data_dir, include_restricted=include_restricted).items():
        path = folder / config.path
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(path))
        written.append(path)
        print(f"  {path} ({len(ds)} rows)")
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"datasets to build (default: all of {', '.join(corpus_names())})")
    parser.add_argument("--out", type=Path, default=REPO_DATASETS, help="root folder (default: datasets/)")
    parser.add_argument("--data-dir", default=None, help="local mirror of the sources (else $STYLEEVAL_DATA_DIR)")
    parser.add_argument("--include-restricted", action="store_true",
                        help=f"also write STEL's licence-restricted samples to <name>/{RESTRICTED_DIR}/ "
                             "(local use only; never published)")
    args = parser.parse_args(argv)
    disable_progress_bars()
    unknown = [n for n in args.names if n not in corpus_names()]
    if unknown:
        parser.error(f"unknown datasets {unknown}; choose from {', '.join(corpus_names())}")
    try:
        local_data_dir(args.data_dir)
    except CorpusError as err:
        print(f"build_datasets: {err}", file=sys.stderr)
        return 2
    failed, built = [], []
    for name in args.names or list(corpus_names()):
        print(f"{name}:")
        try:
            build_one(name, args.out, args.data_dir, args.include_restricted)
            built.append(name)
        except MissingFileError as err:  # e.g. Ziegenbein's ratings, absent from a mirror: not a failed build
            print(f"  note: {name} skipped: {err}", file=sys.stderr)
        except CorpusError as err:
            print(f"  FAILED: {err}", file=sys.stderr)
            failed.append(name)
    if failed:
        print(f"not built: {', '.join(failed)}", file=sys.stderr)
        return 1
    if not built:
        print("build_datasets: nothing was built: no source file could be read or downloaded. Point --data-dir (or "
              "STYLEEVAL_DATA_DIR) at a local mirror laid out like ../shared/data, or run with network access",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
