"""Progress on long work: on where a person watches (a terminal), off when asked, the same in Python and the CLI."""

from __future__ import annotations

import io
import sys
from concurrent.futures import ThreadPoolExecutor

from styleeval import progress

ROWS = [{"system": s, "source": f"give me report {i}", "rewrite": f"{s} report {i}", "style": "formal"}
        for s in ("A", "B") for i in range(4)]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_in_a_terminal_off_elsewhere_and_when_asked(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.enabled(None) and not progress.enabled(False)
    with progress.stage("loading a model"):
        pass
    assert sys.stderr.getvalue().startswith("loading a model ...\nloading a model: ")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a log file, a pipe: no bars unless asked
    assert not progress.enabled(None) and progress.enabled(True)


def test_evaluate_systems_shows_each_stage_where_a_person_watches(monkeypatch):
    from styleeval.systems import evaluate_systems

    for stream, expected in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        evaluate_systems(ROWS, ["s_chrf", "s_bleu"])  # progress=None: a terminal decides
        text = stream.getvalue()
        assert ("metrics" in text and "comparing systems" in text) is expected, text
    monkeypatch.setattr(sys, "stderr", _Terminal())
    evaluate_systems(ROWS, ["s_chrf"], progress=False)
    assert sys.stderr.getvalue() == ""


def test_stel_says_what_it_loads_and_the_cli_can_be_quiet(monkeypatch, tmp_path, capsys):
    from styleeval import stel
    from styleeval.cli import main

    monkeypatch.setattr(sys, "stderr", _Terminal())
    stel.evaluate("embedding:minilm-offline", component="contraction")
    text = sys.stderr.getvalue()
    assert "loading sentence-transformers model minilm-offline ..." in text and "Batches" in text
    monkeypatch.undo()
    assert main(["stel", "--method", "char3gram", "--component", "contraction", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    assert "loading" not in capsys.readouterr().err


def test_no_progress_silences_the_libraries_bars_too(tmp_path, tiny_model_dir):
    """`evaluate --no-progress` still printed transformers' "Loading weights" bar (only -q of the file commands
    silenced it): a fresh process, so that the model is really loaded."""
    import os
    import subprocess

    table = tmp_path / "in.csv"
    table.write_text("source,rewrite,style,system\na b c,a b d,formal,A\na b c,a x c,formal,B\n", encoding="utf-8")
    argv = [sys.executable, "-m", "styleeval.cli", "evaluate", str(table), "--metrics",
            f"logprob_content:model={tiny_model_dir}", "--no-plots", "--out"]
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}  # set by in-process -q runs
    env["PYTHONIOENCODING"] = "utf-8"
    env["OMP_NUM_THREADS"] = "1"  # the two processes run side by side: one thread each
    with ThreadPoolExecutor(2) as pool:  # two processes that share nothing: side by side (~half the wall time)
        loud, quiet = pool.map(lambda more: subprocess.run([*argv, *more], capture_output=True, text=True, env=env,
                                                           timeout=300),
                               [[str(tmp_path / "a")], [str(tmp_path / "b"), "--no-progress"]])
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    assert "Loading weights" not in quiet.stderr and "it/s" not in quiet.stderr, quiet.stderr
    # and where stderr is a pipe, without being asked: bars only where a person watches (the README; issue 47)
    assert "Loading weights" not in loud.stderr and "it/s" not in loud.stderr, loud.stderr


def test_logprob_and_the_autorater_show_bars_only_where_stderr_is_a_terminal(monkeypatch, tiny_model_dir):
    """The README: in Python, ``progress=None`` is the default (issue 47: ``LogProb()`` defaulted to ``True``)."""
    import inspect

    from styleeval import Autorater, LogProb

    assert inspect.signature(LogProb).parameters["progress"].default is None
    assert inspect.signature(Autorater).parameters["progress"].default is None
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert LogProb(tiny_model_dir, device="cpu").backend.progress is False
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert LogProb(tiny_model_dir, device="cpu").backend.progress is True
    assert LogProb(tiny_model_dir, device="cpu", progress=False).backend.progress is False


def test_evaluate_and_metaeval_take_q(tmp_path):
    """``-q`` / ``--quiet``, as the other commands take it (issue 47: `evaluate -q` was refused)."""
    from styleeval.cli import build_parser

    for command in ("evaluate", "metaeval", "stel"):
        extra = {"evaluate": ["in.csv"], "metaeval": [], "stel": ["--method", "char3gram"]}[command]
        for flag in ("-q", "--quiet", "--no-progress"):
            args = build_parser([command]).parse_args([command, *extra, "--out", str(tmp_path), flag])
            assert args.no_progress is True


def test_evaluate_says_when_a_metric_loads_its_model_once_and_not_when_quiet(monkeypatch, tmp_path, tiny_model_dir):
    """An LLM metric's model (torch, the weights: seconds) loads under a stage line, as STEL's does, once for the
    metrics that share it (issue 41: `metrics: 0/3` alone on screen for 3.5 s); nothing with progress off."""
    import shutil

    from styleeval.systems import evaluate_systems

    for name, shown in (("watched", True), ("quiet", False)):
        model = shutil.copytree(tiny_model_dir, tmp_path / name)  # a folder no other test has loaded
        monkeypatch.setattr(sys, "stderr", _Terminal())
        evaluate_systems(ROWS, [f"logprob_content:model={model}:device=cpu", f"logprob_style:model={model}:device=cpu",
                                "s_chrf"], progress=None if shown else False)
        lines = [line for line in sys.stderr.getvalue().splitlines() if "loading" in line]
        if shown:
            assert lines[0] == f"loading model {name} (a local folder) ..." and len(lines) == 2, lines
            assert lines[1].startswith(f"loading model {name} (a local folder): ") and lines[1].endswith(" s")
        else:
            assert lines == []


def test_steps_are_a_bar_in_a_terminal_a_line_each_elsewhere_and_nothing_when_quiet(monkeypatch):
    """Issue 47: `metaeval --leaderboard` ran 23 minutes into a log without a line. Where no bar shows (stderr a
    file or a pipe, ``progress=None``), one line per finished step."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    assert list(progress.steps(["a", "b"], desc="scoring", unit="metric", name=str.upper)) == ["a", "b"]
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(",", 1)[0] for line in lines] == ["scoring: 1/2 metrics done (A)", "scoring: 2/2 metrics done (B)"]
    assert all(line.endswith(" s") for line in lines)
    stream.truncate(0)
    assert list(progress.steps(["a"], desc="scoring", unit="metric", progress=False)) == ["a"]
    assert stream.getvalue() == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert list(progress.steps(["a"], desc="scoring", unit="metric")) == ["a"]
    assert "done" not in terminal.getvalue()  # a bar (tqdm's), not the log lines


def test_metaeval_leaderboard_into_a_log_says_each_step_and_quiet_says_none(tmp_path, capsys, data_dir):
    """`styleeval metaeval --leaderboard` with stderr a file: a line per corpus x metric scored, per corpus correlated
    and per leaderboard table; `-q`: none of them."""
    from styleeval.cli import main

    args = ["metaeval", "--datasets", "style_gap_testset", "--metrics", "s_bleu,s_chrf", "--leaderboard",
            "--leaderboard-dimensions", "content", "--leaderboard-trials", "10", "--leaderboard-bootstrap", "0",
            "--bootstrap", "0", "--no-plots", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    steps = [line.rsplit(",", 1)[0] for line in capsys.readouterr().err.splitlines() if " done (" in line]
    assert steps == ["scoring (content): 1/2 corpus x metric pairs done (style_gap_testset, s_bleu)",
                     "scoring (content): 2/2 corpus x metric pairs done (style_gap_testset, s_chrf)",
                     "correlating (content): 1/1 corpus done (style_gap_testset)",
                     "leaderboard: 1/2 tables done (style_gap_testset, content, acc_eq)",
                     "leaderboard: 2/2 tables done (style_gap_testset, content, spearman)"], steps
    assert main([*args, "--out", str(tmp_path / "b"), "-q"]) == 0
    assert " done (" not in capsys.readouterr().err


def test_a_step_line_says_its_unit_in_the_plural_given(capsys):
    """Issue 47 review: "1/2 corpuss done"."""
    from styleeval.progress import steps

    assert list(steps(["a", "b"], desc="correlating", unit="corpus", units="corpora", progress=None)) == ["a", "b"]
    assert list(steps(["c"], desc="scoring", unit="corpus", units="corpora", progress=None)) == ["c"]
    lines = [line.rsplit(",", 1)[0] for line in capsys.readouterr().err.splitlines()]
    assert lines == ["correlating: 1/2 corpora done (a)", "correlating: 2/2 corpora done (b)",
                     "scoring: 1/1 corpus done (c)"]


def test_a_bar_moved_by_hand_starts_where_asked_scales_its_unit_and_leaves_a_line_only_when_asked(monkeypatch):
    """What the row bars of score / autorate (``initial``: the rows already done, ``leave``) and the corpus downloads
    (``unit_scale``: 2.05k B) ask of :func:`styleeval.progress.bar`."""
    shown = {}
    for leave in (False, True):
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        with progress.bar(total=2048, initial=1024, desc="f.zip", unit="B", unit_scale=True, leave=leave,
                          progress=True) as bytes_bar:
            bytes_bar.update(1024)
        shown[leave] = sys.stderr.getvalue()
    assert shown[False].startswith("\rf.zip:  50%|#####     | 1.02k/2.05k [")
    assert shown[False].endswith("\r") and "2.05k/2.05k" not in shown[False]  # the line is cleared when done
    assert shown[True].split("\r")[-1].startswith("f.zip: 100%|##########| 2.05k/2.05k [")
    assert shown[True].endswith("\n")
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress.bar(total=2, desc="rows", progress=False) as rows:
        rows.update(2)
    assert sys.stderr.getvalue() == ""


def test_every_bar_of_the_library_is_made_in_progress_py():
    """One place decides how a bar looks and when it shows: no other module imports tqdm."""
    import ast
    from pathlib import Path

    package = Path(progress.__file__).parent
    importers = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "tqdm" for name in names):
                importers.append(path.relative_to(package).as_posix())
    assert importers == ["progress.py", "progress.py"], importers  # bar and stage's tqdm.write
