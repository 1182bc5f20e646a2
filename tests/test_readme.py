"""Every shell block of the README and of the docs, so that they cannot drift from the code (issue 29, item 7; the
docs since issue 60, item 5 moved most of the README's blocks there), and the pages' links.

Each ```bash block of README.md and docs/*.md is preceded by a marker (an HTML comment, not rendered):

- ``<!-- readme-test: run -->``: run as written in one scratch folder beside ``shared/data`` (a
  link to the corpus mirror, ``$STYLEEVAL_DATA_DIR``, wherever the clone is) (the
  inputs a block names but does not make, e.g. ``rewrites.csv``, are made first); options in ``[brackets]`` are left
  out. A block runs after every earlier block (the README's, then each page's in name order) that writes where it
  writes or reads (:func:`run_order`: the docs' metaeval block after the README's, into the same ``results/`` and
  from its scores cache); blocks that touch nothing of each other's run side by side, one per CPU (each a
  single-threaded process, ``OMP_NUM_THREADS=1``: two torch processes of two threads each on two cores crawl). Model presets (``1b``, ``3b``...) are a one-layer random Llama (:data:`STAND_IN`), placed in a scratch Hugging
  Face cache under each preset's Hub id, offline: the commands run verbatim through the real loading and scoring
  code, without weights (the numbers are not the paper's). Afterwards every ``--out`` a block names exists.
- ``<!-- readme-test: parse: <why> -->``: checked, not run (the reason says what it would need): bash syntax, every
  ``styleeval`` line parsed by the CLI's own parser (bracketed options included), every script and extra it names
  exists.

A block without a marker fails, so a new block must say which it is. Every relative link of these pages, and every
``docs/<page>.md`` they name, must exist; the README and docs/index.md list every page.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from styleeval.cli import build_parser
from styleeval.models import PRESETS

ROOT = Path(__file__).resolve().parents[1]
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
"""The README first, then the docs pages: where the blocks are and the order the run blocks run in."""
README = PAGES["README.md"]
BLOCK = re.compile(r"(?:<!-- readme-test: (run|parse: [^>]*?) -->\n)?```bash\n(.*?)\n```", re.S)
OPTIONAL = re.compile(r"\s\[(--[^\]]*)\]")
INPUTS = {
    "rewrites.csv": 'source,rewrite,style\n"give me the report now.","Could you please send me the report?",polite\n'
                    '"the food was cold.","The food was not warm.",positive\n',
    "outputs.csv": "source,rewrite,style,system\n" + "".join(
        f'"{s}","Could you {s}",polite,A\n"{s}","{s.upper()}",polite,B\n'
        for s in ("give me the report now.", "the food was cold.", "send it today.", "this is bad.")),
    "sysA.jsonl": "".join(f'{{"source": "{s}", "rewrite": "Please, {s}"}}\n'
                          for s in ("give me the report now.", "send it today.", "this is bad.")),
    "sysB.jsonl": "".join(f'{{"source": "{s}", "rewrite": "{s}"}}\n'
                          for s in ("give me the report now.", "send it today.", "this is bad.")),
}
"""What the run blocks read and no block writes."""

BLOCKS = [(m.group(1), m.group(2), f"{name}, the block at line {text[: m.start()].count(chr(10)) + 1}")
          for name, text in PAGES.items() for m in BLOCK.finditer(text)]
"""(marker, the block's text, where it is) of every ```bash block."""


def _lines(text: str) -> list[list[str]]:
    """The block's commands as argument lists (continuations joined, comments and ``VAR=value`` prefixes dropped)."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        while argv and re.fullmatch(r"[A-Z_]+=\S*", argv[0]):
            argv = argv[1:]
        if argv:
            out.append(argv)
    return out


def check_block(text: str, where: str) -> None:
    """What a parse block gets (and a run block before it runs): syntax, the CLI's parser, the names it uses."""
    proc = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True)
    assert proc.returncode == 0, f"{where}: {proc.stderr}"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^([\w-]+)\s*=", section, re.M))
    parser = build_parser()
    for argv in _lines(OPTIONAL.sub(r" \1", text)):  # bracketed options are checked too
        if argv[0] == "styleeval":
            try:
                parser.parse_args(argv[1:])
            except SystemExit:
                pytest.fail(f"{where}: the CLI does not accept {shlex.join(argv)}")
        elif argv[0] == "python" and argv[1] == "-c":
            compile(argv[2], where, "exec")
        elif argv[0] == "python" and argv[1] != "-m":
            assert (ROOT / argv[1]).is_file(), f"{where}: no script {argv[1]}"
        elif argv[0] == "pip":
            for arg in argv:
                if m := re.fullmatch(r"\S*\[([\w,]+)\]", arg):
                    unknown = set(m.group(1).split(",")) - set(extras)
                    assert not unknown, f"{where}: no extra {', '.join(unknown)} in pyproject.toml"


