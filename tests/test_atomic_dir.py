"""styleeval.atomic.atomic_dir: a folder built whole under a temporary name beside it and renamed into place; removed
when the build fails; an older or cut build replaced, another builder's finished one kept. Concurrent builders are
real threads and real processes, synchronised so that all of them are mid-build at once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import styleeval
from styleeval.atomic import atomic_dir

FILES = ("config.json", "weights.bin")


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def _fill(folder: Path, who: str) -> None:
    for name in FILES:
        (folder / name).write_text(who, encoding="utf-8")


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}


def _hidden(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_a_folder_built_in_the_body_is_renamed_into_place_made_as_mkdir_makes_one(tmp_path, umask):
    target = tmp_path / "cache" / "model"  # its parent made too
    old = os.umask(umask)
    try:
        with atomic_dir(target) as tmp:
            assert tmp.parent == target.parent and tmp.name.startswith(".model.") and tmp.name.endswith(".tmp")
            assert list(tmp.iterdir()) == [] and not target.exists()  # nothing at the destination until it is done
            _fill(tmp, "a")
    finally:
        os.umask(old)
    assert _contents(target) == {"config.json": "a", "weights.bin": "a"}
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~umask  # mkdtemp's 0700 was unreadable to the group
    assert sorted(p.name for p in target.parent.iterdir()) == ["model"]


def test_a_failed_build_is_removed_and_the_previous_folder_left_as_it_was(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    _fill(target, "previous")
    inode = target.stat().st_ino
    with pytest.raises(RuntimeError, match="conversion failed"), atomic_dir(target, _complete) as tmp:
        (tmp / "config.json").write_text("half", encoding="utf-8")
        raise RuntimeError("conversion failed")
    assert target.stat().st_ino == inode and _contents(target) == {"config.json": "previous", "weights.bin": "previous"}
    assert _hidden(tmp_path) == []
    with pytest.raises(KeyboardInterrupt), atomic_dir(tmp_path / "new"):  # an interruption too
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


@pytest.mark.parametrize("done", [_complete, None], ids=["done", "no-done"])
def test_an_older_or_cut_build_at_the_destination_is_replaced(tmp_path, done):
    target = tmp_path / "model"
    target.mkdir()
    (target / "config.json").write_text("cut short", encoding="utf-8")  # no weights: not complete
    (target / "stale").mkdir()
    with atomic_dir(target, done) as tmp:
        _fill(tmp, "new")
    assert _contents(target) == {"config.json": "new", "weights.bin": "new"}
    assert _hidden(tmp_path) == []  # the old build moved aside, then removed


def test_a_file_at_the_destination_is_replaced(tmp_path):
    target = tmp_path / "model"
    target.write_text("a file", encoding="utf-8")
    with atomic_dir(target) as tmp:
        _fill(tmp, "new")
    assert target.is_dir() and _contents(target) == {"config.json": "new", "weights.bin": "new"}
    assert _hidden(tmp_path) == []


def test_a_finished_build_at_the_destination_is_kept_where_done_says_so(tmp_path):
    target = tmp_path / "model"
    with atomic_dir(target, _complete) as tmp:
        _fill(tmp, "mine")
        target.mkdir()  # another process finishes first, while this one builds
        _fill(target, "theirs")
        inode = target.stat().st_ino
    assert target.stat().st_ino == inode and _contents(target) == {"config.json": "theirs", "weights.bin": "theirs"}
    assert _hidden(tmp_path) == []
    with atomic_dir(target) as tmp:  # without done: any folder there is replaced
        _fill(tmp, "mine")
    assert _contents(target) == {"config.json": "mine", "weights.bin": "mine"}


def test_a_symbolic_link_is_built_through(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_dir(tmp_path / "link" / "model") as tmp:
        assert tmp.parent == tmp_path / "real"
        _fill(tmp, "a")
    assert _complete(tmp_path / "real" / "model")


@pytest.mark.parametrize("done", [_complete, None], ids=["done", "no-done"])
def test_threads_building_at_once_leave_one_complete_build(tmp_path, done):
    """8 threads, all mid-build at once (a barrier inside the body), then all publishing: with ``done`` every one
    returns and the folder is one builder's whole build; without it a builder whose rename meets another's folder
    may fail (OSError), never leaving a mixed or partial folder."""
    target, count = tmp_path / "model", 8
    barrier, errors = threading.Barrier(count), []

    def build(who: str) -> None:
        try:
            with atomic_dir(target, done) as tmp:
                _fill(tmp, who)
                barrier.wait()
        except OSError as err:
            errors.append(err)

    threads = [threading.Thread(target=build, args=(str(k),)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    built = _contents(target)
    assert sorted(built) == list(FILES) and len(set(built.values())) == 1
    assert built["config.json"] in {str(k) for k in range(count)}
    assert _hidden(tmp_path) == []
    if done is not None:
        assert errors == []
    assert len(errors) < count


CHILD = """
import sys
import time
from pathlib import Path
from styleeval.atomic import atomic_dir

target, who, sync = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])

def complete(folder):
    return (folder / "config.json").is_file() and (folder / "weights.bin").is_file()

with atomic_dir(target, complete) as tmp:
    for name in ("config.json", "weights.bin"):
        (tmp / name).write_text(who, encoding="utf-8")
    (sync / f"ready-{who}").touch()
    while not (sync / "go").exists():  # every builder mid-build before any publishes
        time.sleep(0.01)
print("kept" if (target / "config.json").read_text(encoding="utf-8") != who else "mine")
"""


def test_processes_building_at_once_keep_one_finished_build(tmp_path):
    """4 processes build at once; each waits until all are mid-build, then publishes: every one ends well, the folder
    is one builder's, and no temporary or moved-aside folder is left."""
    target, sync, count = tmp_path / "cache" / "model", tmp_path / "sync", 4
    sync.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(styleeval.__file__).parents[1])}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(k), str(sync)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(count)]
    try:
        while len(list(sync.glob("ready-*"))) < count and all(c.poll() is None for c in children):
            time.sleep(0.01)
        (sync / "go").touch()
        outcomes = [c.communicate(timeout=120) for c in children]
    finally:
        for child in children:
            child.kill()
    assert [c.returncode for c in children] == [0] * count, [err for _, err in outcomes]
    said = [out.strip() for out, _ in outcomes]
    built = _contents(target)
    assert len(set(built.values())) == 1 and said.count("mine") >= 1 and sorted(set(said)) <= ["kept", "mine"]
    assert said[int(built["config.json"])] == "mine"
    assert sorted(p.name for p in target.parent.iterdir()) == ["model"]
