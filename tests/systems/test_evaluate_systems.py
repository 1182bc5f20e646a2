"""evaluate_systems and `styleeval evaluate`: means, pairs on shared sources, clusters, bad input, resumable files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from styleeval.cli import main
from styleeval.stats import TestSettings, approximate_randomization
from styleeval.systems import evaluate_systems


def _rows(systems: dict[str, list[str]], sources: list[str]) -> list[dict]:
    return [{"source": src, "rewrite": rw, "style": "formal", "system": name}
            for name, rewrites in systems.items() for src, rw in zip(sources, rewrites, strict=True) if rw is not None]


SOURCES = [f"the cat number {i} sat on the mat today" for i in range(12)]


def test_means_pairs_and_missing_rows():
    same = [s.replace("today", "yesterday") for s in SOURCES]
    other = [f"a completely different sentence {i}" for i in range(12)]
    partial = list(same)
    partial[3] = None  # system C has no row for source 3: every system is compared on the 11 sources all have
    report = evaluate_systems(_rows({"A": same, "B": other, "C": partial}, SOURCES), ["s_chrf:agg=mean"])
    table = report.systems.set_index("system")
    common = (report.scores["system"] == "A") & (report.scores["source_id"] != SOURCES[3])
    want = np.mean(report.scores.loc[common, "s_chrf"])
    assert table.loc["A", "mean"] == pytest.approx(want) == table.loc["A", "score"] and table.loc["A", "n"] == 11
    assert table.loc["A", "aggregate"] == "mean" and table.loc["A", "n_missing"] == 1
    # the note names the system that caused the cut (C), not the complete ones, and what the statistics use
    assert any(f"C lacks 1 of 12 sources ({SOURCES[3]!r}); every metric compares the systems on the 11 of 12 sources "
               "that every system has: 33 of the 35 rows read" in n for n in report.notes)
    assert not any("A lacks" in n or "B lacks" in n for n in report.notes)
    assert report.coverage.shared_rows == 33 == 3 * table.loc["A", "n"]
    pair = report.pairs[(report.pairs.system_a == "A") & (report.pairs.system_b == "C")].iloc[0]
    assert pair.n_pairs == 11 and pair.delta == pytest.approx(0.0) and not pair.significant
    ab = report.pairs[(report.pairs.system_a == "A") & (report.pairs.system_b == "B")].iloc[0]
    a = report.scores[common]["s_chrf"].to_numpy()
    b = report.scores[(report.scores.system == "B") & (report.scores["source_id"] != SOURCES[3])]["s_chrf"]
    assert ab.p == approximate_randomization(a, b.to_numpy()) and ab.significant
    assert table.loc["A", "cluster"] == table.loc["C", "cluster"] == 1 and table.loc["B", "cluster"] == 2


def test_pairs_follow_source_id_not_the_row_order():
    rows = _rows({"A": SOURCES[:4], "B": SOURCES[:4]}, SOURCES[:4])
    for i, row in enumerate(rows):
        k = i % 4 if row["system"] == "A" else (i + 1) % 4  # B's rows come in another order
        row["source_id"], row["source"], row["rewrite"] = f"id{k}", SOURCES[k], SOURCES[k]
    report = evaluate_systems(rows, ["s_bleu"])
    assert report.pairs.iloc[0].n_pairs == 4 and report.pairs.iloc[0].delta == 0


def test_one_source_id_with_two_source_texts_is_an_error():
    rows = _rows({"A": SOURCES[:2], "B": SOURCES[:2]}, SOURCES[:2])
    for row in rows:
        row["source_id"] = "same"
    with pytest.raises(ValueError, match=r"source_id 'same' has the source .* one source_id must name one source"):
        evaluate_systems(rows[:1] + rows[3:], ["s_bleu"])


def test_one_source_with_two_styles_or_two_sets_of_references_is_an_error():
    """Accepted before: r_* metrics, the paired tests and the clusters ran on rows whose systems were given other
    references (or another target style) for the same source."""
    rows = _rows({"A": SOURCES[:2], "B": SOURCES[:2]}, SOURCES[:2])
    styled = [dict(r) for r in rows]
    styled[-1]["style"] = "informal"
    with pytest.raises(ValueError, match=r"row 3: source .* has the style 'informal' but 'formal' at row 1"):
        evaluate_systems(styled, ["s_bleu"])
    for r in rows:
        r["references"] = ["hi there", "hello"]
    reordered = [dict(r) for r in rows]
    reordered[-1]["references"] = ["hello", "hi there"]  # the same references in another order: the same scores
    assert evaluate_systems(reordered, ["r_chrf"], settings=TestSettings(n_boot=10, trials=10)).systems[
        "n"].tolist() == [2, 2]
    rows[-1]["references"] = ["hey there"]
    with pytest.raises(ValueError, match=r"row 3: source .* has the references \['hey there'\] but .* at row 1"):
        evaluate_systems(rows, ["r_chrf"])
    rows[-1]["references"] = None  # a system without references (the human references themselves): fine
    assert evaluate_systems(rows, ["r_chrf"], settings=TestSettings(n_boot=10, trials=10)).systems.set_index(
        "system")["n"].to_dict() == {"A": 1, "B": 1}  # compared on the source both have scored


@pytest.fixture(scope="module")
def lai_rows(data_dir):
    from styleeval.corpora import load_corpus

    ds = load_corpus("lai_formality", data_dir=data_dir)
    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "reference": r["reference"], "human_content": r["content_mean"]}
            for r in ds]


def test_lai_systems_copy_and_references(lai_rows):
    """An identical copy of a system is never significantly different from it; Lai's human references differ
    significantly from the best S-chrF system."""
    best_copy = [{**r, "system": "RAO-copy"} for r in lai_rows if r["system"] == "RAO"]
    report = evaluate_systems(lai_rows + best_copy, ["s_chrf", "r_chrf"], sort_by="s_chrf",
                              settings=TestSettings(trials=1000, n_boot=200))
    ranking = report.ranking("s_chrf")  # by sacrebleu's corpus chrF: HIGH first, then RAO and its copy
    assert ranking[0] == "HIGH" and abs(ranking.index("RAO") - ranking.index("RAO-copy")) == 1
    pairs = report.pairs.set_index(["metric", "system_a", "system_b"])
    copy = pairs.loc[("s_chrf", "RAO", "RAO-copy")]
    assert copy.delta == 0.0 and copy.p == 1.0 and not copy.significant
    assert pairs.loc[("s_chrf", "RAO", "reference")].significant
    assert set(report.agreement["metric"]) == {"s_chrf", "r_chrf"}
    assert any("no score (no reference)" in n for n in report.notes)  # the references have no reference
    text = report.to_markdown()
    assert "| RAO |" in text and "S-chrF ↑" in text and "## Agreement with the human ratings" in text


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"row 1: 'system' is missing or empty"):
        evaluate_systems([{"source": "a", "rewrite": "b", "style": "s", "system": "A"},
                          {"source": "a", "rewrite": "b", "style": "s", "system": " "}], ["s_bleu"])
    with pytest.raises(ValueError, match=r"row 1: system 'A' has a second row for source 'a' \(first at row 0\)"):
        evaluate_systems([{"source": "a", "rewrite": "b", "style": "s", "system": "A"}] * 2, ["s_bleu"])
    with pytest.raises(ValueError, match=r"unknown metric 's_chfr' \(did you mean 's_chrf'\?\)"):
        evaluate_systems([{"source": "a", "rewrite": "b", "style": "s", "system": "A"}], ["s_chfr"])
    one = evaluate_systems([{"source": "a b c", "rewrite": "a b d", "style": "s", "system": "A"}], ["s_bleu"])
    assert one.pairs.empty and any("only one system" in n for n in one.notes)
    assert any("one scored row; its confidence interval is undefined" in n for n in one.notes)


def test_cli_writes_every_file_and_a_rerun_computes_only_new_metrics(tmp_path, monkeypatch):
    from styleeval.metrics.bleu import SourceBLEU

    for name, rewrites in {"A": SOURCES, "B": [s.upper() for s in SOURCES]}.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps({"source": s, "rewrite": r}) + "\n"
                                                       for s, r in zip(SOURCES, rewrites, strict=True)), encoding="utf-8")
    out = tmp_path / "report"
    args = ["evaluate", str(tmp_path / "A.jsonl"), str(tmp_path / "B.jsonl"), "--system-from-filename", "--style",
            "formal", "--out", str(out), "--no-progress"]
    assert main([*args, "--metrics", "s_bleu"]) == 0
    calls = []
    original = SourceBLEU._score
    monkeypatch.setattr(SourceBLEU, "_score", lambda self, *a: calls.append(1) or original(self, *a))
    assert main([*args, "--metrics", "s_bleu,s_chrf"]) == 0
    assert calls == []  # s_bleu came from OUT/cache
    systems = pd.read_csv(out / "systems.csv")
    assert list(systems.columns) == ["system", "metric", "aggregate", "n", "n_missing", "score", "mean", "ci_low",
                                     "ci_high", "cluster"]
    assert set(systems.metric) == {"s_bleu", "s_chrf"} and len(systems) == 4 + 2  # and the copy baseline's
    pairs = pd.read_csv(out / "pairs.csv")
    assert list(pairs.columns)[:4] == ["metric", "system_a", "system_b", "n_pairs"] and len(pairs) == 2
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 24 + 12 and set(rows[0]["signatures"]) == {"s_bleu", "s_chrf"}  # the copy baseline's last
    assert [r.get("baseline", False) for r in rows] == [False] * 24 + [True] * 12
    assert json.loads((out / "report.json").read_text())["test"] == "ar"
    assert "# System evaluation" in (out / "report.md").read_text()


def test_three_identical_systems_and_one_clearly_different():
    good = [s.replace("today", "yesterday") for s in SOURCES]
    bad = [f"nothing alike {i}" for i in range(12)]
    report = evaluate_systems(_rows({"A": good, "B": good, "C": good, "D": bad}, SOURCES), ["s_chrf", "s_ter"])
    for metric in ("s_chrf", "s_ter"):  # s_ter: lower is better, ranked ascending
        table = report.systems[report.systems.metric == metric].set_index("system")["cluster"].to_dict()
        assert table == {"A": 1, "B": 1, "C": 1, "D": 2}
        pairs = report.pairs[report.pairs.metric == metric]
        assert pairs[pairs.system_b == "D"].significant.all() and not pairs[pairs.system_b != "D"].significant.any()


def test_sharded_evaluate_puts_the_shards_together(tmp_path, tiny_model_dir, capsys):
    """`evaluate --shard K/N` scores the LLM metrics' rows of its sources into OUT/cache; the run without --shard
    takes them (and names a shard not run) and reports what one unsharded run reports."""
    same = [s.replace("today", "yesterday") for s in SOURCES[:5]]
    other = [f"a completely different sentence {i}" for i in range(5)]
    for name, rewrites in {"A": same, "B": other}.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows({name: rewrites},
                                                                                        SOURCES[:5])))
    metrics = f"logprob_content:model={tiny_model_dir}:device=cpu,s_chrf"
    args = lambda out: ["evaluate", str(tmp_path / "A.jsonl"), str(tmp_path / "B.jsonl"), "--system-from-filename",  # noqa: E731
                        "--metrics", metrics, "--out", str(tmp_path / out), "--no-plots", "--no-progress",
                        "--format", "json"]
    assert main([*args("whole")]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main([*args("sharded"), "--shard", "0/3"]) == 0
    assert "shard 0/3: rows scored: logprob_content 6" in capsys.readouterr().err  # sources 0 and 3: 2 systems, copy
    assert main([*args("sharded")]) == 2
    assert "logprob_content: shard 1/3, 2/3 have not run" in capsys.readouterr().err
    for k in (1, 2):
        assert main([*args("sharded"), "--shard", f"{k}/3"]) == 0
    assert main([*args("sharded")]) == 0
    sharded = json.loads(capsys.readouterr().out)
    assert sharded["systems"] == whole["systems"] and sharded["pairs"] == whole["pairs"]
    assert not list((tmp_path / "sharded" / "cache").rglob("*.shard-*"))  # merged into the whole, then removed


def test_ratings_and_scores_that_overflow_a_mean_are_refused_naming_the_row():
    """A rating of 1e308 is finite, but a mean over it is not (issue 38, item 7: the report showed an infinite mean
    without a note): refused before any scoring, naming the row and the column; a metric's scores likewise."""
    from styleeval.systems.comparison import compare_systems

    rows = _rows({"A": SOURCES[:4], "B": SOURCES[:4]}, SOURCES[:4])
    for i, row in enumerate(rows):
        row["human_content"] = float(i % 5)
    rows[5]["human_content"] = 1e308
    with pytest.raises(ValueError, match=r"row 5: human_content is 1e\+308, too large: a mean or a test over 8 rows "
                                         r"would overflow \(ratings must be within \+-2\.37e\+153\)"):
        evaluate_systems(rows, ["s_bleu"])
    from styleeval.systems.inputs import magnitude_limit

    assert magnitude_limit(8) == pytest.approx(2.37e153, rel=1e-3) and magnitude_limit(10**6) > 6e150
    rows[5]["human_content"] = -1e150  # large, but its means, variances and tests stay finite
    report = evaluate_systems(rows, ["s_bleu"])
    assert np.isfinite(report.systems[report.systems.metric == "human_content"][["score", "ci_low"]]).all().all()
    scores = pd.DataFrame({"row": range(4), "system": ["A", "B"] * 2, "source_id": ["s0", "s0", "s1", "s1"],
                           "m": [1.0, 2.0, 1e308, -1e308]})
    with pytest.raises(ValueError, match=r"m: 2 scores too large to average \(rows 2, 3: 1e\+308\)"):
        compare_systems(scores, {"m": "m|v:1"})



