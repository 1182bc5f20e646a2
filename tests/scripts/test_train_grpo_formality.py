"""The GRPO training script runs end to end on the real model (``--smoke``: two steps, two held-out rows, short
completions) and reports what it measured; the real run's numbers are in docs/training.md. No number of the run is
asserted: it is a training run of two steps. A run killed in the middle leaves its report (how far it got) and the
checkpoints saved so far (issue 61, item 9): checked on the same run, stopped after its first checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_grpo_formality.py"


def _run(data_dir: Path, out: Path, *more: str) -> list[str]:
    return [sys.executable, str(SCRIPT), "--data-dir", str(data_dir), "--out", str(out), "--smoke", *more]


def test_the_smoke_run_reports_before_and_after_and_checkpoints_every_step(real_backend, data_dir, tmp_path):
    """One smoke run, checked twice (one run instead of two: the training run is the cost). First frozen (SIGSTOP)
    right after its first checkpoint, as a run killed there: report.md says how far it got, results.json holds the
    measurement before training and the log so far, trainer/checkpoint-1 is a LoRA checkpoint, no adapter/ (on main:
    an empty trainer/, no report). A frozen process runs no code, like a killed one, so the files on disk while it is
    stopped are exactly those a SIGKILL at that moment leaves (and both files are replaced whole, never half-written).
    Then continued (SIGCONT) to its end: the finished run's report and checkpoints."""
    out, killed = tmp_path / "out", tmp_path / "killed"
    with open(tmp_path / "stderr.log", "w+", encoding="utf-8") as stderr:
        proc = subprocess.Popen(_run(data_dir, out), stdout=subprocess.DEVNULL, stderr=stderr,
                                start_new_session=True)
        try:
            _a_run_stopped_after_its_first_checkpoint_has_left_its_report(proc, out)
            shutil.copytree(out, killed)  # what a SIGKILL here leaves: resumed below
            os.killpg(proc.pid, signal.SIGCONT)
            proc.wait(timeout=1800)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        stderr.seek(0)
        assert proc.returncode == 0, stderr.read()[-3000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["status"] == "done" and results["args"]["steps"] == "2" and results["args"]["train_rows"] == "4"
    assert len(results["held_out"]) == 2 and len(results["before"]["rewrites"]) == 2
    for when in ("before", "after"):
        means = results[when]["means"]
        assert {"reward", "logprob_content", "logprob_style", "r_bleu", "s_chrf", "s_bleu", "copies"} <= set(means)
        assert "autorater_meaning" not in means  # --smoke: no autorater
    assert results["signature"].startswith("logprob|model:gguf:smollm2-135M:Q4_1@sha256-")
    assert results["checkpoints"] == ["checkpoint-1", "checkpoint-2"]
    for checkpoint in ("checkpoint-1", "checkpoint-2"):
        assert (out / "trainer" / checkpoint / "adapter_model.safetensors").is_file()
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert [entry["step"] for entry in results["log"] if "reward" in entry] == [1, 2]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Status: **done**" in report and "| reward |" in report and "| source | before | after |" in report
    _the_killed_run_resumed_ends_as_the_run_that_went_on(data_dir, killed, out)


def _the_killed_run_resumed_ends_as_the_run_that_went_on(data_dir: Path, killed: Path, out: Path) -> None:
    """``--resume`` on the files a run killed after its first checkpoint left: it trains step 2 from checkpoint-1
    (TRL restores the optimizer and the random states) and measures after, to the numbers of the run that was not
    killed, with its measurement before training read back."""
    done = subprocess.run([*_run(data_dir, killed), "--resume"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming the run" in done.stderr and "from checkpoint-1" in done.stderr
    got, want = (json.loads((d / "results.json").read_text(encoding="utf-8")) for d in (killed, out))
    assert got["status"] == "done" and [r["from"] for r in got["resumed"]] == ["checkpoint-1"]
    assert got["before"] == want["before"] and got["checkpoints"] == want["checkpoints"]
    rewards = [[(e["step"], e["reward"]) for e in r["log"] if "reward" in e] for r in (got, want)]
    assert rewards[0] == rewards[1]
    assert got["after"] == want["after"]
    from safetensors.torch import load_file

    adapters = [load_file(str(d / "adapter" / "adapter_model.safetensors")) for d in (killed, out)]
    assert adapters[0].keys() == adapters[1].keys()
    assert all(adapters[0][k].equal(adapters[1][k]) for k in adapters[0])
    assert "Resumed from checkpoint-1" in (killed / "report.md").read_text(encoding="utf-8")
    again = subprocess.run([*_run(data_dir, killed), "--resume"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "is done" in again.stderr  # nothing left to do


def _a_run_stopped_after_its_first_checkpoint_has_left_its_report(proc: subprocess.Popen, out: Path) -> None:
    """Stops ``proc`` (SIGSTOP, its whole group) once trainer/checkpoint-1 and results.json listing it are on disk,
    and checks what a run killed there leaves (the former test_a_killed_run_leaves_its_report_and_checkpoints)."""
    checkpoint = out / "trainer" / "checkpoint-1" / "adapter_model.safetensors"
    deadline = time.monotonic() + 1500
    while time.monotonic() < deadline and proc.poll() is None:
        results = out / "results.json"
        if checkpoint.is_file() and results.is_file() and \
                json.loads(results.read_text(encoding="utf-8"))["checkpoints"] == ["checkpoint-1"]:
            os.killpg(proc.pid, signal.SIGSTOP)
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be stopped"
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["status"].startswith("training: step ") and results["status"].endswith(" of 2 done")
    assert results["after"] is None and set(results["before"]["means"]) >= {"reward", "r_bleu"}
    assert any(entry.get("step") == 1 and "reward" in entry for entry in results["log"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Status: **training: step " in report and "checkpoint-1" in report and "| reward |" in report
    assert not (out / "adapter").exists()


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
