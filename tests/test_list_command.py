"""``styleeval list`` (every metric with its options, every corpus, every model preset) and the did-you-mean of
corpus and metric names (issue 47, item 5)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.corpora import SPECS, check_corpus_names, load_corpus, load_rating_corpora, systems_corpora
from styleeval.corpora.configs import corpus_configs
from styleeval.errors import advising
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.hub import PRESETS, TINY_RANDOM
from styleeval.metrics import available_metrics, get_metric
from styleeval.metrics.registry import metric_options, metric_summary


def _listed(capsys, *args: str) -> str:
    assert main(["list", *args]) == 0
    return capsys.readouterr().out


def _entries(text: str) -> dict[str, str]:
    """name -> its text (continuation lines joined) from a listing."""
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if re.match(r"^  \S", line):
            name, _, rest = line.strip().partition(" ")
            out[name] = rest.strip()
        elif line.startswith("    ") and name:
            out[name] += " " + line.strip()
        else:
            name = None
    return out


def test_list_names_every_metric_with_its_label_summary_and_options(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    entries = _entries(_listed(capsys, "metrics"))
    assert set(entries) == {*available_metrics(), "lai:<score>"}
    assert entries["s_bleu"] == ("S-BLEU: sentence BLEU of the rewrite with the source as the only reference. "
                                 "Options: agg, tokenize, lowercase, smooth_method, smooth_value, effective_order.")
    assert entries["r_chrf"].endswith("Options: agg, char_order, word_order, beta, lowercase, whitespace, "
                                      "eps_smoothing.")
    assert entries["s_ter"].endswith("Options: agg, case_sensitive, normalized, no_punct, asian_support.")
    assert entries["s_paper_bleu"].endswith("No options.")
    assert entries["s_pinc"].endswith("Options: n, lowercase.")
    assert "Options: model, backend, variant," in entries["logprob_content"]
    assert entries["lai:<score>"].endswith("Options: data_dir.")
    for name in available_metrics():
        assert metric_summary(name) in entries[name]  # one summary per metric, none empty
        assert len(metric_summary(name)) > 20


@pytest.mark.parametrize("name", ["s_bleu", "r_chrf", "s_ter", "s_pinc", "s_rouge1", "s_masked_bleu", "precomputed"])
def test_every_listed_option_is_one_the_spec_takes(name):
    unknown = re.compile(r"unknown option")
    for option in metric_options(name):
        try:
            get_metric(f"{name}:{option}=zz")
        except ValueError as err:  # a bad value, a missing file... but never an unknown option
            assert not unknown.search(str(err)), (option, err)
    with pytest.raises(ValueError, match="unknown option|needs file= and column="):
        get_metric(f"{name}:not_an_option=1")


def test_list_names_every_corpus_and_model_preset(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    corpora = _entries(_listed(capsys, "corpora"))
    assert list(corpora) == list(SPECS)
    assert corpora["lai_formality"] == ("[rating, systems; Lai] Lai et al. (2022), human evaluation of formality transfer "
                                        "(GYAFC): 8 systems x 80 + 80 rated references.")
    assert corpora["stel"].startswith("[stel; STEL] STEL (Wegmann & Nguyen, 2021)")
    # issue 48: evaluate --help no longer imports the corpora to name --dataset's choices; it points here
    assert [n for n, text in corpora.items() if text.startswith("[rating, systems;")] == list(systems_corpora())
    assert corpora["style_gap_testset"].startswith("[rating; Test set]")
    models = _entries(_listed(capsys, "models"))
    assert list(models) == [*GGUF_PRESETS, *PRESETS, TINY_RANDOM]
    assert models["1b"].startswith("meta-llama/Llama-3.2-1B-Instruct: the paper's backbone")
    assert models["1b"].endswith("; the default") and not models["3b"].endswith("the default")
    assert "random weights" in models[TINY_RANDOM]
    assert models["qwen2.5-coder-1.5b"].startswith("Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Qwen's official file): a "
                                                 "real chat model, fetched on first use without a Hub account "
                                                 "(1,117 MB, sha256 pinned; 1.54B parameters, 7.1 GB in float32")
    assert "for trying, not for publishing numbers" in models["smollm2-135m"]
    assert "Spearman 0.43" in models["qwen2.5-coder-1.5b"] and "Spearman 0.17" in models["qwen2.5-coder-0.5b"]
    everything = _listed(capsys)
    assert [line.split(" ")[0] for line in everything.splitlines() if line and not line.startswith(" ")] == \
        ["metrics", "corpora", "models"]


def test_list_refuses_what_it_does_not_list(capsys):
    with pytest.raises(SystemExit):
        main(["list", "systems"])
    assert "invalid choice: 'systems' (choose from 'metrics', 'corpora', 'models')" in capsys.readouterr().err


def test_a_misspelt_corpus_gets_the_closest_name_and_where_they_are_listed(capsys, data_dir, tmp_path):
    with pytest.raises(ValueError, match=r"^unknown corpus 'lai_formalty'; did you mean 'lai_formality'\? "
                                         r"\(styleeval.corpora.corpus_names\(\)\)$"):
        load_corpus("lai_formalty")
    with advising("cli"), pytest.raises(ValueError, match=r"^unknown corpus 'lai_formalty'; did you mean "
                                                          r"'lai_formality'\? \(styleeval list corpora\)$"):
        corpus_configs("lai_formalty")
    with pytest.raises(ValueError, match=r"^unknown corpora 'mir_yepl' \(did you mean 'mir_yelp'\?\), 'nothing'; "
                                         r"choose from style_gap_testset, lai_formality, mir_yelp, asset, "
                                         r"ziegenbein_appropriateness \("):
        load_rating_corpora(["mir_yepl", "nothing"])
    with pytest.raises(ValueError, match=r"^stel is not a rating corpus \(kind stel: no rated rewrites\)"):
        check_corpus_names(["stel"], rating=True)
    check_corpus_names(["stel", "asset"])  # every corpus
    assert main(["metaeval", "--datasets", "lai_formalty", "--out", str(tmp_path), "--data-dir", str(data_dir)]) == 2
    assert capsys.readouterr().err == ("styleeval metaeval: error: unknown corpus 'lai_formalty'; did you mean "
                                       "'lai_formality'? (styleeval list corpora)\n")
    assert main(["build-datasets", "asst", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == ("styleeval build-datasets: error: unknown corpus 'asst'; did you mean 'asset'? "
                                       "(styleeval list corpora)\n")


def test_a_misspelt_metric_gets_the_closest_name_and_where_they_are_listed(capsys, tmp_path, data_dir):
    with pytest.raises(ValueError, match=r"^unknown metric 's_chfr' \(did you mean 's_chrf'\?\); available: .*"
                                         r"\(styleeval.metrics.available_metrics\(\)\)$"):
        get_metric("s_chfr")
    assert main(["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleuu", "--out", str(tmp_path),
                 "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 's_bleuu' (did you mean 's_bleu'?)" in err and err.endswith("(styleeval list metrics)\n")


@pytest.mark.parametrize("kind", ["metrics", None])
def test_a_reader_gone_ends_list_quietly_through_cli_main(kind):
    """`styleeval list | head -1`: the broken pipe is cli.main's to end (exit 0, no traceback), as for every command;
    `list` no longer handles it itself. Run as `python -m styleeval`, its standard output a pipe whose reader has
    gone before anything is printed, and piped into `head -1`."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    command = [sys.executable, "-m", "styleeval", "list", *([kind] if kind else [])]
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(command, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    shell = subprocess.run(["bash", "-c", '"$@" | head -1; exit "${PIPESTATUS[0]}"', "bash", *command],
                           capture_output=True, text=True, timeout=120, env=env)
    assert shell.returncode == 0 and shell.stderr == "", shell.stderr
    assert shell.stdout.startswith("metrics (a spec: NAME") and shell.stdout.count("\n") == 1
