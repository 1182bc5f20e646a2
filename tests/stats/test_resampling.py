"""The statistics of system comparison against slow, obviously correct computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from styleeval import stats


def test_bootstrap_ci_equals_a_loop_over_resamples():
    values = [0.2, 0.9, 0.4, 0.7, 0.1, 0.8]
    low, high = stats.bootstrap_mean_ci(values, n_boot=500, seed=3)
    rng = np.random.default_rng(3)
    means = []
    for _ in range(500):  # the same draws, one resample at a time
        picks = rng.integers(0, len(values), size=len(values))
        means.append(sum(values[i] for i in picks) / len(values))
    means.sort()
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert low < np.mean(values) < high
    assert all(np.isnan(stats.bootstrap_mean_ci([1.0])))  # undefined for one value


def test_approximate_randomization_is_exact_on_ten_pairs():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=10), rng.normal(size=10) + 0.4
    d = a - b
    hits = sum(abs(np.mean([s * x for s, x in zip(signs, d, strict=True)])) >= abs(d.mean()) - 1e-12
               for signs in itertools.product([1, -1], repeat=10))
    assert stats.approximate_randomization(a, b) == hits / 1024
    assert stats.approximate_randomization(a, b) == stats.approximate_randomization(b, a)  # symmetric
    assert stats.approximate_randomization(a, a) == 1.0


def test_random_shufflings_approach_the_exact_p():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=14), rng.normal(size=14) + 0.5
    exact = stats.approximate_randomization(a, b, trials=2**14)
    sampled = stats.approximate_randomization(a, b, trials=10_000, seed=5)
    assert sampled == pytest.approx(exact, abs=0.015)
    assert stats.approximate_randomization(a, b, trials=10_000, seed=5) == sampled  # seeded


def test_paired_bootstrap_of_identical_systems():
    low, high, p = stats.paired_bootstrap_mean([0.1, 0.5, 0.3], [0.1, 0.5, 0.3])
    assert (low, high, p) == (0.0, 0.0, 1.0)


def test_holm_by_hand():
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, float("nan"), 0.01]) == pytest.approx([0.5, float("nan"), 0.02], nan_ok=True)


def test_clusters_start_where_a_system_differs_from_the_cluster_head():
    different = {("A", "D"), ("B", "D"), ("C", "D")}
    clusters = stats.significance_clusters(["A", "B", "C", "D"],
                                           lambda x, y: (x, y) in different or (y, x) in different)
    assert clusters == {"A": 1, "B": 1, "C": 1, "D": 2}


def test_statistics_in_blocks_equal_one_block():
    """Memory is bounded by drawing resamples in blocks; the block size never changes a number."""
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=3001), rng.normal(size=3001) + 0.05  # odd n: blocks end mid-word of the generator
    whole, small = {"max_elements": 1 << 40}, {"max_elements": 5000}
    assert stats.bootstrap_mean_ci(a, seed=2, **small) == stats.bootstrap_mean_ci(a, seed=2, **whole)
    assert stats.paired_bootstrap_mean(a, b, seed=2, **small) == stats.paired_bootstrap_mean(a, b, seed=2, **whole)
    assert stats.sign_flip_test(a - b, seed=2, **small) == stats.sign_flip_test(a - b, seed=2, **whole)
    assert stats.spearman_bootstrap_ci(a, b, seed=2, **small) == stats.spearman_bootstrap_ci(a, b, seed=2, **whole)


def test_sign_flip_test_equals_random_sign_patterns_drawn_one_by_one():
    """The fast path (one BLAS product per block) against the definition: for each of the ``trials`` sign patterns
    (rng.choice of -1/+1, drawn one pattern at a time), is |mean(sign * d)| at least |mean(d)|?"""
    rng = np.random.default_rng(11)
    d = rng.normal(0.1, 1, size=41)
    draws = np.random.default_rng(4)
    hits = sum(abs(np.mean(draws.choice(np.array([-1.0, 1.0]), size=41) * d)) >= abs(d.mean()) - 1e-12
               for _ in range(3000))
    assert stats.sign_flip_test(d, trials=3000, seed=4) == (hits + 1) / 3001


@pytest.mark.parametrize("n", [1, 2, 4, 10, 13, 14, 20, 64, 65])
def test_sign_flip_floor_is_the_p_of_the_most_extreme_differences(n):
    """Equal positive differences: every sign pattern but the identity and the full flip lowers |mean|, so the
    test's p is the smallest it can give, exact or sampled with the same draws."""
    for exact in (True, False):
        floor = stats.sign_flip_floor(n, trials=2000, seed=5, exact=exact)
        assert floor == stats.sign_flip_test([1.0] * n, trials=2000, seed=5, exact=exact), (n, exact)
    assert stats.sign_flip_floor(4) == 2 / 16 and stats.sign_flip_floor(1) == 1.0
    assert math.isnan(stats.sign_flip_floor(0))


def test_paired_test_signatures_round_trip():
    from styleeval.signature import Signature

    for test, aggregate, exact in itertools.product(("ar", "bootstrap"), ("corpus", "mean"), (True, False)):
        signature = stats.paired_test_signature(test, aggregate, trials=500, n_boot=200, seed=3, exact=exact)
        assert Signature.parse(signature.format()) == signature
        assert signature.fields["seed"] == "3" and signature.fields["ci"] == "bs-200"
    assert stats.paired_test_signature("ar", "mean", exact=True) == \
        "paired_ar|stat:mean|trials:10000|exact:yes|count:ge|ci:bs-1000|seed:12345"
    assert stats.paired_test_signature("bootstrap", "mean") == \
        "paired_bs|stat:mean|resamples:1000|count:two-sided|ci:bs-1000|seed:12345"
