"""Significance clusters of a ranking (systems by a metric, metrics by a meta-evaluation statistic)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def significance_clusters(ranked: Sequence[str], different: Callable[[str, str], bool]) -> dict[str, int]:
    """Clusters of ``ranked`` (best first), as WMT reports rankings: a new cluster starts at the first item that is
    significantly different from (worse than) the best item of the current cluster. Returns item -> cluster
    (1 = best)."""
    clusters: dict[str, int] = {}
    head, number = None, 0
    for item in ranked:
        if head is None or different(head, item):
            head, number = item, number + 1
        clusters[item] = number
    return clusters
