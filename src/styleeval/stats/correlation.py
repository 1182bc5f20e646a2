"""Correlations between metric scores and human ratings (scipy), bootstrap intervals, WMT-style Kendall.

- :func:`spearman`, :func:`pearson`: the coefficient alone (NaN where it is undefined), the one place every
  statistic of the project computes them.
- :func:`correlate`: Spearman (primary), Pearson and Kendall (tau-b) with their p-values, and a seeded
  percentile-bootstrap confidence interval of Spearman's rho (:func:`spearman_bootstrap_ci`: rows resampled with
  replacement).
- :func:`kendall_tau_like`: the WMT17 "Kendall's tau-like" formulation used by Lai et al. (2022):
  ``(Concordant - Discordant) / (Concordant + Discordant)`` over pairs of rewrites of the *same source*;
  pairs tied by the humans are skipped, pairs tied by the metric count as discordant; averaged over
  sources (Lai et al.'s ``cal_corr_*.py``) or pooled over all pairs (WMT).
- :func:`system_level`: Pearson (or Spearman) of per-system mean metric score vs mean human rating.
- Degenerate input (NaN, infinite or constant scores) raises :class:`DegenerateScoresError` with a message
  that says which side is degenerate, instead of producing NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from styleeval.stats.resampling import MAX_ELEMENTS, resample_blocks


class DegenerateScoresError(ValueError):
    """The scores cannot be correlated (NaN/inf values, a constant vector, fewer than 3 rows)."""


@dataclass(frozen=True)
class Correlation:
    """Sample-level correlations of one metric with one human dimension on one subset."""

    n: int
    spearman: float
    spearman_p: float
    pearson: float
    pearson_p: float
    kendall: float
    kendall_p: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict[str, float]:
        """The fields as a plain dict (the numeric columns of ``correlations.csv``)."""
        return asdict(self)


def _finite(human: Sequence[float], metric: Sequence[float], label: str) -> tuple[np.ndarray, np.ndarray]:
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    if h.ndim != 1 or m.ndim != 1:
        raise ValueError(f"{label}: scores must be 1-D, got shapes {h.shape} and {m.shape}")
    if len(h) != len(m):
        raise ValueError(f"{label}: {len(m)} metric scores but {len(h)} human ratings (lengths must match)")
    for name, v in (("metric", m), ("human", h)):
        bad = np.flatnonzero(~np.isfinite(v))
        if len(bad):
            raise DegenerateScoresError(
                f"{label}: {len(bad)} of {len(v)} {name} scores are NaN or infinite (first at row {bad[0]})"
            )
    return h, m


def check_scores(human: Sequence[float], metric: Sequence[float], label: str = "metric") -> tuple[np.ndarray, np.ndarray]:
    """Validate a (human, metric) pair and return them as float arrays.

    Raises :class:`DegenerateScoresError` naming ``label`` and the first bad row when a vector holds NaN or
    infinite values, when either is constant, or when there are fewer than 3 rows; ``ValueError`` on a length
    mismatch.
    """
    h, m = _finite(human, metric, label)
    if len(h) < 3:
        raise DegenerateScoresError(f"{label}: only {len(h)} rows; correlations need at least 3")
    for name, v in (("metric", m), ("human", h)):
        if np.all(v == v[0]):
            raise DegenerateScoresError(
                f"{label}: all {len(v)} {name} scores are equal ({v[0]:g}); a correlation is undefined"
            )
    return h, m


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho of two aligned vectors (scipy); NaN for fewer than 3 rows or a constant side."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy)

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(stats.spearmanr(a, b).statistic)


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r of two aligned vectors; NaN for fewer than 2 rows or a constant side."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def _average_ranks_of_resamples(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank, as ``scipy.stats.rankdata``) of each row of ``values[idx]``.

    Resamples only hold values of the original vector, so ranks follow from counts of its distinct values:
    rank(v) = #(sample < v) + (#(sample == v) + 1) / 2. This avoids sorting every resample.
    """
    uniques, codes = np.unique(values, return_inverse=True)
    k = len(uniques)
    b = idx.shape[0]
    sample_codes = codes[idx]  # (B, n)
    counts = np.bincount((sample_codes + k * np.arange(b)[:, None]).ravel(), minlength=b * k).reshape(b, k)
    below = np.cumsum(counts, axis=1) - counts
    rank_of_code = below + (counts + 1) / 2.0
    return np.take_along_axis(rank_of_code, sample_codes, axis=1)


