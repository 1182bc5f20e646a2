"""`styleeval score`: chunked, resumable scoring of CSV / JSONL files (and `styleeval.files.score_file`)."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.errors import UserError
from styleeval.files import read_scores, score_file

N = 10
STYLES = ["polite", "formal", "positive", "casual", "persuasive"]


def _rows(n: int = N) -> list[dict[str, str]]:
    return [
        {
            "source": f"Give me the report number {i} now.",
            "rewrite": f"Could you please send me report {i}{'!' * (i % 3)} Thank you," + "\n so much" * (i % 2),
            "style": STYLES[i % len(STYLES)],
        }
        for i in range(n)
    ]


def _write_csv(path: Path, rows: list[dict], columns=("source", "rewrite", "style")) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def scored_rows(monkeypatch) -> list[int]:
    """Rows passed to ``LogProb.score`` in this test, one entry per call."""
    from styleeval.logprob import LogProb

    calls: list[int] = []
    original = LogProb.score

    def counting(self, sources, rewrites, styles, **kwargs):
        calls.append(len(sources))
        return original(self, sources, rewrites, styles, **kwargs)

    monkeypatch.setattr(LogProb, "score", counting)
    return calls


def _score(inp: Path, out: Path, model: Path, *extra: str) -> int:
    return main(["score", str(inp), "--model", str(model), "--out", str(out), "--device", "cpu", *extra])


def _values(records: list[dict]) -> list[tuple]:
    return [(r["row"], r["source"], r["rewrite"], r["style"], r["content"], r["style_strength"]) for r in records]


def test_scores_equal_logprob_and_records_are_documented(tmp_path, tiny_model_dir, capsys):
    from styleeval import LogProb

    rows = _rows()
    inp = _write_jsonl(tmp_path / "in.jsonl", rows)
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir, "--chunk-size", "4") == 0
    err = capsys.readouterr().err
    assert "10 rows scored now" in err and "signature: logprob|" in err

    records = read_scores(tmp_path / "out.jsonl")
    expected = LogProb(str(tiny_model_dir), device="cpu", progress=False).score(
        [r["source"] for r in rows], [r["rewrite"] for r in rows], [r["style"] for r in rows]
    )
    assert [r["row"] for r in records] == list(range(N))
    assert [r["rewrite"] for r in records] == [r["rewrite"] for r in rows]
    # chunks of 4 through the file loop, one call in Python: the same bits (rule 1)
    assert [r["content"] for r in records] == [float(x) for x in expected.content]
    assert [r["style_strength"] for r in records] == [float(x) for x in expected.style_strength]
    assert {r["signature"] for r in records} == {expected.signature}
    first = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert list(first) == ["row", "source", "rewrite", "style", "content", "style_strength", "signature"]


def test_resume_after_max_rows_scores_each_row_once(tmp_path, tiny_model_dir, scored_rows):
    inp = _write_csv(tmp_path / "in.csv", _rows())
    reference, out = tmp_path / "reference.jsonl", tmp_path / "out.jsonl"
    assert _score(inp, reference, tiny_model_dir, "--chunk-size", "3", "-q") == 0
    assert scored_rows == [3, 3, 3, 1]
    scored_rows.clear()

    assert _score(inp, out, tiny_model_dir, "--chunk-size", "3", "--max-rows", "6", "-q") == 0  # "interrupted"
    assert [r["row"] for r in read_scores(out)] == list(range(6))
    assert _score(inp, out, tiny_model_dir, "--chunk-size", "3", "-q") == 0
    assert scored_rows == [3, 3, 3, 1]  # 6 rows in the first run, only the 4 missing ones in the second
    assert _values(read_scores(out)) == _values(read_scores(reference))  # exactly, in order, once each

    assert _score(inp, out, tiny_model_dir, "--chunk-size", "3", "-q") == 0  # complete: nothing to do
    assert sum(scored_rows) == N


def test_resume_after_a_crash_and_a_torn_last_line(tmp_path, tiny_model_dir, scored_rows):
    inp = _write_jsonl(tmp_path / "in.jsonl", _rows())
    reference, out = tmp_path / "reference.csv", tmp_path / "out.csv"
    score_file(inp, reference, str(tiny_model_dir), chunk_size=4, device="cpu", progress=False)
    scored_rows.clear()

    def crash(records):
        if records[0]["row"] == 4:
            raise KeyboardInterrupt  # the second chunk is on disk, the third never starts

    with pytest.raises(KeyboardInterrupt):
        score_file(inp, out, str(tiny_model_dir), chunk_size=4, device="cpu", progress=False, on_chunk=crash)
    assert [r["row"] for r in read_scores(out)] == list(range(8))
    # a write cut off in the middle of row 8 (inside a quoted field with a newline) is dropped, row 8 scored again
    with open(out, "a", encoding="utf-8") as f:
        f.write('8,Give me the report number 8 now.,"Could you\n please')
    scored_rows.clear()
    result = score_file(inp, out, str(tiny_model_dir), chunk_size=4, device="cpu", progress=False)
    assert (result.total, result.skipped, result.scored, result.complete) == (N, 8, 2, True)
    assert scored_rows == [2]
    assert _values(read_scores(out)) == _values(read_scores(reference))
    assert out.read_text(encoding="utf-8").count("row,source,rewrite") == 1  # one CSV header


def test_style_option_applies_to_every_row(tmp_path, tiny_model_dir):
    inp = _write_csv(tmp_path / "in.csv", _rows(3), columns=("source", "rewrite"))
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir, "--style", "polite", "--no-end-of-turn", "-q") == 0
    records = read_scores(tmp_path / "out.jsonl")
    assert {r["style"] for r in records} == {"polite"}
    assert "eot:no" in records[0]["signature"]


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after any progress bars of earlier runs
    assert err.startswith("styleeval score: error: "), err
    return err


def test_missing_column(tmp_path, tiny_model_dir, capsys):
    inp = _write_csv(tmp_path / "in.csv", _rows(3), columns=("source", "rewrite"))
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir) == 2
    err = _error(capsys)
    assert "in.csv" in err and "missing column(s) 'style'" in err and "--style" in err
    assert not (tmp_path / "out.jsonl").exists()

    _write_jsonl(tmp_path / "in.jsonl", [{"source": "a", "rewrite": "b", "style": "c"}, {"source": "a", "style": "c"}])
    assert _score(tmp_path / "in.jsonl", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert "in.jsonl, row 1 (line 2): missing column(s) 'rewrite'" in _error(capsys)


@pytest.mark.parametrize("style, message", [(None, "missing value for 'style'"), ("  ", "'style' is empty")])
def test_none_or_empty_style(tmp_path, tiny_model_dir, capsys, style, message):
    rows = _rows(4)
    rows[2]["style"] = style
    _write_jsonl(tmp_path / "in.jsonl", rows)
    assert _score(tmp_path / "in.jsonl", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert f"in.jsonl, row 2 (line 3): {message}" in _error(capsys)

    _write_csv(tmp_path / "in.csv", [{**r, "style": r["style"] or ""} for r in rows])
    assert _score(tmp_path / "in.csv", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert "in.csv, row 2 (line 5): 'style' is empty" in _error(capsys)  # row 1's rewrite spans two lines


def test_bad_files(tmp_path, tiny_model_dir, capsys):
    assert _score(tmp_path / "nope.csv", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert "nope.csv: no such file" in _error(capsys)
    (tmp_path / "in.jsonl").write_text('{"source": "a", "rewrite": "b", "style": "c"}\n{"source": 1\n')
    assert _score(tmp_path / "in.jsonl", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert "in.jsonl, line 2: not valid JSON" in _error(capsys)
    (tmp_path / "in.txt").write_text("x")
    assert _score(tmp_path / "in.txt", tmp_path / "out.jsonl", tiny_model_dir) == 2
    assert "use .csv or .jsonl" in _error(capsys)


def test_resume_file_for_another_input_or_other_settings(tmp_path, tiny_model_dir, capsys, scored_rows):
    rows = _rows(6)
    inp, out = _write_csv(tmp_path / "in.csv", rows), tmp_path / "out.jsonl"
    assert _score(inp, out, tiny_model_dir, "--chunk-size", "2", "--max-rows", "4", "-q") == 0
    before = out.read_text(encoding="utf-8")
    scored_rows.clear()

    changed = [dict(r) for r in rows]
    changed[1]["rewrite"] = "Something else entirely."
    _write_csv(inp, changed)
    assert _score(inp, out, tiny_model_dir, "-q") == 2
    err = _error(capsys)
    assert "out.jsonl was written for a different input" in err and "row 1" in err

    _write_csv(inp, rows[:3])  # fewer rows than OUT has
    assert _score(inp, out, tiny_model_dir, "-q") == 2
    assert "was written for a different input" in _error(capsys)

    _write_csv(inp, rows)
    assert _score(inp, out, tiny_model_dir, "--no-end-of-turn", "-q") == 2
    assert "was written with different settings" in _error(capsys)
    assert scored_rows == [] and out.read_text(encoding="utf-8") == before  # nothing scored, OUT untouched

    assert _score(inp, out, tiny_model_dir, "--no-end-of-turn", "--overwrite", "-q") == 0
    assert [r["row"] for r in read_scores(out)] == list(range(6)) and sum(scored_rows) == 6
    assert _score(inp, out, tiny_model_dir, "-q") == 2  # complete OUT, other settings: checked without scoring
    assert "was written with different settings: row 0 has eot 'no'" in _error(capsys)
    assert _score(inp, out, tiny_model_dir, "--dtype", "bfloat16", "--no-end-of-turn", "-q") == 2
    assert "has dtype 'float32'" in _error(capsys)
    assert _score(inp, out, tiny_model_dir, "--variant", "authors", "-q") == 2
    assert "has variant 'default', this run asks for 'authors'" in _error(capsys)


def test_authors_variant_from_the_command_line(tmp_path, tiny_model_dir):
    from styleeval import LogProb

    rows = _rows(4)
    inp, out = _write_csv(tmp_path / "in.csv", rows), tmp_path / "out.jsonl"
    assert _score(inp, out, tiny_model_dir, "--variant", "authors", "-q") == 0
    records = read_scores(out)
    want = LogProb(str(tiny_model_dir), variant="authors", device="cpu", progress=False).score(
        [r["source"] for r in rows], [r["rewrite"] for r in rows], [r["style"] for r in rows])
    assert [r["content"] for r in records] == [float(x) for x in want.content]
    assert records[0]["signature"] == want.signature


def test_console_script_runs(tmp_path, tiny_model_dir):
    inp = _write_csv(tmp_path / "in.csv", _rows(3))
    script = Path(sys.executable).with_name("styleeval")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "styleeval.cli"]
    done = subprocess.run(
        [*command, "score", str(inp), "--model", str(tiny_model_dir), "--out", str(tmp_path / "out.csv"),
         "--device", "cpu", "--chunk-size", "2"],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "3 rows scored now" in done.stderr
    assert [r["row"] for r in read_scores(tmp_path / "out.csv")] == [0, 1, 2]


def test_overflow_names_the_input_row_or_is_skipped(tmp_path, tiny_model_dir, capsys):
    rows = _rows(5)
    rows[3]["rewrite"] = "the cat sat on the mat " * 120  # longer than the tiny model's 512 positions
    inp = _write_csv(tmp_path / "in.csv", rows)
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir, "--chunk-size", "2", "-q") == 2
    assert "in.csv: row 3: prompt + rewrite is" in _error(capsys)  # row 1 of the second chunk, named as in IN
    assert [r["row"] for r in read_scores(tmp_path / "out.jsonl")] == [0, 1]  # the first chunk was kept

    assert _score(inp, tmp_path / "out.csv", tiny_model_dir, "--on-overflow", "skip", "-q") == 0
    err = capsys.readouterr().err  # a styleeval line, not Python's "file:line: RowsWarning: ..." and its source line
    assert err.startswith("styleeval score: warning: 1 row longer than the model's context"), err
    assert "was skipped (NaN scores): row 3" in err and "Warning" not in err and "runner.py" not in err
    records = read_scores(tmp_path / "out.csv")
    assert [r["row"] for r in records] == list(range(5))
    assert math.isnan(records[3]["content"]) and math.isnan(records[3]["style_strength"])
    assert not math.isnan(records[4]["content"])


def test_a_first_row_too_long_advises_the_flag_and_leaves_no_empty_out(tmp_path, tiny_model_dir, capsys):
    """Issue 47: a 10,000-character rewrite in the first row said "pass on_overflow='skip'" (Python) on the command
    line and left a 0-byte OUT."""
    rows = _rows(3)
    rows[0]["rewrite"] = "x" * 10_000
    inp = _write_csv(tmp_path / "in.csv", rows)
    out = tmp_path / "out.jsonl"
    assert _score(inp, out, tiny_model_dir, "-q") == 2
    error = _error(capsys)
    assert "in.csv: row 0: prompt + rewrite is" in error and error.endswith("shorten it or pass --on-overflow skip")
    assert "on_overflow" not in error
    assert not out.exists() and not Path(str(out) + ".lock").exists()
    out.write_text("", encoding="utf-8")  # an OUT that was there before the run is the user's: left as it was
    assert _score(inp, out, tiny_model_dir, "-q") == 2
    assert out.exists()


def test_python_score_file_whose_first_chunk_fails_leaves_out_as_it_was(tmp_path, tiny_model_dir):
    """Issue 47: the CLI removed a 0-byte OUT after a failed first chunk; ``score_file`` from Python left it. OUT is
    now opened at its first write: a new OUT is not created, an existing one (overwrite or not) keeps its bytes."""
    rows = _rows(3)
    rows[0]["rewrite"] = "x" * 10_000
    inp = _write_csv(tmp_path / "in.csv", rows)
    out = tmp_path / "out.jsonl"
    with pytest.raises(UserError, match="row 0"):
        score_file(inp, out, model=str(tiny_model_dir), progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    for overwrite, before in ((False, b""), (True, b"the user's old file\n")):
        out.write_bytes(before)
        with pytest.raises(UserError, match="row 0"):
            score_file(inp, out, model=str(tiny_model_dir), progress=False, overwrite=overwrite)
        assert out.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.jsonl"]


def test_one_row_is_counted_as_one_row(tmp_path, tiny_model_dir, capsys):
    """Issue 47: "1 rows"."""
    inp = _write_csv(tmp_path / "in.csv", _rows(1))
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir) == 0
    err = capsys.readouterr().err
    assert "1 row scored now" in err and "(over 1 row, none skipped)" in err and "1 rows" not in err, err


def test_the_summary_says_how_many_rows_its_means_are_over_and_how_many_were_skipped(tmp_path, capsys):
    """Issue 61, item 4: with --on-overflow skip, the summary said "mean content -2.051 ... (2 rows)" where the mean
    covered 1 row. On tiny-random, with a row longer than its context."""
    from styleeval.logprob.declaration import _number

    rows = _rows(3)
    rows[1]["rewrite"] = " ".join(str(i * 7919 % 10007) for i in range(1500))  # beyond tiny-random's 512 positions
    inp = _write_csv(tmp_path / "in.csv", rows)
    out = tmp_path / "out.jsonl"
    assert main(["score", str(inp), "--model", "tiny-random", "--out", str(out), "--on-overflow", "skip"]) == 0
    err = capsys.readouterr().err
    records = read_scores(out)
    kept = [r for r in records if not math.isnan(r["content"])]
    assert len(records) == 3 and [r["row"] for r in kept] == [0, 2]
    means = {key: sum(r[key] for r in kept) / len(kept) for key in ("content", "style_strength")}
    summary = [line for line in err.splitlines() if "mean content" in line]
    assert summary == [f"random weights: not for numbers: mean content {_number(means['content'])}  mean "
                       f"style_strength {_number(means['style_strength'])} (over 2 of 3 rows; 1 skipped: NaN scores)"
                       ], err


def test_no_progress_bar_into_a_file_or_a_pipe(tmp_path, tiny_model_dir, capsys):
    """The README: bars only where stderr is a terminal (issue 47: `score` wrote its bar into logs and pipes)."""
    inp = _write_csv(tmp_path / "in.csv", _rows(3))
    assert _score(inp, tmp_path / "out.jsonl", tiny_model_dir) == 0
    err = capsys.readouterr().err
    assert "3 rows scored now" in err and "row/s" not in err and "\r" not in err, err


def test_a_scorer_and_the_options_to_build_one_are_not_given_together(tmp_path, tiny_model, tiny_tokenizer):
    """``score_file(scorer=...)`` with a model or LogProb options would ignore them: an error naming each."""
    from styleeval import LogProb
    from styleeval.files import autorate_file, score_file

    table = _write_jsonl(tmp_path / "in.jsonl", [{"source": "a b", "rewrite": "a c", "style": "polite"}])
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    with pytest.raises(ValueError, match=r"^model, end_of_turn: a scorer is given, and these belong to it"):
        score_file(table, tmp_path / "out.jsonl", "other-model", scorer=lp, end_of_turn=False, progress=False)
    with pytest.raises(ValueError, match=r"^mode: a judge is given"):
        autorate_file(table, tmp_path / "out2.jsonl", judge=object(), mode="paper", progress=False)
    with pytest.raises(ValueError, match=r"^scorer: not an option of the local backend"):  # autorate_file's is judge
        autorate_file(table, tmp_path / "out2.jsonl", tiny_model, tokenizer=tiny_tokenizer, scorer=lp, progress=False)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_a_shard_without_rows_writes_nothing_and_succeeds_quiet_or_not(tmp_path, tiny_model_dir, capsys, quiet):
    """A job array of more shards than IN has rows: shard 5/6 of 3 rows has none; it writes no OUT (merge puts the
    others together) and exits 0 with or without -q (it exited 2 without -q: the summary read an OUT never written)."""
    inp = _write_csv(tmp_path / "in.csv", _rows(3))
    out = tmp_path / "s5.jsonl"
    assert main(["score", str(inp), "--model", str(tiny_model_dir), "--shard", "5/6", "--out", str(out),
                 *quiet]) == 0
    assert not out.exists()
    err = capsys.readouterr().err
    assert "error" not in err
    if not quiet:
        assert f"{out}: 0 rows scored now, 0 already there\n" in err
    empty = tmp_path / "r5.jsonl"  # an empty OUT there already: the autorater's summary divided by its 0 rows
    empty.touch()
    assert main(["autorate", str(inp), "--model", str(tiny_model_dir), "--shard", "5/6", "--out", str(empty),
                 *quiet]) == 0
    assert empty.read_bytes() == b""
    assert "error" not in capsys.readouterr().err
