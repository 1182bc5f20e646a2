"""A metric owns its sufficient statistics (issue 48): ``Metric.statistics`` (each row's, rows x k) and the
vectorised ``Metric.score`` of their sums. sacrebleu's metrics against sacrebleu's public ``corpus_score`` and
``sentence_score`` with its options; a mean metric's ``[value, 1]``; the statistics layer takes the score function
and gives the numbers it gave with sacrebleu's objects."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from styleeval import stats
from styleeval.metrics import get_metric
from styleeval.stats import corpus

SACREBLEU = {"bleu": BLEU, "chrf": CHRF, "ter": TER}
OPTIONS = [  # (kind, the spec's options, sacrebleu's corpus scorer's arguments)
    ("bleu", {}, {}),
    ("bleu", {"tokenize": "intl", "lowercase": True}, {"tokenize": "intl", "lowercase": True}),
    ("bleu", {"effective_order": True}, {"effective_order": True}),
    ("bleu", {"smooth_method": "floor", "smooth_value": 0.2}, {"smooth_method": "floor", "smooth_value": 0.2}),
    ("bleu", {"smooth_method": "add-k", "tokenize": "char"}, {"smooth_method": "add-k", "tokenize": "char"}),
    ("bleu", {"smooth_method": "none"}, {"smooth_method": "none"}),
    ("chrf", {}, {}),
    ("chrf", {"word_order": 2, "lowercase": True}, {"word_order": 2, "lowercase": True}),
    ("chrf", {"beta": 1, "whitespace": True}, {"beta": 1, "whitespace": True}),
    ("chrf", {"eps_smoothing": True, "char_order": 4}, {"eps_smoothing": True, "char_order": 4}),
    ("ter", {}, {}),
    ("ter", {"case_sensitive": True, "no_punct": True}, {"case_sensitive": True, "no_punct": True}),
    ("ter", {"normalized": True}, {"normalized": True}),
]
EDGES = [  # (source, rewrite, references): every branch of the scorers, empty texts, varying references
    ("hi there", "hi there", ["hi there"]),
    ("v w x y z", "a b c d e", ["v w x y z", "a b"]),
    ("a b c d e f", "a b x d e f", ["a b c d e f"]),
    ("something", "", ["something", "", "some thing"]),
    ("", "", [""]),
    ("three four", "one two", [""]),
    ("The cat sat.", "The Cat sat .", ["the cat sat .", "A cat sat."]),
    ("Hello, world!", "hello world", ["Hello world!"]),
    ("a b c d e f g h", "a b c", ["a b c d e f g h", "a b c d"]),
]


def _spec(kind: str, inputs: str, options: dict, agg: str = "corpus") -> str:
    text = ":".join(f"{k}={'yes' if v is True else v}" for k, v in options.items())
    return f"{inputs}_{kind}:agg={agg}" + (f":{text}" if text else "")


@pytest.fixture(scope="module")
def lai(data_dir) -> list[dict]:
    from styleeval.corpora import load_corpus

    return load_corpus("lai_formality", data_dir=data_dir)


def _rows(lai: list[dict], k: int, seed: int) -> tuple[list[str], list[str], list[list[str]]]:
    """``k`` of Lai's rows with references at random, then the edge cases: sources, rewrites, references."""
    rated = [r for r in lai if r["reference"]]
    picked = [rated[i] for i in np.random.default_rng(seed).choice(len(rated), size=k, replace=False)]
    rows = [(r["source"], r["rewrite"], list(r["reference"])) for r in picked] + EDGES
    return [s for s, _, _ in rows], [w for _, w, _ in rows], [refs for _, _, refs in rows]


@pytest.mark.parametrize(("kind", "options", "theirs"), OPTIONS)
@pytest.mark.parametrize("inputs", ["s", "r"])
def test_score_of_summed_statistics_is_sacrebleus_corpus_score(kind, options, theirs, inputs, lai):
    metric = get_metric(_spec(kind, inputs, options))
    for k, seed in ((0, 0), (5, 1), (60, 2)):
        sources, rewrites, references = _rows(lai, k, seed)
        targets = [[s] for s in sources] if inputs == "s" else references
        streams = corpus.reference_streams(targets)
        want = SACREBLEU[kind](**theirs).corpus_score(rewrites, streams).score  # sacrebleu's public API
        statistics = metric.statistics(sources, rewrites, references)
        assert statistics.shape[0] == len(rewrites)
        sums = statistics.sum(axis=0)
        assert float(metric.score(sums, exact=True)) == want, (kind, options, k)  # bitwise
        assert float(metric.score(sums)) == pytest.approx(want, rel=1e-13, abs=1e-13)
        assert stats.score_of_rows(metric.score, statistics) == want


