"""How the report writes a correlation: the paper's markers."""

from __future__ import annotations

from styleeval.metaeval.report import format_correlation, significance_marker


def test_significance_markers_follow_the_paper():
    assert significance_marker(0.049) == ""
    assert significance_marker(0.05) == "*"  # not significant: cannot reject at the 0.05 level
    assert significance_marker(float("nan")) == "*"
    assert format_correlation(-0.1424, 0.157) == "-0.14*"
    assert format_correlation(-0.7855, 1.4e-11) == "-0.79"
    assert format_correlation(float("nan"), 0.0) == "–"
