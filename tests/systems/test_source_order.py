"""Resamples and shuffles are drawn over the sources in the order the input gives them, as sacrebleu draws over the
lines of its files: the same files give sacrebleu's p-values whatever the ids look like (issue 44, item 4).

Ids read from a CSV are text ("0".."79"); drawn in sorted source_id order, "10" came before "2", and on Lai's
systems the default-seed p-values differed from ``sacrebleu -i ... --paired-ar`` on the same files."""

from __future__ import annotations

import pandas as pd
import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from styleeval import stats
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.comparison import compare_systems

SYSTEMS = ("BART", "YI")
TRIALS, N_BOOT = 2000, 1000  # sacrebleu's per-trial scores are slow; its CLI's defaults are tested in test_citable_numbers


@pytest.fixture(scope="module")
def lai(data_dir) -> list[dict]:
    """Lai's BART and YI rows in the corpus's order: source ids "0".."79" as text, in numeric order."""
    from styleeval.corpora import load_corpus

    ds = load_corpus("lai_formality", data_dir=data_dir)
    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"]} for r in ds if r["system"] in SYSTEMS]


def sacrebleu_p(rows: list[dict], test: str) -> dict[str, float]:
    """sacrebleu's ``PairedTest`` (seed 12345) of YI against BART on the files the rows make, line by line in
    input order: metric label -> p."""
    lines = {s: [r["rewrite"] for r in rows if r["system"] == s] for s in SYSTEMS}
    sources = [r["source"] for r in rows if r["system"] == SYSTEMS[0]]
    samples = TRIALS if test == "ar" else N_BOOT
    _, theirs = PairedTest([(s, lines[s]) for s in SYSTEMS], {"bleu": BLEU(), "chrf": CHRF()}, [sources],
                           test_type="ar" if test == "ar" else "bs", n_samples=samples)()
    return {"s_bleu": theirs["BLEU"][1].p_value, "s_chrf": theirs["chrF2"][1].p_value}


def untied(rows: list[dict]) -> bool:
    """No AR shuffle ties the observed difference (where one does, sacrebleu's p is lower by design)."""
    lines = {s: [r["rewrite"] for r in rows if r["system"] == s] for s in SYSTEMS}
    sources = [[r["source"]] for r in rows if r["system"] == SYSTEMS[0]]
    return all(stats.compare_corpus(make(), {s: stats.corpus_statistics(make(), lines[s], sources) for s in SYSTEMS},
                                    [SYSTEMS], test="ar", trials=TRIALS).pairs[SYSTEMS].ties == 0
               for make in (BLEU, CHRF))


@pytest.mark.parametrize("test", ["ar", "bootstrap"])
def test_text_ids_in_input_order_give_sacrebleus_p_values_and_padding_them_changes_nothing(lai, test):
    ids = [r["source_id"] for r in lai if r["system"] == SYSTEMS[0]]
    assert ids == [str(i) for i in range(80)] and sorted(ids) != ids  # text ids, lexicographic order differs
    assert test != "ar" or untied(lai)
    metrics = ["s_bleu", "s_chrf", "s_chrf:agg=mean:as=chrf_mean"]
    report = evaluate_systems(lai, metrics, settings=TestSettings(test=test, trials=TRIALS, n_boot=N_BOOT))
    pairs = report.pairs.set_index("metric")
    for label, theirs in sacrebleu_p(lai, test).items():
        assert pairs.loc[label, "p"] == theirs, (label, test)
    padded = evaluate_systems([{**r, "source_id": r["source_id"].zfill(3)} for r in lai], metrics,
                              settings=TestSettings(test=test, trials=TRIALS, n_boot=N_BOOT))
    pd.testing.assert_frame_equal(padded.pairs, report.pairs)
    pd.testing.assert_frame_equal(padded.systems, report.systems)


def test_compare_systems_draws_over_sources_in_order_of_first_appearance():
    """Mean-aggregated scores given directly: the same rows under ids that sort another way, or listed system by
    system in another order, give the same CIs and p-values as long as the sources first appear in the same order."""
    scores_a = [0.9, 0.1, 0.5, 0.7, 0.3, 0.8, 0.2, 0.6, 0.4, 0.95, 0.05, 0.55, 0.65]
    scores_b = [0.2, 0.4, 0.1, 0.9, 0.3, 0.5, 0.6, 0.0, 0.7, 0.35, 0.15, 0.25, 0.45]
    n = len(scores_a)

    def frame(ids: list[str], b_order: list[int]) -> pd.DataFrame:
        return pd.DataFrame({"row": range(2 * n), "system": ["A"] * n + ["B"] * n,
                             "source_id": ids + [ids[k] for k in b_order],
                             "m": scores_a + [scores_b[k] for k in b_order]})

    in_order = list(range(n))
    text = frame([str(i) for i in range(n)], in_order)  # "10" sorts before "2"
    report = compare_systems(text, {"m": "m|v:1"}, settings=TestSettings(trials=500, n_boot=500))
    for ids, b_order in (([f"{i:03d}" for i in range(n)], in_order), ([str(i) for i in range(n)], in_order[::-1]),
                         ([f"z{n - i}" for i in range(n)], in_order)):
        other = compare_systems(frame(ids, b_order), {"m": "m|v:1"},
                                settings=TestSettings(trials=500, n_boot=500))
        pd.testing.assert_frame_equal(other.pairs, report.pairs)
        pd.testing.assert_frame_equal(other.systems, report.systems)