def test_every_shell_block_is_marked_and_parses():
    assert len(BLOCKS) == sum(text.count("```bash") for text in PAGES.values()) and len(BLOCKS) >= 20
    assert sum(where.startswith("README.md,") for _, _, where in BLOCKS) >= 5
    for marker, text, where in BLOCKS:
        assert marker is not None, f"{where} has no <!-- readme-test: run --> or <!-- readme-test: parse: why -->"
        assert marker == "run" or len(marker) > len("parse: ") + 10, f"{where}: say why it is only parsed"
        check_block(text, where)


STAND_IN = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1)
"""The presets' stand-in: the tiny random shape cut to one layer 16 wide (the blocks check the commands, not the
numbers). The README's metaeval block scores every row of four corpora (~4,250) with it: 329 s instead of the tiny
model's 546 s (2 layers 64 wide; CPU 324 s instead of 519 s), measured back to back 2026-11-29 at load ~3-4."""


@pytest.fixture(scope="module")
def stand_in_dir(tiny_tokenizer, tmp_path_factory) -> Path:
    """:data:`STAND_IN` with random weights (the tiny model's head scale: peaked distributions) and the tiny
    tokenizer, saved with ``save_pretrained``."""
    from styleeval.random_weights import build_model

    path = tmp_path_factory.mktemp("readme-stand-in")
    build_model("tiny", vocab_size=len(tiny_tokenizer), head_scale=30.0, **STAND_IN).save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def scratch(stand_in_dir, real_backend, data_dir, tmp_path_factory):
    """A folder beside shared/data (a link to the corpus mirror: the blocks' ``../shared/data``), a Hugging Face cache
    holding the stand-in under every preset's id, and a styleeval cache whose gguf/ is the session's (the smollm2-135m
    preset fetched and converted once per run)."""
    from styleeval.paths import cache_path

    root = tmp_path_factory.mktemp("readme")
    (root / "cache").mkdir()
    (root / "cache" / "gguf").symlink_to(cache_path("gguf"))
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(data_dir)
    work = root / "work"
    work.mkdir()
    for name, content in INPUTS.items():
        (work / name).write_text(content, encoding="utf-8")
    for repo_id in PRESETS.values():
        repo = root / "hf" / "hub" / f"models--{repo_id.replace('/', '--')}"
        shutil.copytree(stand_in_dir, repo / "snapshots" / ("0" * 40))
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
    env = {**os.environ, "HF_HOME": str(root / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "STYLEEVAL_DATA_DIR": str(data_dir), "STYLEEVAL_CACHE": str(root / "cache"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return work, env


def _paths(text: str) -> tuple[set[str], set[str]]:
    """(what the block writes: its ``--out`` folders and files and its ``>`` redirections; every other word of its
    commands, which may name a file it reads), as relative paths without ``./`` or a trailing ``/``."""
    written, words = set(), set()
    for argv in _lines(text):
        for k, arg in enumerate(argv):
            (written if k > 0 and argv[k - 1] in ("--out", ">", ">>") else words).add(arg.removeprefix("./").rstrip("/"))
    return written, words - written


def _overlap(a: set[str], b: set[str]) -> bool:
    """A path of ``a`` is a path of ``b`` or in it, or holds one of ``b``'s."""
    return any(p == q or p.startswith(q + "/") or q.startswith(p + "/") for p in a for q in b if p and q)


def run_order(texts: list[str]) -> list[set[int]]:
    """For each block, the earlier blocks it must run after: those that write where it writes or reads, or read
    where it writes (in the pages' order, as a reader runs them, these touch the same files)."""
    paths = [_paths(text) for text in texts]
    return [{j for j in range(i) if _overlap(paths[i][0], paths[j][0] | paths[j][1])
             or _overlap(paths[i][1], paths[j][0])} for i in range(len(texts))]


def test_run_order_keeps_blocks_that_share_a_file_in_page_order():
    texts = ["styleeval metaeval --out results/", "styleeval score a.csv --out a.jsonl",
             "styleeval stel --out results/stel/", "styleeval merge a.jsonl --out b.jsonl", "printf x > c.csv",
             "styleeval score c.csv --out d.jsonl", "styleeval metaeval --out ./results"]
    assert run_order(texts) == [set(), set(), {0}, {1}, set(), {4}, {0, 2}]


def test_the_run_blocks_run_as_written(scratch):
    work, env = scratch
    runs = [(OPTIONAL.sub("", text), where) for marker, text, where in BLOCKS if marker == "run"]
    after = run_order([command for command, _ in runs])
    workers = max(1, min(4, len(os.sched_getaffinity(0))))
    if workers > 1:
        env = {**env, "OMP_NUM_THREADS": "1"}
    # the blocks that others wait for start first (the README's metaeval: the docs' metaeval and stel follow it)
    waited_on = [sum(k in deps for deps in after) for k in range(len(runs))]
    done: dict[int, subprocess.CompletedProcess] = {}
    with ThreadPoolExecutor(workers) as pool:
        running: dict = {}
        while len(done) < len(runs):
            ready = sorted((k for k in range(len(runs)) if k not in done and k not in running.values()
                            and after[k] <= set(done)), key=lambda k: (-waited_on[k], k))
            for k in ready[: workers - len(running)]:
                running[pool.submit(subprocess.run, ["bash", "-euo", "pipefail", "-c", runs[k][0]], cwd=work,
                                    env=env, capture_output=True, text=True, timeout=600)] = k
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                done[running.pop(future)] = future.result()
    ran = 0
    for k, (command, where) in enumerate(runs):
        proc = done[k]
        assert proc.returncode == 0, f"{where} failed ({proc.returncode}):\n{command}\n{proc.stderr[-3000:]}"
        for argv in _lines(command):
            if "--out" in argv:
                out = argv[argv.index("--out") + 1]
                assert (work / out).exists(), f"{where}: {shlex.join(argv)} wrote no {out}"
        ran += 1
    assert ran >= 6
    # the README's three examples (score, evaluate, metaeval) are among them
    readme_runs = [text for marker, text, where in BLOCKS if marker == "run" and where.startswith("README.md,")]
    assert [any(f"styleeval {command} " in text for text in readme_runs) for command in
            ("score", "evaluate", "metaeval")] == [True] * 3
    # what the examples write, run in a clone, is ignored by git: a clone stays clean
    written = sorted(p.name + "/" * p.is_dir() for p in work.iterdir() if p.name not in INPUTS)
    assert written, "the run blocks wrote nothing"
    tracked = [name for name in written
               if subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT).returncode != 0]
    assert not tracked, f"the README's examples write {', '.join(tracked)}, which .gitignore does not ignore"


def test_the_readmes_test_command_is_the_one_ci_runs():
    """.ci/run runs "the README's test command": the line below that comment is a block of the README, verbatim."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.split("# The README's test command:\n", 1)[1].splitlines()[0]
    assert command.startswith("STYLEEVAL_DATA_DIR=") and "pytest" in command
    assert any(text.strip() == command for _, text, where in BLOCKS if where.startswith("README.md,")), command


LINK = re.compile(r"\]\(([^)\s]+)\)")
NAMED_PAGE = re.compile(r"\bdocs/([\w.-]+\.md)\b")


def test_every_relative_link_and_named_page_exists():
    """A moved section leaves no dead link: every relative link of README.md and docs/*.md points to a file, and every
    ``docs/<page>.md`` a page names (in a link or in prose) is there."""
    checked = 0
    for name, text in PAGES.items():
        here = (ROOT / name).parent
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = target.split("#", 1)[0]
            assert (here / path).exists(), f"{name}: the link ({target}) points to nothing"
            checked += 1
        for page in NAMED_PAGE.findall(text):
            assert (ROOT / "docs" / page).is_file(), f"{name} names docs/{page}, which does not exist"
    assert checked >= 40


def test_the_readme_is_an_entry_point_that_lists_every_page():
    """Issue 60, item 5: the README fits a screen or three (at most ~150 lines) and its "Where to go next" and
    docs/index.md link every page of docs/, each page has a title (one ``# `` line, the first)."""
    assert len(README.splitlines()) <= 150, f"README.md has {len(README.splitlines())} lines; move a topic to docs/"
    pages = sorted(name for name in PAGES if name.startswith("docs/"))
    index = PAGES["docs/index.md"]
    for page in pages:
        assert f"]({page})" in README, f"README.md's \"Where to go next\" does not link {page}"
        if page != "docs/index.md":
            assert f"]({page.removeprefix('docs/')})" in index, f"docs/index.md does not link {page}"
        first = PAGES[page].splitlines()[0]
        assert first.startswith("# "), f"{page} does not start with a title"
