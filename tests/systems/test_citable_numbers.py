"""Numbers a paper cites: system scores of BLEU, chrF and TER are sacrebleu's corpus scores and their paired tests
sacrebleu's own; inputs that would give a confident wrong number are refused naming the row (issue 26)."""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from styleeval import stats
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.comparison import compare_systems

SOURCES = [f"the cat number {i} sat on the mat today and looked at the bird" for i in range(12)]


def _rows(systems: dict[str, list[str]], sources: list[str] = SOURCES, **extra) -> list[dict]:
    return [{"source": src, "rewrite": rw, "style": "formal", "system": name, **extra}
            for name, rewrites in systems.items() for src, rw in zip(sources, rewrites, strict=True)]


@pytest.fixture(scope="module")
def lai(data_dir) -> list[dict]:
    from styleeval.corpora import load_corpus

    ds = load_corpus("lai_formality", data_dir=data_dir, references=4)
    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "references": r["reference"]} for r in ds if r["system"] != "reference"]


@pytest.mark.parametrize("kind", ["bleu", "chrf", "ter"])
def test_corpus_scores_equal_sacrebleu(lai, kind):
    systems = ["HIGH", "NIU", "ZHOU"]
    rows = [r for r in lai if r["system"] in systems]
    report = evaluate_systems(rows, [f"s_{kind}", f"r_{kind}"], settings=TestSettings(trials=20, n_boot=20))
    table = report.systems.set_index(["metric", "system"])
    corpus = {"bleu": sacrebleu.corpus_bleu, "chrf": sacrebleu.corpus_chrf, "ter": sacrebleu.corpus_ter}[kind]
    for system in systems:
        mine = [r for r in rows if r["system"] == system]
        hyps = [r["rewrite"] for r in mine]
        by_source = corpus(hyps, [[r["source"] for r in mine]]).score
        width = max(len(r["references"]) for r in mine)
        streams = [[r["references"][j] if j < len(r["references"]) else None for r in mine] for j in range(width)]
        by_reference = corpus(hyps, streams).score
        assert table.loc[(f"s_{kind}", system), "score"] == pytest.approx(by_source, abs=1e-9)
        assert table.loc[(f"r_{kind}", system), "score"] == pytest.approx(by_reference, abs=1e-9)
        assert table.loc[(f"s_{kind}", system), "aggregate"] == "corpus"
        sentence = table.loc[(f"s_{kind}", system), "mean"]  # the mean of sentence scores stays beside it
        assert sentence == pytest.approx(np.mean(report.scores[report.scores.system == system][f"s_{kind}"]))
    low, high = table.loc[(f"s_{kind}", "HIGH"), ["ci_low", "ci_high"]]
    assert low < table.loc[(f"s_{kind}", "HIGH"), "score"] < high
    means = evaluate_systems(rows, [f"s_{kind}:agg=mean"], settings=TestSettings(trials=20, n_boot=20)).systems
    assert (means["aggregate"] == "mean").all() and np.allclose(means["score"], means["mean"])


