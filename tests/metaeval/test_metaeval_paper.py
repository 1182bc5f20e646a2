"""On the real corpora (local mirror): Table 4's S-Bleu row and the `styleeval metaeval` CLI outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from styleeval.cli import main
from styleeval.corpora import load_corpus
from styleeval.metrics import get_metric

# Pauli et al. (2025), Table 4, row S-Bleu (Spearman with mean content rating); * = not significant
TABLE4_S_BLEU = {"all": -0.13, "sentiment": -0.79, "detoxification": -0.51, "catchy": -0.14,
                 "politeness": -0.07, "persuasiveness": -0.15, "formality": -0.10}
NOT_SIGNIFICANT = {"catchy", "politeness", "persuasiveness", "formality"}


@pytest.fixture(scope="module")
def testset(data_dir):
    return load_corpus("style_gap_testset")  # STYLEEVAL_DATA_DIR from conftest: the local mirror


def test_paper_bleu_reproduces_table4_s_bleu(testset):
    scores = np.array(get_metric("s_paper_bleu")(testset["source"], testset["rewrite"]))
    human = np.array(testset["content_mean"])
    tasks = np.array(testset["task"])
    for subset, published in TABLE4_S_BLEU.items():
        mask = np.ones(len(tasks), bool) if subset == "all" else tasks == subset
        res = stats.spearmanr(scores[mask], human[mask])
        assert res.statistic == pytest.approx(published, abs=0.01), subset
        assert (res.pvalue >= 0.05) == (subset in NOT_SIGNIFICANT), subset


def test_cli_writes_the_three_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    status = main([
        "metaeval", "--datasets", "style_gap_testset,lai_formality,ziegenbein_appropriateness",
        "--metrics", "s_paper_bleu,s_bleu,r_bleu,s_ter", "--dimension", "content", "--out", str(out),
        "--cache-dir", str(tmp_path / "cache"), "--bootstrap", "100", "--no-progress", "--allow-missing",
    ])
    assert status == 0
    err = capsys.readouterr().err
    assert "skipped dataset ziegenbein_appropriateness" in err

    csv = pd.read_csv(out / "correlations.csv")
    assert list(csv.columns) == ["dataset", "subset", "metric", "dimension", "n", "spearman", "spearman_p",
                                 "pearson", "pearson_p", "kendall", "kendall_p", "ci_low", "ci_high", "signature"]
    assert not csv.isna().any().any()
    assert csv[csv.metric == "s_bleu"].signature.str.startswith("s_bleu|").all()
    row = csv.set_index(["dataset", "subset", "metric"]).loc[("style_gap_testset", "sentiment", "s_paper_bleu")]
    assert row.n == 50 and row.spearman == pytest.approx(-0.79, abs=0.01)
    assert row.ci_low < row.spearman < row.ci_high
    assert set(csv[csv.dataset == "lai_formality"].subset) == {"all", "system", "reference"}
    assert csv[(csv.dataset == "lai_formality") & (csv.subset == "reference")].metric.tolist() == [
        "s_paper_bleu", "s_bleu", "s_ter"]  # REF rows have no reference: no r_ metric
    lai_sys = csv.set_index(["dataset", "subset", "metric"]).loc[("lai_formality", "system", "s_paper_bleu")]
    assert lai_sys.n == 640 and lai_sys.spearman == pytest.approx(0.52, abs=0.01)  # Table 3, Lai

    report = (out / "report.md").read_text()
    assert "## Constructed test set" in report and "## System-generated output" in report
    assert "| S-Paper-BLEU | -0.13 | -0.79 | -0.51 | -0.14* | -0.07* | -0.15* | -0.10* |" in report
    assert "ziegenbein_appropriateness" in report  # the skip note
    assert "## Missing cells" in report and "- Ze. / S-Paper-BLEU: dataset unavailable" in report
    # the test set: ALL (R-BLEU sees only the 100 rows with a reference), then per task
    assert "| n | 100-500 | 50 | 50 | 100 | 100 | 100 | 100 |  |  |" in report
    assert "## Metric signatures" in report and "- S-TER: `s_ter|" in report
    for png in ("groups.png", "tasks.png", "datasets.png", "metrics_heatmap.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # second run: every score from the cache
    assert main(["metaeval", "--datasets", "style_gap_testset", "--metrics", "s_paper_bleu", "--out",
                 str(tmp_path / "out2"), "--cache-dir", str(tmp_path / "cache"), "--bootstrap", "0",
                 "--no-progress", "--no-plots"]) == 0
    assert "cache 1 hit / 0 misses" in capsys.readouterr().out


def test_cli_bad_metric_is_a_clear_error(tmp_path, capsys):
    assert main(["metaeval", "--metrics", "s_nope", "--out", str(tmp_path)]) == 2
    assert "unknown metric 's_nope'" in capsys.readouterr().err
