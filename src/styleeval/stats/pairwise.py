"""Pairwise meta-evaluation statistics, as the WMT metrics shared tasks use them (google-research/mt-metrics-eval).

- :func:`pairwise_accuracy`: system-level pairwise accuracy (Kocmi et al. 2021) as mt-metrics-eval's ``Agreement``
  computes it: over every system pair, right when the sign of the human difference equals the sign of the metric
  difference (a human tie is right only on a metric tie); ``ties="exclude"`` leaves human-tied pairs out instead.
- :func:`tie_calibrated_accuracy`: acc_eq with tie calibration (Deutsch et al. 2023): a pair is correct when the
  metric's sign, with |m_i - m_j| <= epsilon counted as a tie, equals the human sign (human ties included); epsilon is
  chosen, exactly, among 0 and every |m_i - m_j| to maximise the accuracy. With ``groups`` (e.g. the source id: the
  systems' outputs for one input), pairs are formed within each group, acc_eq is averaged over groups and one epsilon
  shared by all groups is chosen.
- :func:`soft_pairwise_accuracy`: SPA (Thompson et al. 2024): 1 - |p_human - p_metric| averaged over system pairs,
  the p-values from paired permutation tests on the per-item scores of both systems.

Ties in 1-5 human ratings are why acc_eq exists: Kendall-like statistics either drop human ties or punish a metric
for predicting them; acc_eq rewards a metric that says "no difference" where the humans saw none (docs/metaeval.md).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from styleeval.stats.resampling import sign_flip_test

BLOCK = 1024
"""Rows per block when the pairs of a large group are enumerated (bounds memory at BLOCK x n differences)."""


TIES = ("wmt", "exclude")


def _as_mapping(values: Mapping[Hashable, float] | Sequence[float] | np.ndarray, what: str) -> dict[Hashable, float]:
    if isinstance(values, Mapping):
        return dict(values)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"pairwise_accuracy: {what} must be a mapping system -> score or a sequence aligned with the "
                        f"other, got {type(values).__name__}")
    return dict(enumerate(np.asarray(values, dtype=float).tolist()))


def pairwise_accuracy(human: Mapping[Hashable, float] | Sequence[float], metric: Mapping[Hashable, float] |
                      Sequence[float], ties: str = "wmt") -> float:
    """System-level pairwise accuracy of ``metric`` against ``human`` (mappings system -> score, or two aligned
    sequences). ``ties="wmt"`` (default, mt-metrics-eval's ``Agreement``): over every pair, right when
    ``sign(h_a - h_b) == sign(m_a - m_b)`` (a human tie is right only on a metric tie); ``"exclude"``: human-tied
    pairs are left out (and a metric tie is wrong). Systems missing or NaN in either are left out; NaN when no pair
    counts."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    h, m = _as_mapping(human, "human"), _as_mapping(metric, "metric")
    if not isinstance(human, Mapping) and not isinstance(metric, Mapping) and len(h) != len(m):
        raise ValueError(f"pairwise_accuracy: {len(h)} human scores but {len(m)} metric scores (aligned sequences "
                         "must have one length)")
    names = [s for s in h if s in m and math.isfinite(h[s]) and math.isfinite(m[s])]
    pairs = [(a, b) for a, b in itertools.combinations(names, 2) if ties == "wmt" or h[a] != h[b]]
    if not pairs:
        return math.nan
    return sum(np.sign(h[a] - h[b]) == np.sign(m[a] - m[b]) for a, b in pairs) / len(pairs)


def _pair_values(h: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """For every pair of one group: the |m_i - m_j| of the pairs the metric can get right by being outside the tie
    band (human non-tie, metric of the same sign: right while eps < |dm|), those of human ties (right while
    eps >= |dm|), and the number of pairs. Rows are sorted by (human, metric) first, so that for i < j the human
    difference is >= 0 and a pair is a human tie exactly when j is in i's human level: no sign arithmetic."""
    order = np.lexsort((m, h))
    h, m = h[order], m[order]
    n = len(h)
    level_end = np.searchsorted(h, h, side="right")  # one past the last row of each row's human level
    agree, ties = [], []
    for start in range(0, n - 1, BLOCK):
        stop = min(n - 1, start + BLOCK)
        rows = np.arange(start, stop)
        cols = np.arange(start + 1, n)
        dm = m[None, start + 1 :] - m[rows, None]  # m_j - m_i for j > start
        later = cols[None, :] > rows[:, None]
        same_level = cols[None, :] < level_end[rows, None]
        ties.append(dm[later & same_level])  # sorted by m within a level: dm >= 0
        agree.append(dm[later & ~same_level & (dm > 0)])
    return np.concatenate(agree), np.concatenate(ties), n * (n - 1) // 2


def tie_calibrated_accuracy(human: Sequence[float], metric: Sequence[float],
                            groups: Sequence[Hashable] | None = None) -> tuple[float, float]:
    """``(acc_eq, epsilon)`` (Deutsch et al. 2023; see the module docstring). Rows with a NaN human or metric score
    are left out; groups with fewer than two rows have no pair and do not count. Exact: every candidate epsilon is
    evaluated by sorting the pairs' differences once (O(P log P) for P pairs), no loop over pairs in Python."""
    h = np.asarray(human, dtype=float)
    m = np.asarray(metric, dtype=float)
    if h.shape != m.shape or h.ndim != 1:
        raise ValueError(f"human and metric must be 1-D of one length, got {h.shape} and {m.shape}")
    keep = np.isfinite(h) & np.isfinite(m)
    if groups is None:
        members = [np.flatnonzero(keep)]
    else:
        if len(groups) != len(h):
            raise ValueError(f"groups has {len(groups)} entries for {len(h)} rows")
        by_group: dict[Hashable, list[int]] = {}
        for i in np.flatnonzero(keep):
            by_group.setdefault(groups[i], []).append(int(i))
        members = [np.array(v) for v in by_group.values()]
    parts = [_pair_values(h[idx], m[idx]) for idx in members if len(idx) >= 2]
    if not parts:
        return math.nan, math.nan
    # a group's pairs weigh 1 / (its pairs x the groups): the sum is the mean of the per-group accuracies. Groups with
    # as many pairs share a weight, so each weight class is sorted once (np.sort: no argsort of weights).
    classes: dict[int, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for agree, ties, total in parts:
        classes.setdefault(total, ([], []))
        classes[total][0].append(agree)
        classes[total][1].append(ties)
    sorted_classes = [(1.0 / (total * len(parts)), np.sort(np.concatenate(a)), np.sort(np.concatenate(t)))
                      for total, (a, t) in classes.items()]
    candidates = np.unique(np.concatenate([[0.0], *(t for _, _, t in sorted_classes)]))  # the optimum: 0 or a tie's
    acc = np.zeros(len(candidates))
    for weight, agree, ties in sorted_classes:
        acc += weight * ((len(agree) - np.searchsorted(agree, candidates, side="right"))
                         + np.searchsorted(ties, candidates, side="right"))
    best = int(np.argmax(acc))  # the smallest epsilon among equals
    return float(acc[best]), float(candidates[best])


def accuracy_at(human: Sequence[float], metric: Sequence[float], epsilon: float,
                groups: Sequence[Hashable] | None = None) -> float:
    """acc_eq at a given ``epsilon`` (the quantity :func:`tie_calibrated_accuracy` maximises)."""
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    keep = np.isfinite(h) & np.isfinite(m)
    keys = [None] * len(h) if groups is None else list(groups)
    accs = []
    for key in dict.fromkeys(keys[i] for i in np.flatnonzero(keep)):
        idx = [i for i in np.flatnonzero(keep) if keys[i] == key]
        if len(idx) < 2:
            continue
        a, t, total = _pair_values(h[idx], m[idx])
        accs.append(((a > epsilon).sum() + (t <= epsilon).sum()) / total)
    return float(np.mean(accs)) if accs else math.nan


def paired_permutation_p(a: Sequence[float], b: Sequence[float], trials: int = 1000, seed: int = 0) -> float:
    """One-sided p-value that system ``a`` is better than ``b`` on paired item scores: the share of random swaps of
    each item's two scores whose mean difference reaches the observed one, (count + 1) / (trials + 1)."""
    return sign_flip_test(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), trials, seed,
                          alternative="greater", exact=False)


def soft_pairwise_accuracy(human_items: Mapping[str, Sequence[float] | Mapping[Hashable, float]],
                           metric_items: Mapping[str, Sequence[float] | Mapping[Hashable, float]],
                           trials: int = 1000, seed: int = 0) -> tuple[float, dict[tuple[str, str], tuple]]:
    """SPA (Thompson et al. 2024): for every system pair (a, b), the permutation p-values that a beats b under the
    human scores and under the metric's (each system's per-item scores: sequences aligned by position, or mappings
    item -> score aligned on the items both systems have), and SPA = mean over pairs of 1 - |p_human - p_metric|.
    Returns SPA and the per-pair ``(p_human, p_metric)``."""
    import pandas as pd  # noqa: PLC0415 - heavy (pandas)

    def series(items) -> pd.Series:
        return pd.Series(dict(items) if isinstance(items, Mapping) else list(items), dtype=float)

    names = sorted(set(human_items) & set(metric_items))
    per_pair = {}
    for a, b in itertools.combinations(names, 2):
        joined = pd.concat([series(human_items[a]), series(human_items[b]), series(metric_items[a]),
                            series(metric_items[b])], axis=1, join="inner").dropna()
        if joined.empty:
            continue
        ha, hb, ma, mb = (joined[c].to_numpy() for c in joined.columns)
        per_pair[a, b] = (paired_permutation_p(ha, hb, trials, seed), paired_permutation_p(ma, mb, trials, seed))
    if not per_pair:
        return math.nan, per_pair
    return float(np.mean([1 - abs(ph - pm) for ph, pm in per_pair.values()])), per_pair


def perm_both(statistic, human: np.ndarray, x: np.ndarray, y: np.ndarray, trials: int = 1000,
              seed: int = 0) -> float:
    """One-sided p-value that metric ``x`` agrees with ``human`` better than ``y`` does under ``statistic(human,
    metric) -> float``, by PERM-BOTH (Deutsch et al. 2021): both metrics are z-scored, then each row's (system x
    input cell's) two scores are swapped at random; p = (count of permuted differences >= the observed + 1) /
    (trials + 1). Rows where any of the three is NaN are left out."""
    keep = np.isfinite(human) & np.isfinite(x) & np.isfinite(y)
    h, a, b = human[keep], _z(x[keep]), _z(y[keep])
    observed = statistic(h, a) - statistic(h, b)
    rng = np.random.default_rng(seed)
    count = 0
    for _ in range(trials):
        swap = rng.random(len(h)) < 0.5
        a2, b2 = np.where(swap, b, a), np.where(swap, a, b)
        count += statistic(h, a2) - statistic(h, b2) >= observed - 1e-12
    return (count + 1) / (trials + 1)


def _z(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else v - v.mean()
