"""What evaluate's input cuts or makes meaningless is said, not hidden (issue 47, item 3): systems that do not all
cover the same sources (the note names the system that caused the cut, the header counts what the statistics use)
and a system whose rewrites are its references."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from styleeval.cli import main
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.comparison import compare_systems
from styleeval.systems.inputs import ReferenceCopyWarning

SOURCES = [f"the cat number {i} sat on the mat today" for i in range(10)]


def _systems_csv(path, lacking: dict[str, list[int]]) -> None:
    """Systems A, B, C on the 10 sources (source_id s0..s9), each without the sources ``lacking`` names."""
    rewrites = {"A": lambda s: s, "B": lambda s: s.replace("today", "yesterday"), "C": lambda s: s.upper()}
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["system", "source_id", "source", "rewrite", "style"])
        for system, rewrite in rewrites.items():
            writer.writerows([system, f"s{i}", s, rewrite(s), "formal"] for i, s in enumerate(SOURCES)
                             if i not in lacking.get(system, []))


def test_a_system_missing_sources_is_named_and_the_counts_are_those_the_statistics_use(tmp_path, capsys):
    path, out = tmp_path / "systems.csv", tmp_path / "out"
    _systems_csv(path, {"C": [3, 7]})
    assert main(["evaluate", str(path), "--metrics", "s_chrf", "--out", str(out), "-q"]) == 0
    err = capsys.readouterr().err
    summary = "3 systems, 28 rows read, 24 compared (the 8 sources every system has; C lacks 2 of 10 sources)"
    assert f"{summary}, 1 metric" in err  # the last line on the terminal
    note = ("the systems do not all cover the same sources: C lacks 2 of 10 sources ('s3', 's7'); every metric "
            "compares the systems on the 8 of 10 sources that every system has: 24 of the 28 rows read")
    assert f"note: {note}" in err and "A lacks" not in err and "B lacks" not in err
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"# System evaluation\n\n{summary}. Each cell" in report and note in report
    assert "| n | 8 |" in report  # the n row: each system's rows in the statistics, 3 x 8 = 24
    systems = pd.read_csv(out / "systems.csv").set_index("system")
    # the copy baseline (every source) is scored on the same 8 sources as the systems
    assert systems["n"].to_dict() == {"A": 8, "B": 8, "C": 8, "(copy source)": 8}
    assert systems["n_missing"].to_dict() == {"A": 2, "B": 2, "C": 0, "(copy source)": 2}
    coverage = json.loads((out / "report.json").read_text(encoding="utf-8"))["coverage"]
    assert coverage == {"systems": 3, "rows": 28, "sources": 10, "shared_sources": 8, "shared_rows": 24,
                        "lacking": {"C": {"sources": 2, "examples": ["s3", "s7"]}}}


def test_several_systems_lacking_sources_are_each_named_with_their_count(tmp_path, capsys):
    path = tmp_path / "systems.csv"
    _systems_csv(path, {"B": [0, 1, 2, 3, 4], "C": [9]})
    assert main(["evaluate", str(path), "--metrics", "s_chrf", "--out", str(tmp_path / "out"), "-q"]) == 0
    err = capsys.readouterr().err
    assert ("B lacks 5 of 10 sources ('s0', 's1', 's2', ...), C lacks 1 ('s9'); every metric compares the systems on "
            "the 4 of 10 sources that every system has: 12 of the 24 rows read") in err
    assert "3 systems, 24 rows read, 12 compared (the 4 sources every system has; B lacks 5 of 10 sources, C lacks 1)" \
        in err


def test_complete_systems_are_summed_up_as_before(tmp_path, capsys):
    path = tmp_path / "systems.csv"
    _systems_csv(path, {})
    assert main(["evaluate", str(path), "--metrics", "s_chrf", "--out", str(tmp_path / "out"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "3 systems, 30 rows, 1 metric" in err and "lacks" not in err and "do not all cover" not in err


def test_a_metric_with_missing_scores_names_the_systems_it_cuts():
    """A metric's own cut (scores missing on some rows) is noted apart, naming the system without scores; where the
    metric's cut is the input's, the input's note says it once."""
    sources = [f"s{i}" for i in range(10)]
    rng = np.random.default_rng(1)
    m = rng.normal(0, 1, 30)
    m[10:12] = np.nan  # B has no m score on s0, s1
    frame = pd.DataFrame({"row": range(30), "system": ["A"] * 10 + ["B"] * 10 + ["C"] * 10,
                          "source_id": sources * 3, "m": m, "k": rng.normal(0, 1, 30)})
    report = compare_systems(frame, {"m": "m|v:1", "k": "k|v:1"}, settings=TestSettings(trials=100, n_boot=20))
    assert ("m: scores are missing on some sources: B has none on 2 of 10 ('s0', 's1'); m compares the systems on the "
            "8 of 10 scored sources that every scored system has: 24 of 28 scored rows") in report.notes
    assert not any(n.startswith("k:") and "missing" in n for n in report.notes)
    assert not report.coverage.cut and report.coverage.summary() == "3 systems, 30 rows"
    table = report.systems.set_index(["metric", "system"])["n"]
    assert table["m"].tolist() == [8, 8, 8] and table["k"].tolist() == [10, 10, 10]


