"""The one registry (:class:`styleeval.registry.Registry`, issue 48): lazy ``"module:object"`` entries imported when
read, entry-point plugins, one duplicate-name error, unregister; and the five registries built on it (metrics,
backends, corpora, leaderboard statistics, CLI commands)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from styleeval.registry import Registry


def _plugin_folder(tmp_path: Path, module: str, source: str, group: str | None = None, entries: str = "") -> Path:
    """A folder holding ``module`` and, with ``group``, an installed distribution's metadata declaring ``entries``
    in that entry-point group (what ``pip install`` of a plugin leaves on sys.path)."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    if group:
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
        (info / "entry_points.txt").write_text(f"[{group}]\n{entries}\n", encoding="utf-8")
    return tmp_path


@pytest.fixture()
def on_path(tmp_path):
    """``tmp_path`` on sys.path for the test; the modules imported from it forgotten after."""
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        if name.startswith("reg_plugin"):
            sys.modules.pop(name)


def test_a_lazy_entry_is_listed_without_import_and_imported_once_when_read(on_path):
    _plugin_folder(on_path, "reg_plugin_lazy", "IMPORTS = []\nIMPORTS.append(1)\n\nclass Thing:\n    size = 3\n")
    things = Registry("thing")
    things.add("thing", "reg_plugin_lazy:Thing")
    assert (things.names(), "thing" in things, things.loaded("thing")) == (["thing"], True, False)
    assert "reg_plugin_lazy" not in sys.modules
    assert things.target("thing") == "reg_plugin_lazy:Thing"
    assert things["thing"].size == 3 and things.loaded("thing") and things.target("thing") is None
    assert things.get("thing") is things["thing"] and sys.modules["reg_plugin_lazy"].IMPORTS == [1]


def test_a_plain_module_entry_is_the_module(on_path):
    _plugin_folder(on_path, "reg_plugin_module", "SUMMARY = 'a command'\n")
    commands = Registry("command")
    commands.add("do", "reg_plugin_module")
    assert commands["do"].SUMMARY == "a command"


def test_one_duplicate_error_the_same_object_again_is_nothing_new():
    things = Registry("thing")
    things.add("a", 1, lazy=False)
    things.add("a", 1, lazy=False)
    things.add("b", "os:sep")
    things.add("b", "os:sep")
    with pytest.raises(ValueError, match=r"^thing 'a' is registered twice$"):
        things.add("a", 2, lazy=False)
    with pytest.raises(ValueError, match=r"^thing 'b' is registered twice$"):
        things.add("b", "os:pathsep")
    assert dict(things) == {"a": 1, "b": __import__("os").sep}


def test_unregister_removes_a_name_and_frees_it():
    things = Registry("thing")
    things.add("a", 1, lazy=False)
    things.add("b", "os:sep")
    things.unregister("a")
    things.unregister("b")
    things.unregister("never")
    assert (things.names(), "a" in things, things.get("a", "none")) == ([], False, "none")
    with pytest.raises(KeyError):
        things["a"]
    things.add("a", 2, lazy=False)
    assert things["a"] == 2


def test_a_lazy_entry_is_checked_when_it_is_imported():
    def is_int(name, obj):
        if not isinstance(obj, int):
            raise TypeError(f"{name}: {obj!r} is not an int")

    numbers = Registry("number", check=is_int)
    numbers.add("sep", "os:sep")
    with pytest.raises(TypeError, match="sep: '/' is not an int"):
        numbers["sep"]
    with pytest.raises(TypeError, match="is not an int"):
        numbers.add("x", "x", lazy=False)
    with pytest.raises(ValueError, match="a lazy entry is 'module:object'"):
        numbers.add("bad", "not a target")


def test_an_ordered_registry_lists_by_its_key():
    ranks = Registry("rank", order=lambda pair: pair[0])
    ranks.add("late", (9, "late"), lazy=False)
    ranks.add("early", (1, "early"), lazy=False)
    ranks.add("middle", (5, "middle"), lazy=False)
    assert list(ranks) == ["early", "middle", "late"]


def test_a_plugins_entry_point_joins_as_a_lazy_entry(on_path):
    _plugin_folder(on_path, "reg_plugin_ep", "class Shape:\n    sides = 4\n", group="styleeval.test_registry",
                   entries="square = reg_plugin_ep:Shape")
    shapes = Registry("shape", group="styleeval.test_registry")
    shapes.add("triangle", "os:sep")  # a name registered in code first; the plugins join on first read
    assert shapes.names() == ["triangle", "square"] and "reg_plugin_ep" not in sys.modules
    assert shapes["square"].sides == 4


BACKEND_PLUGIN = '''
from styleeval.backends import Backend


class PlugBackend(Backend):
    name = "plug"
'''


