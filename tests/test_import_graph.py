"""The layers of docs/architecture.md, checked on the source: the import graph of ``styleeval`` (module-level and
function-level imports alike) has no circle, ``metaeval`` and ``systems`` never import each other, the statistics
and the scoring layer import neither, and nothing outside ``backends/`` names one backend's own module or error."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "styleeval"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """module -> the styleeval modules it imports (``from a.b import c`` names ``a.b.c`` where that is a module)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith("styleeval") and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_the_import_graph_has_no_circle():
    graph = import_graph()
    # a package's __init__ importing its own submodules is how a package exports; a circle through it is not an
    # arrow back up the layers unless a submodule imports its own package's __init__
    for name in graph:
        graph[name] = {t for t in graph[name] if not _is_ancestor(name, t) or not _is_ancestor(t, name)}
    assert _cycles(graph) == []


def test_no_import_runs_back_up_the_layers():
    graph = import_graph()
    rules = {
        "styleeval.metaeval": ("styleeval.systems",),
        "styleeval.systems": ("styleeval.metaeval",),
        "styleeval.stats": ("styleeval.metaeval", "styleeval.systems", "styleeval.scoring", "styleeval.metrics",
                            "styleeval.backends"),
        "styleeval.scoring": ("styleeval.metaeval", "styleeval.systems"),
        "styleeval.backends": ("styleeval.logprob", "styleeval.autorater", "styleeval.metrics", "styleeval.files",
                               "styleeval.metaeval", "styleeval.systems", "styleeval.options"),
    }
    wrong = [(a, b) for a, targets in graph.items() for layer, banned in rules.items()
             if a == layer or a.startswith(layer + ".") for b in targets
             if any(b == x or b.startswith(x + ".") for x in banned)]
    assert wrong == []


def test_nothing_outside_backends_imports_one_backends_module():
    """Outside ``backends/`` only the package and its interface (``backends.base``) are imported: no
    ``openai_server``, no ``backends.local`` internals, so no ``except ServerError``."""
    graph = import_graph()
    wrong = [(a, b) for a, targets in graph.items() if not a.startswith("styleeval.backends") for b in targets
             if b.startswith("styleeval.backends.") and b != "styleeval.backends.base"]
    assert wrong == []
