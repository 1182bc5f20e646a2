"""Issue 61, item 2: every report of ``evaluate`` shows where copying the source lands (and, where the rows carry
references, the human reference), on every metric, on the rows the systems are compared on, marked as baselines and
left out of the tests, clusters, rankings and agreement unless asked (``test_baselines`` / ``--test-baselines``)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import sacrebleu

from styleeval.cli import main
from styleeval.errors import UserError
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems

FAST = {"settings": TestSettings(trials=50, n_boot=20)}
SOURCES = [f"the cat number {i} sat on the mat today and looked at the bird" for i in range(8)]
REFERENCES = [[s.replace("cat", "kitten"), s.replace("today", "this morning")] for s in SOURCES]
COPY, HUMAN = "(copy source)", "(human reference)"


def _rows(human: bool = False) -> list[dict]:
    systems = {"dog": [s.replace("cat", "dog") for s in SOURCES], "upper": [s.upper() for s in SOURCES]}
    return [{"system": name, "source_id": f"s{i}", "source": s, "rewrite": r, "style": "formal",
             "references": REFERENCES[i], **({"human_content": float((i + k) % 5)} if human else {})}
            for k, (name, rewrites) in enumerate(systems.items())
            for i, (s, r) in enumerate(zip(SOURCES, rewrites, strict=True))]


def test_the_copy_and_the_human_reference_are_scored_beside_the_systems_and_left_out_of_the_tests():
    report = evaluate_systems(_rows(human=True), ["s_chrf", "r_chrf"], **FAST)
    base = report.baselines.set_index(["system", "metric"])
    transposed = [list(r) for r in zip(*REFERENCES, strict=True)]
    # copying the source: S-chrF 100 (what similarity metrics reward), R-chrF that of the sources against the
    # references, both sacrebleu's corpus chrF of the same 8 rows the systems are compared on
    assert base.loc[(COPY, "s_chrf"), "score"] == 100.0 == sacrebleu.corpus_chrf(SOURCES, [SOURCES]).score
    assert base.loc[(COPY, "r_chrf"), "score"] == pytest.approx(sacrebleu.corpus_chrf(SOURCES, transposed).score)
    firsts = [r[0] for r in REFERENCES]
    assert base.loc[(HUMAN, "s_chrf"), "score"] == pytest.approx(sacrebleu.corpus_chrf(firsts, [SOURCES]).score)
    # the human reference against the references would be scored against itself: not scored, and said why
    assert base.loc[(HUMAN, "r_chrf"), "n"] == 0 and math.isnan(base.loc[(HUMAN, "r_chrf"), "score"])
    assert any(note.startswith(f"r_chrf: the baseline {HUMAN} is not scored: it is one of the references")
               for note in report.notes)
    assert (HUMAN, "human_content") not in base.index  # a baseline has no human rating: no row for one
    systems_n = set(report.systems.loc[report.systems["metric"] == "s_chrf", "n"])
    assert systems_n == {8} and base.loc[(COPY, "s_chrf"), "n"] == base.loc[(HUMAN, "s_chrf"), "n"] == 8
    # not systems: in no test, no cluster, no ranking, no agreement, not in the coverage
    assert set(report.systems["system"]) == {"dog", "upper"} and report.ranking("s_chrf") == ["dog", "upper"]
    assert set(report.pairs["system_a"]) | set(report.pairs["system_b"]) == {"dog", "upper"}
    assert base["cluster"].isna().all() and report.coverage.systems == 2
    assert report.agreement["n_systems"].max() == 2 and not report.agreement["left_out"].any()
    # shown, marked: report.md, the terminal, report.json
    text = report.to_markdown()
    assert "| (copy source) | 100 [100, 100] | " in text and "| (human reference) | " in text
    legend = ("(copy source) (every source copied unchanged) and (human reference) (the first human reference of "
              "each source, not scored by reference-based metrics: against the references it would be scored "
              "against itself) are baselines, not systems; they are scored on the sources the systems are compared "
              "on and left out of the significance tests, clusters, rankings and agreement")
    assert legend in text and "Similarity metrics reward copying" in text
    terminal = report.to_text(width=100)
    assert " ".join(legend.split()) in " ".join(terminal.split())
    assert [line.split()[0] for line in terminal.splitlines()[2:6]] == ["dog", "upper", "(copy", "(human"]
    saved = json.loads(json.dumps(report.to_dict()))
    assert saved["baselines"]["names"] == [COPY, HUMAN] and saved["baselines"]["tested"] is False
    assert {(r["system"], r["baseline"]) for r in saved["baselines"]["systems"]} == {(COPY, True), (HUMAN, True)}
    assert not any(r.get("baseline") for r in saved["systems"])
    # the report's scores compared again: the baselines are known by their names, still not compared
    from styleeval.systems import compare_systems

    again = compare_systems(report.scores, report.signatures, report.higher_is_better, **FAST)
    assert again.baseline_names == [COPY, HUMAN] and set(again.systems["system"]) == {"dog", "upper"}


def test_asked_for_the_baselines_are_tested_as_systems_and_marked_all_the_same():
    report = evaluate_systems(_rows(), ["s_chrf"], test_baselines=True, **FAST)
    assert set(report.systems["system"]) == {"dog", "upper", COPY, HUMAN} and report.baselines.empty
    assert report.ranking("s_chrf")[0] == COPY  # copying wins on a similarity metric
    assert {(r.system_a, r.system_b) for r in report.pairs.itertuples()} >= {(COPY, "dog"), (COPY, "upper")}
    assert report.systems.set_index("system").loc[COPY, "cluster"] == 1
    saved = report.to_dict()
    assert saved["baselines"]["tested"] is True
    assert {r["system"] for r in saved["systems"] if r.get("baseline")} == {COPY, HUMAN}
    assert "compared as systems here (--test-baselines)" in report.to_markdown()
    plain = evaluate_systems(_rows(), ["s_chrf"], baselines=False, **FAST)
    assert plain.baseline_names == [] and COPY not in plain.to_markdown() and "baselines" not in plain.to_dict()


def test_a_system_named_as_a_baseline_is_refused_naming_the_row():
    rows = _rows()
    rows[3]["system"] = COPY
    with pytest.raises(UserError, match=r"row 3: the system name '\(copy source\)' is the name of a baseline"):
        evaluate_systems(rows, ["s_chrf"], **FAST)
    evaluate_systems(rows[:3] + rows[4:], ["s_chrf"], baselines=False, **FAST)  # without baselines: a name


def test_evaluate_shows_the_copy_baseline_in_every_output(tmp_path, capsys):
    """The command: the terminal table, report.md, report.json, systems.csv, rows.jsonl and the tradeoff figure
    (the random-weights model's LogProb: the figure needs a content and a style metric)."""
    table = tmp_path / "outputs.jsonl"
    table.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "references"}) + "\n"
                             for r in _rows()), encoding="utf-8")
    out = tmp_path / "report"
    metrics = "logprob_content:model=tiny-random,logprob_style:model=tiny-random,s_bleu"
    assert main(["evaluate", str(table), "--metrics", metrics, "--out", str(out), "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    assert "(copy source) (every source copied unchanged) is a baseline, not a system" in " ".join(stdout.split())
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| (copy source) | " in report and HUMAN not in report  # no references: no human reference
    systems = pd.read_csv(out / "systems.csv")
    assert sorted(systems.loc[systems["system"] == COPY, "metric"]) == ["logprob_content", "logprob_style", "s_bleu"]
    copy_bleu = systems.set_index(["system", "metric"]).loc[(COPY, "s_bleu")]
    assert copy_bleu["score"] == pytest.approx(100.0) and copy_bleu["n"] == 8
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    copies = [r for r in rows if r.get("baseline")]
    assert len(copies) == 8 and {r["system"] for r in copies} == {COPY} and all(r["rewrite"] == r["source"]
                                                                              for r in copies)
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["baselines"]["names"] == [COPY]
    from matplotlib import pyplot as plt

    from styleeval.systems.report import tradeoff_figure

    # the figure: the baseline's name beside its grey square, the title saying what the squares are
    given = [json.loads(line) for line in table.read_text(encoding="utf-8").splitlines()]
    report_obj = evaluate_systems(given, metrics.split(","), cache_dir=out / "cache", **FAST)
    fig = tradeoff_figure(report_obj)
    ax = fig.axes[0]
    assert COPY in [t.get_text() for t in ax.texts]
    assert "squares: baselines, not systems (grey: not in the front or the tests)" in ax.get_title()
    plt.close(fig)
    # --no-baselines: none
    assert main(["evaluate", str(table), "--metrics", "s_bleu", "--out", str(tmp_path / "plain"), "--no-progress",
                 "--no-baselines"]) == 0
    assert COPY not in capsys.readouterr().out and COPY not in (tmp_path / "plain" / "report.md").read_text()
