"""The paper's LLM rows measured with another model (``reproduce-paper --model``): the harness's numbers against a
direct Spearman of the engine's scores on the same rows, the paper-mode compliance against a count over the raw
replies, and the measured rows shown but never counted."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.stats import spearmanr

from styleeval import Autorater, LogProb
from styleeval.autorater import parse_robust
from styleeval.gguf_files import REAL_WEIGHTS
from styleeval.metaeval import RatedData, paper
from styleeval.metaeval.claims import logprob_by_size, marked_rewrite
from styleeval.metaeval.measured import (
    UNFILLED,
    Measurement,
    measure,
    measured_rows,
    rank_gaps,
    with_measured,
)
from styleeval.metaeval.runner import MetaevalResult

SLICE = range(0, 500, 80)
"""7 test-set rows, every task among them (sentiment, detoxification, catchy, politeness, persuasiveness, formality
twice), their human content means all distinct (each claim below holds for any n: a Spearman computed two ways, a
count of readable replies; 13 rows cost CI about twice the time, the paper mode's generation twice)."""


@pytest.fixture(scope="module")
def testset_slice(data_dir) -> RatedData:
    from styleeval.corpora import load_corpus

    return RatedData.from_rows(load_corpus("style_gap_testset", data_dir).select(SLICE), "style_gap_testset")


@pytest.fixture(scope="module")
def real_measurement(real_backend, testset_slice) -> Measurement:
    """The measured content rows of the real 135M model on the slice (the session's model: loaded once)."""
    return measure(REAL_WEIGHTS, "content", ["style_gap_testset"], lambda name: testset_slice, progress=False)


def test_the_logprob_row_is_a_direct_spearman_of_the_engines_scores(real_backend, testset_slice, real_measurement):
    content = [r["content"] for r in LogProb(backend=real_backend, progress=False).score(
        testset_slice.sources, testset_slice.rewrites, testset_slice.styles)]
    human = testset_slice.human["content"]
    direct = spearmanr(content, human)
    cell = real_measurement.cell(f"LogProb {REAL_WEIGHTS}", "style_gap_testset", "all")
    assert cell is not None and cell["n"] == len(SLICE)
    assert cell["spearman"] == pytest.approx(direct.statistic, abs=1e-12)
    assert cell["spearman_p"] == pytest.approx(direct.pvalue, rel=1e-9)
    assert real_measurement.values()[f"LogProb {REAL_WEIGHTS}", "style_gap_testset", "all"] == (
        cell["spearman"], cell["spearman_p"])
    assert cell["ci_low"] <= cell["spearman"] <= cell["ci_high"]  # the claims' interval, 1000 resamples


def test_the_expected_autorater_row_is_a_direct_spearman_of_the_judges_ratings(real_backend, testset_slice,
                                                                                 real_measurement):
    rated = Autorater(backend=real_backend, mode="expected", progress=False).rate(
        testset_slice.sources, testset_slice.rewrites, testset_slice.styles)
    direct = spearmanr(rated.meaning, testset_slice.human["content"])
    cell = real_measurement.cell(f"LLM-as-A {REAL_WEIGHTS} (expected mode)", "style_gap_testset", "all")
    assert cell is not None and cell["spearman"] == pytest.approx(direct.statistic, abs=1e-12)
    assert rated.compliance_rate == 1.0
    scores = real_measurement.result.scores["style_gap_testset", f"LLM-as-A {REAL_WEIGHTS} (expected mode)"]
    assert np.isfinite(scores).all()


def test_the_paper_mode_compliance_is_the_count_over_the_raw_replies_on_real_weights(real_backend, testset_slice,
                                                                                     real_measurement):
    rated = Autorater(backend=real_backend, mode="paper", progress=False).rate(
        testset_slice.sources, testset_slice.rewrites, testset_slice.styles)
    read = sum(parse_robust(r["reply"])[0] is not None for r in rated)
    assert real_measurement.readable("style_gap_testset") == (read, len(SLICE))
    if read == 0:  # the 135M model never answers in the paper's format: the row says so, not "missing weights"
        failures = paper.measured_failures(real_measurement)
        assert failures[f"LLM-as-A {REAL_WEIGHTS} (paper mode)"].startswith(f"measured: 0 of {len(SLICE)} replies")


def test_the_paper_mode_compliance_counts_a_judge_that_sometimes_complies(judge_model_dir, judge_rows):
    """The trained judge answers two of its three rows in a readable format: the harness counts 2 of 3, as a count
    over the raw replies does."""
    sources, rewrites, style = judge_rows
    rows = [{"source": s, "rewrite": r, "target_style": style, "task": "politeness", "system": "x",
             "is_reference_rewrite": False, "content_mean": c, "style_mean": 6 - c, "id": f"judge/{i}"}
            for i, (s, r, c) in enumerate(zip(sources, rewrites, [4.0, 2.0, 3.0], strict=True))]
    data = RatedData.from_rows(rows, "judge_rows")
    model = str(judge_model_dir)
    replies = Autorater(model, mode="paper", progress=False).rate(sources, rewrites, style)
    for dimension, key in (("content", 0), ("style", 1)):
        m = measure(model, dimension, ["judge_rows"], lambda name: data, progress=False, n_boot=0)
        read = sum(parse_robust(r["reply"])[key] is not None for r in replies)
        assert read == 2
        assert m.readable("judge_rows") == (read, 3)
        unfilled = m.result.scores["judge_rows", UNFILLED]
        assert [math.isnan(v) for v in unfilled] == [parse_robust(r["reply"])[key] is None for r in replies]


def test_measured_rows_sit_under_their_group_and_are_never_counted(monkeypatch, tmp_path, data_dir):
    """reproduce-paper --model: the measured rows follow the paper's smallest model of their group, in italics, and
    the published-cells summary is the same as without them."""
    from styleeval.corpora import load_corpus

    rows = measured_rows("tiny-random")
    table = with_measured(paper.TABLE4, rows)
    names = list(table)
    assert names[names.index("LLM-as-A 3b") + 1: names.index("LLM-as-A 3b") + 3] == [
        "LLM-as-A tiny-random (paper mode)", "LLM-as-A tiny-random (expected mode)"]
    assert names[-1] == "LogProb tiny-random" and names[-2] == "LogProb 1b"
    assert all(table[r.label] is None for r in rows)

    small = {name: RatedData.from_rows(load_corpus(name, data_dir).select(range(0, n, n // 12)), name)
             for name, n in (("style_gap_testset", 500), ("lai_formality", 720), ("asset", 100), ("mir_yelp", 2928))}
    for name, data in small.items():
        monkeypatch.setitem(paper._LOADED, (str(data_dir), name), data)
    summaries = {}
    for model in (None, "tiny-random"):
        out = tmp_path / f"{model}.md"
        args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path / "cache"), no_progress=True,
                             write=str(out), model=model)
        assert paper.reproduce(args) == 0
        text = out.read_text(encoding="utf-8")
        summaries[model] = text[text.index("\nPublished cells: "):].split("(")[0]
    assert summaries[None] == summaries["tiny-random"]
    assert "| *LogProb tiny-random* |" in text and paper.MEASURED in text
    assert "#### Does the judge answer in the paper's format? (tiny-random)" in text
    assert "#### Where LogProb tiny-random and people disagree most on content (test set)" in text
    assert "`logprob_content|model:tiny-random@" in text and "`autorater_style|model:tiny-random@" in text
    assert "No figure of the LLM metrics against model size: the parameter count of tiny-random is not known" in text
    assert not (tmp_path / "tiny-random_llm_size.png").exists()


def _measurement_with(cell: dict) -> Measurement:
    import pandas as pd

    result = MetaevalResult("content", [], pd.DataFrame([{"dataset": "style_gap_testset", "subset": "all",
                                                          "metric": "LogProb m", **cell}]), pd.DataFrame())
    return Measurement("m", "content", measured_rows("m"), result)


@pytest.mark.parametrize(("low", "high", "verdict"), [(0.20, 0.30, "it continues"), (0.40, 0.50, "it does not"),
                                                      (0.30, 0.40, "not distinguishable")])
def test_the_size_claim_reads_the_interval_against_the_papers_1b(low, high, verdict):
    cell = {"spearman": (low + high) / 2, "spearman_p": 0.001, "ci_low": low, "ci_high": high, "n": 500}
    text = logprob_by_size(_measurement_with(cell))
    assert verdict in text and "1B 0.37" in text and f"[{low:.2f}, {high:.2f}]" in text


def test_rank_gaps_are_rank_differences_as_fractions():
    human = np.array([1.0, 2.0, 3.0, np.nan, 5.0])
    scores = np.array([3.0, 2.0, 1.0, 0.0, 5.0])
    gaps = rank_gaps(human, scores)
    assert np.isnan(gaps[3])
    assert gaps[[0, 1, 2, 4]].tolist() == pytest.approx([2 / 3, 0.0, -2 / 3, 0.0])


def test_marked_rewrite_bolds_surprising_tokens_and_escapes_markdown():
    table = [{"token": "The", "content": -0.5}, {"token": " *new*", "content": -4.25}, {"token": " plan|", "content": -1.0}]
    assert marked_rewrite(table) == r"The <b>\*new\*</b> (-4.2) plan\|"


def test_marked_rewrite_bolds_punctuation_inside_a_word_and_escapes_code_links_and_html():
    """``don**'t**`` would not render bold (CommonMark opens ``**`` before punctuation only after a space or
    punctuation); a backtick, a bracket or a tag in the text would start a code span, a link or raw HTML."""
    table = [{"token": "I", "content": -0.1}, {"token": " don", "content": -0.2}, {"token": "'t", "content": -3.0},
             {"token": " <br>", "content": -0.3}, {"token": " `x`", "content": -0.4}, {"token": " [a](b)", "content": -2.6}]
    assert marked_rewrite(table) == r"I don<b>'t</b> (-3.0) \<br\> \`x\` <b>\[a\](b)</b> (-2.6)"


def test_the_worst_rows_section_counts_the_rows_it_has(data_dir):
    """On a slice of 8 test-set rows, the section lists 8 rows (not 20) and says the ranks are fractions of 8 rows."""
    from styleeval.corpora import load_corpus
    from styleeval.metaeval.claims import disagreements

    data = RatedData.from_rows(load_corpus("style_gap_testset", data_dir).select(range(0, 500, 63)), "style_gap_testset")
    m = measure("tiny-random", "content", ["style_gap_testset"], lambda name: data, progress=False, n_boot=0)
    text = disagreements(m, lambda: LogProb("tiny-random", progress=False))
    assert "The 8 test-set rows" in text and "fractions of the 8 rows both rate" in text and "500" not in text
    assert [line.split(".")[0] for line in text.splitlines() if line[:1].isdigit()] == [str(k) for k in range(1, 9)]


def test_write_naming_a_folder_is_one_error_before_any_work(tmp_path, data_dir):
    from styleeval.errors import UserError

    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path / "cache"), no_progress=True,
                         model="tiny-random", write=str(tmp_path))
    with pytest.raises(UserError, match="a folder, not a file"):
        paper.reproduce(args)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("model", "message"), [("", "--model is empty"), ("  ", "--model is empty"),
                                                ("tiny-random:mode=paper", "a ':key=' part would be read")])
