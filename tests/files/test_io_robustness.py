"""Input and output files under abuse: any text round-trips, malformed input is an error naming the line, one writer
per OUT, --overwrite never loses the old file early, chunks follow the work done, extra columns, stdin/stdout."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from styleeval.files import read_rows, read_scores, score_file
from styleeval.files.records import LOGPROB_RECORDS, _format_records, _read_scores

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
NASTY = ["a\rb", "c\r\nd", "e\nf", 'say "hi", ok', "nul\x00byte", "\u2028sep\u2029", " lead and trail ", "", "\ufeffbom"]


@pytest.fixture(scope="module")
def lp(tiny_model, tiny_tokenizer):
    from styleeval import LogProb

    return LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- 1. every text round-trips through CSV and JSONL output ------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(TEXT, TEXT, TEXT.filter(lambda s: s.strip())), min_size=1, max_size=5),
       st.sampled_from(["csv", "jsonl"]))
def test_any_text_round_trips(tmp_path_factory, rows, fmt):
    path = tmp_path_factory.mktemp("rt") / f"out.{fmt}"
    records = [{"row": i, "source": s, "rewrite": r, "style": st_, "content": -1.5 * i, "style_strength": 0.25,
                "signature": "sig|x:1"} for i, (s, r, st_) in enumerate(rows)]
    path.write_text(_format_records(records, fmt, fmt == "csv", LOGPROB_RECORDS), encoding="utf-8", newline="")
    back, torn = _read_scores(path, LOGPROB_RECORDS)
    assert torn is None
    assert [(b["source"], b["rewrite"], b["style"], b["content"]) for b in back] == \
        [(r["source"], r["rewrite"], r["style"], r["content"]) for r in records]


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_nasty_texts_score_resume_and_read_back(tmp_path, lp, suffix):
    rows = [{"source": t, "rewrite": t + " x", "style": "polite"} for t in NASTY]
    inp = _jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / f"out.{suffix}"
    score_file(inp, out, scorer=lp, max_rows=4, progress=False)
    result = score_file(inp, out, scorer=lp, progress=False)  # resumes: the first 4 records read back
    assert result.skipped == 4 and result.complete
    back = read_scores(out)
    assert [(r["source"], r["rewrite"]) for r in back] == [(r["source"], r["rewrite"]) for r in rows]


# -- 2. malformed CSV input ----------------------------------------------------------------------------------------
def test_malformed_csv_is_an_error_naming_the_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("source,rewrite,style\nok,fine,polite\nHello, world,Hi world,polite\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv, line 3: 4 fields but the header has 3 columns"):
        read_rows(bad)
    bad.write_text("source,rewrite,style\nonly two,fields\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: 2 fields but the header has 3"):
        read_rows(bad)
    bad.write_text("source,rewrite,style,source\na,b,polite,c\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: the header names column\(s\) 'source' more than once"):
        read_rows(bad)


# -- 3. one writer per OUT -----------------------------------------------------------------------------------------
def test_second_process_on_the_same_out_is_refused(tmp_path, lp):
    inp = _jsonl(tmp_path / "in.jsonl", [{"source": "a", "rewrite": "b", "style": "polite"}])
    out = tmp_path / "out.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from filelock import FileLock; l = FileLock(sys.argv[1]); "
         "l.acquire(); print('held', flush=True); time.sleep(60)", str(out) + ".lock"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ValueError, match="is being written by another styleeval process"):
            score_file(inp, out, scorer=lp, progress=False)
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    assert score_file(inp, out, scorer=lp, progress=False).scored == 1  # the lock died with its process


# -- 4. --overwrite keeps the old file until the new run has written something --------------------------------
def test_overwrite_keeps_old_results_when_the_model_fails(tmp_path, lp):
    inp = _jsonl(tmp_path / "in.jsonl", [{"source": "a", "rewrite": "b", "style": "polite"}] * 3)
    out = tmp_path / "out.jsonl"
    score_file(inp, out, scorer=lp, progress=False)
    before = out.read_bytes()
    with pytest.raises(ValueError, match="cannot load model .*no such local folder"):
        score_file(inp, out, str(tmp_path / "no-such-model"), overwrite=True, progress=False)
    assert out.read_bytes() == before and not list(tmp_path.glob("*.partial"))
    assert score_file(inp, out, scorer=lp, overwrite=True, progress=False).scored == 3
    assert len(read_scores(out)) == 3 and not list(tmp_path.glob("*.partial"))


# -- 6. chunks follow the work: a few seconds each -----------------------------------------------------------------
def test_chunks_adapt_to_the_time_per_row(tmp_path, lp):
    inp = _jsonl(tmp_path / "in.jsonl", [{"source": f"s {i}", "rewrite": f"r {i}", "style": "polite"}
                                         for i in range(40)])
    sizes: list[int] = []
    score_file(inp, tmp_path / "a.jsonl", scorer=lp, progress=False, flush_seconds=1e-6,
               on_chunk=lambda recs: sizes.append(len(recs)))
    assert sizes == [32, 8]  # at least 32 rows a chunk (FULL_CHUNK_ROWS) however slow a row: the model's batches full
    sizes.clear()
    score_file(inp, tmp_path / "b.jsonl", scorer=lp, progress=False, flush_seconds=3600, chunk_size=5,
               on_chunk=lambda recs: sizes.append(len(recs)))
    assert sizes == [5] * 8  # fast rows: chunk_size is the ceiling (and wins over the floor)
    a, b = read_scores(tmp_path / "a.jsonl"), read_scores(tmp_path / "b.jsonl")
    assert [r["content"] for r in a] == [r["content"] for r in b]  # other chunks: the same bits (rule 1)


# -- 8. bad input a user can act on --------------------------------------------------------------------------------
def test_empty_inputs_directories_encodings_and_surrogates(tmp_path, lp):
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="no rows to score"):
        score_file(empty, tmp_path / "o.jsonl", scorer=lp, progress=False)
    empty.write_text("source,rewrite,style\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no rows to score"):
        score_file(empty, tmp_path / "o.jsonl", scorer=lp, progress=False)
    good = _jsonl(tmp_path / "in.jsonl", [{"source": "a", "rewrite": "b", "style": "polite"}])
    with pytest.raises(ValueError, match="is a directory; --out must name a file"):
        score_file(good, tmp_path, scorer=lp, progress=False)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("source,rewrite,style\nok,fine,polite\ncaf\u00e9,caf\u00e9!,polite\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.csv, line 3: not valid utf-8 .*--encoding latin-1"):
        read_rows(latin)
    assert read_rows(latin, encoding="latin-1")[1].source == "caf\u00e9"
    sur = tmp_path / "sur.jsonl"
    sur.write_text('{"source": "ok", "rewrite": "fine", "style": "polite"}\n'
                   '{"source": "bad \\ud800 text", "rewrite": "x", "style": "polite"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1 \(line 2\): 'source' holds a lone surrogate \(U\+D800"):
        read_rows(sur)


def test_overflow_warning_names_the_input_row(tmp_path, tiny_model, tiny_tokenizer):
    from styleeval import LogProb

    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", on_overflow="skip", progress=False)
    long = "word " * (tiny_model.config.max_position_embeddings + 5)
    rows = [{"source": "a", "rewrite": "b", "style": "polite"}] * 9 + [{"source": long, "rewrite": "c",
                                                                          "style": "polite"}]
    inp = _jsonl(tmp_path / "in.jsonl", rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score_file(inp, tmp_path / "o.jsonl", scorer=lp, progress=False, chunk_size=8, flush_seconds=3600)
    messages = [str(w.message) for w in caught if "longer than the model's context" in str(w.message)]
    assert messages and "row 9" in messages[0]
    assert math.isnan(read_scores(tmp_path / "o.jsonl")[9]["content"])


# -- 13. extra columns, standard input and output ------------------------------------------------------------------
@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_extra_input_columns_are_carried_through(tmp_path, lp, suffix):
    rows = [{"id": f"x{i}", "system": f"sys{i % 2}", "source": "a", "rewrite": f"b {i}", "style": "polite"}
            for i in range(3)]
    inp = _jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / f"out.{suffix}"
    score_file(inp, out, scorer=lp, progress=False, max_rows=1)
    score_file(inp, out, scorer=lp, progress=False)
    back = read_scores(out)
    assert [(r["row"], r["id"], r["system"]) for r in back] == [(0, "x0", "sys0"), (1, "x1", "sys1"), (2, "x2", "sys0")]
    if suffix == "csv":
        assert out.read_text(encoding="utf-8").splitlines()[0].startswith("row,id,system,source,rewrite,style,")
    clash = _jsonl(tmp_path / "clash.jsonl", [{"source": "a", "rewrite": "b", "style": "polite", "content": 1}])
    with pytest.raises(ValueError, match="'content' would clash with output fields"):
        read_rows(clash)


def test_stdin_to_stdout_and_quiet(tmp_path, tiny_model_dir):
    rows = [{"source": "give me the report", "rewrite": "Please send the report.", "style": "polite"},
            {"source": "the food was cold", "rewrite": "The food was warm.", "style": "positive"}]
    data = "".join(json.dumps(r) + "\n" for r in rows)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "styleeval.cli", "score", "-", "--out", "-", "--model",
                           str(tiny_model_dir), "--device", "cpu", "-q"], input=data, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", f"-q must silence everything, got {proc.stderr!r} ({time.perf_counter() - start:.0f}s)"
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["rewrite"] for r in out] == [r["rewrite"] for r in rows]
    assert all(math.isfinite(r["content"]) for r in out)
