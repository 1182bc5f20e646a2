"""Mukherjee et al.'s hybrids on synthetic data where the best combination is known, honest cross-validation, and the
overall score."""

from __future__ import annotations

import numpy as np
import pytest

from styleeval.metaeval.hybrids import hybrid, overall_score, weighted_geometric_mean


@pytest.fixture(scope="module")
def synthetic():
    """Human = weighted geometric mean of metrics a (0.7) and b (0.3); c is b upside down (lower is better); d, e
    are noise. 60 sources x 4 rewrites."""
    rng = np.random.default_rng(0)
    n = 240
    a, b = rng.uniform(0.05, 1, n), rng.uniform(0.05, 1, n)
    human = weighted_geometric_mean([a, b], [0.7, 0.3])
    scores = {"a": a, "b": b, "c": 5 - 4 * b + rng.normal(0, 0.3, n), "d": rng.normal(size=n),
              "e": rng.normal(size=n)}
    return scores, human, np.repeat(np.arange(60), 4)


def test_simulation_oracle_finds_the_combination(synthetic):
    scores, human, groups = synthetic
    res = hybrid("simulation", scores, human, groups, lower_is_better=["c"], oracle=True)
    fold = res.folds[0]
    assert set(fold["metrics"][:2]) == {"a", "b"} or set(fold["metrics"]) >= {"a", "b"}
    weights = dict(zip(fold["metrics"], fold["weights"], strict=True))
    assert weights["a"] == pytest.approx(0.7, abs=0.1)
    assert res.pearson > 0.99


def test_learned_oracle_ranks_the_informative_metrics_first(synthetic):
    scores, human, groups = synthetic
    res = hybrid("learned", scores, human, groups, lower_is_better=["c"], oracle=True)
    assert "a" in res.folds[0]["metrics"][:1] and res.pearson > 0.9


@pytest.mark.parametrize("kind", ["simulation", "learned"])
def test_cross_validation_never_sees_a_test_source(synthetic, kind):
    scores, human, groups = synthetic
    res = hybrid(kind, scores, human, groups, lower_is_better=["c"], folds=5)
    assert len(res.folds) == 5 and not np.isnan(res.predictions).any()
    seen = set()
    for fold in res.folds:
        assert not fold["train_groups"] & fold["test_groups"]  # no source in both
        seen |= fold["test_groups"]
    assert seen == set(range(60))  # every source is tested exactly in one fold
    oracle = hybrid(kind, scores, human, groups, lower_is_better=["c"], oracle=True)
    assert res.pearson <= oracle.pearson + 1e-9 and res.pearson > 0.8


def test_overall_score():
    got = overall_score([0, 1, 0.5], [0, 1, 1], [10, 0, 5], lower_is_better=["fluency"])
    assert got[1] == pytest.approx(1.0) and got[0] == pytest.approx(1e-6, rel=1e-3)
    assert got[2] == pytest.approx((0.5 * 1 * 0.5) ** (1 / 3))


def test_report_section(tmp_path, data_dir):
    from styleeval.metaeval import run_metaeval, write_report

    result = run_metaeval(["lai_formality"], ["s_bleu", "s_chrf", "s_ter", "s_rougel"], data_dir=str(data_dir),
                          n_boot=0)
    report = write_report(result, tmp_path, plots=False, hybrids=True)["report"].read_text(encoding="utf-8")
    assert "## Hybrids (Mukherjee et al. 2025)" in report and "| Lai |" in report
