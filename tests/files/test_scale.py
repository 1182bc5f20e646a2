"""Large files in bounded memory: streaming resume, shards for job arrays and their merge (issue 28).

The runner is generic over its job; the large-file tests use a cheap deterministic job (length features, no model)
so that they can run past the read-ahead window in seconds; the sharded CLI run at the end uses the tiny model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.files import LOGPROB_RECORDS, FileJob, read_scores, run_file
from styleeval.files.resume import index_path
from styleeval.files.runner import READ_AHEAD
from styleeval.files.shards import RowSet, Shard, merge_shards

ROWS = READ_AHEAD + 2_345  # past the read-ahead window: the streaming paths, not the whole-file one


class _Lengths:
    """A cheap deterministic scorer: a score is a function of its row alone."""

    signature = "lengths|v:1"


def _job(scored: list[int] | None = None) -> FileJob:
    def score_chunk(_scorer, chunk):
        if scored is not None:
            scored.append(len(chunk))
        return [{"content": -len(r.rewrite) / 7, "style_strength": (len(r.source) % 5) / 3 - 0.5} for r in chunk]

    return FileJob(LOGPROB_RECORDS, _Lengths, score_chunk)


@pytest.fixture(scope="module")
def big_input(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("big") / "in.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(ROWS):
            f.write(json.dumps({"source": f"source {i} " + "x" * (i % 13), "rewrite": f"rewrite, {i}\n" * (1 + i % 3),
                                "style": "formal", "source_id": f"s{i // 3}"}) + "\n")
    return path


@pytest.fixture
def full_checks(monkeypatch) -> list[Path]:
    """The OUT files a run checked record by record (the resume index was not used)."""
    from styleeval.files import runner

    checked: list[Path] = []
    original = runner._check_resume

    def spy(out, *args, **kwargs):
        checked.append(out)
        return original(out, *args, **kwargs)

    monkeypatch.setattr(runner, "_check_resume", spy)
    return checked


@pytest.fixture(scope="module")
def uninterrupted(big_input, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("whole")
    return {fmt: run_file(_job(), big_input, out / f"whole.{fmt}", progress=False).output for fmt in ("jsonl", "csv")}


@pytest.mark.parametrize("with_index", [True, False], ids=["index", "full-check"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_resume_from_a_large_finished_file_equals_an_uninterrupted_run(big_input, uninterrupted, tmp_path, fmt,
                                                                       with_index, full_checks):
    out = tmp_path / f"out.{fmt}"
    first = run_file(_job(), big_input, out, max_rows=12_001, chunk_size=1000, progress=False)
    assert (first.total, first.scored, first.remaining) == (ROWS, 12_001, ROWS - 12_001)
    if not with_index:
        index_path(out).unlink()
    scored: list[int] = []
    second = run_file(_job(scored), big_input, out, chunk_size=1000, progress=False)
    assert (second.total, second.skipped, second.scored, second.complete) == (ROWS, 12_001, ROWS - 12_001, True)
    assert sum(scored) == ROWS - 12_001  # every finished row skipped, none scored twice
    assert out.read_bytes() == uninterrupted[fmt].read_bytes()  # byte for byte
    again = run_file(_job(scored), big_input, out, progress=False)  # complete: checked, nothing scored
    assert (again.skipped, again.scored) == (ROWS, 0) and out.read_bytes() == uninterrupted[fmt].read_bytes()
    assert full_checks == ([] if with_index else [out])  # with the index neither resume read OUT's records


def _edit_in_place(path: Path, old: bytes, new: bytes, before: int | None = None) -> None:
    """Replace the last ``old`` (before byte ``before``) by ``new`` of the same length, the size and modification
    time put back: only the bytes tell."""
    stat = path.stat()
    raw = path.read_bytes()
    at = raw.rindex(old, 0, before)
    path.write_bytes(raw[:at] + new + raw[at + len(old):])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_stale_resume_index_falls_back_to_the_full_check(big_input, uninterrupted, tmp_path, full_checks):
    """The index is trusted only while OUT's bytes and the input's bytes before its row are those it recorded;
    otherwise every record is checked as before, and a changed input is still named."""
    out = tmp_path / "out.jsonl"
    run_file(_job(), big_input, out, max_rows=11_000, chunk_size=1000, progress=False)
    data = json.loads(index_path(out).read_text(encoding="utf-8"))
    assert data["next"][2] == data["finished"] == 11_000 and data["signature"] == "lengths|v:1"
    # an input edited in place just before the resume point, same size, its modification time put back
    edited = tmp_path / "in.jsonl"
    shutil.copy(big_input, edited)
    run_file(_job(), edited, tmp_path / "e.jsonl", max_rows=11_000, chunk_size=1000, progress=False)
    _edit_in_place(edited, b"rewrite, 10999", b"REWRITE, 10999",
                   json.loads(index_path(tmp_path / "e.jsonl").read_text())["next"][0])
    with pytest.raises(ValueError, match="row 10999 has rewrite 'rewrite, 10999"):
        run_file(_job(), edited, tmp_path / "e.jsonl", progress=False)
    assert full_checks == [tmp_path / "e.jsonl"]
    # OUT touched (its bytes unchanged): the index holds; another --style, an index that is not JSON: full check
    os.utime(out)
    run_file(_job(), big_input, out, max_rows=1, progress=False)
    assert full_checks == [tmp_path / "e.jsonl"]
    run_file(_job(), big_input, out, max_rows=1, progress=False, style="formal")
    index_path(out).write_text("{", encoding="utf-8")
    run_file(_job(), big_input, out, progress=False)
    assert full_checks[1:] == [out] * 2
    assert out.read_bytes() == uninterrupted["jsonl"].read_bytes()
    # a complete OUT checked in full gets its index: the next run reads no record
    assert run_file(_job(), big_input, out, progress=False).skipped == ROWS and full_checks[1:] == [out] * 2
    # an input written just now: its bytes are what the index trusts, not its modification time
    fresh = tmp_path / "fresh.jsonl"
    shutil.copy(big_input, fresh)
    run_file(_job(), fresh, tmp_path / "f.jsonl", max_rows=5, progress=False)
    run_file(_job(), fresh, tmp_path / "f.jsonl", max_rows=5, progress=False)
    assert full_checks[3:] == []


@pytest.mark.parametrize("where", ["input, far before the resume point", "OUT's middle"])
def test_the_resume_index_sees_every_byte(big_input, tmp_path, full_checks, where):
    """No blind spot (issue 38, item 2): a finished row of the input edited in place more than 64 KiB before the
    resume point, or a record in OUT's middle, with the size and modification time put back, is seen: the full
    check runs and names the row (before: the index, which hashed 64 KiB of each file beside their sizes and
    modification times, was trusted and the stale row kept)."""
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    shutil.copy(big_input, inp)
    run_file(_job(), inp, out, max_rows=11_000, chunk_size=1000, progress=False)
    if where.startswith("input"):
        _edit_in_place(inp, b'"rewrite, 100\\n', b'"REWRITE, 100\\n')  # row 100: ~1.3 MB before the resume point
        message = "row 100 has rewrite 'rewrite, 100"
    else:
        _edit_in_place(out, b'"rewrite, 100\\n', b'"REWRITE, 100\\n')
        message = "row 100 has rewrite 'REWRITE, 100"
    with pytest.raises(ValueError, match=message):
        run_file(_job(), inp, out, progress=False)
    assert full_checks == [out]


def test_an_input_edited_while_its_rows_are_scored_is_seen(tmp_path, full_checks):
    """The input's hash in the index is of the bytes the finished rows were parsed from, not of the file read again
    when the index is written: an input edited in place during the run (a row already read, same size) is seen by
    the next resume."""
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(json.dumps({"source": f"s {i}", "rewrite": f"rewrite {i}", "style": "formal"}) + "\n"
                           for i in range(20)), encoding="utf-8")
    job = _job()
    score = job.score_chunk

    def edit_then_score(scorer, chunk):
        if chunk[0].row == 0:  # row 1 is read already (the read-ahead): the file changes under the run
            _edit_in_place(inp, b'"rewrite 1"', b'"REWRITE 1"')
        return score(scorer, chunk)

    run_file(FileJob(LOGPROB_RECORDS, _Lengths, edit_then_score), inp, out, max_rows=10, chunk_size=4,
             progress=False)
    with pytest.raises(ValueError, match="row 1 has rewrite 'rewrite 1' in out.jsonl but 'REWRITE 1' in the input"):
        run_file(_job(), inp, out, progress=False)
    assert full_checks == [out]


def test_the_resume_index_sees_a_continued_last_line(tmp_path, full_checks):
    """An input whose last line has no newline, then continued: its hashed part is unchanged, but its last row is
    not; the index is not trusted (the full check names the row)."""
    inp, out = tmp_path / "in.csv", tmp_path / "out.jsonl"
    inp.write_text("source,rewrite,style\n" + "\n".join(f"s{i},r{i},formal" for i in range(5)), encoding="utf-8")
    run_file(_job(), inp, out, progress=False)  # complete: its index points at the input's end
    with open(inp, "a", encoding="utf-8") as f:
        f.write("ly")
    with pytest.raises(ValueError, match="row 4 has style 'formal' in out.jsonl but 'formally' in the input"):
        run_file(_job(), inp, out, progress=False)
    assert full_checks == [out]


def test_a_finished_row_from_another_input_is_named_past_the_window(big_input, uninterrupted, tmp_path):
    out = tmp_path / "out.jsonl"
    lines = uninterrupted["jsonl"].read_text(encoding="utf-8").splitlines(keepends=True)[:READ_AHEAD + 100]
    changed = json.loads(lines[READ_AHEAD + 50])
    changed["rewrite"] = "something else"
    lines[READ_AHEAD + 50] = json.dumps(changed) + "\n"
    out.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=f"row {READ_AHEAD + 50} has rewrite 'something else'"):
        run_file(_job(), big_input, out, progress=False)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_shards_merged_equal_one_unsharded_run(big_input, uninterrupted, tmp_path, fmt):
    files = []
    for k in range(3):
        result = run_file(_job(), big_input, tmp_path / f"part{k}.{fmt}", shard=f"{k}/3", progress=False)
        assert result.total == len(range(k, ROWS, 3)) and result.complete
        files.append(result.output)
    merged = merge_shards(files, tmp_path / f"merged.{fmt}", total=ROWS)
    assert merged.rows == ROWS and merged.signature == "lengths|v:1"
    assert merged.output.read_bytes() == uninterrupted[fmt].read_bytes()


def test_a_missing_overlapping_or_foreign_shard_is_named(big_input, tmp_path):
    files = [run_file(_job(), big_input, tmp_path / f"part{k}.jsonl", shard=f"{k}/4", progress=False).output
             for k in range(4)]
    with pytest.raises(ValueError, match=r"rows 1, 5, 9.* are in none of the files: shard 1/4 is missing"):
        merge_shards([files[0], files[2], files[3]], tmp_path / "merged.jsonl")
    assert not (tmp_path / "merged.jsonl").exists()  # nothing written
    copy = tmp_path / "copy.jsonl"
    shutil.copy(files[2], copy)
    with pytest.raises(ValueError, match=f"row 2 is in {files[2]} and in {copy}: the shards overlap"):
        merge_shards([*files, copy], tmp_path / "merged.jsonl")
    # a shard cut short (its job still running or killed) is named as incomplete
    lines = files[3].read_text(encoding="utf-8").splitlines(keepends=True)
    files[3].write_text("".join(lines[:-5]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"shard\(s\) 3/4 .*part3.jsonl.* are incomplete"):
        merge_shards(files, tmp_path / "merged.jsonl", total=ROWS)
    # another model's shard
    other = tmp_path / "other.jsonl"
    other.write_text(files[1].read_text(encoding="utf-8").replace("lengths|v:1", "lengths|v:2"), encoding="utf-8")
    with pytest.raises(ValueError, match="signature 'lengths|v:2' differs"):
        merge_shards([files[0], other, files[2], files[3]], tmp_path / "merged.jsonl")
    # a shard's file resumed as another shard
    with pytest.raises(ValueError, match="has row 0, which is not in shard 1/4"):
        run_file(_job(), big_input, files[0], shard="1/4", progress=False)
    with pytest.raises(ValueError, match=r"0 <= K < N"):
        Shard.parse("4/4")


def test_rowset_is_a_set_of_rows():
    rows = RowSet()
    for r in (0, 7, 8, 1_000_003, 7):
        rows.add(r)
    assert len(rows) == 4 and 1_000_003 in rows and 1_000_002 not in rows and -1 not in rows
    assert list(rows.missing(10)) == [1, 2, 3, 4, 5, 6, 9]
    resumed = RowSet(below=1_000, count=250)  # shard 0/4's rows below 1000, in no memory
    for r in (4, 1_000, 1_004):
        resumed.add(r)
    assert len(resumed) == 252 and 996 in resumed and 1_004 in resumed and 1_008 not in resumed


@pytest.mark.parametrize("name, text, encoding", [
    ("crlf.csv", 'source,rewrite,style\r\n"a\r\nb",c,d\r\n\r\ne,f,g\r\nh,i,j\r\n', "utf-8"),
    ("cr.csv", '\ufeffsource,rewrite,style\rx,y,z\rq,"w\rv",e\rk,l,m', "utf-8"),
    ("latin1.csv", 'source,rewrite,style\nä,ö,ü\n"x\n\ny",1,2\nß,b,c\n', "latin-1"),
    ("lines.jsonl", '{"source":"a\\r","rewrite":"b","style":"c"}\r\n\n{"source":"ä","rewrite":"b","style":"c"}\n{}', "utf-8"),
])
def test_a_reader_started_at_a_position_reads_on_as_one_reader_would(tmp_path, name, text, encoding):
    """Line ends of every kind, quoted newlines, a byte order mark, blank lines, another encoding: from each
    record's position, a new reader yields the header and exactly the records after it, with the same lines."""
    from styleeval.files.records import RecordReader

    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    reader = RecordReader(path, encoding=encoding)
    whole = [(where, record, reader.position) for where, record in reader]
    records = [(where, record) for where, record, _ in whole]
    header = records[:1] if records[0][0] == "header" else []
    for i, (where, _, position) in enumerate(whole):
        if where != "header":
            assert list(RecordReader(path, encoding=encoding, start=position)) == header + records[i + 1:]
    assert whole[-1][2].record == len(records) - len(header) and whole[-1][2].offset == path.stat().st_size
    utf16 = tmp_path / "utf16.csv"
    utf16.write_text("source,rewrite,style\nä,ö,ü\n", encoding="utf-16")
    reader = RecordReader(utf16, encoding="utf-16")
    assert [r for _, r in reader][1] == {"source": "ä", "rewrite": "ö", "style": "ü"} and reader.position is None
    with pytest.raises(ValueError, match="lines end at single bytes"):
        RecordReader(utf16, encoding="utf-16", start=whole[-1][2])


