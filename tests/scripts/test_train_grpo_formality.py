"""The GRPO training script runs end to end on the real model (one step, two held-out rows, short completions) and
reports what it measured; the real run's numbers are in docs/training.md. No number of the run is asserted: it is a
training run of one step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_grpo_formality.py"


def test_one_step_runs_and_reports_before_and_after(real_backend, data_dir, tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--data-dir", str(data_dir), "--out", str(tmp_path),
                           "--steps", "1", "--eval-rows", "2", "--max-completion-length", "12", "--no-autorater",
                           "--logging-steps", "1"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert len(results["held_out"]) == 2 and len(results["before"]["rewrites"]) == 2
    for when in ("before", "after"):
        means = results[when]["means"]
        assert {"reward", "logprob_content", "logprob_style", "r_bleu", "s_chrf", "s_bleu", "copies"} <= set(means)
    assert results["signature"].startswith("logprob|model:gguf:smollm2-135M:Q4_1@sha256-")
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| reward |" in report and "| source | before | after |" in report
