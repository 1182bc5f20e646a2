"""What a corpus module declares about itself, once: :class:`CorpusSpec`. :mod:`styleeval.corpora` discovers the
modules that define ``SPEC`` and derives every list from them (the corpus names, the meta-evaluation's default
datasets and labels, the Hub configs, the authors' style words). Adding a corpus = one module with ``load`` and
``SPEC``, plus its dataset card (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Config:
    """One Hub config of a dataset folder: its name and where its Parquet file goes (licence-restricted configs go to
    ``data/restricted/``, which the cards do not list and ``scripts/push_to_hub.py`` never uploads)."""

    name: str
    restricted: bool = False

    @property
    def path(self) -> str:
        """Path of the Parquet file relative to the dataset folder."""
        return f"{'data/restricted' if self.restricted else 'data'}/{self.name}.parquet"


@dataclass(frozen=True)
class CorpusSpec:
    """A corpus: ``name`` (``load_corpus`` name and ``datasets/<name>`` folder), ``label`` (tables and plots),
    ``kind`` (``"rating"``: the long rating schema, in the meta-evaluation; ``"stel"``: STEL's tasks), ``order``
    (its place in lists), its Hub ``configs``, the ``authors_style_words`` their scripts used where the corpus's
    words differ, ``public_ratings`` (``False`` where the ratings file is not in this project's mirror and the
    loader untested on it, Ziegenbein's: the corpus is then left out of
    :func:`~styleeval.corpora.load_rating_corpora`'s default), ``compares_systems`` (``True`` where several systems
    rewrote every source, each rewrite a row: ``styleeval evaluate --dataset`` takes the corpus as its systems), and
    ``loader(data_dir, **options) -> Dataset``."""

    name: str
    label: str
    kind: str
    order: int
    loader: Callable[..., Any]
    configs: tuple[Config, ...] = (Config("default"),)
    authors_style_words: Mapping[str, str] = field(default_factory=dict)
    public_ratings: bool = True
    compares_systems: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("rating", "stel"):
            raise ValueError(f"corpus {self.name}: kind must be 'rating' or 'stel', got {self.kind!r}")
