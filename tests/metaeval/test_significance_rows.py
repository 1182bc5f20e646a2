"""The Williams-test table uses exactly the metrics and rows of the correlation table it sits under, and shows n."""

from __future__ import annotations

import numpy as np

from styleeval.metaeval import run_metaeval
from styleeval.metaeval.report import significance_table


def test_a_metric_the_table_skipped_is_not_tested(tmp_path):
    rng = np.random.default_rng(0)
    human = rng.normal(size=100)
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"source {i}", "rewrite": f"rewrite {i}", "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(h), "style_mean": 1.0, "fluency_mean": None}
            for i, h in enumerate(human)]
    good = human + rng.normal(scale=0.5, size=100)
    sparse = human.copy()
    sparse[:90] = np.nan  # 90 of 100 rows without a score: the main table skips it
    path = tmp_path / "scores.csv"
    path.write_text("id,good,sparse,noisy\n" + "".join(
        f"toy/{i},{g},{'' if np.isnan(s) else s},{n}\n"
        for i, (g, s, n) in enumerate(zip(good, sparse, rng.normal(size=100)))), encoding="utf-8")
    specs = [f"precomputed:file={path}:column={c}:as={c}" for c in ("good", "sparse", "noisy")]
    result = run_metaeval(["toy"], specs, dimension="content", loader=lambda name: rows, n_boot=0)
    assert "sparse" not in set(result.correlations["metric"])
    table = significance_table(result, "toy")
    assert table is not None and "sparse" not in table
    assert table.splitlines()[-1].replace(" ", "") == "|n|100|100|"
    assert "**" in table.splitlines()[2]  # good correlates significantly better than noisy


def test_the_n_row_says_when_metrics_saw_fewer_rows(data_dir):
    from styleeval.metaeval.report import _n

    result = run_metaeval(["style_gap_testset"], ["s_bleu", "r_bleu"], data_dir=str(data_dir), n_boot=0)
    assert _n(result.correlations, "style_gap_testset", "all") == "100-500"  # R-BLEU: the 100 rows with a reference
