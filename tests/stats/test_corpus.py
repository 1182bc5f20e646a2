"""Corpus statistics of sacrebleu's metrics, vectorised: against sacrebleu's public API (``corpus_score``,
``sacrebleu.significance.PairedTest``) and against the per-trial computation with the same draws (issue 36)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from styleeval import stats
from styleeval.stats import corpus

SCORERS = {
    "bleu": BLEU, "bleu-eff": lambda: BLEU(effective_order=True), "bleu-floor": lambda: BLEU(smooth_method="floor"),
    "bleu-add-k": lambda: BLEU(smooth_method="add-k"), "bleu-none": lambda: BLEU(smooth_method="none"),
    "bleu-2": lambda: BLEU(max_ngram_order=2), "chrf": CHRF, "chrf++": lambda: CHRF(word_order=2),
    "chrf-beta1": lambda: CHRF(beta=1), "chrf-eps": lambda: CHRF(eps_smoothing=True),
    "chrf-lc": lambda: CHRF(lowercase=True), "ter": TER, "ter-cased": lambda: TER(case_sensitive=True),
}
EDGES = [  # (hypothesis, references) corpora that reach every branch of the scorers
    [("hi there", ["hi there"])],  # no 3- or 4-grams: BLEU's zero total ("break"), effective order
    [("a b c d e", ["v w x y z"])],  # no match at all
    [("a b x d e f", ["a b c d e f"]), ("", ["something"])],  # a zero count with matches elsewhere; an empty output
    [("a b c", ["a b c d e f g h"])],  # shorter than the reference: brevity penalty
    [("", [""])],  # nothing at all
    [("one two", [""]), ("three", ["three four"])],  # an empty reference (TER)
    [("The cat sat.", ["the cat sat .", "A cat sat."]), ("Hello, world!", ["hello world", None])],  # varying refs
]


@pytest.fixture(scope="module")
def lai(data_dir) -> dict[str, list[str]]:
    """Lai et al.'s 9 formality systems (the human references as ``reference``), 80 sources each, and ``source``."""
    from styleeval.corpora import load_corpus

    rows = sorted(load_corpus("lai_formality", data_dir=data_dir), key=lambda r: (r["system"], r["source_id"]))
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["system"], []).append(r["rewrite"])
    out["source"] = [r["source"] for r in rows if r["system"] == "HIGH"]
    return out


def _corpora(lai: dict[str, list[str]]) -> list[list[tuple[str, list[str | None]]]]:
    rng = np.random.default_rng(0)
    src = lai["source"]
    sampled = [[(lai[s][i], [src[i]]) for i in rng.choice(80, size=k, replace=False)]
               for s, k in [("HIGH", 3), ("ZHOU", 10), ("LUO", 40), ("reference", 80)]]
    return EDGES + sampled


@pytest.mark.parametrize("kind", sorted(SCORERS))
def test_scores_from_statistics_are_sacrebleus_corpus_scores(kind, lai):
    for rows in _corpora(lai):
        hyps = [h for h, _ in rows]
        refs = [[r for r in refs if r is not None] for _, refs in rows]
        streams = [[refs[j] if j < len(refs) else None for refs in (rr for _, rr in rows)]
                   for j in range(max(len(r) for _, r in rows))]
        want = SCORERS[kind]().corpus_score(hyps, streams).score  # sacrebleu's public API
        totals = corpus.corpus_statistics(SCORERS[kind](), hyps, refs).sum(axis=0)
        assert corpus.score_from_statistics(SCORERS[kind](), totals) == want, (kind, rows)  # bitwise
        fast = corpus.scores_from_statistics(SCORERS[kind](), np.stack([totals, totals]))
        assert fast == pytest.approx([want, want], rel=1e-13, abs=1e-13), (kind, rows)


def test_block_draws_are_one_draw():
    masks = np.concatenate(list(corpus.ar_masks(7, 1000, seed=5, max_elements=100)))
    assert (masks == np.random.default_rng(5).integers(2, size=(1000, 7), dtype=bool)).all()  # sacrebleu's call
    indices = np.concatenate(list(corpus.bootstrap_indices(7, 1000, seed=5, max_elements=100)))
    assert (indices == np.random.default_rng(5).choice(7, size=(1000, 7), replace=True)).all()
    data = np.random.default_rng(0).integers(0, 9, size=(7, 10)).astype(float)
    for fn in (corpus.resampled_totals, lambda *a, **k: corpus.shuffled_sums(*a, **k)[0]):
        assert (fn(data, 1000, 5, max_elements=100) == fn(data, 1000, 5)).all()


def _pair(lai, a: str, b: str, n: int) -> tuple[list[str], list[str], list[list[str]]]:
    return lai[a][:n], lai[b][:n], [[s] for s in lai["source"][:n]]