def test_a_backend_plugins_entry_point_is_listed_unimported_and_opened_by_name(tmp_path):
    """The ``styleeval.backends`` group (unchanged): a fresh process with an installed plugin lists it among the
    built-in backends without importing it or any built-in backend's module; ``backend_class`` imports it."""
    folder = _plugin_folder(tmp_path, "reg_plugin_backend", BACKEND_PLUGIN, group="styleeval.backends",
                            entries="plug = reg_plugin_backend:PlugBackend")
    probe = ("import sys\nfrom styleeval.backends import backend_class, backend_names\n"
             "print(backend_names())\n"
             "print(sorted(m for m in sys.modules if m.startswith(('reg_plugin', 'styleeval.backends.'))))\n"
             "print(backend_class('plug').__name__, 'reg_plugin_backend' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['local', 'openai', 'llamacpp', 'plug']", "['styleeval.backends.base']",
                                        "PlugBackend True"]


def test_the_builtin_backends_are_lazy_and_a_taken_name_is_the_duplicate_error():
    from styleeval.backends import BACKENDS, Backend, backend_class, register_backend

    assert BACKENDS.target("local") in ("styleeval.backends.local:LocalBackend", None)
    assert backend_class("local").__name__ == "LocalBackend" and BACKENDS.loaded("local")

    class Other(Backend):
        name = "local"

    with pytest.raises(ValueError, match=r"^backend 'local' is registered twice$"):
        register_backend(Other)
    assert backend_class("local").__name__ == "LocalBackend"


def test_the_five_registries_are_registries_with_one_duplicate_error():
    from styleeval.backends import BACKENDS
    from styleeval.cli import COMMANDS
    from styleeval.corpora import SPECS, register_corpus
    from styleeval.metaeval.statistics import STATISTICS, leaderboard_statistic
    from styleeval.metrics.registry import (
        NAMESPACES,
        REGISTRY,
        available_metrics,
        register,
        register_namespace,
    )

    assert "s_bleu" in available_metrics() and "lai" in NAMESPACES  # every metric module imported: both registered
    assert all(isinstance(r, Registry) for r in (BACKENDS, COMMANDS, SPECS, STATISTICS, REGISTRY, NAMESPACES))
    taken = [(lambda: register("s_bleu")(type("Copy", (), {})), "metric 's_bleu'"),
             (lambda: register_namespace("lai")(lambda member: None), "metric namespace 'lai'"),
             (lambda: register_corpus(dataclasses.replace(SPECS["mir_yelp"])), "corpus 'mir_yelp'"),
             (lambda: leaderboard_statistic("spearman", "again")(lambda *a: 0.0), "leaderboard statistic 'spearman'"),
             (lambda: COMMANDS.add("score", "styleeval.commands.merge"), "command 'score'")]
    for add, what in taken:
        with pytest.raises(ValueError, match=rf"^{what} is registered twice$"):
            add()
    assert STATISTICS["spearman"].description == "Spearman's rho over the rows"
    assert COMMANDS["score"].__name__ == "styleeval.commands.score"


def test_the_cli_commands_are_listed_in_order_without_importing_them():
    probe = ("import sys\nfrom styleeval.cli import COMMANDS\nprint(list(COMMANDS))\n"
             "print(sorted(m for m in sys.modules if m.startswith('styleeval.commands.')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['score', 'autorate', 'merge', 'evaluate', 'metaeval', 'stel', 'reproduce-paper', 'build-datasets', "
        "'space', 'list']", "[]"]


def test_a_metric_unregistered_is_unknown_again():
    from styleeval.errors import UserError
    from styleeval.metrics import get_metric
    from styleeval.metrics.registry import REGISTRY, available_metrics, register

    class Echo:
        """t_echo: a test metric."""

        def __init__(self, inputs: str = "source") -> None:
            self.inputs = inputs

    try:
        register("t_echo")(Echo)
        assert "t_echo" in available_metrics() and REGISTRY["t_echo"].cls is Echo
        assert REGISTRY["t_echo"].named == ("inputs",)
    finally:
        REGISTRY.unregister("t_echo")
    assert "t_echo" not in available_metrics()
    with pytest.raises(UserError, match="unknown metric 't_echo'"):
        get_metric("t_echo")


