"""Numbers a paper cites: system scores of BLEU, chrF and TER are sacrebleu's corpus scores and their paired tests
sacrebleu's own; inputs that would give a confident wrong number are refused naming the row (issue 26)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from styleeval.systems import evaluate_systems
from styleeval.systems.evaluation import compare_systems

SOURCES = [f"the cat number {i} sat on the mat today and looked at the bird" for i in range(12)]


def _rows(systems: dict[str, list[str]], sources: list[str] = SOURCES, **extra) -> list[dict]:
    return [{"source": src, "rewrite": rw, "style": "formal", "system": name, **extra}
            for name, rewrites in systems.items() for src, rw in zip(sources, rewrites)]


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
    report = evaluate_systems(rows, [f"s_{kind}", f"r_{kind}"], trials=20, n_boot=20)
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
    means = evaluate_systems(rows, [f"s_{kind}:agg=mean"], trials=20, n_boot=20).systems
    assert (means["aggregate"] == "mean").all() and np.allclose(means["score"], means["mean"])


def test_paired_p_values_are_sacrebleus_within_monte_carlo_noise(lai):
    from sacrebleu.metrics import CHRF
    from sacrebleu.significance import PairedTest

    systems = ["NIU", "HIGH", "BART", "LUO"]
    rows = [r for r in lai if r["system"] in systems]
    report = evaluate_systems(rows, ["s_chrf"], trials=2000, n_boot=100, seed=3)
    pairs = report.pairs.set_index(["system_a", "system_b"])
    hyps = {s: [r["rewrite"] for r in rows if r["system"] == s] for s in systems}
    sources = [r["source"] for r in rows if r["system"] == "NIU"]
    for base, other in [("BART", "HIGH"), ("HIGH", "NIU"), ("HIGH", "LUO")]:
        _, results = PairedTest([(base, hyps[base]), (other, hyps[other])], {"chrF": CHRF()}, [sources],
                                test_type="ar", n_samples=2000)()
        theirs = results["chrF2"][1].p_value
        mine = pairs.loc[tuple(sorted((base, other)))].p
        assert abs(mine - theirs) < 0.03 + 0.1 * theirs, (base, other, mine, theirs)
    signature = report.test_signatures["s_chrf"]  # sacrebleu's own, with the test's seed and trials
    assert signature.startswith("nrefs:1|ar:2000|seed:3|case:mixed") and "version:" in signature


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
    frame = pd.DataFrame(_rows({"A": SOURCES[:3], "B": SOURCES[:3]}))
    frame["source_id"] = [1, 2, None, 1, 2, 3]  # pandas makes these 1.0, 2.0, NaN
    with pytest.raises(ValueError, match=r"source_id is missing in 1 rows \(row 2\)"):
        evaluate_systems(frame, ["s_bleu"])
    frame["source_id"] = [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]
    report = evaluate_systems(frame, ["s_bleu"], trials=20, n_boot=20)
    assert sorted(set(report.scores["source_id"])) == ["1", "2", "3"]


def test_systems_covering_different_sources_are_ranked_on_the_shared_ones():
    rng = np.random.default_rng(0)
    sources = [f"s{i}" for i in range(100)]
    a = rng.normal(10.0, 1.0, 100)
    a[:20] -= 8.0  # A is poor on the 20 sources B covers, good elsewhere
    b = a[:20] + 3.0  # B is better than A on every shared source
    frame = pd.DataFrame({"row": range(120), "system": ["A"] * 100 + ["B"] * 20, "source_id": sources + sources[:20],
                          "m": np.concatenate([a, b])})
    report = compare_systems(frame, {"m": "m|v:1"}, trials=500, n_boot=100)
    assert report.ranking("m") == ["B", "A"]  # the mean of A over its 100 sources would put A first
    table = report.systems.set_index("system")
    assert table.loc["B", "cluster"] == 1 and table.loc["A", "cluster"] == 2
    assert table.loc["A", "n"] == 20 and table.loc["A", "n_missing"] == 80
    assert any("compared on the 20 sources every scored system has; left out: A 80 rows" in n for n in report.notes)


def test_a_multi_reference_csv_cell_is_a_json_list_or_columns(tmp_path, lai):
    from styleeval.cli import main

    rows = [r for r in lai if r["system"] == "HIGH"][:30]
    want = evaluate_systems(rows, ["r_chrf"], trials=10, n_boot=10).systems["score"].iloc[0]
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


def test_the_report_says_when_alpha_is_out_of_reach_and_what_a_cluster_means():
    report = evaluate_systems(_rows({"A": SOURCES[:4], "B": ["x"] * 4}, SOURCES[:4]), ["s_chrf:agg=mean"])
    assert any("with 4 paired sources the ar test cannot give p below 0.125, above alpha = 0.05" in n
               for n in report.notes)
    text = report.to_markdown()
    assert "a system opens a new cluster when any system of the current cluster is significantly better" in text
    assert "need not differ significantly" in text
