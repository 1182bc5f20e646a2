"""The paper's grouping, average correlation and average rank on a small hand-computed case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from styleeval.metaeval import Group, RatedData, paper_groups, summarize_group
from styleeval.metaeval.grouping import group_averages


def _corr(rows):
    return pd.DataFrame(rows, columns=["dataset", "subset", "metric", "spearman", "spearman_p"])


CORR = _corr([
    # column d1/all: a 0.6, b 0.4, c 0.5 ; column d2/all: a 0.2, b 0.4, c 0.4 (tie) ; r_x only on d1
    ("d1", "all", "a", 0.6, 0.01), ("d1", "all", "b", 0.4, 0.01), ("d1", "all", "c", 0.5, 0.01),
    ("d2", "all", "a", 0.2, 0.20), ("d2", "all", "b", 0.4, 0.01), ("d2", "all", "c", 0.4, 0.01),
    ("d1", "all", "r_x", 0.9, 0.01),
])


def test_summarize_group_average_and_rank_by_hand():
    g = Group("system", "System-generated output", (("d1", "all"), ("d2", "all")))
    s = summarize_group(CORR, g, ["a", "b", "c", "r_x"])
    # d1 ranks: a 1, c 2, b 3 ; d2 ranks: b and c tie for 1-2 -> 1.5 each, a 3
    assert s.loc["a", "avg"] == pytest.approx(0.4)
    assert s.loc["b", "avg"] == pytest.approx(0.4)
    assert s.loc["c", "avg"] == pytest.approx(0.45)
    assert s.loc["a", "avg_rank"] == pytest.approx((1 + 3) / 2)
    assert s.loc["b", "avg_rank"] == pytest.approx((3 + 1.5) / 2)
    assert s.loc["c", "avg_rank"] == pytest.approx((2 + 1.5) / 2)
    # r_x has no value on d2: no average, no rank, and it does not push the others' ranks down
    assert np.isnan(s.loc["r_x", "avg"]) and np.isnan(s.loc["r_x", "avg_rank"])
    assert s.loc["r_x", "d1/all"] == pytest.approx(0.9)
    avg = group_averages(CORR, [g], ["a", "c"])
    assert avg.loc["c", "system"] == pytest.approx(0.45)


def test_paper_groups_from_dataset_kinds():
    groups = paper_groups(
        {"style_gap_testset": "testset", "lai_formality": "mixed", "mir_yelp": "system", "refs_only": "reference"},
        {"style_gap_testset": ["sentiment", "formality"]},
    )
    by_name = {g.name: g.columns for g in groups}
    assert by_name["system"] == (("lai_formality", "system"), ("mir_yelp", "all"))
    assert by_name["reference"] == (("lai_formality", "reference"), ("refs_only", "all"))
    assert by_name["testset"] == (("style_gap_testset", "sentiment"), ("style_gap_testset", "formality"))


def _row(i, task, system="s1", is_ref=False, content=3.0, reference=None):
    return {"id": f"toy/{i}", "dataset": "toy", "task": task, "target_style": "formal", "source_id": str(i % 2),
            "source": f"source {i}", "rewrite": f"rewrite {i}", "reference": reference, "system": system,
            "is_reference_rewrite": is_ref, "content_mean": content, "style_mean": None, "fluency_mean": None}


def test_rated_data_subsets_and_fingerprint():
    rows = [_row(0, "formality"), _row(1, "formality", is_ref=True), _row(2, "sentiment", content=None),
            _row(3, "sentiment", reference=["ref 3"])]
    data = RatedData.from_rows(rows, "toy")
    subsets = data.subsets("content")
    assert {k: v.tolist() for k, v in subsets.items()} == {
        "all": [0, 1, 3], "system": [0, 3], "reference": [1], "formality": [0, 1], "sentiment": [3]}
    assert data.kind == "mixed"
    assert data.has_references.tolist() == [False, False, False, True]
    assert data.subsets("style") == {}
    same = RatedData.from_rows(pd.DataFrame(rows), "toy")
    assert same.fingerprint == data.fingerprint
    rows[3]["rewrite"] = "changed"
    assert RatedData.from_rows(rows, "toy").fingerprint != data.fingerprint


def test_rated_data_bad_row_is_named():
    rows = [_row(0, "formality"), _row(1, "formality")]
    rows[1]["rewrite"] = None
    with pytest.raises(ValueError, match=r"toy row 1 \(toy/1\): rewrite is NoneType"):
        RatedData.from_rows(rows, "toy")