@pytest.mark.parametrize(("kind", "options", "theirs"), OPTIONS)
def test_vectorised_scores_equal_the_scores_row_by_row(kind, options, theirs, lai):
    """Sums of random subsets of rows (shape 4 x 5 x k) scored at once and one at a time: numpy's and the exact
    path's, and the exact one against sacrebleu's own ``_compute_score_from_stats`` of each sum."""
    metric = get_metric(_spec(kind, "r", options))
    sources, rewrites, references = _rows(lai, 40, 3)
    statistics = metric.statistics(sources, rewrites, references)
    masks = np.random.default_rng(4).integers(2, size=(4, 5, len(rewrites)))
    sums = masks.astype(float) @ statistics
    fast, exact = metric.score(sums), metric.score(sums, exact=True)
    assert fast.shape == exact.shape == (4, 5)
    scalar = SACREBLEU[kind](**theirs)
    for i, j in np.ndindex(4, 5):
        assert float(metric.score(sums[i, j], exact=True)) == exact[i, j]
        assert float(metric.score(sums[i, j])) == pytest.approx(fast[i, j], rel=1e-13, abs=1e-13)
        assert exact[i, j] == scalar._compute_score_from_stats(sums[i, j].tolist()).score
        assert fast[i, j] == pytest.approx(exact[i, j], rel=1e-13, abs=1e-13)


@pytest.mark.parametrize(("kind", "options", "theirs"), [o for o in OPTIONS if o[0] != "bleu"])
@pytest.mark.parametrize("inputs", ["s", "r"])
def test_chrf_and_ter_sentence_scores_from_statistics_are_sacrebleus_sentence_scores(kind, options, theirs,
                                                                                        inputs, lai):
    """Side by side on 200 of Lai's rows, the edge cases (empty rewrites, sources and
    references; one to three references) and their mixes."""
    metric = get_metric(_spec(kind, inputs, options))
    scorer = SACREBLEU[kind](**theirs)
    sources, rewrites, references = _rows(lai, 200, 5)
    sources, rewrites = [*sources, "", "x"], [*rewrites, "a b", ""]
    references = [*references, ["a b", "", "b a"], ["", "y"]]
    targets = [[s] for s in sources] if inputs == "s" else references
    want = [scorer.sentence_score(h, refs).score for h, refs in zip(rewrites, targets, strict=True)]
    assert metric.compute(sources, rewrites, references) == want  # bitwise, every row
    assert len({round(w, 6) for w in want}) > 30  # the rows differ: not one score everywhere


def test_sentence_bleu_stays_sacrebleus_sentence_bleu(lai):
    """BLEU's row score is sacrebleu's ``sentence_score`` (effective order); the statistics are the corpus
    scorer's (no effective order): row scores and the score of a row's statistics differ where an order is
    missing."""
    metric = get_metric("s_bleu")
    sources, rewrites, _ = _rows(lai, 50, 6)
    want = [BLEU(effective_order=True).sentence_score(h, [s]).score for h, s in zip(rewrites, sources, strict=True)]
    assert metric.compute(sources, rewrites) == want
    per_row = metric.score(metric.statistics(sources, rewrites), exact=True).tolist()
    assert per_row == [BLEU().corpus_score([h], [[s]]).score for h, s in zip(rewrites, sources, strict=True)]
    assert per_row != want


def test_a_mean_metrics_statistics_are_value_and_one(lai):
    sources, rewrites, references = _rows(lai, 30, 7)
    for spec in ("s_chrf:agg=mean", "r_ter:agg=mean", "s_bleu:agg=mean", "s_pinc"):
        metric = get_metric(spec)
        values = metric.compute(sources, rewrites, references)
        statistics = metric.statistics(sources, rewrites, references)
        assert statistics.tolist() == [[v, 1.0] for v in values], spec
        total = statistics.sum(axis=0)
        assert float(metric.score(total)) == pytest.approx(np.mean(values), rel=1e-12)
        assert float(metric.score(total, exact=True)) == float(metric.score(total))
    sums = np.array([[[3.0, 2.0], [1.0, 4.0]], [[0.0, 0.0], [-2.0, 1.0]]])
    scores = get_metric("s_pinc").score(sums)
    assert scores.shape == (2, 2) and scores[0].tolist() == [1.5, 0.25] and scores[1, 1] == -2.0
    assert math.isnan(scores[1, 0])  # no row: no mean
    assert get_metric("s_pinc").statistics([], []).shape == (0, 2)


