"""Resampling statistics of per-row scores: the bootstrap CI of a mean, paired tests of a difference of means (the
sign-flip permutation test, alias approximate randomization, and the paired bootstrap), and Holm's adjustment.

Every function is deterministic for a given ``seed``. Paired tests take two score vectors on the same inputs
(``a[i]`` and ``b[i]`` for input ``i``); NaN pairs must be removed by the caller (:func:`sign_flip_test` drops them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

N_BOOT = 1000
"""Bootstrap resamples of CIs and of the paired bootstrap."""
N_TRIALS = 10_000
"""Shufflings of the paired approximate randomization test."""
ALTERNATIVES = ("two-sided", "greater")


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of ``values`` (numpy's linear interpolation)."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                      level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (resampling rows with replacement); ``(nan, nan)`` for fewer
    than two values (a CI is undefined)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
    return percentile_interval(means, level)


def sign_flip_test(differences: Sequence[float], trials: int = N_TRIALS, seed: int = 0,
                   alternative: str = "two-sided", exact: bool = True, chunk: int = 2000) -> float:
    """The paired permutation test of a mean difference: each pair's two scores are swapped at random (its
    difference's sign flipped) and the share of shufflings whose mean difference reaches the observed one is the
    p-value. ``alternative="two-sided"`` compares ``|mean|``, ``"greater"`` the mean itself (H1: ``mean > 0``).
    Non-finite differences are left out.

    With ``exact`` and ``2**n <= trials`` all 2^n sign patterns are enumerated and ``p = count / 2**n``; otherwise
    ``p = (count + 1) / (trials + 1)`` over ``trials`` random patterns, drawn ``chunk`` shufflings at a time (memory
    ``chunk x n``). "Reaches" is ``>=`` up to a relative tolerance of 1e-12 (float sums of equal sets of numbers).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    n = len(d)
    if n == 0:
        return math.nan

    def statistic(means: np.ndarray) -> np.ndarray:
        return np.abs(means) if alternative == "two-sided" else means

    observed = float(statistic(np.array([d.mean()]))[0])
    threshold = observed - 1e-12 * max(1.0, float(np.abs(d).max()))
    if exact and 2**n <= trials:  # all sign patterns, in blocks to bound memory
        count = 0
        for start in range(0, 2**n, 1 << 16):
            codes = np.arange(start, min(2**n, start + (1 << 16)), dtype=np.int64)
            signs = 1 - 2 * ((codes[:, None] >> np.arange(n)) & 1)
            count += int((statistic((signs * d).mean(axis=1)) >= threshold).sum())
        return count / 2**n
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, trials, chunk):
        k = min(chunk, trials - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(k, n))
        count += int((statistic((signs * d).mean(axis=1)) >= threshold).sum())
    return (count + 1) / (trials + 1)


def approximate_randomization(a: Sequence[float], b: Sequence[float], trials: int = N_TRIALS,
                              seed: int = 0) -> float:
    """Two-sided p-value of ``mean(a) != mean(b)`` by paired approximate randomization: :func:`sign_flip_test` of
    ``a - b`` (exact enumeration when ``2**n <= trials``, else ``(count + 1) / (trials + 1)``, sacrebleu's
    convention)."""
    return sign_flip_test(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), trials, seed)


def paired_bootstrap_mean(a: Sequence[float], b: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                          level: float = 0.95) -> tuple[float, float, float]:
    """Paired bootstrap of ``mean(a) - mean(b)`` (resampling inputs): ``(ci_low, ci_high, p)`` with the percentile CI
    of the difference and the two-sided p-value ``min(1, 2 * (min(#(delta* <= 0), #(delta* >= 0)) + 1) / (n_boot +
    1))``: the +1 (as sacrebleu's) keeps p above 0, which a finite number of resamples cannot show."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    low, high = percentile_interval(boot, level)
    count = min(int((boot <= 0).sum()), int((boot >= 0).sum()))
    p = min(1.0, 2 * (count + 1) / (n_boot + 1))
    return low, high, p


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest p is multiplied by (m - i + 1), made monotone, capped at 1.
    NaN p-values stay NaN and do not count in m."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), math.nan)
    idx = [i for i in np.argsort(p, kind="stable") if not math.isnan(p[i])]
    m, running = len(idx), 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()
