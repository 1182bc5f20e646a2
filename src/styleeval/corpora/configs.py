"""The Hub configs of each dataset folder ``datasets/<name>``: which rows go into which Parquet file.

Every config has one split, ``test``, stored at ``data/<config>.parquet`` next to the dataset card
(:func:`write_dataset_folder`, ``styleeval build-datasets``). Licence-restricted configs (STEL's formality/simplicity
samples) go to ``data/restricted/<config>.parquet``, which the cards do not list and ``scripts/push_to_hub.py``
never uploads.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from datasets import Dataset

from styleeval.corpora import SPECS, check_corpus_names, load_corpus
from styleeval.corpora.spec import Config

SPLIT = "test"
RESTRICTED_DIR = "data/restricted"

def corpus_configs(name: str) -> tuple[Config, ...]:
    """The configs of corpus ``name``, as its module declares them (``ValueError`` for an unknown name)."""
    check_corpus_names([name])
    return SPECS[name].configs


def public_configs(name: str) -> list[Config]:
    """The configs of ``name`` that its dataset card lists (and that may be published)."""
    return [c for c in corpus_configs(name) if not c.restricted]


def build_configs(
    name: str, data_dir: str | os.PathLike[str] | None = None, *, include_restricted: bool = False
) -> dict[Config, Dataset]:
    """The rows of every config of dataset ``name``, loaded with :func:`styleeval.corpora.load_corpus`.

    ``include_restricted=True`` adds STEL's licence-restricted formality/simplicity configs (local use only).
    """
    wanted = [c for c in corpus_configs(name) if include_restricted or not c.restricted]
    if name == "stel":
        full = load_corpus("stel", data_dir, include_dimensions=include_restricted)
        public = full.filter(lambda group: group == "characteristics", input_columns="group")
        return {c: public if c.name == "all" else full.filter(lambda comp, n=c.name: comp == n,
                                                               input_columns="component")
                for c in wanted}
    ds = load_corpus(name, data_dir)
    if name == "style_gap_testset":
        return {c: ds if c.name == "all" else ds.filter(lambda task, n=c.name: task == n, input_columns="task")
                for c in wanted}
    return {c: ds for c in wanted}


def write_dataset_folder(name: str, out: str | os.PathLike[str], card: str | os.PathLike[str],
                         data_dir: str | os.PathLike[str] | None = None, *, include_restricted: bool = False,
                         log: Callable[[str], None] = print) -> list[Path]:
    """The Hub folder of dataset ``name`` under ``out``: ``out/<name>/README.md`` (a copy of ``card``, unless it is
    that file) and a Parquet file per config (``data/<config>.parquet``; stale configs removed first), as
    ``datasets.load_dataset(out/<name>, config)`` reads them offline. Returns the Parquet files; ``log`` gets a line
    per file."""
    folder = Path(out) / name
    folder.mkdir(parents=True, exist_ok=True)
    if folder.resolve() != Path(card).resolve().parent:
        shutil.copyfile(card, folder / "README.md")
    shutil.rmtree(folder / "data", ignore_errors=True)  # no stale configs
    written = []
    for config, ds in build_configs(name, data_dir, include_restricted=include_restricted).items():
        path = folder / config.path
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(path))
        written.append(path)
        log(f"  {path} ({len(ds)} rows)")
    return written
