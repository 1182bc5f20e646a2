"""Imports inside functions (ruff's PLC0415; docs/architecture.md): each one left in src/styleeval says why on its
line, in one of the fixed phrasings, and the reason holds: the line imports what it names, a package called heavy is
not imported by the module that defers it (the deferral buys something), the styleeval module named as the way to it
does import it, and an extra is the one that installs the package."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from styleeval.extras import PACKAGES

SRC = Path(__file__).resolve().parents[1] / "src"
REASON = re.compile(r"# noqa: PLC0415 - (?:heavy \((?P<package>[\w.]+)(?:, via (?P<via>[\w.]+))?\)"
                    r"|optional extra \[(?P<extra>[\w-]+)\]|cycle: (?P<cycle>styleeval[\w.]*) imports this module)$")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom) -> str:
    return node.module if isinstance(node, ast.ImportFrom) else node.names[0].name


def deferred_imports() -> list[tuple[str, int, str, str]]:
    """(module, line, imported module, the line's text) of every import inside a function that carries a noqa."""
    found = []
    for path in sorted((SRC / "styleeval").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for function in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and "noqa: PLC0415" in lines[node.lineno - 1]:
                    found.append((_module_name(path), node.lineno, _imported(node), lines[node.lineno - 1]))
    return sorted(set(found))


def test_every_deferred_import_says_why_in_a_fixed_phrasing_that_names_what_it_imports():
    deferred = deferred_imports()
    assert len(deferred) > 50  # the source was read: torch, matplotlib... are deferred in many places
    wrong = []
    for module, line, imported, text in deferred:
        reason = REASON.search(text)
        if reason is None:
            wrong.append((module, line, "no reason in a fixed phrasing"))
        elif reason["via"] and not (imported == reason["via"] or imported.startswith(reason["via"] + ".")):
            wrong.append((module, line, f"imports {imported}, not {reason['via']}"))
        elif reason["package"] and not reason["via"] and not (imported == reason["package"]
                                                             or imported.startswith(reason["package"] + ".")):
            wrong.append((module, line, f"imports {imported}, not {reason['package']}"))
        elif reason["extra"] and PACKAGES.get(imported.split(".")[0], ("", ""))[1] != reason["extra"]:
            wrong.append((module, line, f"{imported} is not installed by the extra {reason['extra']}"))
    assert wrong == []


PROBE = """
import importlib, json, os, sys, traceback
groups = json.loads(sys.argv[1])  # [[module, [[package, present], ...]], ...]
workers = int(sys.argv[2])
early = sorted({package for _, expected in groups for package, _ in expected} & set(sys.modules))
if early:  # the probe itself must import none of them, or every child would inherit them
    sys.exit(f"the probe's own process imported {early}")
wrong, running = [], {}


def reap():
    pid, status = os.wait()
    module, expected, read_end = running.pop(pid)
    with os.fdopen(read_end, encoding="utf-8") as fh:
        reply = fh.read()
    if os.waitstatus_to_exitcode(status) != 0 or not reply:  # the import failed: every check of the module is wrong
        wrong.extend([module, package, present] for package, present in expected)
    else:
        wrong.extend(json.loads(reply))


for module, expected in groups:
    while len(running) >= workers:
        reap()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # a fresh import in a child: the parent imports nothing
        try:
            os.close(read_end)
            importlib.import_module(module)
            found = [[module, package, present] for package, present in expected if (package in sys.modules) != present]
            os.write(write_end, json.dumps(found).encode())
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    os.close(write_end)
    running[pid] = (module, expected, read_end)
while running:
    reap()
print(json.dumps(sorted(wrong)))
"""


def test_a_heavy_package_is_kept_out_of_the_module_that_defers_it_and_comes_with_the_module_named():
    """``heavy (P)`` in module M: ``import M`` leaves P out; ``heavy (P, via V)``: ``import V`` brings P. One forked
    child of one fresh process per module, which checks every package named for that module after its one import
    (what a fresh ``import M`` brings does not depend on which packages are asked about); as many children at once
    as the machine has cores (each child is a fresh fork of the bare parent: they share nothing)."""
    checks = set()
    for module, _, _, text in deferred_imports():
        reason = REASON.search(text)
        if reason and reason["package"]:
            checks.add((module, reason["package"], False))
            if reason["via"]:
                checks.add((reason["via"], reason["package"], True))
    assert ("styleeval.hub", "huggingface_hub", False) in checks and ("styleeval.models", "torch", True) in checks
    groups: dict[str, list[tuple[str, bool]]] = {}
    for module, package, present in sorted(checks):
        groups.setdefault(module, []).append((package, present))
    workers = max(1, len(os.sched_getaffinity(0)))
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(sorted(groups.items())), str(workers)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # [module, package, whether it should be imported] where it is not so
