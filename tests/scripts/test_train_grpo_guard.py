"""``--guard prompt`` reaches the training script's reward (issue 63, item 3: the GRPO run with the guarded reward),
and the held-out checks read plain LogProb beside it: the script's own functions, without a training run (the smoke
run of tests/scripts/test_train_grpo_formality.py runs the pipeline; the run itself is in docs/training.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "train_grpo_formality.py"


def _script():
    spec = importlib.util.spec_from_file_location("train_grpo_formality", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guard_option_builds_the_guarded_reward_and_the_checks_read_plain_logprob(tiny_model_dir):
    from styleeval.rewards import LogProbReward

    script = _script()
    assert script.reward_options(script.parse_args(["--out", "x"])) == {}
    options = script.reward_options(script.parse_args(["--out", "x", "--guard", "prompt", "--style-weight", "10"]))
    assert options == {"style_weight": 10.0, "guard": "prompt"}
    guarded = LogProbReward(model=str(tiny_model_dir), **options)
    assert "guard:prompt" in guarded.signature
    plain = script.plain_logprob(guarded)
    assert plain.guard is None and plain.backend is guarded.logprob.backend
    assert "guard" not in plain.signature
    unguarded = LogProbReward(model=str(tiny_model_dir))
    assert script.plain_logprob(unguarded) is unguarded.logprob


def test_the_plain_check_beside_the_guard_skips_a_row_too_long_as_the_unguarded_one_does(tiny_model_dir):
    """Before: under ``--guard prompt`` the held-out check's plain LogProb was built with LogProb's default
    ``on_overflow="error"``, while the unguarded run's check (the reward's own LogProb) skips such rows: a held-out
    completion longer than the model's context (a runaway generation) stopped the guarded run's measurement with an
    error where the unguarded run reported NaN."""
    import math

    from styleeval.rewards import LogProbReward

    script = _script()
    guarded = LogProbReward(model=str(tiny_model_dir), guard="prompt")
    unguarded = LogProbReward(model=str(tiny_model_dir))
    sources, rewrites = ["Send me the report.", "Give it back."], ["Could you send it?", " ".join(["word"] * 3000)]
    want = script.plain_logprob(unguarded).score(sources, rewrites, "formal")
    got = script.plain_logprob(guarded).score(sources, rewrites, "formal")
    assert math.isnan(want.content[1]) and math.isnan(got.content[1])  # skipped, not an error
    assert got.content[0] == want.content[0] and got.style_strength[0] == want.style_strength[0]
    assert script.plain_logprob(guarded).signature == unguarded.logprob.signature


def test_resume_refuses_another_runs_options_and_a_folder_without_a_run(tmp_path):
    """``--resume`` continues the run in OUT with its own options: another option (a guard, the steps) is refused
    naming it and the run's value; a folder without results.json is refused; a finished run has nothing to do."""
    import json

    import pytest

    script = _script()
    out = tmp_path / "run"
    with pytest.raises(SystemExit, match="no run to resume in .*leave --resume out to start one"):
        script.run_to_resume(script.parse_args(["--out", str(out), "--resume"]))
    out.mkdir()
    recorded = {k: str(v) for k, v in vars(script.parse_args(["--out", str(out), "--guard", "prompt+repeat"])).items()}
    results = {"status": "training: step 12 of 150 done", "elapsed_seconds": 60.0, "args": recorded,
               "before": {"means": {}}, "checkpoint_seconds": {"checkpoint-10": 50.0}}
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    for ckpt, complete in (("checkpoint-10", True), ("checkpoint-11", False)):  # 11: killed while being written
        (out / "trainer" / ckpt).mkdir(parents=True)
        if complete:
            (out / "trainer" / ckpt / "trainer_state.json").write_text("{}", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"--guard 'prompt' \(the run's: 'prompt\+repeat'\)"):
        script.run_to_resume(script.parse_args(["--out", str(out), "--resume", "--guard", "prompt"]))
    with pytest.raises(SystemExit, match=r"--steps '10' \(the run's: '150'\)"):
        script.run_to_resume(script.parse_args(["--out", str(out), "--resume", "--guard", "prompt+repeat",
                                                "--steps", "10"]))
    same = script.parse_args(["--out", str(out), "--resume", "--guard", "prompt+repeat", "--threads", "2"])
    previous, checkpoint = script.run_to_resume(same)
    assert checkpoint == "checkpoint-10" and previous["before"] == {"means": {}}
    results["status"] = "done"
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")
    assert script.run_to_resume(same) is None


