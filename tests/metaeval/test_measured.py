"""The paper's LLM rows measured with another model (``reproduce-paper --model``): the harness's numbers against a
direct Spearman of the engine's scores on the same rows, the paper-mode compliance against a count over the raw
replies, and the measured rows shown but never counted."""

from __future__ import annotations

import math

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

SLICE = range(0, 500, 20)
"""25 test-set rows, every task among them."""


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
