"""Statistics for comparing systems on per-row scores: bootstrap confidence intervals of a mean, paired approximate
randomization and paired bootstrap tests of a difference, Holm's adjustment, and WMT-style significance clusters.

Every function is deterministic for a given ``seed``. Paired tests take the two systems' scores on the same inputs
(``a[i]`` and ``b[i]`` for input ``i``); NaN pairs must be removed by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

N_BOOT = 1000
N_TRIALS = 10_000


def bootstrap_ci(values: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (resampling rows with replacement); ``(nan, nan)`` for fewer
    than two values (a CI is undefined)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def approximate_randomization(a: Sequence[float], b: Sequence[float], trials: int = N_TRIALS,
                              seed: int = 0) -> float:
    """Two-sided p-value of ``mean(a) != mean(b)`` by paired approximate randomization: each pair's two scores are
    swapped at random (the difference's sign flipped) and the share of shufflings whose |mean difference| reaches
    the observed one is counted. When ``2**n <= trials`` every one of the 2^n sign patterns is enumerated (the exact
    test); otherwise ``(count + 1) / (trials + 1)`` over ``trials`` random patterns (sacrebleu's convention)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(d)
    if n == 0:
        return math.nan
    observed = abs(d.mean())
    tolerance = 1e-12 * max(1.0, float(np.abs(d).max()))
    if 2**n <= trials:  # exact: all sign patterns, in blocks to bound memory
        count = 0
        for start in range(0, 2**n, 1 << 16):
            codes = np.arange(start, min(2**n, start + (1 << 16)), dtype=np.int64)
            signs = 1 - 2 * ((codes[:, None] >> np.arange(n)) & 1)
            count += int((np.abs((signs * d).mean(axis=1)) >= observed - tolerance).sum())
        return count / 2**n
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, trials, 2000):
        k = min(2000, trials - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(k, n))
        count += int((np.abs((signs * d).mean(axis=1)) >= observed - tolerance).sum())
    return (count + 1) / (trials + 1)


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                     level: float = 0.95) -> tuple[float, float, float]:
    """Paired bootstrap of ``mean(a) - mean(b)`` (resampling inputs): ``(ci_low, ci_high, p)`` with the percentile CI
    of the difference and the two-sided p-value ``2 * min(P(delta* <= 0), P(delta* >= 0))`` (capped at 1)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    boot = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    p = min(1.0, 2 * min(float((boot <= 0).mean()), float((boot >= 0).mean())))
    return float(low), float(high), p


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


def significance_clusters(ranked: Sequence[str], different: Callable[[str, str], bool]) -> dict[str, int]:
    """Clusters of ``ranked`` (best first), as WMT reports rankings: a new cluster starts at the first system that is
    significantly different from (worse than) the best system of the current cluster. Returns system -> cluster
    (1 = best)."""
    clusters: dict[str, int] = {}
    head, number = None, 0
    for system in ranked:
        if head is None or different(head, system):
            head, number = system, number + 1
        clusters[system] = number
    return clusters
