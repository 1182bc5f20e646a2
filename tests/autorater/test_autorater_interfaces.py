"""The autorater behind its interfaces: the `evaluate` module metrics/llm_autorater, the meta-evaluation
metrics autorater_meaning / autorater_style, and the resumable `styleeval autorate` CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import JUDGE_REPLIES, JUDGE_REWRITES, JUDGE_SOURCES, JUDGE_STYLE

from styleeval.cli import main

ROOT = Path(__file__).resolve().parents[2]
METRIC_DIR = ROOT / "metrics" / "llm_autorater"


@pytest.fixture(scope="module")
def judge_metric():
    import evaluate

    return evaluate.load(str(METRIC_DIR), keep_in_memory=True)


def test_evaluate_module_paper_and_expected(judge_metric, judge_model_dir):
    from styleeval import Autorater

    paper = judge_metric.compute(predictions=JUDGE_REWRITES, sources=JUDGE_SOURCES, styles=JUDGE_STYLE,
                                 model_id=str(judge_model_dir), mode="paper", device="cpu")
    assert set(paper) == {"meaning", "style", "parsed", "compliance_rate", "meaning_mean", "style_mean", "signature"}
    assert paper["meaning"] == [4.0, 2.0, 3.0] and paper["style"] == [2.0, 5.0, 3.5]
    assert paper["parsed"] == [True, True, False] and paper["compliance_rate"] == pytest.approx(2 / 3)
    assert paper["meaning_mean"] == pytest.approx(3.0) and "mode:paper" in paper["signature"]

    expected = judge_metric.compute(predictions=JUDGE_REWRITES, sources=JUDGE_SOURCES, styles=[JUDGE_STYLE] * 3,
                                    model_id=str(judge_model_dir), device="cpu")
    direct = Autorater(str(judge_model_dir), device="cpu", progress=False).rate(JUDGE_SOURCES, JUDGE_REWRITES,
                                                                               JUDGE_STYLE)
    assert expected["meaning"] == pytest.approx(direct.meaning, abs=1e-9)
    assert expected["style"] == pytest.approx(direct.style, abs=1e-9)
    assert expected["compliance_rate"] == 1.0 and expected["signature"] == direct.signature


def test_evaluate_module_reuses_the_loaded_judge(judge_metric, judge_model_dir):
    from styleeval.autorater import rater

    before = len(rater._SHARED)
    for _ in range(2):
        judge_metric.compute(predictions=JUDGE_REWRITES[:1], sources=JUDGE_SOURCES[:1], styles=JUDGE_STYLE,
                             model_id=str(judge_model_dir), mode="paper", device="cpu")
    assert len(rater._SHARED) <= before + 1


def test_module_folder_layout():
    import yaml

    files = {p.name for p in METRIC_DIR.iterdir() if p.is_file()}
    assert files >= {"llm_autorater.py", "README.md", "app.py", "requirements.txt"}
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---")[1])
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py" and {"evaluate", "metric"} <= set(header["tags"])
    assert "helpfull" in card and "the the" in card  # the authors' typos, kept and explained
    assert "launch_gradio_widget" not in (METRIC_DIR / "app.py").read_text()


def test_metaeval_autorater_metrics_share_one_pass(judge_model_dir, monkeypatch):
    from styleeval.autorater.rater import Autorater
    from styleeval.metaeval import run_metaeval
    from styleeval.metrics import get_metric

    rows = [
        {"id": f"toy/{i}", "dataset": "toy", "task": "politeness", "target_style": JUDGE_STYLE,
         "source_id": str(i), "source": s, "rewrite": r, "reference": None, "system": f"s{i}",
         "is_reference_rewrite": False, "content_mean": float(c), "style_mean": float(5 - c), "fluency_mean": None}
        for i, (s, r, c) in enumerate(zip(JUDGE_SOURCES * 2, JUDGE_REWRITES[::-1] + JUDGE_REWRITES, [1, 2, 3, 4, 5, 2], strict=True))
    ]
    calls = []
    original = Autorater.rate

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Autorater, "rate", counting)
    specs = [f"autorater_meaning:model={judge_model_dir}:mode=paper", f"autorater_style:model={judge_model_dir}:mode=paper"]
    result = run_metaeval(["toy"], specs, dimension="content", loader=lambda name: rows, n_boot=0)
    assert len(calls) == 1  # one rating pass served both metrics
    assert set(result.correlations["metric"]) == {"autorater_meaning", "autorater_style"}
    metric = get_metric(specs[0])
    assert metric.signature.startswith("autorater_meaning|model:") and "mode:paper" in metric.signature
    with pytest.raises(ValueError, match="unknown options"):
        get_metric("autorater_meaning:temperature=1")
    served = get_metric("autorater_style:base_url=http://127.0.0.1:9/v1:mode=paper")
    assert served.options["base_url"] == "http://127.0.0.1:9/v1" and served.options["mode"] == "paper"


def _write_input(path: Path, n: int = 3) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"source": JUDGE_SOURCES[i % 3], "rewrite": JUDGE_REWRITES[i % 3],
                                "style": JUDGE_STYLE}) + "\n")
    return path


def test_cli_autorate_paper_mode_resumes(tmp_path, judge_model_dir, capsys):
    inp = _write_input(tmp_path / "in.jsonl", 6)
    out = tmp_path / "out.jsonl"
    base = ["autorate", str(inp), "--model", str(judge_model_dir), "--mode", "paper", "--out", str(out),
            "--chunk-size", "2", "--device", "cpu"]
    assert main([*base, "--max-rows", "3"]) == 0
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["row"] for r in first] == [0, 1, 2]
    assert main(base) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["row"] for r in records] == list(range(6))
    assert [r["reply"] for r in records] == JUDGE_REPLIES * 2
    assert [r["meaning"] for r in records[:3]] == [4.0, 2.0, None]  # unreadable: null, no mean fallback in files
    assert [r["parsed"] for r in records[:3]] == [True, True, False]
    assert all(r["signature"].startswith("autorater|") and "mode:paper" in r["signature"] for r in records)
    err = capsys.readouterr().err
    assert "(over 4 of 6 rows; 2 unreadable: null ratings)  compliance 0.667 (6 rows)" in err, err  # issue 61, 4

    # a finished file is not re-rated; other settings are refused without loading the model
    assert main(base) == 0
    assert main([*base[:-4], "--mode", "expected", "--chunk-size", "2"]) == 2
    assert "different settings" in capsys.readouterr().err


def test_cli_autorate_expected_mode_csv(tmp_path, judge_model_dir):
    from styleeval.files import AUTORATER_RECORDS, read_scores

    inp = _write_input(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.csv"
    assert main(["autorate", str(inp), "--model", str(judge_model_dir), "--out", str(out), "-q"]) == 0
    records = read_scores(out, AUTORATER_RECORDS)
    assert len(records) == 3 and all(1.0 <= r["meaning"] <= 5.0 for r in records)
    assert all(len(r["meaning_probs"]) == 5 for r in records)  # read back with their JSONL types (issue 38)
    assert all(r["parsed"] is True and r["reply"] is None for r in records)
    assert not any(math.isnan(r["style_rating"]) for r in records)


def test_cli_autorate_unreachable_server_is_one_line(tmp_path, capsys):
    from _servers import free_port

    inp = _write_input(tmp_path / "in.jsonl", 1)
    code = main(["autorate", str(inp), "--out", str(tmp_path / "o.jsonl"), "--mode", "paper", "--model", "x",
                 "--base-url", f"http://127.0.0.1:{free_port()}/v1", "-q"])
    assert code == 2
    err = capsys.readouterr().err
    assert "styleeval autorate: error:" in err and "cannot reach" in err and "Traceback" not in err
