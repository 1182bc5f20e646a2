"""evaluate's agreement with the human ratings over like sets (issue 36, item 3): every metric of a table on the same
systems and rows, with n shown; the same statistic on the same data as `metaeval`; negated metrics said so."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems


@pytest.fixture(scope="module")
def lai_rows(data_dir) -> list[dict]:
    """Lai et al.'s 9 systems (the human references as system ``reference``) with their content and style ratings,
    as the README's worked example builds them."""
    from styleeval.corpora import load_corpus

    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "reference": r["reference"], "human_content": r["content_mean"],
             "human_style": r["style_mean"]} for r in load_corpus("lai_formality", data_dir=data_dir)]


@pytest.fixture(scope="module")
def lai_report(lai_rows):
    """The README's example (S-BLEU, S-chrF, R-chrF) with S-TER and the mean of sentence chrF beside them."""
    return evaluate_systems(lai_rows, ["s_bleu", "s_chrf", "r_chrf", "s_ter", "s_chrf:agg=mean:as=chrf_mean"],
                            sort_by="human_content", settings=TestSettings(trials=50, n_boot=20))


def test_every_metric_is_compared_on_the_systems_and_rows_all_of_them_score(lai_report, lai_rows):
    """R-chrF scores 8 systems (the references have no reference), the source-based metrics 9: the table puts all of
    them on the 8 and 640 rows, names the system left out and why, and keeps each metric's own-systems value apart."""
    agreement = lai_report.agreement.set_index(["human", "metric"])
    assert (agreement["n_systems"] == 8).all() and (agreement["n_rows"] == 640).all()
    assert (agreement["left_out"] == "reference (no r_chrf score)").all()
    content = agreement.loc["human_content"]
    assert content.loc["s_chrf", "n_systems_own"] == 9 and content.loc["r_chrf", "n_systems_own"] == 8
    # by hand: sacrebleu's corpus chrF of each of the 8 systems against its sources, Pearson with the human means
    systems = sorted({r["system"] for r in lai_rows} - {"reference"})
    chrf = [sacrebleu.corpus_chrf([r["rewrite"] for r in lai_rows if r["system"] == s],
                                  [[r["source"] for r in lai_rows if r["system"] == s]]).score for s in systems]
    human = [np.mean([r["human_content"] for r in lai_rows if r["system"] == s]) for s in systems]
    assert content.loc["s_chrf", "pearson"] == pytest.approx(np.corrcoef(chrf, human)[0, 1], abs=1e-12)
    # the README's Lai conclusion, over like sets (before: S-chrF 0.40 / 72%, S-BLEU 0.23 / 64% over 9 systems)
    numbers = {m: (round(content.loc[m, "pearson"], 3), round(content.loc[m, "pairwise_accuracy"], 3))
               for m in ("r_chrf", "s_chrf", "s_bleu")}
    assert numbers == {"r_chrf": (0.934, 0.857), "s_chrf": (0.695, 0.75), "s_bleu": (0.42, 0.643)}
    assert round(content.loc["s_chrf", "pearson_own"], 3) == 0.404  # S-chrF on its own 9 systems, named apart
    assert content.loc["s_chrf", "aggregate"] == "corpus" and content.loc["chrf_mean", "aggregate"] == "mean"


def test_the_same_statistic_on_the_same_data_is_the_same_number_in_metaeval(lai_report, data_dir):
    """A mean-aggregated metric's agreement equals metaeval's system-level r (wmt_kendall.csv) and the leaderboard's
    system pairwise accuracy on the same 8 systems; the corpus-score S-chrF differs (0.695 vs 0.712) and says what it
    correlates in its own column."""
    from styleeval.metaeval import run_metaeval
    from styleeval.metaeval.runner import shared_rows
    from styleeval.metaeval.statistics import STATISTICS, Corpus

    result = run_metaeval(["lai_formality"], ["s_chrf", "r_chrf"], dimension="content", data_dir=data_dir,
                          n_boot=0)
    wmt = result.wmt.set_index("metric")
    agreement = lai_report.agreement.set_index(["human", "metric"]).loc["human_content"]
    assert wmt.loc["s_chrf", "n_systems"] == agreement.loc["chrf_mean", "n_systems"] == 8
    assert agreement.loc["chrf_mean", "pearson"] == pytest.approx(wmt.loc["s_chrf", "system_pearson"], abs=1e-12)
    assert round(wmt.loc["s_chrf", "system_pearson"], 3) == 0.712 != round(agreement.loc["s_chrf", "pearson"], 3)
    # one statistic, one name: the same number is labelled alike in both reports, the other one not
    assert wmt.loc["s_chrf", "system_score"] == agreement.loc["chrf_mean", "system_score"] == "mean sentence chrF"
    assert agreement.loc["s_chrf", "system_score"] == "corpus chrF"
    human = result.human["lai_formality"]
    rows, _ = shared_rows(human, {m: result.scores["lai_formality", m] for m in ("s_chrf", "r_chrf")},
                          np.arange(len(human)))
    corpus = Corpus("lai_formality", "mixed", np.asarray(result.groups["lai_formality"], dtype=object),
                    np.asarray(result.systems["lai_formality"], dtype=object))
    accuracy = STATISTICS["system_pairwise_accuracy"].compute(corpus, human[rows],
                                                              result.scores["lai_formality", "s_chrf"][rows], rows)
    assert accuracy == agreement.loc["chrf_mean", "pairwise_accuracy"] == 0.75


