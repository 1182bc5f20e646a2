"""Two runs on one OUT at once (issue 38, item 1): the second is refused or resumes after the first; never a row
twice, never a lost one, whether it names OUT or a symbolic link to it.

Real processes with the tiny model: each worker imports styleeval and loads the model once, then runs
``styleeval score`` (``cli.main``) when told, after a given delay, so that many trials cost seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from styleeval.files.records import iter_records

WORKER = r"""
import contextlib, io, json, sys, time
from styleeval.cli import main
for line in sys.stdin:
    job = json.loads(line)
    time.sleep(job["delay"])
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err):
        rc = main(job["argv"])
    print(json.dumps({"rc": rc, "err": err.getvalue(), "seconds": time.perf_counter() - start}), flush=True)
"""


class _Worker:
    """A process that runs ``styleeval`` commands in-process, each after a delay, and answers their exit status."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONIOENCODING": "utf-8", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)

    def send(self, argv: list[str], delay: float = 0.0) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"argv": argv, "delay": delay}) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        return json.loads(line)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def workers(tiny_model_dir, tmp_path_factory):
    """Two warm workers (the model loaded in each) and an input of 10,000 rows (its read-ahead takes a while)."""
    folder = tmp_path_factory.mktemp("race")
    inp = folder / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": f"Send me report {i}.", "rewrite": f"Could you send report {i}?",
                                       "style": "polite"}) + "\n" for i in range(10_000)), encoding="utf-8")
    pair = [_Worker(), _Worker()]
    try:
        for k, worker in enumerate(pair):  # warm up: imports and weights
            worker.send(_argv(tiny_model_dir, inp, folder / f"warm{k}.jsonl", "--max-rows", "2"))
        for worker in pair:
            assert worker.answer()["rc"] == 0
        yield pair, inp, folder
    finally:
        for worker in pair:
            worker.close()


def _argv(model: Path, inp: Path, out: Path, *extra: str) -> list[str]:
    return ["score", str(inp), "--out", str(out), "--model", str(model), "--device", "cpu", "-q", *extra]


def _rows(out: Path) -> list[int]:
    return [int(r["row"]) for where, r in iter_records(out) if where != "header"]


REFUSED = "is being written by another styleeval process"


def test_a_run_started_as_another_ends_never_writes_a_row_twice(workers, tiny_model_dir):
    """The second run starts at points spread over the first one's run (and a little after): whatever the moment,
    it is refused by the lock or resumes after the first, and OUT holds each row once. Before the lock was taken
    first, a second run that read OUT's state while the first was finishing appended rows already there (the
    issue: duplicates in 5 of 25 trials); this test caught it in most of its trials."""
    (a, b), inp, folder = workers
    args = ("--max-rows", "4", "--chunk-size", "4")
    a.send(_argv(tiny_model_dir, inp, folder / "alone.jsonl", *args))
    alone = a.answer()["seconds"]  # how long one run takes: the second starts within it
    trials = 16
    doubled = []
    for t in range(trials):
        out = folder / f"t{t}.jsonl"
        a.send(_argv(tiny_model_dir, inp, out, *args))
        b.send(_argv(tiny_model_dir, inp, out, *args), delay=alone * 1.2 * t / trials)
        first, second = a.answer(), b.answer()
        for answer in (first, second):
            assert answer["rc"] == 0 or REFUSED in answer["err"], answer["err"]
        rows = _rows(out)
        if len(rows) != len(set(rows)):
            doubled.append((t, len(rows) - len(set(rows))))
            continue
        done = 4 * sum(answer["rc"] == 0 for answer in (first, second))
        assert rows == list(range(done)), (t, first, second)  # nothing lost, in order
    assert doubled == [], f"rows written twice in trials (trial, extra rows): {doubled}"


def test_out_through_a_symbolic_link_and_its_real_path_at_once(workers, tiny_model_dir):
    """The lock is taken on OUT's real path: a run writing through a link to OUT and one writing OUT itself never
    both write it (before: two locks, 2 x 60 records for 60 rows)."""
    (a, b), _, folder = workers
    inp = folder / "sixty.jsonl"
    inp.write_text("".join(json.dumps({"source": f"Report {i} now.", "rewrite": f"Report {i}, please.",
                                       "style": "polite"}) + "\n" for i in range(60)), encoding="utf-8")
    out = folder / "real.jsonl"
    link = folder / "link.jsonl"
    link.symlink_to(out.name)
    a.send(_argv(tiny_model_dir, inp, out, "--chunk-size", "2"))
    b.send(_argv(tiny_model_dir, inp, link, "--chunk-size", "2"), delay=0.05)
    first, second = a.answer(), b.answer()
    for answer in (first, second):
        assert answer["rc"] == 0 or REFUSED in answer["err"], answer["err"]
    assert link.is_symlink() and _rows(out) == list(range(60))
    before = (out.read_bytes(), out.stat().st_mtime_ns)
    a.send(_argv(tiny_model_dir, inp, link))  # a resume through the link: nothing left, nothing written
    assert a.answer()["rc"] == 0 and link.is_symlink() and (out.read_bytes(), out.stat().st_mtime_ns) == before


def test_out_through_a_hard_link_and_its_other_name_at_once(workers, tiny_model_dir):
    """Two hard-linked names of one OUT are two real paths (two lock files): a run on each at once wrote both (issue
    44: 3,965 records for 2,000 rows). A file with more than one name is refused before anything is written."""
    (a, b), _, folder = workers
    inp = folder / "sixty-hard.jsonl"
    inp.write_text("".join(json.dumps({"source": f"Report {i} now.", "rewrite": f"Report {i}, please.",
                                       "style": "polite"}) + "\n" for i in range(60)), encoding="utf-8")
    out = folder / "hard.jsonl"
    a.send(_argv(tiny_model_dir, inp, out, "--max-rows", "2"))
    assert a.answer()["rc"] == 0
    link = folder / "hard-link.jsonl"
    os.link(out, link)
    a.send(_argv(tiny_model_dir, inp, out, "--chunk-size", "2"))
    b.send(_argv(tiny_model_dir, inp, link, "--chunk-size", "2"), delay=0.05)
    first, second = a.answer(), b.answer()
    rows = _rows(out)
    assert len(rows) == len(set(rows)), f"{len(rows) - len(set(rows))} rows written twice"
    for answer in (first, second):
        assert answer["rc"] == 2 and "hard-link.jsonl" in answer["err"] and "hard.jsonl" in answer["err"], answer
    assert rows == [0, 1]