def test_evaluate_prints_sacrebleus_cli_p_values_out_of_the_box(tmp_path, data_dir):
    """``styleeval evaluate`` with its defaults against ``sacrebleu SRC -i SYS... -m bleu chrf ter --paired-ar``
    (its defaults: 10,000 trials, seed 12345) on Lai's 9 systems: the same p-values wherever no shuffle ties the
    observed difference; a tie adds at most 1 / 10,001 each (sacrebleu counts only shuffles above it)."""
    import subprocess
    import sys

    from styleeval.cli import main
    from styleeval.corpora import load_corpus

    rows = sorted(load_corpus("lai_formality", data_dir=data_dir), key=lambda r: (r["system"], r["source_id"]))
    systems = sorted({r["system"] for r in rows})
    lines = {s: [r["rewrite"] for r in rows if r["system"] == s] for s in systems}
    sources = [r["source"] for r in rows if r["system"] == systems[0]]
    (tmp_path / "src.txt").write_text("".join(f"{x}\n" for x in sources), encoding="utf-8")
    for s in systems:
        (tmp_path / f"{s}.txt").write_text("".join(f"{x}\n" for x in lines[s]), encoding="utf-8")
    with subprocess.Popen([sys.executable, "-m", "sacrebleu", str(tmp_path / "src.txt"), "-i",
                           *(str(tmp_path / f"{s}.txt") for s in systems), "-m", "bleu", "chrf", "ter", "--paired-ar",
                           "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={"PATH": ""}) as cli:  # sacrebleu's 10,000 shuffles run while styleeval evaluates
        frame = pd.DataFrame({"system": [r["system"] for r in rows], "source_id": [r["source_id"] for r in rows],
                              "source": [r["source"] for r in rows], "rewrite": [r["rewrite"] for r in rows],
                              "style": "formal"})
        frame.to_csv(tmp_path / "lai.csv", index=False)
        assert main(["evaluate", str(tmp_path / "lai.csv"), "--metrics", "s_bleu,s_chrf,s_ter", "--out",
                     str(tmp_path / "out"), "--no-progress", "--no-plots"]) == 0
        out, err = cli.communicate(timeout=600)
    assert cli.returncode == 0, err
    theirs = {(name, Path(entry["system"]).stem): entry[name]["p_value"]
              for entry in json.loads(out)[1:] for name in ("BLEU", "chrF2", "TER")}
    pairs = pd.read_csv(tmp_path / "out" / "pairs.csv").set_index(["metric", "system_a", "system_b"])
    base = systems[0]  # the CLI's baseline, the first system
    for label, name, make in (("s_bleu", "BLEU", BLEU), ("s_chrf", "chrF2", CHRF), ("s_ter", "TER", TER)):
        statistics = {s: stats.corpus_statistics(make(), lines[s], [[x] for x in sources]) for s in systems}
        ties = stats.compare_corpus(make(), statistics, [(base, s) for s in systems[1:]]).pairs
        for other in systems[1:]:
            mine, cli_p = pairs.loc[(label, base, other), "p"], theirs[(name, other)]
            extra = round((mine - cli_p) * 10_001)
            assert 0 <= extra <= ties[(base, other)].ties, (label, other, mine, cli_p)
            if not ties[(base, other)].ties:
                assert mine == cli_p, (label, other)
    assert pairs.loc[("s_ter", "NIU", "RAO"), "p"] == 1.0  # equal TER (20.6897), different outputs: every shuffle ties


def test_repeated_system_and_source_is_refused_in_compare_systems():
    frame = pd.DataFrame({"row": range(6), "system": ["A", "A", "A", "B", "B", "B"],
                          "source_id": ["1", "1", "2", "1", "2", "3"], "m": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match=r"system 'A' has 2 rows for source '1' \(rows 0, 1\)"):
        compare_systems(frame, {"m": "m|v:1"})
    with pytest.raises(ValueError, match="no rows to compare"):
        compare_systems(frame.iloc[:0], {"m": "m|v:1"})


def test_an_infinite_score_is_refused_naming_the_row():
    frame = pd.DataFrame({"row": range(4), "system": ["A", "A", "B", "B"], "source_id": ["1", "2", "1", "2"],
                          "m": [1.0, math.inf, 0.5, 0.2]})
    with pytest.raises(ValueError, match=r"m: 1 infinite scores \(rows 1\)"):
        compare_systems(frame, {"m": "m|v:1"})


@pytest.mark.parametrize("label", ["system", "source_id", "row", "human_content", "reference_2"])
def test_a_metric_label_that_names_an_input_column_is_refused(label):
    with pytest.raises(ValueError, match=rf"metric label '{label}' names an input column"):
        evaluate_systems(_rows({"A": SOURCES, "B": SOURCES}), [f"s_bleu:as={label}"])


def test_source_ids_with_gaps_are_refused_and_ids_keep_their_text():
    frame = pd.DataFrame(_rows({"A": SOURCES[:3], "B": SOURCES[:3]}, SOURCES[:3]))
    frame["source_id"] = [1, 2, None, 1, 2, 3]  # pandas makes these 1.0, 2.0, NaN
    with pytest.raises(ValueError, match=r"source_id is missing in 1 rows \(row 2\)"):
        evaluate_systems(frame, ["s_bleu"])
    frame["source_id"] = [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    report = evaluate_systems(frame, ["s_bleu"], settings=TestSettings(trials=20, n_boot=20))
    assert sorted(set(report.scores["source_id"])) == ["1", "2", "3"]


def test_systems_covering_different_sources_are_ranked_on_the_shared_ones():
    rng = np.random.default_rng(0)
    sources = [f"s{i}" for i in range(100)]
    a = rng.normal(10.0, 1.0, 100)
    a[:20] -= 8.0  # A is poor on the 20 sources B covers, good elsewhere
    b = a[:20] + 3.0  # B is better than A on every shared source
    frame = pd.DataFrame({"row": range(120), "system": ["A"] * 100 + ["B"] * 20, "source_id": sources + sources[:20],
                          "m": np.concatenate([a, b])})
    report = compare_systems(frame, {"m": "m|v:1"}, settings=TestSettings(trials=500, n_boot=100))
    assert report.ranking("m") == ["B", "A"]  # the mean of A over its 100 sources would put A first
    table = report.systems.set_index("system")
    assert table.loc["B", "cluster"] == 1 and table.loc["A", "cluster"] == 2
    assert table.loc["A", "n"] == 20 and table.loc["A", "n_missing"] == 80
    assert any("B lacks 80 of 100 sources ('s20', 's21', 's22', ...); every metric compares the systems on the 20 of "
               "100 sources that every system has: 40 of the 120 rows read" in n for n in report.notes)
    assert report.coverage.summary() == "2 systems, 120 rows read, 40 compared (the 20 sources every system has; B " \
        "lacks 80 of 100 sources)"


def test_a_multi_reference_csv_cell_is_a_json_list_or_columns(tmp_path, lai):
    from styleeval.cli import main

    rows = [r for r in lai if r["system"] == "HIGH"][:30]
    want = evaluate_systems(rows, ["r_chrf"], settings=TestSettings(trials=10, n_boot=10)).systems[
        "score"].iloc[0]
    as_json = tmp_path / "json.csv"
    as_columns = tmp_path / "columns.csv"
    with open(as_json, "w", newline="", encoding="utf-8") as fh, open(as_columns, "w", newline="",
                                                                        encoding="utf-8") as gh:
        j, c = csv.writer(fh), csv.writer(gh)
        j.writerow(["system", "source_id", "source", "rewrite", "style", "reference"])
        c.writerow(["system", "source_id", "source", "rewrite", "style", "reference", "reference_2", "reference_3",
                    "reference_4"])
        for r in rows:
            j.writerow([r["system"], r["source_id"], r["source"], r["rewrite"], r["style"],
                        json.dumps(r["references"])])
            c.writerow([r["system"], r["source_id"], r["source"], r["rewrite"], r["style"], *r["references"]])
    for path in (as_json, as_columns):
        out = tmp_path / f"out-{path.stem}"
        assert main(["evaluate", str(path), "--metrics", "r_chrf", "--out", str(out), "--no-progress"]) == 0
        assert pd.read_csv(out / "systems.csv")["score"].iloc[0] == pytest.approx(want, abs=1e-9)
    repr_rows = [{**r, "references": None, "reference": str(r["references"])} for r in rows]
    with pytest.raises(ValueError, match=r"row 0: reference .* looks like a Python list, not text; write a JSON list"):
        evaluate_systems(repr_rows, ["r_chrf"])


def test_a_json_null_reference_cell_is_no_reference(tmp_path, lai):
    """json.dumps of every row's references, as the Python-list error advises, writes ``null`` for the human
    references (which have none): scored as the text "null", R-chrF gave them 7.4 and a wrong agreement."""
    from styleeval.cli import main

    high = [r for r in lai if r["system"] == "HIGH"]
    rows = high + [{**r, "system": "human", "rewrite": r["references"][0], "references": None} for r in high]
    outs = {}
    for how, cell in (("null", json.dumps), ("empty", lambda refs: "" if refs is None else json.dumps(refs))):
        path = tmp_path / f"{how}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["system", "source_id", "source", "rewrite", "style", "reference", "reference_2"])
            for r in rows:
                w.writerow([r["system"], r["source_id"], r["source"], r["rewrite"], r["style"], cell(r["references"]),
                            "null" if r["references"] is None else ""])
        outs[how] = tmp_path / f"out-{how}"
        assert main(["evaluate", str(path), "--metrics", "r_chrf", "--out", str(outs[how]), "--no-progress"]) == 0
    null, empty = (pd.read_csv(outs[h] / "systems.csv").set_index("system") for h in ("null", "empty"))
    assert null.loc["human", "n"] == 0 and pd.isna(null.loc["human", "score"]) and null.loc["HIGH", "n"] == 80
    pd.testing.assert_frame_equal(null, empty)


def test_the_report_says_when_alpha_is_out_of_reach_and_what_a_cluster_means():
    report = evaluate_systems(_rows({"A": SOURCES[:4], "B": ["x"] * 4}, SOURCES[:4]), ["s_chrf:agg=mean"])
    assert any("with 4 paired sources the ar test cannot give p below 0.125, above alpha = 0.05" in n
               for n in report.notes)
    text = report.to_markdown()
    assert "a system opens a new cluster when any system of the current cluster is significantly better" in text
    assert "need not differ significantly" in text


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_corpus_ar_on_one_to_four_sources_is_never_significant_and_noted(n):
    """A better than B on every source: sacrebleu's strict ">" gives p = 1 / 10,001 whatever n; counting the
    shuffles that reach the observed difference (the identity and the full swap always do), no test on 4 sources
    can reach 0.05, and the report says so."""
    rows = _rows({"A": SOURCES[:n], "B": ["x"] * n}, SOURCES[:n])
    report = evaluate_systems(rows, ["s_chrf", "s_bleu", "s_ter"])
    assert (report.pairs["p"] > 0.05).all() and not report.pairs["significant"].any(), report.pairs
    for label in ("s_chrf", "s_bleu", "s_ter"):
        assert any(note.startswith(f"{label}: with {n} paired sources the ar test cannot give p below")
                   for note in report.notes), report.notes


def test_identical_corpus_outputs_get_p_one_in_both_tests():
    rows = _rows({"A": SOURCES, "B": SOURCES, "C": ["x"] * len(SOURCES)})
    for test in ("ar", "bootstrap"):
        pairs = evaluate_systems(rows, ["s_chrf"], settings=TestSettings(test=test)).pairs.set_index(
            ["system_a", "system_b"])
        assert pairs.loc[("A", "B"), "p"] == 1.0 and pairs.loc[("A", "C"), "p"] < 0.01


def _frame(systems: int, rows: int, step: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"row": k, "system": f"S{s:02d}", "source_id": str(i), "m": s * step + rng.normal(),
                          "human_x": s * step + rng.normal()}
                         for k, (s, i) in enumerate(itertools.product(range(systems), range(rows)))])


@pytest.mark.parametrize(("systems", "test", "noted"), [(8, "bootstrap", True), (7, "bootstrap", False),
                                                         (15, "ar", True), (14, "ar", False)])
def test_alpha_out_of_reach_checks_the_holm_adjusted_floor(systems, test, noted):
    """Holm multiplies the smallest p by the number of pairs: 28 pairs x 2 / 1001 (bootstrap) > 0.05 although
    2 / 1001 < 0.05 (21 pairs: 0.042); 105 pairs x 1 / 2001 (sampled AR, 20 sources) > 0.05 (91 pairs: 0.045). One
    rule for mean metrics and human columns."""
    frame = _frame(systems, 20, step=5.0)
    report = compare_systems(frame, {"m": "m|v:1"}, settings=TestSettings(test=test, trials=2000))
    for label in ("m", "human_x"):
        said = [n for n in report.notes if n.startswith(f"{label}: with ")]
        assert bool(said) == noted, (label, report.notes)
        if noted:
            assert "after Holm's adjustment" in said[0] and not report.pairs[report.pairs.metric == label][
                "significant"].any()
        else:
            assert report.pairs[report.pairs.metric == label]["significant"].any()


@pytest.mark.parametrize(("systems", "noted"), [(3, False), (6, True)])
def test_alpha_out_of_reach_covers_corpus_metrics(systems, noted):
    """100 trials: the floor is 1 / 101; 3 pairs x 1/101 < 0.05, 15 pairs x 1/101 > 0.05."""
    rows = _rows({f"S{k}": [s if j % (k + 2) else "x" for j, s in enumerate(SOURCES)] for k in range(systems)})
    report = evaluate_systems(rows, ["s_chrf"], settings=TestSettings(trials=100))
    said = [n for n in report.notes if n.startswith("s_chrf: with 12 paired sources the ar test cannot give p below")]
    assert bool(said) == noted, report.notes


def test_each_number_carries_the_signature_of_what_computed_it():
    """The system score of a corpus metric is sacrebleu's corpus score (BLEU: ``eff:no``); its rows are sentence
    scores (``eff:yes``). On short outputs they differ: corpus BLEU of "hi there" is 0, its sentence BLEU 100."""
    from styleeval.signature import Signature

    rows = _rows({"A": ["hi there"] * 3, "B": ["hi"] * 3}, ["hi there"] * 3)
    rows = [{**r, "source_id": str(i % 3)} for i, r in enumerate(rows)]
    report = evaluate_systems(rows, ["s_bleu", "s_chrf", "s_ter"])
    table = report.systems.set_index(["metric", "system"])
    assert table.loc[("s_bleu", "A"), "score"] == sacrebleu.corpus_bleu(["hi there"] * 3, [["hi there"] * 3]).score
    assert table.loc[("s_bleu", "A"), "score"] == 0.0  # no 3- or 4-gram
    assert table.loc[("s_bleu", "A"), "mean"] == sacrebleu.sentence_bleu("hi there", ["hi there"]).score  # 100
    for label, make in (("s_bleu", sacrebleu.BLEU), ("s_chrf", sacrebleu.CHRF), ("s_ter", sacrebleu.TER)):
        signature = Signature.parse(report.signatures[label])
        assert Signature.parse(signature.format()) == signature  # round trip
        scorer = make()
        name = scorer.corpus_score(["hi there"], [["hi there"]]).name
        assert signature.fields["agg"] == "corpus"
        assert signature.fields["corpus"] == f"{name}|{scorer.get_signature()}"  # sacrebleu's corpus signature
        test = Signature.parse(report.test_signatures[label])
        assert test == Signature.parse(test.format())
        assert test.fields == {"stat": "corpus", "trials": "10000", "count": "ge", "ci": "bs-1000", "seed": "12345"}
    assert Signature.parse(report.signatures["s_bleu"]).fields["eff"] == "yes"  # the rows: sentence BLEU
    assert Signature.parse(report.signatures["s_bleu"]).fields["corpus"].fields["eff"] == "no"