def test_the_tables_show_n_and_say_what_they_negate(lai_report):
    """report.md, the stdout table and report.json show each table's systems and rows; TER's agreement is of its
    negation and every format says so (before: S-TER r = +0.151 with nothing saying it was -TER)."""
    ter = lai_report.agreement.set_index(["human", "metric"]).loc[("human_content", "s_ter")]
    assert ter["negated"] and ter["pearson"] > 0  # -TER agrees with the humans; TER itself correlates negatively
    text = lai_report.to_markdown()
    section = text[text.index("## Agreement with the human ratings"):text.index("## Signatures")]
    assert "### Agreement with human_content: 8 systems, 640 rows (left out: reference (no r_chrf score))" in section
    assert "Lower is better for S-TER: negated here" in section and "| S-TER (negated) | corpus TER |" in section
    assert "| metric | system score | Pearson r | pairwise accuracy | r, own systems |" in section
    stdout = lai_report.to_text()
    assert "Agreement with human_style: 8 systems, 640 rows" in stdout and "S-TER (negated)" in stdout
    records = json.loads(json.dumps(lai_report.to_dict(), default=str))["agreement"]
    assert {(r["metric"], r["negated"], r["n_systems"], r["n_rows"]) for r in records if r["human"] ==
            "human_content"} == {(m, m == "s_ter", 8, 640) for m in ("s_bleu", "s_chrf", "r_chrf", "s_ter",
                                                                       "chrf_mean")}


def test_s_bleu_s_two_system_level_numbers_are_labelled_as_two_statistics(lai_report, data_dir, tmp_path):
    """Issue 47, item 7: S-BLEU's system-level r with human content on Lai's 8 systems is 0.420 in ``evaluate``
    (sacrebleu's corpus BLEU per system) and 0.312 in ``metaeval``'s Lai table (the mean of sentence BLEU per
    system). Each report names its statistic in a ``system score`` column, with the same words
    (``styleeval.labels.system_statistic``), and a legend under it says what each is; the terminal too."""
    from styleeval.labels import system_statistic
    from styleeval.metaeval import run_metaeval, write_report

    agreement = lai_report.agreement.set_index(["human", "metric"]).loc["human_content"]
    assert agreement.loc["s_bleu", "system_score"] == "corpus BLEU" and round(agreement.loc["s_bleu", "pearson"], 3) \
        == 0.42
    result = run_metaeval(["lai_formality"], ["s_bleu", "r_chrf"], dimension="content", data_dir=data_dir, n_boot=0)
    wmt = result.wmt.set_index("metric")
    assert wmt.loc["s_bleu", "n_systems"] == agreement.loc["s_bleu", "n_systems"] == 8  # the same systems
    assert wmt.loc["s_bleu", "system_score"] == "mean sentence BLEU" and round(wmt.loc["s_bleu", "system_pearson"],
                                                                             3) == 0.312
    # the mean-sentence number is what it says: Pearson of the 8 systems' mean sentence BLEU
    mean_bleu = lai_report.scores.groupby("system")["s_bleu"].mean().drop(["reference", "(copy source)"])
    human = lai_report.scores.groupby("system")["human_content"].mean().drop(["reference", "(copy source)"])
    assert wmt.loc["s_bleu", "system_pearson"] == pytest.approx(np.corrcoef(mean_bleu, human)[0, 1], abs=1e-12)
    # evaluate: report.md and the terminal
    text = lai_report.to_markdown()
    section = text[text.index("## Agreement with the human ratings"):text.index("## Signatures")]
    assert "| S-BLEU | corpus BLEU | 0.42 | 0.643 |" in section and "| chrf_mean | mean sentence chrF |" in section
    legend = ("System score: corpus BLEU, corpus chrF, corpus TER = sacrebleu's corpus_score of the system's rewrites "
              "(their statistics summed: what `sacrebleu -i` prints); mean sentence chrF = the mean of the system's "
              "sentence scores (sacrebleu's sentence_score of each row). Corpus and mean sentence chrF are different "
              "statistics: their system scores, and their r with the humans, differ.")
    assert legend in section
    stdout = lai_report.to_text(width=100)
    assert "S-BLEU           corpus BLEU         0.42" in stdout and legend in " ".join(stdout.split())
    # metaeval: report.md and wmt_kendall.csv, in the same words
    paths = write_report(result, tmp_path, plots=False)
    report = paths["report"].read_text(encoding="utf-8")
    assert "| dataset | metric | Kendall tau-like | pairs | system score | system-level r | systems |" in report
    assert "| Lai | S-BLEU | 0.290 | 1810 | mean sentence BLEU | 0.31* | 8 |" in report
    assert ("System score: mean sentence BLEU, mean sentence chrF = the mean of the system's sentence scores "
            "(sacrebleu's sentence_score of each row).") in report
    assert "its default S-BLEU correlates `corpus BLEU`, another statistic" in report
    csv = pd.read_csv(paths["wmt"]).set_index("metric")
    assert csv.loc["s_bleu", "system_score"] == system_statistic("mean", result.signatures["s_bleu"]).label


