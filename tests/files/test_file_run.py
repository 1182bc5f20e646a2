"""The runner's :class:`~styleeval.files.runner.FileRun` (issue 48, item 2): a run stopped after any number of rows
and started again writes OUT byte for byte as one uninterrupted run does, whichever way the resume learns what OUT
holds: the resume index, the full check of OUT's records against the input, or the full check after a crash tore
OUT's last record (in CSV, at a newline inside a quoted field). With a shard too, in both formats. And a run whose
backend's weights change mid-run cuts OUT back to the rows verified before the change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from styleeval.files import LOGPROB_RECORDS, FileJob, read_scores, run_file, runner
from styleeval.files.resume import index_path

ROWS = 23
CHUNK = 5


class _Lengths:
    signature = "lengths|v:1"


def _job(scored: list[int]) -> FileJob:
    def score_chunk(_scorer, chunk):
        scored.extend(r.row for r in chunk)
        return [{"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3 - 0.5} for r in chunk]

    return FileJob(LOGPROB_RECORDS, _Lengths, score_chunk)


@pytest.fixture(scope="module")
def inp(tmp_path_factory) -> Path:
    """Rows whose rewrite spans two lines (a quoted CSV field with a newline), with a carried column."""
    path = tmp_path_factory.mktemp("in") / "in.jsonl"
    path.write_text("".join(json.dumps({"source": f"source {i}" + "x" * (i % 4), "rewrite": f"rewrite {i}\nline 2",
                                        "style": "formal", "id": f"q{i}"}) + "\n" for i in range(ROWS)),
                    encoding="utf-8")
    return path


def _torn(whole: bytes, start: int, fmt: str) -> bytes:
    """The next record of ``whole`` after byte ``start``, cut by a crash: in CSV just after the newline inside its
    quoted rewrite, in JSONL halfway through its line."""
    if fmt == "csv":
        return whole[start:whole.index(b"\n", start) + 1]
    return whole[start:(start + whole.index(b"\n", start)) // 2]


@pytest.mark.parametrize("route", ["index", "full-check", "torn"])
@pytest.mark.parametrize("shard", [None, "1/3"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_stopped_run_resumed_writes_the_bytes_of_one_uninterrupted_run(inp, tmp_path, monkeypatch, fmt, shard,
                                                                         route):
    full_checks: list[Path] = []  # the OUT files a run checked record by record (not resumed from the index)
    check = runner._check_resume
    monkeypatch.setattr(runner, "_check_resume", lambda out, *args: full_checks.append(out) or check(out, *args))
    whole = run_file(_job([]), inp, tmp_path / f"whole.{fmt}", chunk_size=CHUNK, shard=shard, progress=False)
    expected = whole.output.read_bytes()
    rows = [r["row"] for r in read_scores(whole.output)]
    assert rows == [i for i in range(ROWS) if shard is None or i % 3 == 1] and whole.total == len(rows)
    for stop in sorted({0, 1, CHUNK, CHUNK + 2, len(rows) - 1}):
        out = tmp_path / f"out{stop}.{fmt}"
        first = run_file(_job([]), inp, out, chunk_size=CHUNK, max_rows=stop, shard=shard, progress=False)
        assert (first.scored, first.remaining) == (stop, len(rows) - stop)
        if route != "index" and out.exists():
            index_path(out).unlink()
        if route == "torn" and out.exists():  # (a run stopped before its first chunk leaves no OUT to tear)
            with open(out, "ab") as f:
                f.write(_torn(expected, out.stat().st_size, fmt))
        full_checks.clear()
        scored: list[int] = []
        second = run_file(_job(scored), inp, out, chunk_size=CHUNK, shard=shard, progress=False)
        assert (second.total, second.skipped, second.scored, second.complete) == (len(rows), stop, len(rows) - stop,
                                                                                   True)
        assert scored == rows[stop:]  # no finished row scored again, the rest in input order
        assert out.read_bytes() == expected, stop  # byte for byte
        assert full_checks == ([] if route == "index" or stop == 0 else [out]), stop


class _Redeployed:
    """A server's backend whose weights are replaced behind its URL at its ``at``-th probe."""

    def __init__(self, at: int) -> None:
        self.probes, self.at, self.version = 0, at, 1

    def verify_identity(self) -> None:
        self.probes += 1
        if self.probes == self.at:
            self.version = 2


class _Served:
    """A scorer behind a server: its signature is the served weights'."""

    def __init__(self, backend: _Redeployed) -> None:
        self.backend = backend

    @property
    def signature(self) -> str:
        return f"served|v:{self.backend.version}"


@pytest.mark.parametrize("at", [1, 2, 3])
def test_weights_replaced_mid_run_cut_out_back_to_the_last_verified_rows(inp, tmp_path, monkeypatch, at):
    """The backend is probed after every chunk (``PROBE_SECONDS`` 0): the probe that sees other weights cuts OUT back
    to the rows verified before it, names the first row removed, and stops the run."""
    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.0)
    backend = _Redeployed(at)
    job = FileJob(LOGPROB_RECORDS, lambda: _Served(backend), _job([]).score_chunk)
    out = tmp_path / "out.jsonl"
    first_removed = (at - 1) * CHUNK  # each chunk's probe verifies it
    with pytest.raises(ValueError, match=rf"signature served\|v:1 is now served\|v:2\): the rows written from input "
                                         rf"row {first_removed} on were removed from {out}"):
        run_file(job, inp, out, chunk_size=CHUNK, flush_seconds=3600, progress=False)
    assert backend.probes == at
    assert [r["row"] for r in read_scores(out)] == list(range(first_removed))
