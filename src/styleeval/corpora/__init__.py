"""Human-rated style-transfer corpora, built from their original public sources in one long schema.

>>> from styleeval.corpora import load_corpus
>>> ds = load_corpus("style_gap_testset")            # 500 rows, RATING_FEATURES

``data_dir=`` (or ``$STYLEEVAL_DATA_DIR``) points at a local mirror laid out like ``../shared/data``;
then nothing is downloaded. Otherwise files are downloaded from their pinned raw URLs into
styleeval's cache (``~/.cache/styleeval/corpora``; :mod:`styleeval.paths`) and checked against pinned checksums. A missing,
corrupted or malformed file raises :class:`CorpusError` (a ``ValueError``) naming the file, the line and
the source URL.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

from datasets import Dataset, concatenate_datasets

from styleeval.corpora._files import ChecksumError, CorpusError, MissingFileError
from styleeval.corpora.schema import RATING_FEATURES, STEL_FEATURES
from styleeval.corpora.spec import Config, CorpusSpec
from styleeval.errors import UserError, unknown_names
from styleeval.registry import Registry


def _is_spec(name: str, spec: object) -> None:
    if not isinstance(spec, CorpusSpec):
        raise TypeError(f"register_corpus: {spec!r} is not a CorpusSpec")


SPECS: Registry[CorpusSpec] = Registry("corpus", check=_is_spec, order=lambda spec: (spec.order, spec.name))
"""Every corpus, by name, as its module declares it (:class:`~styleeval.corpora.spec.CorpusSpec`), in the specs'
order (a :class:`~styleeval.registry.Registry`); :func:`register_corpus` adds one from outside the package. Every
list of corpora derives from it when it is read (:func:`corpus_names`, :func:`rating_corpora`, the Hub configs, the
labels, the metaeval defaults)."""


def register_corpus(spec: CorpusSpec) -> CorpusSpec:
    """Add a corpus declared outside this package (a plugin, a test); the one inside it are discovered."""
    _is_spec(getattr(spec, "name", ""), spec)
    SPECS.add(spec.name, spec, lazy=False)
    return spec


def unregister_corpus(name: str) -> None:
    """Remove a registered corpus (tests, plugins reloaded)."""
    SPECS.unregister(name)


def _discover() -> None:
    """Register every module of this package that declares a ``SPEC``."""
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name in ("schema", "spec", "configs"):
            continue
        spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "SPEC", None)
        if isinstance(spec, CorpusSpec):
            register_corpus(spec)


_discover()


def corpus_names() -> tuple[str, ...]:
    """Every corpus name, in order."""
    return tuple(SPECS)


def rating_corpora() -> tuple[str, ...]:
    """The rating corpora (the long rating schema: the meta-evaluation's datasets), in order."""
    return tuple(n for n, spec in SPECS.items() if spec.kind == "rating")


def check_corpus_names(names: Any, rating: bool = False) -> None:
    """Every name of ``names`` is a corpus (``rating``: a rating corpus), else one :class:`UserError` naming each
    unknown one with the closest name (``unknown corpus 'lai_formalty'; did you mean 'lai_formality'? (styleeval
    list corpora)``) and a corpus of the wrong kind with what it is."""
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        known = rating_corpora() if rating else corpus_names()
        raise unknown_names("corpus", unknown, known, "styleeval list corpora", "styleeval.corpora.corpus_names()",
                            "corpora")
    if rating:
        other = [n for n in names if SPECS[n].kind != "rating"]
        if other:
            verb = "is not a rating corpus" if len(other) == 1 else "are not rating corpora"
            raise UserError(f"{', '.join(other)} {verb} (kind {SPECS[other[0]].kind}: no rated rewrites); choose from "
                            f"{', '.join(rating_corpora())}")


def systems_corpora() -> tuple[str, ...]:
    """The rating corpora in which several systems rewrote every source (:attr:`CorpusSpec.compares_systems`: what
    ``styleeval evaluate --dataset`` takes), in order."""
    return tuple(n for n, spec in SPECS.items() if spec.kind == "rating" and spec.compares_systems)


__all__ = [
    "SPECS",
    "corpus_names",
    "rating_corpora",
    "check_corpus_names",
    "systems_corpora",
    "register_corpus",
    "unregister_corpus",
    "Config",
    "CorpusSpec",
    "RATING_FEATURES",
    "STEL_FEATURES",
    "ChecksumError",
    "CorpusError",
    "MissingFileError",
    "load_corpus",
    "load_rating_corpora",
]


def load_corpus(name: str, data_dir: str | os.PathLike[str] | None = None, **options: Any) -> Dataset:
    """Load one corpus as a ``datasets.Dataset`` with declared ``Features``.

    Args:
        name: one of :func:`corpus_names`.
        data_dir: local mirror laid out like ``../shared/data``; defaults to ``$STYLEEVAL_DATA_DIR``; when
            neither is set the pinned source files are downloaded (and cached).
        **options: loader-specific options: ``stel`` takes ``include_dimensions=True`` to add the
            formality/simplicity samples (licence-restricted, local use only);
            ``ziegenbein_appropriateness`` takes ``ratings=False`` to build the 1350 items without scores;
            ``lai_formality`` takes ``references=4`` for four human references per row (default 1).

    Returns:
        Rating corpora: one row per rated rewrite with :data:`RATING_FEATURES` (``extra`` is a JSON
        string). ``stel``: one row per task with :data:`STEL_FEATURES`.

    Raises:
        UserError: unknown name (with the closest one).
        CorpusError: a source file is missing, fails its checksum, or has a malformed row.
    """
    check_corpus_names([name])
    return SPECS[name].loader(data_dir, **options)


def load_rating_corpora(
    names: tuple[str, ...] | list[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> Dataset:
    """Several rating corpora concatenated into one long table (they share :data:`RATING_FEATURES`); ``None``: every
    rating corpus whose ratings are public (:attr:`CorpusSpec.public_ratings`)."""
    ratings = rating_corpora()
    if names is None:
        names = [n for n in ratings if SPECS[n].public_ratings]
    check_corpus_names(names, rating=True)
    return concatenate_datasets([load_corpus(n, data_dir) for n in names])
