"""Corpus-level statistics of sacrebleu metrics (BLEU, chrF, TER): the system score sacrebleu prints, its bootstrap
CI, and the paired tests of two systems, by sacrebleu's own code (``sacrebleu.significance``).

Every function takes a sacrebleu ``Metric`` object (``BLEU()``, ``CHRF()``, ``TER()`` with the settings to report)
and per-row hypotheses and references; a row's references may vary in number (missing ones are ``None`` in
sacrebleu's reference streams, which it skips).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from styleeval.stats.resampling import percentile_interval


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-row reference lists as sacrebleu's reference streams (stream ``j`` holds every row's ``j``-th reference,
    ``None`` where a row has fewer)."""
    width = max((len(r) for r in references), default=0)
    return [[r[j] if j < len(r) else None for r in references] for j in range(width)]


def corpus_score(metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """sacrebleu's corpus score of ``hypotheses`` (what ``sacrebleu -i`` prints)."""
    return float(metric.corpus_score(list(hypotheses), reference_streams(references)).score)


def corpus_statistics(metric: Any, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Each row's sufficient statistics (rows x k), which add up to the corpus's."""
    return np.asarray(metric._extract_corpus_statistics(list(hypotheses), reference_streams(references)),
                      dtype=float)


def score_from_statistics(metric: Any, totals: np.ndarray) -> float:
    """The corpus score of summed sufficient statistics."""
    return float(metric._compute_score_from_stats(list(totals)).score)


def corpus_bootstrap_ci(metric: Any, statistics: np.ndarray, n_boot: int = 1000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of a corpus score: rows resampled with replacement, the corpus score recomputed from
    the resampled rows' statistics; ``(nan, nan)`` for fewer than two rows."""
    if len(statistics) < 2 or n_boot <= 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    values = [score_from_statistics(metric, statistics[rng.integers(0, len(statistics), len(statistics))].sum(0))
              for _ in range(n_boot)]
    return percentile_interval(np.asarray(values), level)


def paired_corpus_test(metric: Any, hypotheses_a: Sequence[str], hypotheses_b: Sequence[str],
                       references: Sequence[Sequence[str]], test: str = "ar", trials: int = 10_000,
                       n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """System A against system B on the same rows: sacrebleu's paired approximate randomization (``test="ar"``,
    ``trials`` shufflings) or paired bootstrap (``"bootstrap"``, ``n_boot`` resamples) with A as the baseline, as
    ``sacrebleu --paired-ar`` / ``--paired-bs`` compute them (p = (#(|stat| > |observed|) + 1) / (trials + 1)),
    except for an observed difference of exactly 0 (identical corpus scores), where sacrebleu's strict ">" gives
    p = 1 / (trials + 1), "significant"; that is no evidence of a difference, and p is 1 here; and the percentile
    bootstrap CI of score(A) - score(B) (rows resampled, both corpus scores recomputed).

    Returns ``score_a``, ``score_b``, ``delta``, ``ci_low``, ``ci_high``, ``p`` and sacrebleu's ``signature`` of
    the test (with ``seed`` and ``ar``/``bs``)."""
    from sacrebleu.significance import Result, _paired_ar_test, _paired_bs_test

    streams = reference_streams(references)
    stats_a = metric._extract_corpus_statistics(list(hypotheses_a), streams)
    score_a = metric._aggregate_and_compute(stats_a)
    name = score_a.name
    baseline = {name: (stats_a, Result(score_a.score))}
    if test == "ar":
        _, results = _paired_ar_test(baseline, "b", list(hypotheses_b), streams, {name: metric},
                                     n_samples=trials, n_ar_confidence=-1, seed=seed)
    elif test == "bootstrap":
        _, results = _paired_bs_test(baseline, "b", list(hypotheses_b), streams, {name: metric},
                                     n_samples=n_boot, seed=seed)
    else:
        raise ValueError(f"test must be 'ar' or 'bootstrap', got {test!r}")
    score_b = float(results[name].score)
    a, b = np.asarray(stats_a, dtype=float), corpus_statistics(metric, hypotheses_b, references)
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(a), len(a))
        deltas.append(score_from_statistics(metric, a[idx].sum(0)) - score_from_statistics(metric, b[idx].sum(0)))
    low, high = percentile_interval(np.asarray(deltas), level) if deltas and len(a) > 1 else (math.nan, math.nan)
    signature = metric.get_signature()
    signature.update("seed", str(seed))
    signature.update("ar" if test == "ar" else "bs", trials if test == "ar" else n_boot)
    delta = float(score_a.score) - score_b
    p = 1.0 if delta == 0 else float(results[name].p_value)
    return {"score_a": float(score_a.score), "score_b": score_b, "delta": delta, "ci_low": low, "ci_high": high,
            "p": p, "signature": str(signature)}
