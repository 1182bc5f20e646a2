"""The layers of docs/architecture.md, checked on the source: every module is in one layer of the drawing and named in
the map, every import (module-level and function-level alike) goes to a lower layer, the import graph has no circle,
``metaeval`` and ``systems`` never import each other, the statistics and the scoring layer import neither, and
nothing outside ``backends/`` names one backend's own module or error."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "styleeval"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


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


# -- the drawing and the map of docs/architecture.md ----------------------------------------------------------------
def _fenced_blocks() -> list[str]:
    return ARCHITECTURE.read_text(encoding="utf-8").split("```")[1::2]


def drawn_layers() -> dict[str, int]:
    """Entry of the layer drawing (``metrics/``, ``backends/base``, ``__init__``...) -> its layer number: the fenced
    block that starts with ``layer  entries  what``; a line without a number continues the layer above it, the
    entries end where the header's ``what`` starts."""
    block = next(b for b in _fenced_blocks() if b.lstrip("\n").startswith("layer"))
    header, *lines = block.strip("\n").splitlines()
    cut = header.index("what")
    layers: dict[str, int] = {}
    layer = None
    for line in lines:
        numbered = re.match(r"\s*(\d+)\s+(.*)", line[:cut])
        if numbered:
            layer, names = int(numbered.group(1)), numbered.group(2)
        else:
            names = line[:cut]
        for name in (n.strip() for n in names.split(",")):
            if name:
                assert name not in layers, f"{name} is drawn twice"
                layers[name] = layer
    return layers


def _entry_of(module: str, entries: dict[str, int]) -> str | None:
    """The most specific drawn entry holding ``module`` (``x/``: the package and its modules; ``x``: that module)."""
    path = module.removeprefix("styleeval").lstrip(".").replace(".", "/") or "__init__"
    best = None
    for entry in entries:
        if entry.endswith("/"):
            package = entry.rstrip("/")
            if (path == package or path.startswith(entry)) and (best is None or len(entry) > len(best)):
                best = entry
        elif path == entry.removesuffix("/__init__") and (best is None or len(entry) > len(best)):
            best = entry
    return best


def test_every_module_is_drawn_once_and_every_import_goes_down():
    graph = import_graph()
    layers = drawn_layers()
    entry = {module: _entry_of(module, layers) for module in graph}
    assert [m for m, e in entry.items() if e is None] == [], "modules missing from the layer drawing"
    assert sorted(set(layers) - set(entry.values())) == [], "drawn entries that hold no module"
    upward = sorted((a, b, layers[entry[a]], layers[entry[b]]) for a, targets in graph.items() for b in targets
                    if entry[a] != entry[b] and layers[entry[b]] >= layers[entry[a]])
    assert upward == [], "imports that do not go to a lower layer of the drawing: (module, import, layers)"


def test_every_module_is_named_in_the_map():
    """The map (the fenced block after the drawing) names every module file, and every package as ``name/``."""
    text = next(b for b in _fenced_blocks() if b.lstrip("\n").startswith("src/styleeval/"))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        wanted = f"{relative.parent.name}/" if path.name == "__init__.py" else path.name
        if relative.parent != Path(".") or path.name != "__init__.py":
            if not re.search(rf"(?<![\w.]){re.escape(wanted)}", text):
                missing.append(str(relative))
    assert missing == [], "modules docs/architecture.md's map does not name"


def test_import_styleeval_imports_no_heavy_library():
    """Issue 47: ``import styleeval`` must stay light (evaluate and datasets cost 17-22 s on a loaded machine): the
    public names are lazy (module ``__getattr__``), and ``styleeval.LogProb`` still resolves. A fresh process; no
    clock: the modules imported are listed."""
    import subprocess
    import sys

    probe = ("import sys, styleeval; heavy = ('evaluate', 'datasets', 'pandas', 'torch', 'transformers', 'pyarrow', "
             "'matplotlib', 'scipy'); print(sorted(m for m in heavy if m in sys.modules)); "
             "print(styleeval.LogProb.__name__, sorted(m for m in ('evaluate', 'datasets') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "LogProb []"], done.stdout
