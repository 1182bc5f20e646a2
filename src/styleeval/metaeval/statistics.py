"""The statistics of the metrics leaderboard (``metaeval --leaderboard``), registered here: adding one is one function
and its :func:`leaderboard_statistic` decorator (docs/architecture.md). The leaderboard computes every registered
statistic that applies to a corpus, ranks the metrics by it and clusters them by PERM-BOTH; the Markdown legend is
made of the registered descriptions.

A statistic is ``f(corpus, human, metric, rows) -> float``: the human ratings and one metric's (oriented) scores on
the rows both have (``rows``: their indices in the corpus, to look up ``corpus.sources`` / ``corpus.systems``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from styleeval.registry import Registry
from styleeval.stats.correlation import spearman
from styleeval.stats.pairwise import pairwise_accuracy, soft_pairwise_accuracy, tie_calibrated_accuracy

MIN_SYSTEMS = 3
"""System-level statistics need at least this many systems."""
SPA_PERMUTATIONS = 1000
"""Permutations of each system pair's test in SPA (WMT's number)."""


@dataclass(frozen=True)
class Corpus:
    """What a statistic may read about one corpus of a run: ``name``, ``kind`` (``testset``, ``system``,
    ``reference``, ``mixed``), each row's source id and system; ``grouped`` and ``has_systems`` are worked out once
    (the PERM-BOTH and bootstrap loops call a statistic hundreds of times on one corpus)."""

    name: str
    kind: str
    sources: np.ndarray
    systems: np.ndarray

    @cached_property
    def grouped(self) -> bool:
        """Several systems per source (Lai's design): segment-level pairs are formed within a source."""
        if not len(self.systems):
            return False
        per_source = pd.Series(self.systems).groupby(pd.Series(self.sources)).nunique()
        return len(per_source) > 0 and per_source.max() > 2

    @cached_property
    def has_systems(self) -> bool:
        """Real systems (not the test set's rewrite types), at least :data:`MIN_SYSTEMS`, several rows each."""
        n = len(set(self.systems))
        return self.kind != "testset" and n >= MIN_SYSTEMS and n < len(self.systems) / 2


Statistic = Callable[[Corpus, np.ndarray, np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class LeaderboardStatistic:
    """A registered statistic: its ``name`` (the ``statistic`` column), a one-line ``description`` (the legend),
    ``compute``, ``applies(corpus)``, whether metrics are ``clustered`` by it (PERM-BOTH recomputes it on
    ``trials`` permutations) and whether it gets a bootstrap ``interval`` (recomputed on each resample): leave them
    out for statistics that are costly or have their own p-values."""

    name: str
    description: str
    compute: Statistic
    applies: Callable[[Corpus], bool]
    clustered: bool = True
    interval: bool = True


STATISTICS: Registry[LeaderboardStatistic] = Registry("leaderboard statistic")
"""Every leaderboard statistic (a :class:`~styleeval.registry.Registry`), in registration order (the leaderboard's
column order)."""


def leaderboard_statistic(name: str, description: str, applies: Callable[[Corpus], bool] | None = None,
                          clustered: bool = True, interval: bool = True) -> Callable[[Statistic], Statistic]:
    """Decorator: register ``f(corpus, human, metric, rows) -> float`` as the leaderboard statistic ``name``."""

    def decorate(fn: Statistic) -> Statistic:
        STATISTICS.add(name, LeaderboardStatistic(name, description, fn, applies or (lambda corpus: True), clustered,
                                                  interval))
        return fn

    return decorate


def unregister_statistic(name: str) -> None:
    """Remove a registered statistic (tests, plugins reloaded)."""
    STATISTICS.unregister(name)


def _system_means(corpus: Corpus, values: np.ndarray, rows: np.ndarray) -> dict[str, float]:
    return pd.Series(values).groupby(corpus.systems[rows]).mean().to_dict()


@leaderboard_statistic("acc_eq", "tie-calibrated pairwise accuracy (Deutsch et al. 2023), pairs within a source "
                       "where a corpus has several systems per source")
def acc_eq(corpus: Corpus, human: np.ndarray, metric: np.ndarray, rows: np.ndarray) -> float:
    return tie_calibrated_accuracy(human, metric, corpus.sources[rows] if corpus.grouped else None)[0]


@leaderboard_statistic("spearman", "Spearman's rho over the rows")
def spearman_rho(corpus: Corpus, human: np.ndarray, metric: np.ndarray, rows: np.ndarray) -> float:
    return spearman(human, metric)


@leaderboard_statistic("system_pairwise_accuracy", "system-level pairwise accuracy of the system means (Kocmi et "
                       "al. 2021; human ties counted as mt-metrics-eval's Agreement)",
                       applies=lambda corpus: corpus.has_systems)
def system_pairwise_accuracy(corpus: Corpus, human: np.ndarray, metric: np.ndarray, rows: np.ndarray) -> float:
    return pairwise_accuracy(_system_means(corpus, human, rows), _system_means(corpus, metric, rows))


@leaderboard_statistic("soft_pairwise_accuracy", "soft pairwise accuracy of the systems (Thompson et al. 2024), "
                       "per-pair permutation p-values over the sources (1000 permutations, as WMT); ranked, not "
                       "clustered, no CI (each resample would need every pair's permutations again)",
                       applies=lambda corpus: corpus.has_systems, clustered=False, interval=False)
def soft_pairwise(corpus: Corpus, human: np.ndarray, metric: np.ndarray, rows: np.ndarray) -> float:
    keys, sources = corpus.systems[rows], corpus.sources[rows]
    items = {s: (keys == s) for s in set(keys)}  # each system's items, aligned on the source ids
    return soft_pairwise_accuracy({s: dict(zip(sources[mask], human[mask], strict=True)) for s, mask in items.items()},
                                  {s: dict(zip(sources[mask], metric[mask], strict=True)) for s, mask in items.items()},
                                  trials=SPA_PERMUTATIONS)[0]
