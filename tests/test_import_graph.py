"""The layers of docs/architecture.md, checked on the source: every module is in one layer of the drawing and drawn in
the map where its folder is (the map draws nothing that is not there; its tests/ entry names tests/' folders), every
import (module-level and function-level alike, and a registry's lazy ``"styleeval.x:object"`` entry) goes to a
lower layer, the import graph has no circle, ``metaeval``
and ``systems`` never import each other, the statistics and the scoring layer import neither, and nothing outside
``backends/`` names one backend's own module or error."""

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


LAZY_ENTRY = re.compile(r"styleeval(?:\.\w+)+(?::[\w.]+)?")
"""A registry's lazy entry (:class:`styleeval.registry.Registry`): ``"styleeval.backends.local:LocalBackend"``, or a
plain module (``"styleeval.commands.score"``): an import made when the entry is read, drawn as one."""


def import_graph() -> dict[str, set[str]]:
    """module -> the styleeval modules it imports (``from a.b import c`` names ``a.b.c`` where that is a module; a
    string that is a registry's lazy entry, ``"styleeval.commands.score"``, imports its module)."""
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
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LAZY_ENTRY.fullmatch(node.value):
                targets = [node.value.partition(":")[0]]
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


def test_a_registrys_lazy_entries_are_imports_of_the_module_that_writes_them():
    """Issue 48: the CLI's ``importlib`` dispatch hid ``cli -> commands/`` from this test (``cli`` and ``commands/``
    were drawn in one layer, which its imports break). Its commands are lazy entries of a registry, strings this
    graph reads: every command's module is an import of ``cli``, as every built-in backend's is of ``backends``."""
    graph = import_graph()
    commands = {f"styleeval.commands.{p.stem}" for p in (PACKAGE / "commands").glob("[!_]*.py")}
    assert sorted(commands - graph["styleeval.cli"]) == []
    builtin = {"styleeval.backends.local", "styleeval.backends.openai_server", "styleeval.backends.llamacpp"}
    assert sorted(builtin - graph["styleeval.backends"]) == []


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


DESCRIPTIONS = 23
"""The column where the map's descriptions start: a line indented less starts an entry (its path, then its text)."""


def map_entries() -> dict[str, str]:
    """Each entry of the map (the fenced block that starts with ``src/styleeval/``), by its path from the repository
    root (``src/styleeval/files/``, ``src/styleeval/commands/score.py``, ``src/styleeval/backends/local/``,
    ``tests/``) -> its text: its own line and the lines below it, not the entries drawn inside it. An entry indented
    deeper than a folder entry above it is inside that folder."""
    block = next(b for b in _fenced_blocks() if b.lstrip("\n").startswith("src/styleeval/"))
    entries: dict[str, str] = {}
    folders: list[tuple[int, str]] = []  # (indent, path) of the folder entries that hold the next line
    path = None
    for line in block.strip("\n").splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            continue
        if indent >= DESCRIPTIONS:
            entries[path] += " " + line.strip()
            continue
        key, _, text = line.strip().partition(" ")
        while folders and folders[-1][0] >= indent:
            folders.pop()
        path = (folders[-1][1] if folders else "") + key
        assert path not in entries, f"{path} is drawn twice in the map"
        entries[path] = text.strip()
        if key.endswith("/"):
            folders.append((indent, path))
    return entries


def _names(text: str, name: str) -> int:
    """How often ``text`` names the file ``name`` (not as the end of another name or path: ``stats/corpus.py`` or
    ``encorpus.py`` is not ``corpus.py``)."""
    return len(re.findall(rf"(?<![\w./<>-]){re.escape(name)}(?![\w])", text))


def undrawn_modules(entries: dict[str, str]) -> list[str]:
    """The modules of ``src/styleeval`` the map does not draw where they are: each has an entry of its own
    (``cli.py``, ``commands/score.py``, ``backends/llamacpp.py``) or is named once in its own folder's entry
    (``outputs.py`` in ``files/``'s; a package's ``__init__.py``: that folder's entry). A module named only in another
    folder's entry (a top-level ``corpus.py`` where ``stats/`` names its own) is not drawn."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT)
        folder = entries.get(f"{relative.parent.as_posix()}/")
        if relative.as_posix() in entries:
            continue
        if folder is None or (path.name != "__init__.py" and _names(folder, path.name) != 1):
            missing.append(str(path.relative_to(PACKAGE)))
    return missing


def test_every_module_is_drawn_in_the_map_where_its_folder_is():
    assert undrawn_modules(map_entries()) == [], "modules docs/architecture.md's map does not draw in their folder"


def test_the_map_draws_nothing_that_is_not_there():
    """Every entry of the map exists (a file or a folder: ``datasets/<name>/`` any dataset folder), and every ``x.py``
    a folder's entry names is a file of that folder (no module removed or moved but still drawn)."""
    entries = map_entries()
    absent = [p for p in entries if not any(ROOT.glob(re.sub(r"<\w+>", "*", p.rstrip(",/"))))]
    assert absent == [], "entries of the map that are not in the repository"
    stale = sorted(f"{folder}{name}" for folder, text in entries.items() if folder.startswith("src/") and
                   folder.endswith("/") for name in set(re.findall(r"(?<![\w./<>-])(\w+\.py)\b", text))
                   if not (ROOT / folder / name).is_file())
    assert stale == [], "files a folder's entry names that are not in that folder"