def test_threads_reading_a_new_registry_at_once_all_see_its_plugins(on_path):
    """The plugins are in before any reader sees the names (review of issue 48: a flag set before the entry points
    were read let 33 of 80 first readers miss an installed plugin)."""
    import threading

    _plugin_folder(on_path, "reg_plugin_race", "class Shape:\n    sides = 4\n", group="styleeval.test_registry_race",
                   entries="square = reg_plugin_race:Shape")
    for _ in range(20):
        shapes = Registry("shape", group="styleeval.test_registry_race")
        start = threading.Barrier(4)
        seen: list[bool] = []

        def read(shapes: Registry = shapes, start: threading.Barrier = start, seen: list[bool] = seen) -> None:
            start.wait()
            seen.append("square" in shapes)

        readers = [threading.Thread(target=read) for _ in range(4)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert seen == [True] * 4


def test_an_entry_that_cannot_be_imported_is_an_import_error_naming_the_registry_name_and_target(on_path):
    _plugin_folder(on_path, "reg_plugin_broken", "import reg_plugin_missing_dependency\n")
    things = Registry("backend")
    things.add("broken", "reg_plugin_broken:Thing")
    things.add("nothing", "os:no_such_object")
    with pytest.raises(ImportError) as err:
        things["broken"]
    assert str(err.value) == ("backend 'broken' (reg_plugin_broken:Thing) cannot be imported: No module named "
                              "'reg_plugin_missing_dependency'")
    with pytest.raises(ImportError) as err:
        things.get("nothing")
    assert str(err.value) == ("backend 'nothing' (os:no_such_object) cannot be imported: module 'os' has no "
                              "attribute 'no_such_object'")
    assert not things.loaded("broken") and things.target("broken") == "reg_plugin_broken:Thing"


def test_a_backend_plugin_that_cannot_be_imported_is_named_once_and_stops_no_other_command(tmp_path):
    """One broken install (a plugin whose module fails to import) left out of the options every command collects,
    with one warning line naming it; naming it is the registry's ImportError (newcomer's finding, issue 48: `score
    --help`, `list metrics` and `score` on the local backend ended in a traceback)."""
    folder = _plugin_folder(tmp_path, "reg_plugin_badbackend", "import reg_plugin_not_installed\n",
                            group="styleeval.backends", entries="bad = reg_plugin_badbackend:BadBackend")
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    for command in (["score", "--help"], ["list", "metrics"]):
        done = subprocess.run([sys.executable, "-m", "styleeval", *command], capture_output=True, text=True,
                              timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("reg_plugin_badbackend") == 1 and "Traceback" not in done.stderr
        assert ("backend 'bad' (reg_plugin_badbackend:BadBackend) cannot be imported: No module named "
                "'reg_plugin_not_installed'; its options are left out until it can be imported") in done.stderr
    probe = "from styleeval.backends import backend_class\nbackend_class('bad')"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0 and ("ImportError: backend 'bad' (reg_plugin_badbackend:BadBackend) cannot be "
                                     "imported") in done.stderr


def _plugin_env(*folders: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, folders), os.environ.get("PYTHONPATH", "")])}