def test_sharded_cli_runs_merge_to_the_unsharded_scores(tmp_path, tiny_model_dir, capsys):
    """What merge guarantees with a model (issue 38, item 8; rule 1 since issue 58): the records one unsharded run
    writes, every field equal and in order, the scores the same bits (a row's scores never depend on its batch-mates
    or chunk): the merged file is the unsharded file, byte for byte."""
    rows = [{"source": f"Send me report {i}{'!' * (i % 4)}.", "rewrite": f"Could you send report {i}, please?" +
             " Thanks." * (i % 3), "style": "polite", "source_id": f"q{i}"} for i in range(30)]
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    common = ["--model", str(tiny_model_dir), "--device", "cpu", "-q"]
    assert main(["score", str(inp), "--out", str(tmp_path / "whole.jsonl"), *common]) == 0
    for k in range(3):
        assert main(["score", str(inp), "--shard", f"{k}/3", "--out", str(tmp_path / f"s{k}.jsonl"), "--chunk-size",
                     "4", *common]) == 0
    assert [r["row"] for r in read_scores(tmp_path / "s1.jsonl")] == list(range(1, 30, 3))
    assert main(["merge", *(str(tmp_path / f"s{k}.jsonl") for k in range(3)), "--input", str(inp),
                 "--out", str(tmp_path / "merged.jsonl")]) == 0
    assert "30 rows from 3 files" in capsys.readouterr().err
    whole, merged = read_scores(tmp_path / "whole.jsonl"), read_scores(tmp_path / "merged.jsonl")
    scores = ("content", "style_strength")
    assert [{k: v for k, v in r.items() if k not in scores} for r in merged] == \
        [{k: v for k, v in r.items() if k not in scores} for r in whole]
    for name in scores:  # other chunks, other batch-mates: the same bits
        assert [r[name] for r in merged] == [r[name] for r in whole]
    assert (tmp_path / "merged.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert main(["merge", str(tmp_path / "s0.jsonl"), str(tmp_path / "s2.jsonl"), "--input", str(inp),
                 "--out", str(tmp_path / "m.jsonl")]) == 2
    assert "shard 1/3 is missing" in capsys.readouterr().err


