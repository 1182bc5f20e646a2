"""Everything the README shows, from a wheel: the package built with ``pip wheel``, installed in a fresh virtualenv
(its dependencies read from the test's own environment, the repository's ``src/`` nowhere on the path), and the
wheel examples run from outside the repository (issue 40, item 6; docs/install.md, "Without the repository", since the
README became an entry point, issue 60)."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = "\n".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))])
"""The README and the docs pages, where the wheel blocks are (docs/install.md today)."""
WHEEL_MARKER = "parse: run from an installed wheel"
SHELL_BLOCK = re.compile(r"<!-- readme-test: " + WHEEL_MARKER + r"[^>]*-->\n```bash\n(.*?)\n```", re.S)
PYTHON_BLOCK = re.compile(r"<!-- readme-test: wheel -->\n```python\n(.*?)\n```", re.S)
SHELL, PYTHON = SHELL_BLOCK.search(PAGES), PYTHON_BLOCK.search(PAGES)
SLOW = {"reproduce-paper": "--help"}
"""Commands of the wheel block (docs/install.md) that the test runs with ``--help`` only (the full reproduction takes
minutes); ``space`` is started and asked for its page."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def installed(data_dir, tmp_path_factory):
    """A fresh virtualenv with the wheel installed (``--no-deps``) and a ``.pth`` naming this environment's
    site-packages after its own, so torch & co. are found without reinstalling them; an environment for running
    it that drops ``PYTHONPATH`` (the repository's ``src/``). The editable install's ``__editable__*.pth`` in those
    site-packages is never processed: a ``.pth`` line only appends a folder to the path."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp / "dist"), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp / "dist").glob("styleeval-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    ours = list(dict.fromkeys([sysconfig.get_paths()["purelib"], *ours]))
    (Path(purelib) / "zz_test_environment.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    work = tmp / "work"  # outside the repository, beside shared/data as a clone is (the README's ../shared/data)
    work.mkdir()
    (tmp / "shared").mkdir()
    (tmp / "shared" / "data").symlink_to(data_dir)  # the corpus mirror, wherever it is
    env.update({"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "HF_HOME": str(tmp / "hf"),
                "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
                "GRADIO_ANALYTICS_ENABLED": "False",
                "STYLEEVAL_DATA_DIR": str(data_dir)})
    return python, purelib, work, env


def _run(argv, work, env, timeout=300):
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{shlex.join(map(str, argv))} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc


def test_the_wheel_carries_the_modules_the_space_and_the_cards(installed):
    python, purelib, work, env = installed
    where = json.loads(_run([python, "-c", "import json, styleeval, styleeval.bundled as b; print(json.dumps("
                             "[styleeval.__file__, b.checkout_root(), b.names('metrics'), b.names('spaces'), "
                             "b.names('datasets')]))"], work, env).stdout)
    assert where[0] == str(Path(purelib) / "styleeval" / "__init__.py") and where[1] is None  # not the checkout
    assert where[2:] == [sorted(p.parent.name for p in ROOT.glob("metrics/*/*.py") if p.stem == p.parent.name),
                         sorted(p.parent.name for p in ROOT.glob("spaces/*/app.py")),
                         sorted(p.parent.name for p in ROOT.glob("datasets/*/README.md"))]
    bundle = Path(purelib) / "styleeval" / "_bundled"
    for path in (*ROOT.glob("metrics/*/*.py"), *ROOT.glob("metrics/*/README.md"), *ROOT.glob("spaces/*/app.py"),
                 *ROOT.glob("datasets/*/README.md")):  # the canonical layout, byte for byte
        copy = bundle / path.relative_to(ROOT)
        assert copy.read_bytes() == path.read_bytes(), copy
    assert not list(bundle.rglob("__init__.py")) and not list(bundle.glob("datasets/*/data"))


def test_the_readmes_wheel_examples_run_outside_the_repository(installed, real_backend):
    """The wheel section's Python example (evaluate.load of the installed module, the real smollm2-135m preset,
    already in the session's cache) and its CLI lines: build-datasets into the work folder, reproduce-paper's help, and the Space
    started and asked for its page."""
    python, purelib, work, env = installed
    assert SHELL and PYTHON, "no page has the wheel section (marked <!-- readme-test: wheel -->)"
    assert len(SHELL_BLOCK.findall(PAGES)) == len(PYTHON_BLOCK.findall(PAGES)) == 1, "two wheel sections: which one?"
    check = ("\nimport styleeval, math\n"
             f"assert styleeval.__file__.startswith({purelib!r}), styleeval.__file__\n"
             f"assert styleeval.evaluate_module('logprob_style').startswith({purelib!r})\n"
             "assert len(r['content']) == 1 and math.isfinite(r['content'][0])\n"
             "assert 'model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f' in r['signature']\n"
             "assert 'warning' not in r\n")
    env = {**env, "OMP_NUM_THREADS": "1"}  # the Space starts while the rest runs: a thread each on a small machine
    lines = [shlex.split(re.sub(r"\[(--[^\]]*)\]", r"\1", line), comments=True)  # bracketed options: taken
             for line in SHELL.group(1).splitlines()]
    lines = [argv for argv in lines if argv and argv[0] == "styleeval"]
    started = []
    for argv in lines:  # first: each Space starts (~15 s of imports and loading) while the other lines run
        if argv[1] == "space":  # on a free port; no corpora, so that it starts at once (the tab says why)
            port = _free_port()
            if "--port" in argv:
                del argv[argv.index("--port"):argv.index("--port") + 2]
            log = work / f"space{len(started)}.log"
            with open(log, "w") as out:
                started.append((subprocess.Popen([*argv, "--port", str(port)], cwd=work, stdout=out,
                                                 stderr=subprocess.STDOUT,
                                                 env={**env, "STYLEEVAL_DATA_DIR": str(work / "no-corpora")}),
                                port, log))
    try:
        _run([python, "-c", PYTHON.group(1) + check], work, env)
        for argv in lines:
            if argv[1] == "space":
                continue
            if argv[1] in SLOW:
                argv = argv[:2] + [SLOW[argv[1]]]
            out = _run(argv, work, env).stdout
            if argv[1] == "reproduce-paper":
                assert "Reproduce Tables 3, 4 and 5" in out
            if argv[1] == "build-datasets":
                folder = work / argv[argv.index("--out") + 1] / argv[2]
                assert (folder / "README.md").read_bytes() == (ROOT / "datasets" / argv[2] / "README.md").read_bytes()
                assert (folder / "data" / "all.parquet").is_file()
        for proc, port, log in started:
            page = _page(f"http://127.0.0.1:{port}/config", proc, log)
            assert "a real 135M chat model" in page and "not for numbers" not in page  # the bundled app's banner
    finally:
        for proc, _, _ in started:
            proc.terminate()
            proc.wait(10)
    assert started, "the README's wheel block starts no Space"


def _page(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"styleeval space exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return answer.read().decode("utf-8")
        except OSError:
            time.sleep(0.3)
    proc.kill()
    pytest.fail(f"styleeval space did not answer within {timeout:g} s: {log.read_text()[-3000:]}")
