"""One file, one writer, whatever its names (issue 44, item 6): an OUT with several hard-linked names is refused (a
lock beside each name would be one lock per name), and a record file that holds a row twice is never read back as
if it were whole."""

from __future__ import annotations

import json
import os

import pytest

from styleeval.cli import main
from styleeval.files import read_scores
from styleeval.files.records import LOGPROB_RECORDS, _format_records

ROWS = [{"source": f"source number {i}.", "rewrite": f"rewrite number {i}!", "style": "polite"} for i in range(4)]


def test_an_out_with_two_names_is_refused_naming_both(tmp_path, tiny_model_dir, capsys):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["score", str(inp), "--out", str(out), "--model", str(tiny_model_dir), "--device", "cpu", "-q"]
    assert main([*argv, "--max-rows", "2"]) == 0
    os.link(out, tmp_path / "other.jsonl")
    before = out.read_bytes()
    for extra in ([], ["--overwrite"]):
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err
        assert "out.jsonl is also named" in err and "other.jsonl" in err and "hard link" in err, err
        assert out.read_bytes() == before
    (tmp_path / "other.jsonl").unlink()  # one name again: the run goes on
    assert main(argv) == 0
    assert [r["row"] for r in read_scores(out)] == [0, 1, 2, 3]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_reading_a_file_with_a_row_twice_names_the_row(tmp_path, fmt):
    records = [{"row": r, **ROWS[r], "content": -1.0, "style_strength": 0.5, "signature": "s|v:1"} for r in (0, 1, 1)]
    path = tmp_path / f"out.{fmt}"
    path.write_text(_format_records(records, fmt, fmt == "csv", LOGPROB_RECORDS), encoding="utf-8", newline="")
    with pytest.raises(ValueError, match=rf"out\.{fmt}, line {3 if fmt == 'jsonl' else 4}: row 1 appears twice"):
        read_scores(path)