@pytest.mark.parametrize("make", [BLEU, CHRF, TER])
def test_vectorised_tests_and_cis_equal_the_per_trial_computation(make, lai):
    """The same draws, one trial at a time: each shuffle's or resample's hypotheses scored by sacrebleu's public
    ``corpus_score``."""
    hyps_a, hyps_b, refs = _pair(lai, "BART", "ZHOU", 16)
    n, trials, n_boot, seed = len(refs), 100, 100, 7

    def score(hyps, rows=range(n)):
        return make().corpus_score([hyps[i] for i in rows], [[refs[i][0] for i in rows]]).score

    score_a, score_b = score(hyps_a), score(hyps_b)
    observed = abs(score_a - score_b)
    tol = corpus.TIE_TOLERANCE * max(1.0, score_a, score_b)
    star = []
    for keep in np.random.default_rng(seed).integers(2, size=(trials, n), dtype=bool):  # sacrebleu's shuffles
        star_a = [a if k else b for a, b, k in zip(hyps_a, hyps_b, keep, strict=True)]
        star_b = [b if k else a for a, b, k in zip(hyps_a, hyps_b, keep, strict=True)]
        star.append(abs(score(star_a) - score(star_b)))
    p_ar = (sum(s >= observed - tol for s in star) + 1) / (trials + 1)
    draws = np.random.default_rng(seed).choice(n, size=(n_boot, n), replace=True)  # sacrebleu's resamples
    boot_a = np.array([score(hyps_a, rows) for rows in draws])
    boot_b = np.array([score(hyps_b, rows) for rows in draws])
    spread = np.abs(boot_b - boot_a)
    p_bs = (int((spread - spread.mean() >= observed - tol).sum()) + 1) / (n_boot + 1)

    for test, p in (("ar", p_ar), ("bootstrap", p_bs)):
        result = stats.paired_corpus_test(make(), hyps_a, hyps_b, refs, test=test, trials=trials, n_boot=n_boot,
                                          seed=seed)
        assert result["p"] == p, test
        assert (result["ci_low"], result["ci_high"]) == pytest.approx(
            np.percentile(boot_a - boot_b, [2.5, 97.5]), abs=1e-9)
    statistics = corpus.corpus_statistics(make(), hyps_a, refs)
    assert corpus.corpus_bootstrap_ci(make(), statistics, n_boot=n_boot, seed=seed) == pytest.approx(
        np.percentile(boot_a, [2.5, 97.5]), abs=1e-9)


@pytest.mark.parametrize("make", [BLEU, CHRF, TER])
def test_p_values_at_the_default_seed_are_sacrebleus_paired_tests(make, lai):
    """Every pair of Lai's 9 systems against sacrebleu's public ``PairedTest`` (its default seed, 12345): the paired
    bootstrap's p-values are equal; AR's are equal wherever no shuffle ties the observed difference, and a tie adds
    at most 1 / (trials + 1) each (sacrebleu counts only shuffles above it)."""
    systems = [s for s in lai if s != "source"]
    trials, n_boot = 1000, 500  # sacrebleu's per-trial scores are slow; its CLI's defaults are tested in tests/systems
    statistics = {s: corpus.corpus_statistics(make(), lai[s], [[x] for x in lai["source"]]) for s in systems}
    pairs = list(itertools.combinations(systems, 2))
    ar = stats.compare_corpus(make(), statistics, pairs, test="ar", trials=trials).pairs
    bs = stats.compare_corpus(make(), statistics, pairs, test="bootstrap", n_boot=n_boot).pairs
    tied = 0
    for i, base in enumerate(systems[:-1]):
        named = [(s, lai[s]) for s in systems[i:]]
        _, theirs_ar = PairedTest(named, {"m": make()}, [lai["source"]], test_type="ar", n_samples=trials)()
        _, theirs_bs = PairedTest(named, {"m": make()}, [lai["source"]], test_type="bs", n_samples=n_boot)()
        name = next(k for k in theirs_ar if k != "System")
        for (other, _), r_ar, r_bs in zip(named[1:], theirs_ar[name][1:], theirs_bs[name][1:], strict=True):
            assert bs[(base, other)].p == r_bs.p_value, (base, other)
            extra = round((ar[(base, other)].p - r_ar.p_value) * (trials + 1))
            ties = ar[(base, other)].ties
            assert 0 <= extra <= ties, (base, other, ar[(base, other)].p, r_ar.p_value, ties)
            if not ties:
                assert ar[(base, other)].p == r_ar.p_value, (base, other)
            tied += ties > 0
            assert ar[(base, other)].score_b == pytest.approx(r_ar.score, abs=0)
    assert tied < len(pairs)


def test_identical_outputs_are_never_significant_and_few_rows_cannot_be():
    hyps = ["the cat sat on the mat", "a dog barked at night", "it rained all day", "we went home early"]
    refs = [[h] for h in hyps]
    for test in ("ar", "bootstrap"):
        assert stats.paired_corpus_test(CHRF(), hyps, hyps, refs, test=test)["p"] == 1.0
    # A better on every row: sacrebleu's strict ">" gives 1 / (trials + 1) on any n; the identity and the full swap
    # always reach the observed difference, so p >= about 2 / 2^n
    worse = ["x"] * 4
    for n in range(1, 5):
        result = stats.paired_corpus_test(CHRF(), hyps[:n], worse[:n], refs[:n])
        _, theirs = PairedTest([("a", hyps[:n]), ("b", worse[:n])], {"m": CHRF()}, [hyps[:n]])()
        assert theirs["chrF2"][1].p_value == pytest.approx(1 / 10_001)
        assert result["p"] >= result["p_min"] > 0.05 and result["p_min"] == pytest.approx(2 / 2**n, rel=0.15), n