def test_a_model_error_names_the_input_row_not_its_place_in_the_scoring_order(tmp_path, tiny_model_dir, capsys):
    """Rows are scored grouped by source (a source's rewrites in one call); an error of one row names that row as
    the input names it, in Python (0-based ``row N``) and on the command line (``FILE, line N``), as check_rows does
    (issue 41: `evaluate` said "row 98", a short row, for the input's row 111)."""
    long = "the cat sat on the mat " * 120  # longer than the tiny model's 512 positions
    rows = _rows({"A": [SOURCES[0], SOURCES[1].upper(), SOURCES[2]], "B": [SOURCES[0], long, SOURCES[2]]},
                 SOURCES[:3])
    assert rows[4]["rewrite"] == long  # in the scoring order (by source: rows 0, 3, 1, 4, ...) at position 3, and
    # 2 among the distinct rows LogProb scores (rows 0 and 3 are the same source, rewrite and style)
    metrics = [f"logprob_content:model={tiny_model_dir}:device=cpu", "s_chrf"]
    report = evaluate_systems(rows, metrics, progress=False)
    assert report.not_computed["logprob_content"].startswith("row 4: prompt + rewrite is "), report.not_computed
    assert any(n.startswith("logprob_content: not computed (row 4: prompt + rewrite") for n in report.notes)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "in.jsonl"), "--metrics", ",".join(metrics), "--out",
                 str(tmp_path / "out"), "--no-plots", "--no-progress"]) == 1  # a requested metric is missing
    assert f"logprob_content: not computed ({tmp_path / 'in.jsonl'}, line 5: prompt + rewrite is " in \
        capsys.readouterr().err