def test_statistics_check_their_inputs_as_compute_does():
    metric = get_metric("r_chrf")
    with pytest.raises(ValueError, match=r"references\[1\] is None"):
        metric.statistics(["a", "b"], ["a", "b"], [["a"], None])
    with pytest.raises(ValueError, match="sources has 1 rows but 2 were expected"):
        get_metric("s_bleu").statistics(["a"], ["a", "b"])
    assert get_metric("s_ter").statistics([], []).shape == (0, 0)


@pytest.mark.parametrize("spec", ["s_bleu", "s_chrf:word_order=2", "s_ter"])
def test_compare_corpus_with_the_metrics_score_gives_what_sacrebleus_object_gives(spec, lai):
    """The statistics layer on arrays and the metric's vectorised score: the numbers it gives with sacrebleu's
    object (its scalar ``_compute_score_from_stats`` per trial)."""
    metric = get_metric(spec)
    scorer = {"s_bleu": BLEU(), "s_chrf:word_order=2": CHRF(word_order=2), "s_ter": TER()}[spec]
    systems = ["BART", "ZHOU", "HIGH"]
    rows = {s: [r for r in lai if r["system"] == s][:30] for s in systems}
    statistics = {s: metric.statistics([r["source"] for r in rows[s]], [r["rewrite"] for r in rows[s]])
                  for s in systems}
    pairs = [("BART", "ZHOU"), ("BART", "HIGH"), ("ZHOU", "HIGH")]
    for test in ("ar", "bootstrap"):
        ours = stats.compare_corpus(metric.score, statistics, pairs, test=test, trials=300, n_boot=200)
        theirs = stats.compare_corpus(scorer, statistics, pairs, test=test, trials=300, n_boot=200)
        for s in systems:
            assert ours.systems[s][0] == theirs.systems[s][0]  # the printed score: exact on both
            assert ours.systems[s][1:] == pytest.approx(theirs.systems[s][1:], abs=1e-9)
        for pair in pairs:
            assert (ours.pairs[pair].p, ours.pairs[pair].ties) == (theirs.pairs[pair].p, theirs.pairs[pair].ties)


def test_the_statistics_layer_imports_no_sacrebleu_and_dispatches_on_no_class():
    """``stats/`` works on arrays and score functions: sacrebleu's arithmetic lives in the metrics."""
    root = Path(stats.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if m.split(".")[0] == "sacrebleu"], path.name
    source = (root / "corpus.py").read_text(encoding="utf-8")
    assert "isinstance" not in source and "smooth_method" not in source and "eps_smoothing" not in source


def test_evaluate_takes_the_corpus_score_from_the_metrics_statistics_and_says_corpus_with_no_shared_source():
    """The systems table's corpus score is the metric's score of its rows' statistics; systems that share no
    source have no score, and the table still says the metric's aggregate (before: ``mean`` there)."""
    from styleeval.stats import TestSettings
    from styleeval.systems.evaluation import evaluate_systems

    rows = [{"system": s, "source": src, "rewrite": rw, "style": "formal"}
            for s, src, rw in [("A", "gimme that", "give me that"), ("A", "thx a lot", "thanks a lot"),
                               ("B", "gimme that", "Give me that."), ("B", "thx a lot", "thx a lot")]]
    report = evaluate_systems(rows, ["s_chrf", "s_ter:agg=mean"], settings=TestSettings(n_boot=50, trials=50))
    table = report.systems.set_index(["metric", "system"])
    metric = get_metric("s_chrf")
    for system in ("A", "B"):
        mine = [r for r in rows if r["system"] == system]
        statistics = metric.statistics([r["source"] for r in mine], [r["rewrite"] for r in mine])
        assert table.loc[("s_chrf", system), "score"] == float(metric.score(statistics.sum(axis=0), exact=True))
        assert table.loc[("s_chrf", system), "aggregate"] == "corpus"
        assert table.loc[("s_ter", system), "aggregate"] == "mean"
    apart = [dict(r, source_id=f"{r['system']}{i}") for i, r in enumerate(rows)]
    alone = evaluate_systems(apart, ["s_chrf"], settings=TestSettings(n_boot=50, trials=50))
    assert alone.pairs.empty and alone.systems["score"].isna().all()
    assert (alone.systems["aggregate"] == "corpus").all()