def test_an_empty_model_or_one_with_spec_options_is_one_error_before_any_work(tmp_path, data_dir, model, message):
    from styleeval.errors import UserError

    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path), no_progress=True, model=model,
                         write=str(tmp_path / "out.md"))
    with pytest.raises(UserError, match=message):
        paper.reproduce(args)
    assert not (tmp_path / "out.md").exists()


def test_a_model_that_cannot_be_loaded_is_one_error_before_any_work(tmp_path, data_dir):
    from styleeval.errors import UserError

    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path), no_progress=True, model="no-such-model",
                         write=str(tmp_path / "out.md"))
    with pytest.raises(UserError, match="cannot load model 'no-such-model'"):
        paper.reproduce(args)
    assert not (tmp_path / "out.md").exists()


def test_offline_the_advice_is_the_commands_own_option_and_only_while_it_runs(tmp_path, data_dir):
    """reproduce-paper goes offline itself: a model not in the cache is refused with "run with --online", not "unset
    HF_HUB_OFFLINE" (a variable the user never set); the advice does not outlive the call."""
    from styleeval.errors import UserError
    from styleeval.hub import OFFLINE_ADVICE

    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path), no_progress=True,
                         model="someone/not-cached-anywhere")
    with pytest.raises(UserError, match=r"this command runs offline: run with --online to download it once") as err:
        paper.reproduce(args)
    assert "HF_HUB_OFFLINE" not in str(err.value)
    assert OFFLINE_ADVICE.get() is None