def _rowwise_spearman(h: np.ndarray, m: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Spearman's rho of each resample ``(h[idx[b]], m[idx[b]])`` (Pearson of average ranks)."""
    rh = _average_ranks_of_resamples(h, idx)
    rm = _average_ranks_of_resamples(m, idx)
    rh -= rh.mean(axis=1, keepdims=True)
    rm -= rm.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", rh, rm)
    den = np.sqrt(np.einsum("ij,ij->i", rh, rh) * np.einsum("ij,ij->i", rm, rm))
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def spearman_bootstrap_ci(
    human: Sequence[float], metric: Sequence[float], n_boot: int = 1000, seed: int = 0,
    confidence: float = 0.95, max_elements: int = MAX_ELEMENTS,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of Spearman's rho: ``n_boot`` resamples of the rows, seeded.

    Resamples in which one side is constant (rho undefined) are left out. Returns ``(nan, nan)`` when
    ``n_boot`` is 0.
    """
    h, m = check_scores(human, metric, "bootstrap")
    if n_boot <= 0:
        return math.nan, math.nan
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    n = len(h)
    rhos = [_rowwise_spearman(h, m, rng.integers(0, n, size=(k, n)))
            for k in resample_blocks(n_boot, n, max_elements // 8)]  # ~8 arrays of a block's size at once
    rho = np.concatenate(rhos)
    rho = rho[np.isfinite(rho)]
    if not len(rho):
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(rho, [tail, 100 - tail])
    return float(low), float(high)


def correlate(
    human: Sequence[float], metric: Sequence[float], n_boot: int = 1000, seed: int = 0,
    confidence: float = 0.95, label: str = "metric",
) -> Correlation:
    """Spearman, Pearson and Kendall (tau-b) with p-values and a bootstrap CI of Spearman (see module doc)."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy)

    h, m = check_scores(human, metric, label)
    sp = stats.spearmanr(m, h)
    pe = stats.pearsonr(m, h)
    ke = stats.kendalltau(m, h)
    low, high = spearman_bootstrap_ci(h, m, n_boot=n_boot, seed=seed, confidence=confidence)
    return Correlation(
        n=len(h), spearman=float(sp.statistic), spearman_p=float(sp.pvalue), pearson=float(pe.statistic),
        pearson_p=float(pe.pvalue), kendall=float(ke.statistic), kendall_p=float(ke.pvalue),
        ci_low=low, ci_high=high,
    )


def kendall_tau_like(
    human: Sequence[float], metric: Sequence[float], groups: Sequence[object] | None = None,
    aggregate: str = "mean",
) -> tuple[float, int]:
    """WMT17 Kendall's tau-like over pairs of rewrites sharing a group (the source); see the module doc.

    Args:
        human, metric: one score per rewrite.
        groups: the source id of each rewrite; ``None`` compares every pair.
        aggregate: ``"mean"`` averages per-group taus (Lai et al.), ``"pooled"`` counts all pairs together.

    Returns:
        ``(tau, n_pairs)``, the number of pairs with a human preference. Raises
        :class:`DegenerateScoresError` when no pair has a human preference.
    """
    h, m = _finite(human, metric, "kendall_tau_like")
    if aggregate not in ("mean", "pooled"):
        raise ValueError(f"aggregate must be 'mean' or 'pooled', got {aggregate!r}")
    keys = np.zeros(len(h), dtype=int) if groups is None else np.unique(np.asarray(groups, dtype=str),
                                                                         return_inverse=True)[1]
    if len(keys) != len(h):
        raise ValueError(f"groups has {len(keys)} rows but there are {len(h)} scores")
    taus, conc_all, disc_all = [], 0, 0
    for g in np.unique(keys):
        idx = np.flatnonzero(keys == g)
        if len(idx) < 2:
            continue
        i, j = np.triu_indices(len(idx), k=1)
        dh = np.sign(h[idx][i] - h[idx][j])
        dm = np.sign(m[idx][i] - m[idx][j])
        keep = dh != 0
        conc = int(np.sum(dh[keep] * dm[keep] == 1))
        disc = int(keep.sum()) - conc
        if conc + disc:
            taus.append((conc - disc) / (conc + disc))
            conc_all += conc
            disc_all += disc
    if conc_all + disc_all == 0:
        raise DegenerateScoresError("kendall_tau_like: no pair of rewrites of the same source has a human preference")
    tau = float(np.mean(taus)) if aggregate == "mean" else (conc_all - disc_all) / (conc_all + disc_all)
    return tau, conc_all + disc_all


def system_level(
    human: Sequence[float], metric: Sequence[float], systems: Sequence[str], method: str = "pearson"
) -> tuple[float, float, int]:
    """Correlation of per-system means (Lai et al.'s system level): ``(r, p, n_systems)``."""
    from scipy import stats  # noqa: PLC0415 - heavy (scipy)

    if len(systems) != len(human) or len(human) != len(metric):
        raise ValueError(f"system_level: {len(human)} human, {len(metric)} metric and {len(systems)} system labels")
    names = list(dict.fromkeys(systems))
    sys_arr = np.asarray(systems, dtype=object)
    h = np.asarray(human, float)
    m = np.asarray(metric, float)
    hm = [float(h[sys_arr == s].mean()) for s in names]
    mm = [float(m[sys_arr == s].mean()) for s in names]
    hm_arr, mm_arr = check_scores(hm, mm, "system_level")
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr}.get(method)
    if fn is None:
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    res = fn(mm_arr, hm_arr)
    return float(res.statistic), float(res.pvalue), len(names)
