"""Is metric A really better than metric B? Tests for two correlations with the same human scores.

- :func:`williams_test`: Williams' t-test for dependent correlations (Williams 1959, as used by WMT since Graham &
  Baldwin 2014): r12 = corr(human, A), r13 = corr(human, B), r23 = corr(A, B) over the same n rows,

      t = (r12 - r13) * sqrt((n - 1) (1 + r23)) / sqrt(2 K (n - 1) / (n - 3) + (r12 + r13)^2 / 4 * (1 - r23)^3)
      K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23,

  with n - 3 degrees of freedom; the p-value is one-sided (A better than B).
- :func:`paired_bootstrap_correlation`: resample rows with replacement, the same rows for both metrics; the share of resamples
  where A's correlation does not exceed B's is the p-value, with a percentile CI of the difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from styleeval.stats.correlation import pearson, spearman


@dataclass(frozen=True)
class Comparison:
    """A's correlation minus B's, and whether the difference is significant; ``n``: the rows it was computed on
    (those where the human score and both metrics have a value)."""

    r_a: float
    r_b: float
    statistic: float
    p: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0


def _corr(x: np.ndarray, y: np.ndarray, method: str) -> float:
    if method == "pearson":
        return pearson(x, y)
    if method == "spearman":
        return spearman(x, y)
    raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")


def williams_t(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t and its one-sided p-value (H1: r12 > r13) from the three correlations and n."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy)

    if n <= 3:
        raise ValueError(f"the Williams test needs n > 3, got {n}")
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3
    if denominator <= 0:
        return math.nan, math.nan
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denominator)
    return t, float(stats.t.sf(t, n - 3))


def williams_test(human: Sequence[float], a: Sequence[float], b: Sequence[float],
                  method: str = "pearson") -> Comparison:
    """Is ``a`` more correlated with ``human`` than ``b`` is? (rows with a non-finite value are dropped)."""
    h, x, y = (np.asarray(v, float) for v in (human, a, b))
    keep = np.isfinite(h) & np.isfinite(x) & np.isfinite(y)
    h, x, y = h[keep], x[keep], y[keep]
    r12, r13, r23 = _corr(h, x, method), _corr(h, y, method), _corr(x, y, method)
    t, p = williams_t(r12, r13, r23, len(h))
    return Comparison(r12, r13, t, p, n=len(h))


def paired_bootstrap_correlation(human: Sequence[float], a: Sequence[float], b: Sequence[float],
                                 n_boot: int = 1000, seed: int = 0, method: str = "pearson") -> Comparison:
    """Paired bootstrap of corr(human, a) - corr(human, b): one-sided p and the 95% percentile CI of the difference."""
    h, x, y = (np.asarray(v, float) for v in (human, a, b))
    keep = np.isfinite(h) & np.isfinite(x) & np.isfinite(y)
    h, x, y = h[keep], x[keep], y[keep]
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(n_boot):
        idx = rng.integers(0, len(h), len(h))
        d = _corr(h[idx], x[idx], method) - _corr(h[idx], y[idx], method)
        if math.isfinite(d):
            diffs.append(d)
    arr = np.asarray(diffs)
    r_a, r_b = _corr(h, x, method), _corr(h, y, method)
    p = float(np.mean(arr <= 0)) if len(arr) else math.nan
    low, high = (np.percentile(arr, [2.5, 97.5]) if len(arr) else (math.nan, math.nan))
    return Comparison(r_a, r_b, r_a - r_b, p, float(low), float(high), len(h))


def significance_matrix(human: Sequence[float], scores: dict[str, Sequence[float]], alpha: float = 0.05,
                        method: str = "pearson") -> dict[tuple[str, str], Comparison]:
    """Williams test for every ordered pair of metrics: ``(A, B) -> Comparison`` (A better than B if p < alpha)."""
    names = list(scores)
    return {(a, b): williams_test(human, scores[a], scores[b], method) for a in names for b in names if a != b}