# --- several models in one run (issue 57: the paper's tables at three sizes) ----------------------------------------
@pytest.fixture(scope="module")
def other_model_dir(tiny_tokenizer, tmp_path_factory):
    """A second tiny random Llama (another seed than the tiny-random preset's weights: other scores), saved to a
    folder: a second model for ``--model``."""
    from styleeval.random_weights import build_model

    path = tmp_path_factory.mktemp("other-tiny")
    build_model("tiny", vocab_size=len(tiny_tokenizer), seed=1, head_scale=30.0).save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path


def _small_corpora(monkeypatch, data_dir) -> None:
    from styleeval.corpora import load_corpus

    for name, n in (("style_gap_testset", 500), ("lai_formality", 720), ("asset", 100), ("mir_yelp", 2928)):
        data = RatedData.from_rows(load_corpus(name, data_dir).select(range(0, n, n // 12)), name)
        monkeypatch.setitem(paper._LOADED, (str(data_dir), name), data)


def _table_lines(text: str, title: str) -> list[str]:
    start = text.index(f"### {title}")
    return text[start:text.index("\n\n###", start)].splitlines()


def _files(root) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*.json"))}


def test_several_models_each_rows_in_order_one_figure_with_every_point_resumed_from_the_cache(
        monkeypatch, tmp_path, data_dir, other_model_dir):
    """--model tiny-random --model OTHER: each model's rows under the paper's rows in Tables 3-5 in the order given,
    their sections one model after the other, one figure with both models' points (their parameter counts made known
    here); a run with tiny-random alone, then both, then both again: tiny-random's scores are read back from the
    cache (never rewritten), the second run adds only OTHER's, the third computes nothing and writes the same text."""
    from styleeval.metaeval import claims, measured

    _small_corpora(monkeypatch, data_dir)
    other = str(other_model_dir)
    monkeypatch.setitem(measured.KNOWN_PARAMETERS, "tiny-random", 1e6)
    monkeypatch.setitem(measured.KNOWN_PARAMETERS, other.lower(), 3e6)
    cache = tmp_path / "cache"
    texts, files = {}, {}
    for run, models in (("one", ("tiny-random",)), ("two", ("tiny-random", other)), ("again", ("tiny-random", other))):
        args = paper.Options(data_dir=str(data_dir), cache_dir=str(cache), no_progress=True,
                             write=str(tmp_path / f"{run}.md"), models=models)
        assert paper.reproduce(args) == 0
        texts[run] = (tmp_path / f"{run}.md").read_text(encoding="utf-8")
        files[run] = _files(cache)
    # tiny-random's scores are read back, never rewritten; the second run adds the other model's, the third nothing
    assert files["one"] and all(files["two"][name] == mtime for name, mtime in files["one"].items())
    assert len(files["two"]) > len(files["one"]) and files["again"] == files["two"]
    again = texts["again"].replace("(again_llm_size.png)", "(two_llm_size.png)")
    assert again.split("\nPublished cells: ")[0] == texts["two"].split("\nPublished cells: ")[0]

    text = texts["two"]
    for title, group in (("Table 3", "LLM-as-A 3b"), ("Table 4", "LLM-as-A 3b"), ("Table 5", "LLM-as-A 3b")):
        names = [line.split(" | ")[0].removeprefix("| ") for line in _table_lines(text, title)[4:]]
        at = names.index(group)
        assert names[at + 1: at + 5] == ["*LLM-as-A tiny-random (paper mode)*", "*LLM-as-A tiny-random (expected mode)*",
                                         f"*LLM-as-A {other} (paper mode)*", f"*LLM-as-A {other} (expected mode)*"]
        at = names.index("LogProb 1b")
        assert names[at + 1: at + 3] == ["*LogProb tiny-random*", f"*LogProb {other}*"]
    # the other model's rows have numbers of their own: its LogProb row is not tiny-random's
    table4 = {line.split(" | ")[0]: line for line in _table_lines(text, "Table 4")}
    assert table4["| *LogProb tiny-random*"].split(" | ")[1:] != table4[f"| *LogProb {other}*"].split(" | ")[1:]
    # tiny-random's rows are the same as when it is measured alone
    one4 = {line.split(" | ")[0]: line for line in _table_lines(texts["one"], "Table 4")}
    assert one4["| *LogProb tiny-random*"] == table4["| *LogProb tiny-random*"]
    # the sections: one model's, then the other's, one figure, then each model's worst rows
    heads = ["### The paper's LLM rows measured with tiny-random", "#### Does the judge answer in the paper's format? "
             "(tiny-random)", f"### The paper's LLM rows measured with {other}",
             f"#### Does the judge answer in the paper's format? ({other})", f"#### Does LogProb's drop from 8B to 1B on "
             f"the test set continue at {other}?", "![LLM metrics against model size](two_llm_size.png)",
             "#### Where LogProb tiny-random and people disagree most on content", f"#### Where LogProb {other} and people"]
    at = [text.index(head) for head in heads]
    assert at == sorted(at) and text.count("![LLM metrics") == 1
    assert f"`logprob_content|model:{other}@local-" in text
    png = tmp_path / "two_llm_size.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.read_bytes() != (tmp_path / "one_llm_size.png").read_bytes()
    # the figure's points: both models, at their sizes, with the values of the tables' cells
    args = paper.Options(data_dir=str(data_dir), cache_dir=str(cache), no_progress=True, models=("tiny-random", other))
    paper.load_corpora(args)  # as the command: a corpus not in the mirror is left out
    points = claims.size_points([paper.measure_rows(args, paper.CORPORA[:4], m) for m in args.models])
    content = points[claims.SIZE_PANELS[0]]
    every = [(label, size) for m, size in (("tiny-random", 1e6), (other, 3e6))  # model after model, in row order
             for label in (f"LLM-as-A {m} (paper mode)", f"LLM-as-A {m} (expected mode)", f"LogProb {m}")]
    with_value = [(label, size) for label, size in every if table4[f"| *{label}*"].split(" | ")[1] != "–"]
    assert [(label, size) for label, size, _value in content] == with_value
    assert (f"LogProb {other}", 3e6) in with_value and ("LogProb tiny-random", 1e6) in with_value
    for label, _size, value in content:  # Table 4's ALL cell
        assert table4[f"| *{label}*"].split(" | ")[1].rstrip("*") == f"{value:.2f}"
    assert {size for _label, size, _value in points[claims.SIZE_PANELS[1]]} == {1e6, 3e6}


def test_a_model_whose_size_is_unknown_is_left_out_of_the_figure_with_a_note(monkeypatch, tmp_path, data_dir,
                                                                              other_model_dir):
    """Two models, one of known size: the figure has that one's points alone, and a line names the other."""
    from styleeval.corpora import load_corpus
    from styleeval.metaeval import claims, measured

    monkeypatch.setitem(measured.KNOWN_PARAMETERS, "tiny-random", 1e6)
    data = RatedData.from_rows(load_corpus("style_gap_testset", data_dir).select(range(0, 500, 63)), "style_gap_testset")
    pairs = [(measure(m, "content", ["style_gap_testset"], lambda name: data, progress=False, n_boot=0), None)
             for m in (str(other_model_dir), "tiny-random")]
    args = paper.Options(write=str(tmp_path / "out.md"), models=(str(other_model_dir), "tiny-random"))
    text = paper.measured_sections(args, pairs)
    assert "![LLM metrics against model size](out_llm_size.png)" in text and (tmp_path / "out_llm_size.png").is_file()
    assert f"Left out of the figure: {other_model_dir} (parameter count not known; known: " in text
    points = claims.size_points(pairs)[claims.SIZE_PANELS[0]]
    assert ("LogProb tiny-random", 1e6) in [(label, size) for label, size, _value in points]
    assert all("tiny-random" in label and str(other_model_dir) not in label and size == 1e6
               for label, size, _value in points)
    monkeypatch.delitem(measured.KNOWN_PARAMETERS, "tiny-random")
    text = paper.measured_sections(paper.Options(write=str(tmp_path / "none.md"), models=args.models), pairs)
    assert (f"No figure of the LLM metrics against model size: the parameter counts of {other_model_dir}, tiny-random "
            "are not known") in text and not (tmp_path / "none_llm_size.png").exists()


@pytest.mark.parametrize(("models", "message"), [
    (("tiny-random", "tiny-random"), "--model tiny-random is given twice; give each model once"),
    (("smollm2-135m", "tiny-random", "SmolLM2-135M"), "--model smollm2-135m (also given as SmolLM2-135M) is given twice"),
    (("1b", "meta-llama/Llama-3.2-1B-Instruct"), "--model 1b (also given as meta-llama/Llama-3.2-1B-Instruct) is given "
                                                 "twice")])
def test_a_model_given_twice_is_one_error_naming_it_before_any_work(tmp_path, data_dir, models, message):
    from styleeval.errors import UserError

    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path / "cache"), no_progress=True, models=models,
                         write=str(tmp_path / "out.md"))
    with pytest.raises(UserError, match=re.escape(message)):
        paper.reproduce(args)
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "cache").exists()


def test_the_command_takes_model_repeated_and_refuses_one_given_twice_in_one_line(tmp_path, data_dir, capsys):
    from styleeval.cli import main

    argv = ["reproduce-paper", "-q", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "cache"), "--write",
            str(tmp_path / "out.md"), "--model", "tiny-random", "--model", "smollm2-135m", "--model", "tiny-random"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [
        "styleeval reproduce-paper: error: --model tiny-random is given twice; give each model once"]
    assert not (tmp_path / "out.md").exists()


def test_options_take_one_model_or_several():
    from styleeval.errors import UserError

    assert paper.Options(model="tiny-random").models == ("tiny-random",)
    assert paper.Options(models=["a", "b"]).models == ("a", "b")
    assert paper.Options().models == () and paper.Options(model="a", models=("a",)).models == ("a",)
    with pytest.raises(UserError, match="models=\\(...\\) alone"):
        paper.Options(model="a", models=("b", "c"))
