"""Corpus-level statistics of a metric with additive sentence statistics: the system score, its bootstrap CI, and
paired tests of two or more systems, drawn as sacrebleu draws them and computed vectorised, on arrays.

A corpus score (sacrebleu's BLEU, chrF and TER) is a function of additive sentence statistics (BLEU's n-gram matches
and lengths, chrF's character and word n-gram counts, TER's edits and reference lengths); a mean is one too (each
row's ``[value, 1]``). The functions here take each system's rows' statistics (rows x k arrays) and the metric's
score function (:data:`ScoreFunction`: :meth:`styleeval.metrics.Metric.score`, which owns the arithmetic: BLEU's
smoothing, effective order and brevity penalty, chrF's beta, TER's empty-reference rules live in
``metrics/bleu.py``, ``chrf.py``, ``ter.py``). A shuffle of paired approximate randomization or a bootstrap resample
is therefore a masked sum of the rows' statistics, and ``T`` trials of every system at once are one matrix product;
the ``T`` corpus scores are one vectorised call of the score function. The printed system scores are its ``exact``
scores of the summed statistics (for sacrebleu's metrics: ``corpus_score``, bitwise).

The random numbers are sacrebleu's (``sacrebleu.significance``, seed 12345 by default): the AR test's shuffles are
``default_rng(seed).integers(2, size=(trials, n), dtype=bool)`` (True keeps a row's two outputs in place) and every
bootstrap resample (system CIs, the paired bootstrap and the CI of a difference) is a row of
``default_rng(seed).choice(n, size=(n_boot, n))``; both are drawn in blocks of rows (memory O(block)) that give the
same numbers as one draw (tested).

One deviation from sacrebleu, on purpose: a trial counts when its statistic *reaches* the observed one (``>=``, up to
:data:`TIE_TOLERANCE`), where sacrebleu counts only those *above* it (``>``). The identity shuffle (and the swap of
every row) always reaches it, so with few rows p cannot fall below the share of such shuffles (about 2 / 2^n: no test
on 4 rows is significant at 0.05), and two identical outputs get p = 1 (sacrebleu: 1 / (trials + 1), "significant").
Where no trial ties the observed difference, p is sacrebleu's exactly (tested on every pair of Lai et al.'s systems).

A caller holding a sacrebleu metric object rather than a score function (``BLEU()``, as ``sacrebleu.significance``
takes them) may pass it wherever a score function is taken (:func:`score_function`: its own scalar
``_compute_score_from_stats``, exact and slow), and :func:`corpus_statistics` reads its rows' statistics
(``_extract_corpus_statistics``). Both are sacrebleu's private calls, duck-typed (sacrebleu is not imported here),
pinned by ``sacrebleu>=2.4,<3`` and tested against the public ``sacrebleu.significance.PairedTest`` and
``corpus_score``; :class:`~styleeval.metrics.Metric`'s own statistics and score (``metrics/_sacrebleu.py``) read
the statistics through :func:`corpus_statistics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from styleeval.stats.resampling import (
    MAX_ELEMENTS,
    N_BOOT,
    N_TRIALS,
    SEED,
    percentile_interval,
    resample_blocks,
)

ScoreFunction = Callable[..., np.ndarray]
"""``score(sums, exact=False)``: summed statistics (..., k) -> scores (...), vectorised over the leading axes;
``exact=True``: the scores the metric prints (for sacrebleu's: bitwise ``corpus_score``; slower)."""
TIE_TOLERANCE = 1e-12
"""A trial's statistic reaches the observed one when it is at least ``observed - TIE_TOLERANCE * max(1, |score_a|,
|score_b|)``: scores of the same statistics computed in another order differ in the last bits."""
TESTS = ("ar", "bootstrap")
_MASK_ALIGN = 32
"""numpy draws booleans 32 bits at a time: blocks of a multiple of 32 values draw the same stream as one draw."""


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-row reference lists as sacrebleu's reference streams (stream ``j`` holds every row's ``j``-th reference,
    ``None`` where a row has fewer)."""
    width = max((len(r) for r in references), default=0)
    return [[r[j] if j < len(r) else None for r in references] for j in range(width)]


def corpus_statistics(metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Each row's sufficient statistics (rows x k, float64) under the sacrebleu metric object ``metric``, which add
    up to the corpus's: sacrebleu's ``_extract_corpus_statistics`` (no public call gives chrF's; the major version is
    pinned and the result tested against the public API)."""
    if not hypotheses:
        return np.zeros((0, 0))
    return np.asarray(metric._extract_corpus_statistics(list(hypotheses), reference_streams(references)),
                      dtype=float)


