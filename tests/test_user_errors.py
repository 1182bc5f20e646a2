"""Errors a user can act on, and meta-evaluation runs that never lose finished work or trust a corrupt cache."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from styleeval.cli import main
from styleeval.errors import UserError
from styleeval.metaeval import run_metaeval
from styleeval.metaeval.data import RatedData
from styleeval.scoring import ScoresCache, score_dataset

ROOT = Path(__file__).resolve().parents[1]


def _rows(name: str, n: int = 12) -> list[dict]:
    return [
        {"id": f"{name}/{i}", "dataset": name, "task": "formality", "target_style": "formal", "source_id": str(i // 3),
         "source": f"give me report {i} now", "rewrite": f"Could you send report {i}?" + " please" * (i % 4),
         "reference": None, "system": f"sys{i % 3}", "is_reference_rewrite": False,
         "content_mean": float(i % 5), "style_mean": None, "fluency_mean": None}
        for i in range(n)
    ]


# -- 7. model loading: one line naming the model and what to do ----------------------------------------------------
def test_cli_model_error_is_one_line(tmp_path, capsys):
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps({"source": "a", "rewrite": "b", "style": "polite"}) + "\n", encoding="utf-8")
    assert main(["score", str(inp), "--out", str(tmp_path / "o.jsonl"), "--model", str(tmp_path / "nope"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"cannot load model '{tmp_path / 'nope'}': no such local folder" in err
    assert main(["score", str(inp), "--out", str(tmp_path / "o.jsonl"), "--model", "someone/not-a-model", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot load model 'someone/not-a-model'" in err and "Hub cannot be reached" in err  # tests run offline


def test_metaeval_notes_a_model_error_once(tmp_path):
    corpora = {"a": _rows("a"), "b": _rows("b")}
    notes: list[str] = []
    result = run_metaeval(["a", "b"], ["s_bleu", f"logprob_content:model={tmp_path / 'nope'}"],
                          loader=corpora.__getitem__, n_boot=0, log=notes.append)
    model_notes = [n for n in notes if "cannot load model" in n]
    assert len(model_notes) == 1 and "skipped metric logprob_content on every dataset" in model_notes[0]
    assert {(d, m) for d, m, _ in result.missing} == {("a", "logprob_content"), ("b", "logprob_content")}
    assert set(result.correlations.metric) == {"s_bleu"}


def test_a_metric_that_could_not_be_computed_fails_the_command_unless_allowed(tmp_path, capsys):
    """evaluate and metaeval write the report, then name the metric that is missing and exit 1 (0 with
    --allow-missing): a default metric whose weights cannot be had is never dropped silently."""
    nope = f"logprob_content:model={tmp_path / 'nope'}"
    inp = tmp_path / "outputs.jsonl"
    inp.write_text("".join(json.dumps({"source": f"give me report {i // 2}", "rewrite": f"Send report {i}, please.",
                                       "system": f"sys{i % 2}", "source_id": str(i // 2)}) + "\n"
                           for i in range(8)), encoding="utf-8")
    evaluate = ["evaluate", str(inp), "--style", "formal", "--metrics", f"s_chrf,{nope}", "--no-progress",
                "--no-plots"]
    assert main([*evaluate, "--out", str(tmp_path / "e1")]) == 1
    err = capsys.readouterr().err
    assert "styleeval evaluate: error: 1 requested metric could not be computed (logprob_content: cannot load " \
           "model" in err and "--allow-missing" in err
    report = json.loads((tmp_path / "e1" / "report.json").read_text())
    assert set(report["signatures"]) == {"s_chrf"} and list(report["not_computed"]) == ["logprob_content"]
    assert main([*evaluate, "--out", str(tmp_path / "e2"), "--allow-missing"]) == 0
    assert "error" not in capsys.readouterr().err
    assert main([*evaluate, "--out", str(tmp_path / "e3"), "--sort-by", "s_chfr"]) == 2  # named as the flag is
    assert "sort_by (--sort-by) 's_chfr' is not among the metrics" in capsys.readouterr().err

    metaeval = ["metaeval", "--datasets", "lai_formality", "--metrics", f"s_bleu,{nope}", "--bootstrap", "0",
                "--no-plots", "--no-progress", "--cache-dir", str(tmp_path / "cache")]
    assert main([*metaeval, "--out", str(tmp_path / "m1")]) == 1
    err = capsys.readouterr().err
    assert "styleeval metaeval: error: 1 requested metric could not be computed (logprob_content: " in err
    assert (tmp_path / "m1" / "report.md").exists()
    assert main([*metaeval, "--out", str(tmp_path / "m2"), "--allow-missing"]) == 0


def test_the_advice_of_a_model_error_works_on_every_command(tmp_path, monkeypatch, capsys):
    """Without weights, every command's error line advises `--model tiny-random`; the advice, taken as printed,
    works on each of them (default metrics are called default, and their common cause is given once)."""
    import re

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "styleeval"))
    inp = tmp_path / "outputs.jsonl"
    inp.write_text("".join(json.dumps({"source": f"give me report {i // 2}", "rewrite": f"Send report {i}, please.",
                                       "system": f"sys{i % 2}", "style": "formal"}) + "\n" for i in range(4)),
                   encoding="utf-8")
    commands = {
        "score": ["score", str(inp), "--model", "1b", "-q", "--out", str(tmp_path / "s.jsonl")],
        "evaluate": ["evaluate", str(inp), "--no-progress", "--no-plots", "--out", str(tmp_path / "e")],
        "metaeval": ["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleu,logprob_content", "--no-plots",
                     "--bootstrap", "0", "--no-progress", "--cache-dir", str(tmp_path / "c"), "--out",
                     str(tmp_path / "m")],
    }
    for name, argv in commands.items():
        assert main(argv) in (1, 2), name
        err = capsys.readouterr().err
        line = [x for x in err.splitlines() if x.startswith(f"styleeval {name}: error:")]
        assert len(line) == 1, (name, err)
        advice = re.search(r"to try the pipeline without weights: (--model \S+), model=", line[0])
        assert advice, (name, line[0])
        if name == "evaluate":  # the defaults are called so, and their one cause is given once
            assert "4 default metrics could not be computed (logprob_content, logprob_style, autorater_meaning, " \
                   "autorater_style: cannot load model" in line[0]
            assert line[0].count("HF_HUB_OFFLINE is set") == 1
        flag, value = advice.group(1).split()
        retry = [a for a in argv if a != "1b"] if name == "score" else argv
        if name == "score":
            retry.remove("--model")
        assert main([*retry, flag, value]) == 0, (name, capsys.readouterr().err)
        capsys.readouterr()
    report = json.loads((tmp_path / "e" / "report.json").read_text())
    assert all("tiny-random" in report["signatures"][m] for m in ("logprob_content", "autorater_style"))
    assert main(["metaeval", "--datasets", "lai_formality", "--model", "tiny-random", "--out",
                 str(tmp_path / "m2")]) == 2  # the default metrics take no model: the option would do nothing
    assert "none of the metrics is one" in capsys.readouterr().err
    assert main(["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleu,logprob_content:model=1b", "--model",
                 "tiny-random", "--out", str(tmp_path / "m3")]) == 2  # the README's spec names its model: say so
    assert ("--model tiny-random applies to no metric: logprob_content:model=1b names its own model; write "
            "model=tiny-random in that spec (e.g. logprob_content:model=tiny-random)") in capsys.readouterr().err


def test_evaluate_module_model_error(tmp_path):
    import evaluate

    module = evaluate.load(str(ROOT / "metrics" / "logprob_style"))
    with pytest.raises(ValueError, match="cannot load model .*no such local folder"):
        module.compute(predictions=["b"], sources=["a"], styles="polite", model_id=str(tmp_path / "nope"))


# -- 9. evaluate modules: misspelled or mistyped arguments --------------------------------------------------------
@pytest.mark.parametrize("module", ["logprob_style", "llm_autorater"])
def test_evaluate_module_arguments_are_checked(module, tiny_model_dir):
    import evaluate

    metric = evaluate.load(str(ROOT / "metrics" / module))
    common = {"predictions": ["b"], "sources": ["a"], "styles": "polite", "model_id": str(tiny_model_dir)}
    with pytest.raises(ValueError, match=r"unknown argument 'devise' \(did you mean 'device'\?\); valid arguments"):
        metric.compute(**common, devise="cpu")
    with pytest.raises(ValueError, match=r"dtype must be str or None, got int 16"):  # None: not given
        metric.compute(**common, dtype=16)
    with pytest.raises(ValueError, match="takes no references"):
        metric.compute(**common, references=["x"])


def test_logprob_module_rejects_string_numbers_and_accepts_logprob_options(tiny_model_dir):
    import evaluate

    metric = evaluate.load(str(ROOT / "metrics" / "logprob_style"))
    common = {"predictions": ["b"], "sources": ["a"], "styles": "polite", "model_id": str(tiny_model_dir),
              "device": "cpu"}
    with pytest.raises(ValueError, match="batch_tokens must be int or None, got str '64'"):
        metric.compute(**common, batch_tokens="64")
    out = metric.compute(**common, batch_tokens=64, on_overflow="skip", end_of_turn=False, revision=None)
    assert "eot:no" in out["signature"]


# -- 5. metaeval: corrupt cache entries are recomputed, never trusted or fatal ------------------------------------
@pytest.mark.parametrize("payload", ['{"signature": "s_bleu|x", "scores": ["a", "b"]}', "[1, 2]", "not json",
                                     '{"signature": "SIG", "scores": [true, 1.0, 2.0]}'])
def test_corrupt_cache_entry_is_recomputed(tmp_path, payload):
    from styleeval.metrics import get_metric

    data = RatedData.from_rows(_rows("a", 3), "a")
    metric = get_metric("s_chrf")
    cache = ScoresCache(tmp_path)
    good = score_dataset(metric, data, cache)
    path = cache.path(metric.signature, data.fingerprint)
    path.write_text(payload.replace("SIG", metric.signature), encoding="utf-8")
    again = score_dataset(metric, data, cache)
    assert np.allclose(again, good) and cache.misses == 2
    assert json.loads(path.read_text(encoding="utf-8"))["scores"] == pytest.approx(list(good))


# -- 6. metaeval LLM metrics: kill -9 loses at most the chunk in flight -----------------------------------------
KILL_SCRIPT = """
import json, sys
from styleeval.scoring import ScoresCache, score_dataset
from styleeval.metaeval.data import RatedData
from styleeval.metrics import get_metric
rows = json.loads(open(sys.argv[1]).read())
data = RatedData.from_rows(rows, "toy")
metric = get_metric("logprob_content:model=" + sys.argv[2])
score_dataset(metric, data, ScoresCache(sys.argv[3]), flush_seconds=1e-9, min_chunk_rows=1)
"""


def test_kill_during_metaeval_logprob_loses_at_most_the_chunk_in_flight(tmp_path, tiny_model_dir, monkeypatch):
    from styleeval.logprob import LogProb
    from styleeval.metrics import get_metric

    rows = _rows("toy", 60)
    (tmp_path / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    cache_dir = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(tmp_path / "rows.json"), str(tiny_model_dir),
                             str(cache_dir)], env={**os.environ, "TQDM_DISABLE": "1"})
    deadline = time.time() + 240
    partial: list[Path] = []
    while time.time() < deadline and proc.poll() is None:
        partial = list(cache_dir.rglob("*.partial.jsonl"))
        if partial and len(partial[0].read_text().splitlines()) >= 5:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert partial, "the run saved nothing before it was killed"
    saved = sum(len(json.loads(line)["rows"]) for line in partial[0].read_text().splitlines() if line.strip())
    assert 5 <= saved < 60

    calls: list[int] = []
    original = LogProb.score
    monkeypatch.setattr(LogProb, "score", lambda self, s, r, st, **kw: calls.append(len(s)) or original(self, s, r,
                                                                                                         st, **kw))
    data = RatedData.from_rows(rows, "toy")
    metric = get_metric(f"logprob_content:model={tiny_model_dir}")
    resumed = score_dataset(metric, data, ScoresCache(cache_dir))
    assert sum(calls) == 60 - saved  # only the rows the killed run had not saved
    fresh = LogProb(str(tiny_model_dir), device="cpu", progress=False).score(
        data.sources, data.rewrites, data.styles).content
    assert resumed == pytest.approx(fresh, abs=1e-5)
    assert not list(cache_dir.rglob("*.partial.jsonl"))  # finished: the full entry replaces the partial file


# -- 11. two configurations of one metric in one run ------------------------------------------------------------
def test_alias_compares_two_configurations(tmp_path, tiny_model_dir):
    from styleeval.metaeval import write_report

    corpora = {"a": _rows("a")}
    result = run_metaeval(["a"], [f"logprob_content:model={tiny_model_dir}:as=LP-default",
                                  f"logprob_content:model={tiny_model_dir}:variant=authors:as=LP-authors"],
                          loader=corpora.__getitem__, n_boot=0)
    assert result.metrics == ["LP-default", "LP-authors"]
    assert "variant:default" in result.signatures["LP-default"]
    assert "variant:authors" in result.signatures["LP-authors"]
    paths = write_report(result, tmp_path / "out", plots=False)
    report = paths["report"].read_text(encoding="utf-8")
    assert "- LP-authors: `logprob_content|" in report
    with pytest.raises(ValueError, match="give each configuration its own name with as=NAME"):
        run_metaeval(["a"], ["s_bleu", "s_bleu"], loader=corpora.__getitem__, n_boot=0)


# -- 10. scripts with a wrong data directory ------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["scripts/reproduce_paper.py"], ["scripts/build_datasets.py"],
                                     ["-m", "styleeval.cli", "build-datasets"]])
def test_scripts_name_the_missing_data_directory(tmp_path, command):
    proc = subprocess.run([sys.executable, *command, "--data-dir", str(tmp_path / "nowhere")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a directory" in lines[0] and str(tmp_path / "nowhere") in lines[0]


BLOCK = """
import importlib.util, runpy, sys
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in {blocked!r} else real(name, *a)
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _without(blocked: set[str], argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` (a script and its arguments) run as if the ``blocked`` packages were not installed."""
    return subprocess.run([sys.executable, "-c", BLOCK.format(blocked=blocked, argv=argv)], capture_output=True,
                          text=True, timeout=180, cwd=ROOT)


def test_a_missing_extra_is_one_line_before_any_work(monkeypatch, tmp_path, capsys, data_dir):
    """Without sentence-transformers (or gradio), every entry point names the package and the extra before it
    reads any data: the data directory here does not even exist, and that is not what is reported."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "sentence_transformers" else real(name, *a))
    nowhere = str(tmp_path / "nowhere")
    wanted = "needs the sentence-transformers package, which is not installed: pip install 'styleeval[embeddings]'"
    for argv in (["metaeval", "--metrics", "s_bleu,s_cosine:model=minilm-offline", "--data-dir", nowhere, "--out",
                  str(tmp_path / "m")],
                 ["evaluate", nowhere + ".csv", "--metrics", "r_cosine", "--style", "formal", "--out",
                  str(tmp_path / "e")],
                 ["stel", "--method", "char3gram,embedding", "--data-dir", nowhere, "--out", str(tmp_path / "s")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and wanted in err and "Traceback" not in err, (argv, err)
    with pytest.raises(ValueError, match="s_cosine needs the sentence-transformers package"):
        from styleeval.metrics import get_metric

        get_metric("s_cosine")

    script = _without({"sentence_transformers"}, [str(ROOT / "scripts" / "reproduce_paper.py"), "--data-dir",
                                                  str(data_dir), "--cache-dir",
                                                  str(tmp_path / "cache")])
    assert script.returncode == 2 and script.stderr.strip().splitlines() == [
        f"styleeval reproduce-paper: error: metric 's_cosine:model=sentence-transformers/LaBSE': s_cosine {wanted} "
        "(or pip install sentence-transformers)"]
    gradio = "the Space needs the gradio package, which is not installed: pip install 'styleeval[space]' (or pip " \
             "install gradio)"
    space = _without({"gradio"}, [str(ROOT / "spaces" / "style_eval_demo" / "app.py")])
    assert space.returncode == 1 and space.stderr.strip().splitlines() == [f"spaces/style_eval_demo/app.py: {gradio}"]
    space = _without({"gradio"}, [str(ROOT / "src" / "styleeval" / "cli.py"), "space", "--model", "tiny-random"])
    assert space.returncode == 2 and space.stderr.strip().splitlines() == [f"styleeval space: error: {gradio}"]


def test_build_datasets_that_builds_nothing_fails_and_says_what_to_set(tmp_path):
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_datasets.py"), "--data-dir", str(empty),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "nothing was built" in proc.stderr and "--data-dir" in proc.stderr and "STYLEEVAL_DATA_DIR" in proc.stderr


def test_reproduce_paper_offline_checks_the_cache_before_any_load(tmp_path, tiny_model_dir):
    from styleeval.metaeval import paper as script

    assert script.CONTENT_METRICS["LLM-as-A 3b"] == "autorater_meaning:model=3b:mode=paper"  # implemented now
    assert script.STYLE_METRICS["LLM-as-A 8b"] == "autorater_style:model=8b:mode=paper"
    assert script.needs_weights("logprob_content:model=8b").startswith("needs weights (meta-llama/Llama-3.1-8B")
    assert script.needs_weights(f"autorater_meaning:model={tiny_model_dir}") is None  # a local folder
    assert script.needs_weights("s_bleu") is None


def test_help_texts_cover_every_option_and_spec(capsys):
    from styleeval.cli import main

    for command, needles in (("metaeval", ["the human ratings metrics are compared with", "lai:<score>",
                                           "precomputed:file=FILE:column=COLUMN", "--leaderboard"]),
                             ("stel", ["STEL-or-content"]), ("evaluate", ["--system-from-filename"])):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for needle in needles:
            assert needle in text, (command, needle)


def test_tiny_random_preset_runs_the_pipeline_offline(tmp_path, monkeypatch):
    """`--model tiny-random`: built on this machine, nothing downloaded; the real code paths, meaningless numbers."""
    import math

    from styleeval import LogProb
    from styleeval.backends.local import LocalBackend

    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert LocalBackend.missing_weights("tiny-random") is None
    scores = LogProb("tiny-random", progress=False).score(["give me the report."], ["Could you send the report?"],
                                                          "polite")
    assert math.isfinite(scores[0]["content"]) and "tiny-random@local-" in scores.signature
    assert (tmp_path / "tiny-random" / "config.json").is_file()


def test_weights_that_cannot_be_had_fail_in_seconds_with_one_line(monkeypatch, tmp_path):
    """A Hub id not in the cache is decided once per process, with at most one request bounded by the probe's 1.5 s
    (no clock: the requests are counted): offline (none), unreachable, or gated (where to accept the licence, and an
    ungated preset), instead of the Hub client's minute of retries."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import huggingface_hub

    from styleeval import hub, models

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setattr(hub, "_REACHABLE", {})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    probes: list[float | None] = []  # each metadata request huggingface_hub was asked for: its timeout
    real = huggingface_hub.get_hf_file_metadata
    monkeypatch.setattr(huggingface_hub, "get_hf_file_metadata",
                        lambda *a, **k: probes.append(k.get("timeout")) or real(*a, **k))
    with pytest.raises(models.ModelLoadError, match=r"not in the local cache and the Hub cannot be reached \(HF_HUB_OFFLINE is set\)"):
        models.load_model("someone/some-model")
    assert probes == [] and isinstance(hub._REACHABLE["someone/some-model"], models.ModelLoadError)  # no request
    heads: list[str] = []

    class Gated(BaseHTTPRequestHandler):  # as the Hub answers a client not logged in (tests/test_hub.py: more)
        def do_HEAD(self):
            heads.append(self.path)
            self.send_response(401 if "meta-llama" in self.path else 404)
            if "meta-llama" in self.path:
                self.send_header("X-Error-Code", "GatedRepo")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gated)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # read when it was imported
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        for _ in range(2):  # the second time, decided already: no request
            with pytest.raises(models.ModelLoadError, match=r"it is gated: accept its licence at .*Llama-3.2-1B-"
                                                            r"Instruct.*--model qwen-1.5b \(Qwen/Qwen2.5-1.5B-Instruct\)"):
                models.load_model("1b")
            with pytest.raises(models.ModelLoadError, match="not found on the Hub"):
                models.load_tokenizer("someone/missing")
        assert probes == [hub.PROBE_SECONDS] * 2 and hub.PROBE_SECONDS == 1.5  # one bounded request per model
        assert heads == ["/meta-llama/Llama-3.2-1B-Instruct/resolve/main/config.json",
                         "/someone/missing/resolve/main/config.json"]  # and no retry
    finally:
        server.shutdown()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")  # listening, never answering
    with pytest.raises(models.ModelLoadError, match=r"the Hub cannot be reached .*no answer within 1.5 s, ReadTimeout"):
        models.load_model("someone/other-model")


@pytest.mark.parametrize("command", ["score", "autorate"])
def test_a_file_command_without_weights_fails_before_importing_torch(tmp_path, command):
    """The whole command (`styleeval score t.csv --model 1b --out t.jsonl` offline, nothing cached) ends with one
    line at once: the parser declares only the command it runs, and the local backend decides the weights before
    torch and transformers are imported (they cost ~1.3 s and ~2 s of the old 4.8 s). No clock: the heavy modules
    the process imported are listed instead."""
    rows = tmp_path / "t.csv"
    rows.write_text("source,rewrite,style\nhello there,hi there,formal\n", encoding="utf-8")
    probe = ("import sys; from styleeval.cli import main; rc = main(sys.argv[1:]); "
             "print(rc, sorted(m for m in ('torch', 'transformers', 'pandas', 'scipy', 'datasets', 'evaluate', 'sklearn', "
             "'matplotlib', 'tokenizers', 'sacrebleu', 'pyarrow') if m in sys.modules))")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", probe, command, str(rows), "--model", "1b", "--out",
                           str(tmp_path / "t.jsonl")], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["2", "[]"], done.stdout + done.stderr  # what made it slow, never imported
    assert done.stderr.strip().splitlines() == [
        f"styleeval {command}: error: cannot load model 'meta-llama/Llama-3.2-1B-Instruct': not in the local cache "
        "and the Hub cannot be reached (HF_HUB_OFFLINE is set): download it once with network access (unset "
        "HF_HUB_OFFLINE), or pass a local path (or the preset tiny-random to try the pipeline without weights: "
        '--model tiny-random, model=tiny-random in a metric spec, LogProb("tiny-random") in Python)']
    assert not (tmp_path / "t.jsonl").exists() or (tmp_path / "t.jsonl").stat().st_size == 0


def test_a_mistyped_preset_with_the_hub_unreachable_is_one_error_line_without_retries(tmp_path):
    """`styleeval evaluate one.csv --metrics logprob_content --model tiny-randm` online (HF_HUB_OFFLINE not set) with
    the Hub unreachable (HF_ENDPOINT: a closed local port) took a minute: the probe skipped a name without an owner,
    and transformers asked the Hub with huggingface_hub's retries (12 "Retrying in" lines). Now: exit 2, one error
    line naming the model, that the Hub cannot be reached and the preset it is close to, no offline hint; the
    rewrite that is empty is a warning of its own, not a cause of the error."""
    from _servers import free_port

    rows = tmp_path / "one.csv"
    rows.write_text("system,source,rewrite,style\n" + "".join(
        f"A,give me report {i} now.,{'' if i == 3 else f'Could you send report {i}?'},polite\n" for i in range(12)),
        encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    cli = "import sys; from styleeval.cli import main; sys.exit(main(sys.argv[1:]))"
    want = ("cannot load model 'tiny-randm' (did you mean the preset tiny-random?): not in the local cache and the Hub "
            f"cannot be reached ({env['HF_ENDPOINT']}: the connection failed, ConnectError): download it once with "
            "network access, or pass a local path (or the preset tiny-random to try the pipeline without weights: "
            '--model tiny-random, model=tiny-random in a metric spec, LogProb("tiny-random") in Python)')
    for command in (["score", str(rows), "--out", str(tmp_path / "t.jsonl")],
                    ["evaluate", str(rows), "--metrics", "logprob_content", "--out", str(tmp_path / "z11"), "-q"]):
        done = subprocess.run([sys.executable, "-c", cli, *command, "--model", "tiny-randm"], capture_output=True,
                              text=True, env=env, timeout=120)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert "Retry" not in done.stderr and "HF_HUB_OFFLINE" not in done.stderr, done.stderr
        if command[0] == "score":
            assert lines == [f"styleeval score: error: {want}"]
        else:  # the empty rewrite: warned, and not quoted as why no metric was computed
            assert lines == [
                f"styleeval evaluate: warning: 1 of 12 rewrites is empty ({rows}, line 5): scored as given, an empty "
                "text (LogProb scores only the end-of-turn token, BLEU and chrF give 0); give the text where it was "
                "lost, or leave it where the system really wrote nothing",
                f"styleeval evaluate: error: no metric could be computed: logprob_content: not computed ({want})"]


def test_a_load_error_says_unset_the_offline_switch_only_where_one_is_set(monkeypatch):
    """transformers' own "cannot connect" (after the probe let a name through) advises unsetting HF_HUB_OFFLINE (or
    TRANSFORMERS_OFFLINE) only where it is set, and names a close preset."""
    import huggingface_hub.constants

    from styleeval import models

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    failed = OSError("We couldn't connect to 'https://huggingface.co' to load the files")
    online = str(models.explain_load_error("tiny-randm", failed))
    assert online == ("cannot load model 'tiny-randm' (did you mean the preset tiny-random?): not in the local cache "
                      "and the Hub cannot be reached: download it once with network access, or pass a local path (or "
                      "the preset tiny-random to try the pipeline without weights: --model tiny-random, "
                      'model=tiny-random in a metric spec, LogProb("tiny-random") in Python)')
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert "download it once with network access (unset TRANSFORMERS_OFFLINE), or pass" in \
        str(models.explain_load_error("someone/model", failed))


def test_the_parser_declares_every_command_for_help_and_only_the_one_it_runs(capsys):
    """`build_parser()` declares every command (docs, tests); `main` declares the one it runs and lists the others
    by their summary, so `styleeval --help` is unchanged."""
    from styleeval.cli import COMMANDS, build_parser

    full = build_parser()
    choices = full._subparsers._group_actions[0].choices
    assert list(choices) == list(COMMANDS) and all(p._actions[1:] for p in choices.values())
    light = build_parser(["merge"])._subparsers._group_actions[0].choices
    assert [n for n, p in light.items() if len(p._actions) > 1] == ["merge"]
    assert full.format_help() == build_parser([]).format_help()
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "score" in capsys.readouterr().out


# -- issue 38, item 9: a bug is not a user error -------------------------------------------------------------------
BUGGY_METRIC = r'''
import numpy as np
from styleeval.errors import UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature


@register("buggy")
class Buggy(Metric):
    """A metric with a bug: numpy raises ValueError (shapes that do not broadcast)."""

    name = "buggy"
    inputs = "source"

    @property
    def signature(self):
        return Signature.build("buggy", {"v": "1"})

    def _score(self, sources, rewrites, references, styles):
        return list(np.ones(len(sources)) + np.ones(len(sources) + 1))


@register("refusing")
class Refusing(Buggy):
    """A metric that refuses its input (a user error)."""

    name = "refusing"

    def _score(self, sources, rewrites, references, styles):
        raise UserError("refusing: these rows are not mine to score")
'''


@pytest.fixture(scope="module")
def buggy_metrics(tmp_path_factory):
    """The module registering ``buggy`` and ``refusing`` (imported here once; run by the subprocess too)."""
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "buggy_plugin.py").write_text(BUGGY_METRIC, encoding="utf-8")
    sys.path.insert(0, str(folder))
    import buggy_plugin

    yield folder, buggy_plugin
    from styleeval.metrics.registry import REGISTRY

    sys.path.remove(str(folder))
    sys.modules.pop("buggy_plugin", None)
    for name in ("buggy", "refusing"):
        REGISTRY.unregister(name)


def test_an_internal_value_error_in_a_metric_keeps_its_traceback(tmp_path, buggy_metrics):
    """numpy's ValueError inside a metric is a bug: evaluate shows its traceback (before: noted as "not computed",
    the run went on and the bug vanished), metaeval too; a metric refusing its input (UserError) is still noted as
    not computed, in one line."""
    from styleeval.systems.evaluation import evaluate_systems

    folder, plugin = buggy_metrics
    rows = [{"system": s, "source": f"source {i}", "rewrite": f"{s} rewrite {i}", "style": "formal"}
            for s in ("A", "B") for i in range(4)]
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        evaluate_systems(rows, [plugin.Buggy(), "s_bleu"])
    report = evaluate_systems(rows, [plugin.Refusing(), "s_bleu"])
    assert report.not_computed == {"refusing": "refusing: these rows are not mine to score"}
    with pytest.raises(ValueError, match="operands could not be broadcast"):
        run_metaeval(["a"], [plugin.Buggy()], loader={"a": _rows("a")}.__getitem__, n_boot=0)
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    command = ("import sys, buggy_plugin; from styleeval.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", command, "evaluate", str(inp), "--metrics", "s_bleu,buggy", "--out",
                           str(tmp_path / "report"), "--no-plots", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1 and "Traceback (most recent call last)" in proc.stderr, proc.stderr
    assert "ValueError: operands could not be broadcast" in proc.stderr and "not computed" not in proc.stderr
    proc = subprocess.run([sys.executable, "-c", command, "evaluate", str(inp), "--metrics", "s_bleu,refusing",
                           "--out", str(tmp_path / "report"), "--no-plots", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "note: refusing: not computed (refusing: these rows are not mine to score)" in proc.stderr


def test_user_errors_are_one_class_and_still_value_errors():
    """Every error styleeval raises for input it refuses derives from UserError (a ValueError, for callers that
    catch ValueError); the command line catches UserError, never ValueError."""
    import ast

    from styleeval.corpora import CorpusError
    from styleeval.errors import RowError, UserError
    from styleeval.extras import MissingExtraError
    from styleeval.hub import ModelLoadError
    from styleeval.scoring.score import ShardError

    for cls in (RowError, CorpusError, MissingExtraError, ModelLoadError, ShardError):
        assert issubclass(cls, UserError) and issubclass(cls, ValueError)
    for path in (ROOT / "src" / "styleeval" / "cli.py", ROOT / "src" / "styleeval" / "systems" / "evaluation.py"):
        caught = {ast.unparse(node.type) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.ExceptHandler) and node.type is not None}
        assert not any("ValueError" in c.replace("(TypeError, ValueError)", "") for c in caught), (path, caught)


@pytest.mark.parametrize("argv, message", [
    (["metaeval", "--leaderboard", "--leaderboard-trials", "-3"], "argument --leaderboard-trials: must be a positive"),
    (["metaeval", "--leaderboard", "--leaderboard-trials", "0"], "argument --leaderboard-trials: must be a positive"),
    (["metaeval", "--leaderboard-bootstrap", "-7"], "argument --leaderboard-bootstrap: must be a non-negative"),
    (["metaeval", "--seed", "-1"], "argument --seed: must be a non-negative integer"),
    (["evaluate", "IN", "--seed", "-1"], "argument --seed: must be a non-negative integer"),
    (["evaluate", "IN", "--alpha", "1.5"], "argument --alpha: must be in (0, 1), got 1.5"),
    (["evaluate", "IN", "--alpha", "0"], "argument --alpha: must be in (0, 1), got 0"),
    (["evaluate", "IN", "--alpha", "nan"], "argument --alpha: must be in (0, 1), got nan"),
])
def test_settings_that_would_make_p_values_wrong_are_refused(tmp_path, capsys, argv, message):
    """--leaderboard-trials -3 gave p = -0.5 (every pair significant), -1 a ZeroDivisionError, 0 p = 1 everywhere;
    a negative seed numpy's traceback."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_python_api_refuses_the_same_settings_before_any_work():
    from styleeval.metaeval.leaderboard import build_leaderboard
    from styleeval.stats import TestSettings
    from styleeval.systems import evaluate_systems

    rows = [{"source": "a b", "rewrite": "a c", "style": "formal", "system": "A"}]
    for call, message in ((lambda: build_leaderboard([], trials=-3), "trials must be a positive integer, got -3"),
                          (lambda: build_leaderboard([], n_boot=-7), "n_boot (bootstrap resamples) must be"),
                          (lambda: evaluate_systems(rows, ["s_bleu"], settings=TestSettings(seed=-1)),
                           "seed must be a non-negative"),
                          (lambda: evaluate_systems(rows, ["s_bleu"], settings=TestSettings(trials=0)),
                           "trials must be a positive"),
                          (lambda: run_metaeval(["lai_formality"], n_boot=-1), "n_boot (bootstrap resamples)")):
        with pytest.raises(UserError, match=re.escape(message)):
            call()


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "{csv}", "--metrics", "s_bleu", "--encoding", "utf-16", "--out", "{tmp}/r"],
     "line 1: not valid utf-16 (UTF-16 stream does not start with BOM)"),
    (["build-datasets", "--out", "{csv}/x"], "is a file, not a folder; choose another --out"),
    (["evaluate", "{csv}", "--metrics", "s_meteor:alpha=5", "--out", "{tmp}/r"], "alpha must be in [0, 1]"),
    (["evaluate", "{csv}", "--metrics", "s_meteor:beta=inf", "--out", "{tmp}/r"], "beta must be a finite number"),
    (["evaluate", "{csv}", "--metrics", "s_meteor:gamma=-1", "--out", "{tmp}/r"], "gamma must be in [0, 1]"),
])
def test_one_line_where_a_traceback_was(tmp_path, capsys, argv, message):
    """A UTF-8 file read as UTF-16 (a plain UnicodeError, not a UnicodeDecodeError), --out under a file, and METEOR
    parameters that give scores above 1 or NaN for every row."""
    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("source,rewrite,style\na b,a c,formal\n", encoding="utf-8")
    argv = [a.format(csv=csv_path, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
