"""Significance clusters of a ranking (systems by a metric, metrics by a meta-evaluation statistic)."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def significance_clusters(ranked: Sequence[str], better: Callable[[str, str], bool]) -> dict[str, int]:
    """Clusters of ``ranked`` (best first) by WMT's rule (mt-metrics-eval's ``AssignRanks``): walking down the
    ranking, an item opens a new cluster when ANY member of the current cluster is significantly better than it
    (``better(member, item)``: p <= alpha). Returns item -> cluster (1 = best).

    What a cluster guarantees: no item is significantly worse than a member of its own cluster, and every item of a
    later cluster is significantly worse than at least one item ranked above it; items of one cluster are not
    necessarily "not significantly different" from every member of the next."""
    clusters: dict[str, int] = {}
    members: list[str] = []
    number = 0
    for item in ranked:
        if not members or any(better(member, item) for member in members):
            number += 1
            members = []
        members.append(item)
        clusters[item] = number
    return clusters
