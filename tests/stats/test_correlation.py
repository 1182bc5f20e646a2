"""Correlations equal scipy's, bootstrap CIs are seeded, markers follow the paper, degenerate input is caught."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from styleeval.stats.correlation import (
    DegenerateScoresError,
    correlate,
    kendall_tau_like,
    system_level,
)
from styleeval.stats.correlation import spearman_bootstrap_ci as bootstrap_ci

HUMAN = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, 3.0, 1.0, 4.0]
METRIC = [0.1, 0.3, 0.2, 0.5, 0.4, 0.9, 0.7, 0.2, 0.3, 0.8]


def test_correlate_equals_scipy():
    c = correlate(HUMAN, METRIC, n_boot=0)
    sp, pe, ke = stats.spearmanr(METRIC, HUMAN), stats.pearsonr(METRIC, HUMAN), stats.kendalltau(METRIC, HUMAN)
    assert c.n == 10
    assert (c.spearman, c.spearman_p) == pytest.approx((sp.statistic, sp.pvalue), abs=1e-12)
    assert (c.pearson, c.pearson_p) == pytest.approx((pe.statistic, pe.pvalue), abs=1e-12)
    assert (c.kendall, c.kendall_p) == pytest.approx((ke.statistic, ke.pvalue), abs=1e-12)
    # hand-written average ranks (ties share the mean rank), then Pearson of the ranks
    rank_h = [1.5, 3.5, 3.5, 5.5, 7.5, 9.5, 9.5, 5.5, 1.5, 7.5]
    rank_m = [1, 4.5, 2.5, 7, 6, 10, 8, 2.5, 4.5, 9]
    assert c.spearman == pytest.approx(np.corrcoef(rank_h, rank_m)[0, 1], abs=1e-12)
    assert np.isnan(c.ci_low) and np.isnan(c.ci_high)


def test_bootstrap_matches_naive_loop_and_is_seeded():
    h, m = np.array(HUMAN), np.array(METRIC)
    low, high = bootstrap_ci(h, m, n_boot=200, seed=7)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, len(h), size=(200, len(h)))
    rhos = [stats.spearmanr(h[i], m[i]).statistic for i in idx]
    rhos = np.array([r for r in rhos if np.isfinite(r)])
    assert (low, high) == pytest.approx(tuple(np.percentile(rhos, [2.5, 97.5])), abs=1e-12)
    assert bootstrap_ci(h, m, n_boot=200, seed=7) == (low, high)
    assert bootstrap_ci(h, m, n_boot=200, seed=8) != (low, high)
    c = correlate(h, m, n_boot=500, seed=0)
    assert c.ci_low < c.spearman < c.ci_high <= 1.0


def test_kendall_tau_like_hand_computed():
    # source A: human 1<2<3, metric 1,3,2 -> pairs (0,1) C, (0,2) C, (1,2) D -> tau = 1/3
    # source B: human 1,1,2 (first pair tied: skipped), metric all 5 -> metric ties are discordant -> tau = -1
    human = [1, 2, 3, 1, 1, 2]
    metric = [1, 3, 2, 5, 5, 5]
    groups = ["A", "A", "A", "B", "B", "B"]
    tau, pairs = kendall_tau_like(human, metric, groups)
    assert tau == pytest.approx((1 / 3 - 1) / 2)
    assert pairs == 5
    pooled, _ = kendall_tau_like(human, metric, groups, aggregate="pooled")
    assert pooled == pytest.approx((2 - 3) / 5)
    with pytest.raises(DegenerateScoresError, match="no pair"):
        kendall_tau_like([1, 1], [1, 2], ["A", "A"])


def test_system_level_is_pearson_of_system_means():
    human = [1, 3, 2, 4, 5, 7]
    metric = [0.1, 0.3, 0.2, 0.2, 0.9, 0.7]
    systems = ["x", "x", "y", "y", "z", "z"]
    r, p, n = system_level(human, metric, systems)
    ref = stats.pearsonr([0.2, 0.2, 0.8], [2, 3, 6])
    assert n == 3
    assert (r, p) == pytest.approx((ref.statistic, ref.pvalue))


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ([0.1, np.nan, 0.3, 0.4], r"1 of 4 metric scores are NaN or infinite \(first at row 1\)"),
        ([0.5, 0.5, 0.5, 0.5], r"all 4 metric scores are equal \(0.5\)"),
        ([0.1, 0.2], r"only 2 rows"),
    ],
)
def test_degenerate_scores_give_a_clear_message(metric, message):
    human = [1.0, 2.0, 3.0, 4.0][: len(metric)]
    with pytest.raises(DegenerateScoresError, match=message):
        correlate(human, metric, label="s_bleu on toy/all")
    with pytest.raises(DegenerateScoresError, match="human scores are equal"):
        correlate([3.0, 3.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="3 metric scores but 2 human ratings"):
        correlate([1.0, 2.0], [1.0, 2.0, 3.0])