def _killed_run(tmp_path: Path, script, argv: list[str], drop: tuple[str, ...] = ()) -> Path:
    """A results.json as a run killed at step 18 left it (no checkpoint saved), its args as main() records them."""
    import json

    out = tmp_path / "run"
    out.mkdir()
    args = script.parse_args(["--out", str(out), *argv])
    args.threads, args.train_dtype = 1, script.train_dtype(args.train_dtype)
    recorded = {k: str(v) for k, v in vars(args).items() if k not in drop}
    (out / "results.json").write_text(json.dumps({"status": "training: step 18 of 150 done", "elapsed_seconds": 60.0,
                                                  "args": recorded, "before": {"logprob": -1.0}}), encoding="utf-8")
    return out


def test_resume_refuses_an_option_the_killed_run_did_not_record(tmp_path):
    """Before: only the options results.json records were compared, so a run from before an option existed (run 3,
    killed at step 18, has no 'train_dtype': it trained in TRL's bf16 autocast) resumed under any value of it
    (float32 on this CPU), silently. A resume must now refuse, naming the option it cannot check."""
    import pytest

    script = _script()
    out = _killed_run(tmp_path, script, ["--guard", "prompt"], drop=("train_dtype",))
    args = script.parse_args(["--out", str(out), "--guard", "prompt", "--resume"])
    args.threads, args.train_dtype = 1, script.train_dtype(args.train_dtype)
    with pytest.raises(SystemExit, match="--train-dtype"):
        script.run_to_resume(args)
    (tmp_path / "b").mkdir()
    out_same = _killed_run(tmp_path / "b", script, ["--guard", "prompt"])
    same = script.parse_args(["--out", str(out_same), "--guard", "prompt", "--resume"])
    same.threads, same.train_dtype = 2, script.train_dtype(same.train_dtype)
    previous, checkpoint = script.run_to_resume(same)  # all recorded and equal (threads may differ): resumed
    assert checkpoint is None and previous["args"]["guard"] == "prompt"



def test_resume_takes_only_this_runs_checkpoints(tmp_path):
    """Before: --resume took the last complete checkpoint-* in OUT/trainer, whichever run saved it. A run started
    again in the folder of an earlier one (without --resume: nothing refuses that) and killed before its first
    checkpoint resumed from the earlier run's checkpoint-3, trained under other options. Now only the checkpoints
    this run saved (results.json's checkpoint_seconds) are taken; an older results.json without them, any."""
    import json

    script = _script()
    out = _killed_run(tmp_path, script, ["--learning-rate", "1e-4"])
    for step in (1, 3):  # checkpoint-3: the earlier run's
        (out / "trainer" / f"checkpoint-{step}").mkdir(parents=True)
        (out / "trainer" / f"checkpoint-{step}" / "trainer_state.json").write_text("{}", encoding="utf-8")
    args = script.parse_args(["--out", str(out), "--learning-rate", "1e-4", "--resume"])
    args.threads, args.train_dtype = 1, script.train_dtype(args.train_dtype)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for saved, want in (({"checkpoint-1": 5.0}, "checkpoint-1"), ({}, None)):
        (out / "results.json").write_text(json.dumps({**results, "checkpoint_seconds": saved}), encoding="utf-8")
        assert script.run_to_resume(args)[1] == want, saved
    (out / "results.json").write_text(json.dumps(results), encoding="utf-8")  # a run from before checkpoint_seconds
    assert script.run_to_resume(args)[1] == "checkpoint-3"


def test_a_new_run_never_writes_over_a_run_in_its_folder(tmp_path):
    """Without --resume, an OUT that holds a run (results.json) is refused before any work: a run started there would
    replace its report and mix its checkpoints with the old run's."""
    import subprocess
    import sys

    (tmp_path / "results.json").write_text('{"status": "training: step 3 of 150 done"}', encoding="utf-8")
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--smoke"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{tmp_path} holds a run (results.json): --resume to continue it, or another --out" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
