"""Pairwise meta-evaluation statistics against brute force: acc_eq and its epsilon, pairwise accuracy, permutation
p-values (speed: scripts/bench_pairwise.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from styleeval.stats.pairwise import (
    accuracy_at,
    paired_permutation_p,
    pairwise_accuracy,
    soft_pairwise_accuracy,
    tie_calibrated_accuracy,
)


def _brute_acc(h, m, eps):
    correct = total = 0
    for i in range(len(h)):
        for j in range(i + 1, len(h)):
            total += 1
            dh, dm = h[i] - h[j], m[i] - m[j]
            metric_sign = 0 if abs(dm) <= eps else (1 if dm > 0 else -1)
            correct += metric_sign == (0 if dh == 0 else (1 if dh > 0 else -1))
    return correct / total


def _brute(h, m, groups=None):
    """Every candidate epsilon (0 and every |m_i - m_j| within a group) evaluated with a double loop."""
    keys = [None] * len(h) if groups is None else list(groups)
    members = [[i for i in range(len(h)) if keys[i] == k] for k in dict.fromkeys(keys)]
    members = [idx for idx in members if len(idx) >= 2]
    candidates = {0.0} | {abs(m[i] - m[j]) for idx in members for i in idx for j in idx}
    best = (-1.0, None)
    for eps in sorted(candidates):
        acc = float(np.mean([_brute_acc([h[i] for i in idx], [m[i] for i in idx], eps) for idx in members]))
        if acc > best[0] + 1e-12:
            best = (acc, eps)
    return best


@pytest.mark.parametrize("seed", range(5))
def test_acc_eq_and_epsilon_equal_brute_force_with_many_ties(seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(1, 4, size=30).astype(float)  # 1-3 ratings: many human ties
    m = np.round(h + rng.normal(scale=0.8, size=30), 1)  # rounded: many metric ties
    acc, eps = tie_calibrated_accuracy(h, m)
    want_acc, want_eps = _brute(h.tolist(), m.tolist())
    assert acc == pytest.approx(want_acc) and eps == pytest.approx(want_eps)
    groups = rng.integers(0, 5, size=30)
    acc, eps = tie_calibrated_accuracy(h, m, groups)
    want_acc, want_eps = _brute(h.tolist(), m.tolist(), groups.tolist())
    assert acc == pytest.approx(want_acc) and eps == pytest.approx(want_eps)
    assert accuracy_at(h, m, eps, groups) == pytest.approx(acc)


def test_a_perfect_metric_and_a_constant_one():
    h = np.array([1, 2, 2, 3, 5, 5, 4.0])
    acc, eps = tie_calibrated_accuracy(h, h)
    assert acc == 1.0 and eps < 1.0  # below the smallest non-zero difference
    pairs = [(i, j) for i in range(len(h)) for j in range(i + 1, len(h))]
    tied = sum(h[i] == h[j] for i, j in pairs) / len(pairs)
    assert tie_calibrated_accuracy(h, np.full(len(h), 0.5)) == (pytest.approx(tied), 0.0)


def test_pairwise_accuracy_by_hand():
    human = {"A": 3.0, "B": 2.0, "C": 1.0, "D": 1.0}
    metric = {"A": 0.9, "B": 0.2, "C": 0.5, "D": 0.1}
    # AB ok, AC ok, AD ok, BC wrong, BD ok; CD is a human tie the metric does not tie: wrong as WMT counts it,
    # left out with ties="exclude"
    assert pairwise_accuracy(human, metric) == pytest.approx(4 / 6)
    assert pairwise_accuracy(human, metric, ties="exclude") == pytest.approx(4 / 5)
    assert math.isnan(pairwise_accuracy({"A": 1.0, "B": 1.0}, {"A": 0.0, "B": 1.0}, ties="exclude"))


def test_permutation_p_values_are_seeded_and_ordered():
    rng = np.random.default_rng(0)
    b = rng.normal(size=40)
    a = b + 0.5 + rng.normal(scale=0.5, size=40)  # better on most items
    p = paired_permutation_p(a, b, seed=3)
    assert p == paired_permutation_p(a, b, seed=3) and p < 0.05
    assert paired_permutation_p(b, a, seed=3) > 0.95  # one-sided: the other direction
    # symmetry: the same swaps count each side once, so p(a>b) + p(b>a) = (trials + 2) / (trials + 1) without ties
    assert p + paired_permutation_p(b, a, seed=3) == pytest.approx(1002 / 1001)
    spa, per_pair = soft_pairwise_accuracy({"x": a, "y": b}, {"x": a, "y": b})
    assert spa == 1.0 and set(per_pair) == {("x", "y")}


def test_perm_both_is_seeded_and_symmetric():
    from styleeval.stats.pairwise import perm_both

    rng = np.random.default_rng(2)
    h = rng.integers(1, 6, size=80).astype(float)
    x, y = h + rng.normal(scale=0.5, size=80), h + rng.normal(scale=3.0, size=80)

    def stat(hh, mm):
        return tie_calibrated_accuracy(hh, mm)[0]

    p_xy = perm_both(stat, h, x, y, trials=200, seed=1)
    assert p_xy == perm_both(stat, h, x, y, trials=200, seed=1) and p_xy < 0.05
    assert p_xy + perm_both(stat, h, y, x, trials=200, seed=1) >= 202 / 201  # ties can only add