def test_the_docs_promise_what_merge_guarantees():
    """Wherever the docs compare merged shards with one unsharded run, they say what is true since the engine is
    batch-invariant (issue 58): byte for byte with styleeval's engine (test_sharded_cli_runs_merge_to_the_unsharded_
    scores), and through a server only as the server computed each score (before issue 58 they said "within float
    rounding": 52 of 150 rows differed by up to 9.5e-7)."""
    import re

    from styleeval.commands import merge
    from styleeval.files import shards

    root = Path(__file__).resolve().parents[2]
    texts = {"README.md": (root / "README.md").read_text(encoding="utf-8"),
             **{f"docs/{p.name}": p.read_text(encoding="utf-8") for p in (root / "docs").glob("*.md")},
             "merge's help": merge.EPILOG, "files.shards": shards.__doc__, "merge_shards": shards.merge_shards.__doc__}
    claims = {name: paragraph for name, text in texts.items() for paragraph in re.split(r"\n\s*\n", text)
              if "unsharded" in paragraph}
    assert {"docs/scale-out.md", "merge's help", "files.shards"} <= set(claims)
    for name, paragraph in claims.items():
        assert "byte for byte" in paragraph and "server" in paragraph, f"{name}: {paragraph}"
        assert "float rounding" not in paragraph, f"{name}: {paragraph}"


