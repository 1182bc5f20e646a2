"""The Williams-test table uses exactly the metrics of the correlation table it sits under, and shows each pair's n:
the rows both metrics score, on which the pair was tested."""

from __future__ import annotations

import re

import numpy as np
import pytest

from styleeval.metaeval import run_metaeval
from styleeval.metaeval.report import significance_table
from styleeval.stats import williams_t


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
        for i, (g, s, n) in enumerate(zip(good, sparse, rng.normal(size=100), strict=True))), encoding="utf-8")
    specs = [f"precomputed:file={path}:column={c}:as={c}" for c in ("good", "sparse", "noisy")]
    result = run_metaeval(["toy"], specs, dimension="content", loader=lambda name: rows, n_boot=0)
    assert "sparse" not in set(result.correlations["metric"])
    table = significance_table(result, "toy")
    assert table is not None and "sparse" not in table
    assert table.splitlines()[-1] == "Every pair on the same 100 rows (rated, and scored by both metrics)."
    assert "**" in table.splitlines()[2]  # good correlates significantly better than noisy


def test_the_n_row_says_when_metrics_saw_fewer_rows(data_dir):
    from styleeval.metaeval.report import _n

    result = run_metaeval(["style_gap_testset"], ["s_bleu", "r_bleu"], data_dir=str(data_dir), n_boot=0)
    assert _n(result.correlations, "style_gap_testset", "all") == "100-500"  # R-BLEU: the 100 rows with a reference


def test_each_pair_shows_its_own_n_and_is_tested_on_those_rows():
    """R-BLEU scores the 100 of 120 rated rows that have a reference, S-BLEU and S-chrF all 120: a pair with R-BLEU
    is tested on the 100 rows both score and says n = 100 (the table used to show each metric's own n, 120 and 100,
    under pairs tested on 100); its p is Williams' on those rows, computed here from numpy's Pearson r."""
    rng = np.random.default_rng(3)
    words = "the quick brown fox jumps over a lazy dog near river bank today".split()
    rows = []
    for i in range(120):
        source = rng.choice(words, size=10).tolist()
        kept = [w for w in source if rng.random() > (i % 6) / 8]  # rows drop 0 to 5/8 of their words
        rows.append({"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal",
                     "source_id": str(i), "source": " ".join(source), "rewrite": " ".join(kept) or "nothing",
                     "reference": " ".join(source[:8]) if i < 100 else None, "system": "s",
                     "is_reference_rewrite": False, "content_mean": len(kept) + float(rng.normal(scale=2)),
                     "style_mean": 1.0, "fluency_mean": None})
    result = run_metaeval(["toy"], ["s_bleu", "r_bleu", "s_chrf"], dimension="content", loader=lambda name: rows,
                          n_boot=0)
    assert dict(zip(result.correlations["metric"], result.correlations["n"], strict=True)) == \
        {"s_bleu": 120, "r_bleu": 100, "s_chrf": 120}  # each metric's own n, in the correlation table
    table = significance_table(result, "toy")
    lines = table.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["A \\\\ B", "S-BLEU", "R-BLEU", "S-chrF"]
    cells = {(line.strip("|").split("|")[0].strip(), column): cell.strip()
             for line in lines[2:5] for column, cell in zip(header[1:], line.strip("|").split("|")[1:], strict=True)}
    human = result.human["toy"]
    scores = {label: result.scores["toy", name] for label, name in
              (("S-BLEU", "s_bleu"), ("R-BLEU", "r_bleu"), ("S-chrF", "s_chrf"))}
    assert int(np.isfinite(scores["R-BLEU"]).sum()) == 100

    def direct(a: str, b: str) -> tuple[float, int]:
        both = np.isfinite(human) & np.isfinite(scores[a]) & np.isfinite(scores[b])
        h, x, y = human[both], scores[a][both], scores[b][both]
        r = [np.corrcoef(u, v)[0, 1] for u, v in ((h, x), (h, y), (x, y))]
        return williams_t(*r, int(both.sum()))[1], int(both.sum())

    for a, b in [(a, b) for a in scores for b in scores if a != b]:
        shown = re.fullmatch(r"(\*\*)?([0-9.]+)(\*\*)? \(n = (\d+)\)", cells[a, b])
        assert shown is not None, cells[a, b]
        p, n = direct(a, b)
        assert int(shown.group(4)) == n == (100 if "R-BLEU" in (a, b) else 120)
        digits = 3 if p < 0.05 else 2
        assert float(shown.group(2)) == pytest.approx(round(p, digits), abs=1e-12) and bool(shown.group(1)) == (p < 0.05)
    assert [cells["S-BLEU", "R-BLEU"], cells["S-chrF", "R-BLEU"], cells["S-chrF", "S-BLEU"]] == \
        ["**0.049** (n = 100)", "**0.023** (n = 100)", "0.16 (n = 120)"]
    assert lines[-1].startswith("Each pair on the rated rows both metrics score, n in its cell")
    assert "| n |" not in table  # no longer each metric's own n