def test_a_corpus_score_is_recomputed_on_the_shared_rows_where_they_are_fewer():
    """System C lacks a human rating on one source: the agreement compares every system on the other sources, and
    the corpus BLEU of A and B there is sacrebleu's on those rows, not the systems table's over all of them."""
    from styleeval.systems.comparison import compare_systems

    sources = [f"the cat number {i} sat on the mat today and looked at the bird" for i in range(6)]
    outputs = {"A": [s.replace("cat", "dog") for s in sources], "B": [s.upper() for s in sources],
               "C": [s.replace("bird", "fish") for s in sources], "D": list(sources)}
    rows = [{"source": s, "rewrite": r, "style": "formal", "system": name,
             "human_content": (k + 1) * 10.0 + i % 3 if not (name == "C" and i == 0) else None}
            for k, (name, rewrites) in enumerate(outputs.items()) for i, (s, r) in enumerate(zip(sources, rewrites, strict=True))]
    report = evaluate_systems(rows, ["s_bleu"], settings=TestSettings(trials=20, n_boot=10), baselines=False)
    row = report.agreement.iloc[0]
    assert row.n_systems == 4 and row.n_rows == 20 and row.left_out == ""
    shared = {name: sacrebleu.corpus_bleu(rewrites[1:], [sources[1:]]).score for name, rewrites in outputs.items()}
    human = [np.mean([(k + 1) * 10.0 + i % 3 for i in range(1, 6)]) for k in range(4)]
    assert row.pearson == pytest.approx(np.corrcoef(list(shared.values()), human)[0, 1], abs=1e-12)
    table = report.systems[report.systems["metric"] == "s_bleu"].set_index("system")["score"]
    assert table["A"] == pytest.approx(sacrebleu.corpus_bleu(outputs["A"], [sources]).score)  # all 6 rows there
    again = compare_systems(report.scores, report.signatures, report.higher_is_better,
                            settings=TestSettings(trials=20, n_boot=10))
    means = report.scores[report.scores["source_id"] != sources[0]].groupby("system")["s_bleu"].mean()
    assert again.agreement.iloc[0]["aggregate"] == "mean" and again.agreement.iloc[0].n_rows == 20
    assert again.agreement.iloc[0].pearson == pytest.approx(np.corrcoef(means, human)[0, 1], abs=1e-12)


def test_the_readmes_best_s_chrf_system_is_the_runs(lai_report):
    """Issue 47: the README's Lai paragraph named RAO the best S-chrF system; the run's is HIGH (80.02 vs RAO's
    79.96), as the README's table and its paragraph now say."""
    from pathlib import Path

    chrf = lai_report.systems[lai_report.systems.metric == "s_chrf"].set_index("system")["score"]
    assert chrf.idxmax() == "HIGH" and round(chrf["HIGH"], 2) == 80.02 and round(chrf["RAO"], 2) == 79.96
    readme = " ".join((Path(__file__).resolve().parents[2] / "docs" / "evaluate.md").read_text(encoding="utf-8")
                      .split())  # the worked example, the README's until issue 60
    assert "| HIGH | 60.24 [55.43, 65.65] (1) | 80.02 " in readme and "| RAO | 63.21 [57.61, 68.68] (1) | 79.96 " in readme
    assert "below the best S-chrF system on S-chrF (51.3 vs HIGH's 80.0;" in readme
