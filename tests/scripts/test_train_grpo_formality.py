"""The GRPO training script runs end to end on the real model (``--smoke``: two steps, two held-out rows, short
completions) and reports what it measured; the real run's numbers are in docs/training.md. No number of the run is
asserted: it is a training run of two steps. A run killed in the middle leaves its report (how far it got) and the
checkpoints saved so far (issue 61, item 9)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_grpo_formality.py"


def _run(data_dir: Path, out: Path, *more: str) -> list[str]:
    return [sys.executable, str(SCRIPT), "--data-dir", str(data_dir), "--out", str(out), "--smoke", *more]


def test_the_smoke_run_reports_before_and_after_and_checkpoints_every_step(real_backend, data_dir, tmp_path):
    proc = subprocess.run(_run(data_dir, tmp_path), capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["status"] == "done" and results["args"]["steps"] == "2" and results["args"]["train_rows"] == "4"
    assert len(results["held_out"]) == 2 and len(results["before"]["rewrites"]) == 2
    for when in ("before", "after"):
        means = results[when]["means"]
        assert {"reward", "logprob_content", "logprob_style", "r_bleu", "s_chrf", "s_bleu", "copies"} <= set(means)
        assert "autorater_meaning" not in means  # --smoke: no autorater
    assert results["signature"].startswith("logprob|model:gguf:smollm2-135M:Q4_1@sha256-")
    assert results["checkpoints"] == ["checkpoint-1", "checkpoint-2"]
    for checkpoint in ("checkpoint-1", "checkpoint-2"):
        assert (tmp_path / "trainer" / checkpoint / "adapter_model.safetensors").is_file()
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert [entry["step"] for entry in results["log"] if "reward" in entry] == [1, 2]
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Status: **done**" in report and "| reward |" in report and "| source | before | after |" in report


def test_a_killed_run_leaves_its_report_and_checkpoints(real_backend, data_dir, tmp_path):
    """Killed after its first step: report.md says how far it got, results.json holds the measurement before
    training and the log so far, trainer/checkpoint-1 is a LoRA checkpoint (on main: an empty trainer/, no report)."""
    proc = subprocess.Popen(_run(data_dir, tmp_path, "--steps", "5"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    checkpoint = tmp_path / "trainer" / "checkpoint-1" / "adapter_model.safetensors"
    try:
        deadline = time.monotonic() + 1500
        while time.monotonic() < deadline and proc.poll() is None:
            results = tmp_path / "results.json"
            if checkpoint.is_file() and results.is_file() and \
                    json.loads(results.read_text(encoding="utf-8"))["checkpoints"] == ["checkpoint-1"]:
                break
            time.sleep(0.5)
        assert proc.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["status"].startswith("training: step ") and results["status"].endswith(" of 5 done")
    assert results["after"] is None and set(results["before"]["means"]) >= {"reward", "r_bleu"}
    assert any(entry.get("step") == 1 and "reward" in entry for entry in results["log"])
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Status: **training: step " in report and "checkpoint-1" in report and "| reward |" in report
    assert not (tmp_path / "adapter").exists()


def test_without_the_trl_extra_the_script_says_which_extra_in_one_line(data_dir, tmp_path):
    """TRL and peft are not in ``[all]``: a user who installed the README's extras and runs the smoke run gets one
    line naming the extra, before any work, not a ModuleNotFoundError traceback (found by the newcomer's run). peft is
    hidden from a child by a module finder that refuses it."""
    hide = ("import importlib.abc, sys\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'peft':\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Hide())\n")
    code = hide + f"sys.argv = {_run(data_dir, tmp_path / 'out')[1:]!r}\nimport runpy\nrunpy.run_path(sys.argv[0], " \
        "run_name='__main__')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    lines = done.stderr.strip().splitlines()  # TRL itself warns that peft is missing, as it does for a user
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert lines[-1] == ("train_grpo_formality.py: error: peft not installed: pip install 'styleeval[trl]' (or pip "
                        "install -e '.[trl]' in a clone)")
    assert not (tmp_path / "out").exists()