def test_standard_input_is_read_twice_for_a_resume(tmp_path, tiny_model_dir, monkeypatch):
    """Standard input is copied once per reader: the resume check and the scoring both read it."""
    import io

    text = "source,rewrite,style\n" + "".join(f'"source {i}.","rewrite {i}?",polite\n' for i in range(5))
    out = tmp_path / "out.jsonl"
    for extra in (["--max-rows", "2"], []):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert main(["score", "-", "--model", str(tiny_model_dir), "--device", "cpu", "--out", str(out), "-q",
                     *extra]) == 0
    assert [r["row"] for r in read_scores(out)] == [0, 1, 2, 3, 4]


TORN_CHILD = r"""
import json, sys
from styleeval.files import LOGPROB_RECORDS, FileJob, run_file


def peak_kb():  # this process's own peak RSS (VmHWM; ru_maxrss would count the parent's before exec)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

class Lengths:
    signature = "lengths|v:1"

job = FileJob(LOGPROB_RECORDS, Lengths, lambda _s, chunk: [
    {"content": -len(r.rewrite) / 7, "style_strength": (len(r.source) % 5) / 3 - 0.5} for r in chunk])
before = peak_kb()
result = run_file(job, sys.argv[1], sys.argv[2], progress=False)
after = peak_kb()
print(json.dumps({"peak_kb": after - before, "skipped": result.skipped, "scored": result.scored}))
"""


