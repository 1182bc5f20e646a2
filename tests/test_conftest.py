"""The tests' corpus mirror (issue 48): the ``data_dir`` fixture is ``$STYLEEVAL_DATA_DIR`` where it is set, else
``../shared/data`` beside the repository; a mirror that is not there fails naming where it came from. Run in a
pytest of its own, with tests/conftest.py as its plugin, in a scratch folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PROBE = '''def test_probe(data_dir):
    print("DATA_DIR=" + str(data_dir))
'''


def _data_dir(tmp_path: Path, mirror: Path | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(PROBE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("STYLEEVAL_DATA_DIR", "STYLEEVAL_SHARED_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if mirror is not None:
        env["STYLEEVAL_DATA_DIR"] = str(mirror)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_probe.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_data_dir_is_the_variables_folder(tmp_path):
    mirror = tmp_path / "elsewhere" / "data"
    mirror.mkdir(parents=True)
    done = _data_dir(tmp_path, mirror)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"DATA_DIR={mirror.resolve()}\n" in done.stdout


def test_data_dir_without_the_variable_is_shared_data_beside_the_repository(tmp_path):
    beside = (TESTS.parent.parent / "shared" / "data").resolve()
    done = _data_dir(tmp_path, None)
    if beside.is_dir():
        assert done.returncode == 0 and f"DATA_DIR={beside}\n" in done.stdout, done.stdout + done.stderr
    else:  # no mirror there: the test fails naming the default and the variable
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"no corpus mirror at {beside} (the default when STYLEEVAL_DATA_DIR is not set" in done.stdout


def test_a_missing_mirror_fails_naming_the_variable(tmp_path):
    done = _data_dir(tmp_path, tmp_path / "absent")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"no corpus mirror at {(tmp_path / 'absent').resolve()} ($STYLEEVAL_DATA_DIR)" in done.stdout
