"""The Hub configs of each dataset folder ``datasets/<name>``: which rows go into which Parquet file.

Every config has one split, ``test``, stored at ``data/<config>.parquet`` next to the dataset card.
Licence-restricted configs (STEL's formality/simplicity samples) go to ``data/restricted/<config>.parquet``,
which the cards do not list and ``scripts/push_to_hub.py`` never uploads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from datasets import Dataset

from styleeval.corpora import load_corpus
from styleeval.corpora import stel as stel_module
from styleeval.corpora import style_gap_testset as style_gap_module

SPLIT = "test"
RESTRICTED_DIR = "data/restricted"


@dataclass(frozen=True)
class Config:
    """One config of a dataset folder: its name, the rows it holds and where its Parquet file goes."""

    name: str
    restricted: bool = False

    @property
    def path(self) -> str:
        """Path of the Parquet file relative to the dataset folder."""
        return f"{RESTRICTED_DIR if self.restricted else 'data'}/{self.name}.parquet"


CONFIGS: dict[str, tuple[Config, ...]] = {
    "style_gap_testset": (Config("all"), *(Config(task) for task, _ in style_gap_module.TASKS.values())),
    "lai_formality": (Config("default"),),
    "mir_yelp": (Config("default"),),
    "asset": (Config("default"),),
    "ziegenbein_appropriateness": (Config("default"),),
    "stel": (
        Config("all"),
        *(Config(c) for c in stel_module.PUBLIC_COMPONENTS),
        *(Config(c, restricted=True) for c in stel_module.RESTRICTED_COMPONENTS),
    ),
}


def public_configs(name: str) -> list[Config]:
    """The configs of ``name`` that its dataset card lists (and that may be published)."""
    return [c for c in CONFIGS[name] if not c.restricted]


def build_configs(
    name: str, data_dir: str | os.PathLike[str] | None = None, *, include_restricted: bool = False
) -> dict[Config, Dataset]:
    """The rows of every config of dataset ``name``, loaded with :func:`styleeval.corpora.load_corpus`.

    ``include_restricted=True`` adds STEL's licence-restricted formality/simplicity configs (local use only).
    """
    if name not in CONFIGS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(CONFIGS)}")
    wanted = [c for c in CONFIGS[name] if include_restricted or not c.restricted]
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