def _styleeval(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "styleeval", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def test_plugins_that_fail_otherwise_or_take_a_name_are_named_once_and_stop_no_command(tmp_path):
    """Issue 59, item 5: a plugin module raising RuntimeError or SyntaxError at import gave a traceback from `score
    --help`, `list metrics` and `score`; an entry naming a non-Backend object a TypeError traceback; an entry named like
    a built-in was silently ignored, and a name two distributions declare went to the first read, unsaid."""
    folders = [tmp_path / name for name in ("one", "two")]
    for folder in folders:
        folder.mkdir()
    group = "styleeval.backends"
    _plugin_folder(folders[0], "reg_plugin_raises", "raise RuntimeError('plugin broken at import')\n", group,
                   "raises = reg_plugin_raises:Plug")
    _plugin_folder(folders[0], "reg_plugin_syntax", "def broken(:\n", group, "syntax = reg_plugin_syntax:Plug")
    _plugin_folder(folders[0], "reg_plugin_object", "class NotABackend:\n    pass\n", group,
                   "object = reg_plugin_object:NotABackend")
    _plugin_folder(folders[0], "reg_plugin_taken", BACKEND_PLUGIN, group, "local = reg_plugin_taken:PlugBackend")
    _plugin_folder(folders[0], "reg_plugin_twin_a", BACKEND_PLUGIN, group, "twin = reg_plugin_twin_a:PlugBackend")
    _plugin_folder(folders[1], "reg_plugin_twin_b", BACKEND_PLUGIN, group, "twin = reg_plugin_twin_b:PlugBackend")
    env = _plugin_env(*folders)
    warned = [
        "backend 'raises' (reg_plugin_raises:Plug) cannot be imported: RuntimeError: plugin broken at import; its "
        "options are left out until it can be imported",
        "backend 'syntax' (reg_plugin_syntax:Plug) cannot be imported: SyntaxError: ",
        "backend 'object' (reg_plugin_object:NotABackend) cannot be used: <class 'reg_plugin_object.NotABackend'> is "
        "not a Backend subclass; its options are left out",
        "backend 'local' of reg_plugin_taken 0.1 (reg_plugin_taken:PlugBackend) is left out: the name is taken by "
        "styleeval.backends.local:LocalBackend (styleeval's own, or registered in code), which is used",
        "backend 'twin' is declared by two distributions, reg_plugin_twin_a 0.1 (reg_plugin_twin_a:PlugBackend) and "
        "reg_plugin_twin_b 0.1 (reg_plugin_twin_b:PlugBackend): reg_plugin_twin_a 0.1's is used (the first on "
        "sys.path); uninstall the other",
    ]
    for command in (["score", "--help"], ["list", "metrics"]):
        done = _styleeval(env, *command)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        for line in warned:
            assert line in done.stderr, (line, done.stderr)
        for name in ("reg_plugin_raises", "reg_plugin_syntax", "reg_plugin_object", "reg_plugin_taken",
                     "reg_plugin_twin_b"):  # each said once
            assert sum(name in line for line in done.stderr.splitlines()) == 1, (name, done.stderr)
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "a b", "rewrite": "c d", "style": "formal"}\n', encoding="utf-8")
    for name, why in (("raises", "cannot be imported: RuntimeError: plugin broken at import"),
                      ("syntax", "cannot be imported: SyntaxError: "), ("object", "cannot be used: ")):
        done = _styleeval(env, "score", str(source), "--out", str(tmp_path / "out.jsonl"), "--backend", name, "-q")
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert last.startswith(f"styleeval score: error: backend '{name}' (") and why in last, last
    probe = ("from styleeval.backends import BackendImportError, backend_class\n"
             "from styleeval.errors import UserError\n"
             "print(backend_class('twin').__module__, backend_class('local').__module__)\n"
             "for name in ('raises', 'syntax', 'object'):\n"
             "    try:\n        backend_class(name)\n"
             "    except BackendImportError as err:\n"
             "        print(name, isinstance(err, ImportError), isinstance(err, UserError))\n")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["reg_plugin_twin_a styleeval.backends.local", "raises True True",
                                        "syntax True True", "object True True"]


HALVING_PLUGIN = '''
from styleeval.backends.local import LocalBackend


class DupA(LocalBackend):
    """Log-probabilities halved, and no name or kind of its own: it inherits the local backend's."""

    def token_logprobs(self, prompts, continuations, group=1):
        return [values / 2 for values in super().token_logprobs(prompts, continuations, group)]
'''


def test_a_plugin_subclassing_a_builtin_backend_signs_as_itself_and_cannot_resume_its_file(tmp_path,
                                                                                            tiny_model_dir):
    """Issue 59, item 4: a plugin subclassing LocalBackend (halving log-probs, no kind of its own) signed
    `backend:local`; resuming an OUT of `--backend local` with `--backend dup` was accepted on main (one signature in
    the file, mixed numbers). The signature names the backend that computed: its registered name and distribution."""
    (tmp_path / "plugin").mkdir()
    folder = _plugin_folder(tmp_path / "plugin", "reg_plugin_dup", HALVING_PLUGIN, "styleeval.backends",
                            "dup = reg_plugin_dup:DupA")
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    row = '{{"source": "the food was cold.", "rewrite": "The food was warm {}.", "style": "positive"}}\n'
    source.write_text(row.format(1) + row.format(2), encoding="utf-8")
    score = ["score", str(source), "--out", str(out), "--model", str(tiny_model_dir), "-q", "--backend"]
    probe = ("import pathlib\nfrom styleeval import LogProb\nfrom styleeval.cli import main\n"
             "rows = (['give me the report now.'], ['Could you send the report?'], 'polite')\n"
             f"local = LogProb({str(tiny_model_dir)!r}, backend='local', progress=False)\n"
             "dup = LogProb(local.backend.model, tokenizer=local.tokenizer, backend='dup', progress=False)\n"
             "print(local.signature.fields['backend'], dup.signature.fields['backend'])\n"
             "print(dup.score(*rows).content[0] == local.score(*rows).content[0] / 2)\n"
             f"print(main({score + ['local']!r}))\n"
             f"written = pathlib.Path({str(out)!r}).read_text()\n"
             f"pathlib.Path({str(source)!r}).write_text({row.format(1) + row.format(2) + row.format(3)!r})\n"
             f"print(main({score + ['dup']!r}), pathlib.Path({str(out)!r}).read_text() == written)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                          env=_plugin_env(folder))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == ["local dup@reg_plugin_dup-0.1", "True", "0", "2 True"]  # nothing added
    assert (f"styleeval score: error: {out} was written with different settings: row 0 has backend 'local', this run "
            "asks for 'dup@reg_plugin_dup-0.1'") in done.stderr
