"""WMT's definitions where styleeval says "as WMT": pairwise accuracy equals mt-metrics-eval's ``Agreement`` (written
out here independently, the slow obviously-correct way), clusters equal its ``AssignRanks`` rule on random p-value
matrices, and the p-value conventions are the documented ones."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from styleeval.stats import paired_bootstrap_mean, pairwise_accuracy, significance_clusters


def agreement(gold: list[float], metric: list[float]) -> float:
    """mt-metrics-eval's Agreement: every pair counts; right when the two signs are equal (ties included)."""
    agree = total = 0
    for (g1, m1), (g2, m2) in itertools.combinations(zip(gold, metric, strict=True), 2):
        agree += np.sign(g1 - g2) == np.sign(m1 - m2)
        total += 1
    return agree / total


@pytest.mark.parametrize("seed", range(5))
def test_pairwise_accuracy_equals_a_brute_force_agreement_with_ties(seed):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 4, size=9).astype(float)  # many human ties
    metric = np.round(rng.normal(size=9), 1)
    metric[:3] = metric[3]  # and metric ties
    names = [f"sys{i}" for i in range(9)]
    got = pairwise_accuracy(dict(zip(names, human, strict=True)), dict(zip(names, metric, strict=True)))
    assert got == pytest.approx(agreement(list(human), list(metric)), abs=1e-15)
    assert pairwise_accuracy(list(human), list(metric)) == got  # aligned sequences are accepted as well
    kept = [(h1, h2, m1, m2) for (h1, m1), (h2, m2) in itertools.combinations(zip(human, metric, strict=True), 2) if h1 != h2]
    excluded = sum(np.sign(h1 - h2) == np.sign(m1 - m2) for h1, h2, m1, m2 in kept) / len(kept)
    assert pairwise_accuracy(list(human), list(metric), ties="exclude") == pytest.approx(excluded, abs=1e-15)


def test_a_human_tie_is_right_only_on_a_metric_tie():
    assert pairwise_accuracy({"A": 1.0, "B": 1.0}, {"A": 0.5, "B": 0.5}) == 1.0
    assert pairwise_accuracy({"A": 1.0, "B": 1.0}, {"A": 0.0, "B": 1.0}) == 0.0
    assert math.isnan(pairwise_accuracy({"A": 1.0, "B": 1.0}, {"A": 0.0, "B": 1.0}, ties="exclude"))


@pytest.mark.parametrize("bad", ["abc", 3.0, None])
def test_pairwise_accuracy_refuses_what_is_neither_a_mapping_nor_a_sequence(bad):
    with pytest.raises(TypeError, match="mapping system -> score or a sequence"):
        pairwise_accuracy(bad, [1.0, 2.0])
    with pytest.raises(ValueError, match="3 human scores but 2 metric scores"):
        pairwise_accuracy([1.0, 2.0, 3.0], [1.0, 2.0])


def assign_ranks(sig: np.ndarray, pval: float) -> list[int]:
    """mt-metrics-eval's AssignRanks, restated: item i opens a new rank when any item from the current rank's first
    to i - 1 is significantly better (sig[j, i] <= pval)."""
    ranks, current, start = [], 1, 0
    for i in range(sig.shape[0]):
        if any(sig[j, i] <= pval for j in range(start, i)):
            current, start = current + 1, i
        ranks.append(current)
    return ranks


@pytest.mark.parametrize("seed", range(20))
def test_clusters_follow_the_assign_ranks_rule_on_random_p_value_matrices(seed):
    rng = np.random.default_rng(seed)
    n = 8
    sig = np.triu(rng.uniform(0, 0.2, size=(n, n)), 1)
    names = [f"m{i}" for i in range(n)]
    got = significance_clusters(names, lambda a, b: sig[names.index(a), names.index(b)] <= 0.05)
    assert [got[x] for x in names] == assign_ranks(sig, 0.05)


def test_a_cluster_opens_when_any_member_not_only_the_head_is_better():
    # B is not significantly worse than A, but C is significantly worse than B: C opens cluster 2
    better = {("B", "C")}
    clusters = significance_clusters(["A", "B", "C"], lambda a, b: (a, b) in better)
    assert clusters == {"A": 1, "B": 1, "C": 2}


def test_the_paired_bootstrap_p_is_never_zero():
    low, high, p = paired_bootstrap_mean([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0], n_boot=1000, seed=0)
    assert p == pytest.approx(2 / 1001) and low > 0
