"""CSV headers are cells too (issue 44, item 10): an input column named like a formula is written with a leading
``'`` in the header row of score / merge output, as cells are, and read back as it was named, so that a resume of
such a file and a merge of its shards still work."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from styleeval.cli import main
from styleeval.files import LOGPROB_RECORDS, FileJob, read_scores, run_file
from styleeval.files.shards import merge_shards

COLUMN = '=HYPERLINK("http://evil.example","click")'
QUOTED = "'quoted"


def _input(path: Path) -> Path:
    rows = [{"source": f"Send me report {i}.", "rewrite": f"Could you send report {i}?", "style": "polite",
             COLUMN: f"x{i}", QUOTED: i} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _header(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        return next(csv.reader(f))


def test_a_formula_column_name_is_escaped_and_resumes(tmp_path, tiny_model_dir, capsys):
    inp, out = _input(tmp_path / "in.jsonl"), tmp_path / "out.csv"
    argv = ["score", str(inp), "--out", str(out), "--model", str(tiny_model_dir), "--device", "cpu", "-q"]
    assert main([*argv, "--max-rows", "2"]) == 0
    assert _header(out)[1:3] == ["'" + COLUMN, "''quoted"]
    assert main(argv) == 0, capsys.readouterr().err  # the resume reads the header back as the input's columns
    records = read_scores(out)
    assert [(r["row"], r[COLUMN], r[QUOTED]) for r in records] == [(i, f"x{i}", str(i)) for i in range(4)]


class _Lengths:
    signature = "lengths|v:1"


def test_merged_csv_escapes_the_header_too(tmp_path):
    inp = _input(tmp_path / "in.jsonl")
    job = FileJob(LOGPROB_RECORDS, _Lengths, lambda _s, chunk: [{"content": -1.0, "style_strength": 0.5}
                                                                 for _ in chunk])
    whole = run_file(job, inp, tmp_path / "whole.csv", progress=False).output
    shards = [run_file(job, inp, tmp_path / f"s{k}.csv", shard=f"{k}/2", progress=False).output for k in range(2)]
    merged = merge_shards(shards, tmp_path / "merged.csv", input=inp).output
    assert _header(merged)[1] == "'" + COLUMN and merged.read_bytes() == whole.read_bytes()
    jsonl = merge_shards(shards, tmp_path / "merged.jsonl", input=inp).output
    assert list(json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0]))[1:3] == [COLUMN, QUOTED]