def test_a_row_too_long_and_skipped_is_named_by_its_input_row_not_its_place_in_the_scoring_order(tiny_model_dir):
    """The warning of a row skipped with ``on_overflow=skip`` names the input's row, as the error without it does
    (the test above). Before: it named the row's place in the scoring order (rows sorted by source, the baselines' among
    them; on the command line ``row 65`` for a file's line 71)."""
    long = "the cat sat on the mat " * 120  # longer than the tiny model's 512 positions
    rows = _rows({"A": [SOURCES[0], SOURCES[1].upper(), long], "B": SOURCES[:3]}, SOURCES[:3])
    assert rows[2]["rewrite"] == long  # after B's rows 3 and 4 in the scoring order (by source, baselines too)
    with pytest.warns(UserWarning) as caught:
        report = evaluate_systems(rows, [f"logprob_content:model={tiny_model_dir}:device=cpu:on_overflow=skip"],
                                  progress=False)
    skipped = [str(w.message) for w in caught if "longer than the model's context" in str(w.message)]
    assert len(skipped) == 1 and skipped[0].endswith("was skipped (NaN scores): row 2"), skipped
    assert np.isnan(report.scores["logprob_content"][2]) and not report.scores["logprob_content"].drop(2).isna().any()


def test_a_row_too_long_advises_the_metric_spec_option(tmp_path, tiny_model_dir, capsys):
    """Issue 47: `evaluate` advised "pass on_overflow='skip'" (Python) and takes no such flag: the advice is the
    metric spec's option, which works there, in Python (evaluate_systems takes specs) and on the command line (-q
    accepted, as the other commands take it); the advice it names works."""
    long = "the cat sat on the mat " * 120  # longer than the tiny model's 512 positions
    rows = _rows({"A": [SOURCES[0], long, SOURCES[2]], "B": SOURCES[:3]}, SOURCES[:3])
    metrics = [f"logprob_content:model={tiny_model_dir}:device=cpu", "s_chrf"]
    report = evaluate_systems(rows, metrics, progress=False)
    why = report.not_computed["logprob_content"]
    assert why.endswith("shorten it or add on_overflow=skip to the metric spec (logprob_content:on_overflow=skip)")
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["evaluate", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out"), "--no-plots", "-q", "--metrics"]
    assert main([*args, ",".join(metrics)]) == 1
    err = capsys.readouterr().err
    assert "(logprob_content:on_overflow=skip)" in err and "on_overflow='skip'" not in err and "--on-" not in err
    assert main([*args, metrics[0] + ":on_overflow=skip"]) == 0  # what it advised


def test_no_metric_computed_says_only_why_each_was_not(tmp_path):
    """The error of a run where no metric could be computed lists each metric and its cause (a shared cause once,
    after the metrics it stopped), not the run's other notes and warnings (an empty rewrite was quoted as a cause);
    the last failure is not noted as well, the error says it once, an earlier one is noted as it happens."""
    from styleeval.errors import UserError

    rows = _rows({"A": SOURCES[:4], "B": [s.upper() for s in SOURCES[:4]]}, SOURCES[:4])
    rows[1]["rewrite"] = ""
    missing = tmp_path / "no-such-model"
    cause = f"cannot load model '{missing}': no such local folder: check the path, or give a Hub id such as " \
            "meta-llama/Llama-3.2-1B-Instruct"
    logged: list[str] = []
    with pytest.warns(UserWarning, match="1 of 8 rewrites is empty"), pytest.raises(UserError) as raised:
        evaluate_systems(rows, [f"logprob_content:model={missing}", f"logprob_style:model={missing}"],
                         progress=False, log=logged.append)
    assert str(raised.value) == f"no metric could be computed: logprob_content, logprob_style: not computed ({cause})"
    assert logged == [f"logprob_content: not computed ({cause})"]
