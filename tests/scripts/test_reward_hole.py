"""scripts/reward_hole.py (issue 63): its resumable --out holds the lines of one scorer only."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reward_hole.py"


def test_reward_hole_refuses_to_append_to_lines_of_another_scorer(tiny_model_dir, tmp_path):
    """Before: scripts/reward_hole.py resumed any --out, so a file of the previous version (guard:prompt, no 'self
    repeat' output, no 'self_repeat' field) or of another model got this run's lines appended, and --report then
    mixed them (a KeyError on 'self repeat'). It now refuses, naming the signature."""
    spec = importlib.util.spec_from_file_location("reward_hole", SCRIPT)
    hole = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hole)
    out = tmp_path / "hole.jsonl"
    args = argparse.Namespace(model=str(tiny_model_dir), out=out, rows=1, threads=torch.get_num_threads(), tokens=False,
                              report=False)  # the script sets torch's threads for the process: keep this one's (the
    hole.score(args)                         # engine's signature names them; a later test compares signatures)
    line = json.loads(out.read_text(encoding="utf-8"))
    assert "|guard:prompt+repeat|" in line["signature"]
    line["signature"] = line["signature"].replace("|guard:prompt+repeat|", "|guard:prompt|")  # the older version's
    line["outputs"] = [o for o in line["outputs"] if o["kind"] != "self repeat"]
    out.write_text(json.dumps(line) + "\n", encoding="utf-8")
    args.rows = 2
    with pytest.raises(SystemExit, match=r"holds lines scored by .*\|guard:prompt\|"):
        hole.score(args)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1  # nothing appended