def test_the_tests_entry_names_the_tests_folders():
    """The map's ``tests/`` entry names every folder of tests/ and none that is not there."""
    named = set(re.findall(r"(?<![\w./<>-])(\w+)/", map_entries()["tests/"]))
    there = {p.name for p in (ROOT / "tests").rglob("*")
             if p.is_dir() and p.name != "__pycache__" and not p.name.startswith(".")}
    assert (sorted(there - named), sorted(named - there)) == ([], []), "(tests/ folders not named, named but absent)"


def _referenced_module(reference: str, package: str) -> str:
    """The module a ``:mod:`` role names, from the package of the file that writes it (``.engine`` in
    ``backends/local/`` is ``styleeval.backends.local.engine``)."""
    target = reference.lstrip("~")
    if not target.startswith("."):
        return target
    dots = len(target) - len(target.lstrip("."))
    return ".".join([*package.split(".")[: len(package.split(".")) - dots + 1], target.lstrip(".")])


def test_every_module_a_docstring_names_is_there():
    """Issue 48: ``backends/local``'s docstring named a removed ``.attention`` module, ``systems``' a ``.stats`` it never
    had. Every ``:mod:`` reference to styleeval, absolute or relative, names a module of the source."""
    modules = _modules()
    stale = []
    for name, path in sorted(modules.items()):
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for reference in re.findall(r":mod:`([^`]+)`", path.read_text(encoding="utf-8")):
            target = _referenced_module(reference, package)
            if target.split(".")[0] == "styleeval" and target not in modules:
                stale.append((str(path.relative_to(PACKAGE)), reference))
    assert stale == [], "(module, :mod: reference) naming no module of src/styleeval"


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


def test_styleeval_help_imports_no_backend_and_no_heavy_library():
    """Issue 48: ``styleeval --help`` imported numpy, urllib3, msgspec, orjson and every backend's module (the
    backends' registry imported its built-in classes to register them; 367 modules). The registries' lazy entries
    import a backend when it is read: ``--help`` lists every command with its summary and imports none of these. A
    fresh process; no clock: the modules imported are listed."""
    import subprocess
    import sys

    heavy = ("numpy", "urllib3", "tqdm", "msgspec", "orjson", "pandas", "datasets", "torch", "transformers", "scipy",
             "evaluate", "matplotlib", "styleeval.backends.local", "styleeval.backends.openai_server",
             "styleeval.backends.llamacpp", "styleeval.backends.transport", "styleeval.corpora",
             "styleeval.metrics")
    probe = ("import contextlib, io, sys\nfrom styleeval.cli import main\nshown = io.StringIO()\n"
             "with contextlib.redirect_stdout(shown):\n    try:\n        main(['--help'])\n"
             "    except SystemExit as done:\n        assert done.code == 0, done.code\n"
             f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
             "print(all(f'    {c}' in shown.getvalue() for c in ('score', 'evaluate', 'list')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True"], done.stdout


def test_styleeval_evaluate_help_imports_no_dataset_library():
    """Issue 48: ``styleeval evaluate --help`` imported datasets and pandas (1,208 modules): its parser named
    ``--dataset``'s corpora from :mod:`styleeval.corpora`, which imports datasets. The help points to ``styleeval list
    corpora`` (it marks them ``rating, systems``) and a wrong NAME is refused when the command runs, naming them. A
    fresh process (``python -m styleeval``, as the console script runs); no clock: the modules imported are listed."""
    import subprocess
    import sys

    heavy = ("datasets", "pandas", "pyarrow", "torch", "transformers", "scipy", "matplotlib", "styleeval.corpora",
             "styleeval.systems")
    probe = ("import runpy, sys\nsys.argv = ['styleeval', 'evaluate', '--help']\n"
             "try:\n    runpy.run_module('styleeval', run_name='__main__')\nexcept SystemExit as done:\n"
             "    assert done.code == 0, done.code\n"
             f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["[]"], done.stderr
    assert "--dataset NAME" in done.stdout and "styleeval list corpora" in done.stdout, done.stdout