def test_a_resume_after_a_torn_write_runs_in_bounded_memory(tmp_path):
    """A last record torn by a crash is cut without reading OUT into memory (issue 38, item 3: a 643 MB OUT took
    the resume's peak RSS from 39 MB to 682 MB). OUT: 10 finished rows and a torn last record of 96 MB; the resume,
    in its own process, must not raise its peak RSS by a third of that."""
    import subprocess
    import sys

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": f"s {i}", "rewrite": f"r {i}", "style": "formal"}) + "\n"
                           for i in range(20)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    run_file(_job(), inp, out, max_rows=10, progress=False)
    whole = out.read_bytes()
    torn_mb = 96
    with open(out, "ab") as f:  # a record cut by a crash: no newline, in pieces (the test's memory stays flat too)
        f.write(b'{"row": 10, "source": "')
        block = b"x" * (1 << 20)
        for _ in range(torn_mb):
            f.write(block)
    proc = subprocess.run([sys.executable, "-c", TORN_CHILD, str(inp), str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["skipped"], report["scored"]) == (10, 10)
    assert report["peak_kb"] < torn_mb * 1024 / 3, f"peak RSS rose by {report['peak_kb'] / 1024:.0f} MB"
    assert out.read_bytes()[:len(whole)] == whole and [r["row"] for r in read_scores(out)] == list(range(20))