def corpus_score(metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """sacrebleu's corpus score of ``hypotheses`` (what ``sacrebleu -i`` prints), by the sacrebleu metric object's
    public ``corpus_score``."""
    return float(metric.corpus_score(list(hypotheses), reference_streams(references)).score)


def score_function(scorer: ScoreFunction | Any) -> ScoreFunction:
    """``scorer`` as a :data:`ScoreFunction`: itself where it is callable (a metric's ``score``), else a sacrebleu
    metric object's own ``_compute_score_from_stats`` applied to each vector of sums (exact; a Python call per
    vector)."""
    if callable(scorer):
        return scorer

    def scores(sums: np.ndarray, exact: bool = False) -> np.ndarray:
        t = np.asarray(sums, dtype=float)
        flat = t.reshape(-1, t.shape[-1])
        return np.array([scorer._compute_score_from_stats(v).score for v in flat.tolist()],
                        dtype=float).reshape(t.shape[:-1])

    return scores


def scores_from_statistics(scorer: ScoreFunction | Any, totals: np.ndarray, exact: bool = False) -> np.ndarray:
    """The scores of summed statistics, ``totals`` (..., k) -> scores (...), by ``scorer`` (a score function or a
    sacrebleu metric object: :func:`score_function`)."""
    return np.asarray(score_function(scorer)(np.asarray(totals, dtype=float), exact=exact), dtype=float)


def score_from_statistics(scorer: ScoreFunction | Any, totals: np.ndarray) -> float:
    """The score of one vector of summed statistics, the one the metric prints (``exact=True``: for sacrebleu's
    metrics bitwise ``corpus_score``)."""
    return float(scores_from_statistics(scorer, np.asarray(totals, dtype=float)[None, :], exact=True)[0])


def score_of_rows(scorer: ScoreFunction | Any, statistics: np.ndarray) -> float:
    """The score of rows given their statistics (rows x k): the printed score of their sum (summed row after row,
    as sacrebleu sums them); NaN for no row."""
    rows = np.asarray(statistics, dtype=float)
    return score_from_statistics(scorer, rows.sum(axis=0)) if len(rows) else math.nan


def bootstrap_indices(n: int, n_boot: int, seed: int = SEED, max_elements: int = MAX_ELEMENTS) -> Iterator[np.ndarray]:
    """sacrebleu's bootstrap resamples of ``n`` rows (``default_rng(seed).choice(n, size=(n_boot, n))``), in blocks
    of at most ``max_elements`` indices: the same numbers as one draw."""
    rng = np.random.default_rng(seed)
    for k in resample_blocks(n_boot, n, max_elements):
        yield rng.choice(n, size=(k, n), replace=True)


def ar_masks(n: int, trials: int, seed: int = SEED, max_elements: int = MAX_ELEMENTS) -> Iterator[np.ndarray]:
    """sacrebleu's AR shuffles of ``n`` paired rows (``default_rng(seed).integers(2, size=(trials, n),
    dtype=bool)``: True keeps a row's two outputs in place), in blocks of a multiple of 32 trials (numpy's boolean
    stream is drawn 32 bits at a time): the same numbers as one draw."""
    rng = np.random.default_rng(seed)
    step = max(_MASK_ALIGN, max_elements // max(1, n) // _MASK_ALIGN * _MASK_ALIGN)
    for start in range(0, trials, step):
        yield rng.integers(2, size=(min(step, trials - start), n), dtype=bool)


def _counts(indices: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` rows is drawn in each resample (resamples x n)."""
    k = len(indices)
    flat = (np.arange(k)[:, None] * n + indices).ravel()
    return np.bincount(flat, minlength=k * n).reshape(k, n).astype(float)


def resampled_totals(statistics: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED,
                     max_elements: int = MAX_ELEMENTS) -> np.ndarray:
    """The summed statistics of each bootstrap resample of the rows (n_boot x columns): ``statistics`` (rows x
    columns) may hold several systems' statistics side by side, resampled together (the same rows)."""
    n = len(statistics)
    return np.concatenate([_counts(idx, n) @ statistics for idx in bootstrap_indices(n, n_boot, seed, max_elements)]
                          or [np.zeros((0, statistics.shape[1]))])


def shuffled_sums(statistics: np.ndarray, trials: int = N_TRIALS, seed: int = SEED,
                  max_elements: int = MAX_ELEMENTS) -> tuple[np.ndarray, int]:
    """The sums of ``statistics`` (rows x columns; several systems side by side) over the rows each AR shuffle keeps
    in place (trials x columns), and how many shuffles keep every row or none (they reproduce the observed
    difference whatever the data)."""
    sums, constant = [], 0
    for mask in ar_masks(len(statistics), trials, seed, max_elements):
        sums.append(mask.astype(float) @ statistics)
        kept = mask.sum(axis=1)
        constant += int(((kept == 0) | (kept == mask.shape[1])).sum())
    return np.concatenate(sums or [np.zeros((0, statistics.shape[1]))]), constant


@dataclass(frozen=True)
class PairResult:
    """One pair's test: the scores on the pair's rows, ``delta = score_a - score_b``, the percentile bootstrap
    CI of ``delta``, ``p``, ``p_min`` (the smallest p these trials could give, whatever the outputs) and ``ties``
    (trials whose statistic equals the observed one up to the tolerance: counted here, not by sacrebleu)."""

    score_a: float
    score_b: float
    delta: float
    ci_low: float
    ci_high: float
    p: float
    p_min: float
    ties: int = 0


@dataclass(frozen=True)
class CorpusComparison:
    """Every system's score with its bootstrap CI (``systems[name] = (score, low, high)``), and the tests of the
    pairs asked for (``pairs[(a, b)]``)."""

    systems: dict[str, tuple[float, float, float]]
    pairs: dict[tuple[str, str], PairResult]


def compare_corpus(score: ScoreFunction | Any, statistics: Mapping[str, np.ndarray],
                   pairs: Sequence[tuple[str, str]] = (), test: str = "ar", trials: int = N_TRIALS,
                   n_boot: int = N_BOOT, seed: int = SEED, level: float = 0.95,
                   max_elements: int = MAX_ELEMENTS) -> CorpusComparison:
    """Corpus scores, CIs and paired tests of systems on the same rows (``statistics[name]``: rows x k, row ``i``
    the same input for every system), every system in one matrix product per draw; ``score``: the metric's
    :data:`ScoreFunction` (or a sacrebleu metric object: :func:`score_function`).

    - score: the exact score of the summed statistics (sacrebleu's corpus score, bitwise);
    - CI of a score and of a pair's ``delta``: percentile bootstrap over sacrebleu's resamples (``n_boot``);
    - ``test="ar"``: paired approximate randomization, ``trials`` of sacrebleu's shuffles; p = (#(|delta*| >=
      |delta|) + 1) / (trials + 1);
    - ``test="bootstrap"``: sacrebleu's paired bootstrap on the same resamples as the CIs: with d* = |score_a* -
      score_b*|, p = (#(d* - mean(d*) >= |delta|) + 1) / (n_boot + 1).

    ">=" (up to :data:`TIE_TOLERANCE`) is the one difference from sacrebleu (">"); see the module docstring."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, got {test!r}")
    score = score_function(score)
    names = list(statistics)
    blocks = [np.asarray(statistics[s], dtype=float) for s in names]
    n = len(blocks[0]) if blocks else 0
    if any(len(b) != n for b in blocks):
        raise ValueError("every system needs the statistics of the same rows")
    k = blocks[0].shape[1] if n else 0
    column = {s: slice(j * k, (j + 1) * k) for j, s in enumerate(names)}
    totals = {s: b.sum(axis=0) for s, b in zip(names, blocks, strict=True)}
    scores = {s: score_from_statistics(score, totals[s]) if n else math.nan for s in names}
    stacked = np.hstack(blocks) if n else np.zeros((0, 0))
    resampled = {}
    if n > 1 and n_boot > 0:
        boot = resampled_totals(stacked, n_boot, seed, max_elements)
        resampled = {s: score(boot[:, column[s]]) for s in names}
    systems = {s: (scores[s], *(percentile_interval(resampled[s], level) if resampled else (math.nan, math.nan)))
               for s in names}
    shuffled, constant = (shuffled_sums(stacked, trials, seed, max_elements) if test == "ar" and n and pairs
                          else (None, 0))
    results = {}
    for a, b in pairs:
        delta = scores[a] - scores[b]
        low, high = (percentile_interval(resampled[a] - resampled[b], level) if resampled
                     else (math.nan, math.nan))
        if not n:
            results[(a, b)] = PairResult(scores[a], scores[b], delta, low, high, math.nan, math.nan)
            continue
        if test == "ar":
            kept_a, kept_b = shuffled[:, column[a]], shuffled[:, column[b]]
            star_a = kept_a + (totals[b] - kept_b)  # rows kept in place from A, the others swapped in from B
            star_b = kept_b + (totals[a] - kept_a)
            stat = np.abs(score(star_a) - score(star_b))
            p_min = (constant + 1) / (trials + 1)
        elif resampled:
            spread = np.abs(resampled[b] - resampled[a])
            stat = spread - spread.mean()
            p_min = 1 / (n_boot + 1)
        else:  # one row: nothing to resample
            results[(a, b)] = PairResult(scores[a], scores[b], delta, low, high, 1.0, 1.0)
            continue
        tolerance = TIE_TOLERANCE * max(1.0, abs(scores[a]), abs(scores[b]))
        reached = int((stat >= abs(delta) - tolerance).sum())
        ties = int((np.abs(stat - abs(delta)) <= tolerance).sum())
        results[(a, b)] = PairResult(scores[a], scores[b], delta, low, high, (reached + 1) / (len(stat) + 1), p_min,
                                     ties)
    return CorpusComparison(systems, results)


def corpus_bootstrap_ci(score: ScoreFunction | Any, statistics: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED,
                        level: float = 0.95, max_elements: int = MAX_ELEMENTS) -> tuple[float, float]:
    """Percentile bootstrap CI of a corpus score over sacrebleu's resamples of the rows (``score`` recomputed from
    each resample's statistics); ``(nan, nan)`` for fewer than two rows."""
    _, low, high = compare_corpus(score, {"system": statistics}, (), n_boot=n_boot, seed=seed, level=level,
                                  max_elements=max_elements).systems["system"]
    return low, high


def paired_corpus_test(metric: Any, hypotheses_a: Sequence[str], hypotheses_b: Sequence[str],
                       references: Sequence[Sequence[str]], test: str = "ar", trials: int = N_TRIALS,
                       n_boot: int = N_BOOT, seed: int = SEED, level: float = 0.95) -> dict[str, Any]:
    """System A against system B on the same rows under the sacrebleu metric object ``metric`` (:func:`compare_corpus`
    of the two): ``score_a``, ``score_b``, ``delta``, ``ci_low``, ``ci_high``, ``p``, ``p_min`` and ``ties``
    (:class:`PairResult`)."""
    stats = {"a": corpus_statistics(metric, hypotheses_a, references),
             "b": corpus_statistics(metric, hypotheses_b, references)}
    result = compare_corpus(metric, stats, [("a", "b")], test, trials, n_boot, seed, level).pairs[("a", "b")]
    return dict(vars(result))