def _copies(rows: list[dict], metrics: list[str]):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate_systems(rows, metrics, settings=TestSettings(trials=50, n_boot=20))
    return report, [w.message for w in caught if isinstance(w.message, ReferenceCopyWarning)]


@pytest.fixture(scope="module")
def lai_rows(data_dir) -> list[dict]:
    """Lai et al.'s 9 systems with human content ratings; the references' rows carry themselves as reference (what a
    user-built CSV easily does)."""
    from styleeval.corpora import load_corpus

    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "human_content": r["content_mean"],
             "reference": r["rewrite"] if r["system"] == "reference" else r["reference"]}
            for r in load_corpus("lai_formality", data_dir=data_dir)]


def test_references_carrying_themselves_are_warned_about(lai_rows):
    report, told = _copies(lai_rows, ["r_chrf"])
    message = ("system reference: rewrites equal its references on 80/80 rows; its reference-based scores (R-*) are "
               "meaningless")
    assert [str(w)[:len(message)] for w in told] == [message] and len(told[0].rows) == 80
    assert any(n.startswith(message) for n in report.notes)  # in report.md's notes too
    assert message in report.to_markdown()
    table = report.systems[report.systems["metric"] == "r_chrf"].set_index("system")
    assert table.loc["reference", "score"] == 100.0 and table.loc["reference", "cluster"] == 1  # what it warns of
    # the agreement with the humans over 9 systems, the copy included (0.934 over the 8 real ones)
    assert round(report.agreement.set_index("metric").loc["r_chrf", "pearson"], 3) == 0.289
    # the fix the warning gives: no reference on the references' rows
    fixed, told = _copies([{**r, "reference": None} if r["system"] == "reference" else r for r in lai_rows],
                          ["r_chrf"])
    assert told == [] and round(fixed.agreement.set_index("metric").loc["r_chrf", "pearson"], 3) == 0.934


@pytest.mark.parametrize("same, warned", [(10, True), (9, True), (8, False)])
def test_the_copy_warning_starts_at_nine_rows_in_ten(same, warned):
    rows = [{"system": "X", "source": s, "rewrite": s.upper() if i < same else "something else", "style": "formal",
             "reference": s.upper()} for i, s in enumerate(SOURCES)]
    rows += [{**r, "system": "Y", "rewrite": "another text"} for r in rows]
    _, told = _copies(rows, ["r_chrf"])
    assert [str(w).split(";")[0] for w in told] == (
        [f"system X: rewrites equal its references on {same}/10 rows"] if warned else [])


def test_the_copy_warning_needs_a_reference_based_metric_and_ten_rows():
    """A run without an R-* metric has no reference-based scores to warn about; 9 rows (``--limit`` on a few
    sources, where a good system may rewrite as the reference did) are too few to call a system a copy."""
    rows = [{"system": "X", "source": s, "rewrite": s.upper(), "style": "formal", "reference": s.upper()}
            for s in SOURCES]
    rows += [{**r, "system": "Y", "rewrite": "another text"} for r in rows]
    assert [str(w).split(";")[0] for w in _copies(rows, ["r_chrf"])[1]] == [
        "system X: rewrites equal its references on 10/10 rows"]
    assert _copies(rows, ["s_chrf", "s_bleu"])[1] == []
    few = [r for r in rows if r["source"] in SOURCES[:9]]
    assert _copies(few, ["r_chrf"])[1] == []
