"""Outputs get the permissions ``open()`` would give them (issue 38, item 5): 0666 less the umask for a new file,
an existing file's own mode when it is replaced, a symbolic link written through. Before, every file written
atomically (reports, CSVs, merged shards, caches) was created 0600 (``mkstemp``'s mode), unreadable to the group in
the shared folders and SLURM set-ups of docs/scale-out.md."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from styleeval.atomic import atomic_path, atomic_write_text
from styleeval.errors import UserError
from styleeval.files import LOGPROB_RECORDS, FileJob, run_file
from styleeval.files.shards import merge_shards


@pytest.fixture(params=[0o022, 0o027], ids=["umask-022", "umask-027"])
def umask(request):
    """The process's umask set for the test (and put back)."""
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class _Lengths:
    signature = "lengths|v:1"


def _job() -> FileJob:
    return FileJob(LOGPROB_RECORDS, _Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": 0.5} for r in chunk])


def _input(path: Path, n: int = 6) -> Path:
    path.write_text("".join(json.dumps({"source": f"s{i}", "rewrite": f"r{i}", "style": "formal"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def test_an_atomic_write_creates_as_open_would(tmp_path, umask):
    expected = 0o666 & ~umask
    new = atomic_write_text(tmp_path / "new.md", "x")
    with open(tmp_path / "opened.md", "w") as f:
        f.write("x")
    assert _mode(new) == _mode(tmp_path / "opened.md") == expected
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    kept.chmod(0o640)
    atomic_write_text(kept, "new")
    assert _mode(kept) == 0o640 and kept.read_text() == "new"  # replaced, its mode kept (as open("w") keeps it)
    target = tmp_path / "target.md"
    link = tmp_path / "link.md"
    target.write_text("old")
    link.symlink_to(target.name)
    atomic_write_text(link, "through")
    assert link.is_symlink() and target.read_text() == "through"  # written through the link, as open() writes
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_an_atomic_path_replaces_on_success_only(tmp_path, umask):
    """The temporary file is beside the target, named with the suffix, created as open() would (or with the
    permissions asked); the body's return renames it into place, a failure mid-write removes it, the previous file
    unchanged and the error as it was raised (an OSError stays one: the caller words it)."""
    target = tmp_path / "figure.png"
    target.write_bytes(b"old")
    seen = []
    with atomic_path(target, suffix=".tmp.png") as tmp:
        seen.append(tmp)
        assert tmp.parent == tmp_path and tmp.name.startswith(".figure.png.") and tmp.name.endswith(".tmp.png")
        assert tmp.read_bytes() == b"" and _mode(tmp) == 0o666 & ~umask
        tmp.write_bytes(b"new")
        assert target.read_bytes() == b"old"  # nothing replaced before the body returns
    assert target.read_bytes() == b"new" and not seen[0].exists()
    with pytest.raises(OSError, match="disk is full") as raised, atomic_path(target) as tmp:
        seen.append(tmp)
        tmp.write_bytes(b"half")
        raise OSError(28, "the disk is full")
    assert not isinstance(raised.value, UserError)
    assert target.read_bytes() == b"new" and not seen[1].exists()
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        seen.append(tmp)
        raise KeyboardInterrupt
    assert target.read_bytes() == b"new" and not seen[2].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png"]
    with atomic_path(tmp_path / "sub" / "private.bin", permissions=0o600) as tmp:  # its folder made
        tmp.write_bytes(b"x")
    assert _mode(tmp_path / "sub" / "private.bin") == 0o600
    link = tmp_path / "link.png"
    link.symlink_to(target.name)
    with atomic_path(link) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".figure.png.")  # beside the link's target
        tmp.write_bytes(b"through")
    assert link.is_symlink() and target.read_bytes() == b"through"


def test_every_writer_follows_the_umask(tmp_path, umask):
    """The score file, its resume index, merged shards, a CSV rewritten after a torn write, the systems report's
    files, the scores cache and the leaderboard cache."""
    from styleeval.metaeval import run_metaeval
    from styleeval.metaeval.leaderboard import build_leaderboard
    from styleeval.scoring import ScoresCache
    from styleeval.stats import TestSettings
    from styleeval.systems.comparison import compare_systems
    from styleeval.systems.report import write_outputs

    expected = 0o666 & ~umask
    inp = _input(tmp_path / "in.jsonl")
    written = [run_file(_job(), inp, tmp_path / f"part{k}.jsonl", shard=f"{k}/2", progress=False).output
               for k in range(2)]
    written.append(tmp_path / ".part0.jsonl.resume.json")
    written.append(merge_shards(written[:2], tmp_path / "merged.csv", total=6).output)
    torn = tmp_path / "torn.csv"  # a CSV record cut inside a quoted field: the file is rewritten without it
    run_file(_job(), inp, torn, max_rows=2, progress=False)
    torn.write_bytes(torn.read_bytes() + b'2,s2,"r\n')
    written.append(run_file(_job(), inp, torn, progress=False).output)
    replaced = tmp_path / "replaced.jsonl"  # --overwrite keeps the mode of the file it replaces, as open("w") does
    run_file(_job(), inp, replaced, progress=False)
    replaced.chmod(0o640)
    run_file(_job(), inp, replaced, overwrite=True, progress=False)
    assert _mode(replaced) == 0o640
    scores = pd.DataFrame({"row": range(6), "system": ["a", "b"] * 3, "source_id": [0, 0, 1, 1, 2, 2],
                           "m": [0.1, 0.2, 0.3, 0.5, 0.2, 0.9]})
    report = compare_systems(scores, {"m": "m|v:1"}, settings=TestSettings(n_boot=10, trials=10))
    written += list(write_outputs(report, tmp_path / "report", plots=False).values())
    written.append(ScoresCache(tmp_path / "cache").save("m|v:1", "f" * 12, [0.5, 1.0]))
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"s {i}", "rewrite": f"r {i}", "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(i % 5), "style_mean": 1.0, "fluency_mean": None}
            for i in range(30)]
    (tmp_path / "toy.csv").write_text("id,m\n" + "".join(f"toy/{i},{np.sin(i)}\n" for i in range(30)))
    result = run_metaeval(["toy"], [f"precomputed:file={tmp_path / 'toy.csv'}:column=m"], dimension="content",
                          loader=lambda name: rows, n_boot=0)
    build_leaderboard([result], trials=5, n_boot=0, cache_dir=tmp_path / "lb")
    written += sorted((tmp_path / "lb").iterdir())
    assert len(written) > 10
    assert {str(p.relative_to(tmp_path)): oct(_mode(p)) for p in written} == \
        {str(p.relative_to(tmp_path)): oct(expected) for p in written}
