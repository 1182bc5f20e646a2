"""Hybrid metrics and the overall score of Mukherjee et al. (2025), with honest (cross-validated) evaluation.

- Hybrid-Simulation: the top-3 metrics by |Pearson| with the human ratings, min-max normalised (lower-is-better
  metrics flipped), combined by a weighted geometric mean whose weights are searched on a grid (step 0.05, summing
  to 1) for the highest Pearson correlation.
- Hybrid-Learned: a random forest (scikit-learn) on all metrics; its three most important metrics, weights = their
  normalised importances, in the same weighted geometric mean.
- The paper's versions are *oracles*: fitted and evaluated on the same rows (``oracle=True``). By default the hybrids
  are **cross-validated**: k folds by source (``groups``), so no source of a test fold is ever seen while fitting;
  the reported correlation is that of the out-of-fold predictions.
- :func:`overall_score`: the geometric mean of style, content and fluency scores (each min-max normalised).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from styleeval.errors import UserError
from styleeval.stats.correlation import pearson as _pearson

EPS = 1e-6


@dataclass
class HybridResult:
    """What a hybrid chose and how well it does: per fold the metrics and weights, the predictions, the Pearson r."""

    kind: str
    oracle: bool
    predictions: np.ndarray
    pearson: float
    folds: list[dict] = field(default_factory=list)  # per fold: metrics, weights, train_groups, test_groups


def _normaliser(values: np.ndarray, lower_is_better: bool):
    lo, hi = float(np.nanmin(values)), float(np.nanmax(values))
    span = hi - lo if hi > lo else 1.0

    def apply(x: np.ndarray) -> np.ndarray:
        z = np.clip((np.asarray(x, float) - lo) / span, 0.0, 1.0)
        return np.clip(1.0 - z if lower_is_better else z, EPS, 1.0)

    return apply


def weighted_geometric_mean(columns: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """exp(sum_i w_i log x_i) with the weights normalised to sum to 1 (columns in (0, 1])."""
    w = np.asarray(weights, float)
    w = w / w.sum()
    return np.exp(sum(wi * np.log(np.clip(c, EPS, None)) for wi, c in zip(w, columns, strict=True)))


def _weight_grid(k: int, step: float) -> list[tuple[float, ...]]:
    n = round(1 / step)
    return [tuple(c / n for c in combo) for combo in itertools.product(range(1, n + 1), repeat=k) if sum(combo) == n]


def _fit_simulation(scores, human, lower, top, step):
    ranked = sorted(scores, key=lambda m: -abs(_pearson(scores[m], human)) if math.isfinite(
        _pearson(scores[m], human)) else 0.0)
    chosen = ranked[:top]
    norms = {m: _normaliser(scores[m], m in lower) for m in chosen}
    cols = [norms[m](scores[m]) for m in chosen]
    best, best_r = None, -math.inf
    for w in _weight_grid(len(chosen), step):
        r = _pearson(weighted_geometric_mean(cols, w), human)
        if math.isfinite(r) and r > best_r:
            best, best_r = w, r
    return chosen, best or tuple([1 / len(chosen)] * len(chosen)), norms


def _fit_learned(scores, human, lower, top, seed):
    from sklearn.ensemble import RandomForestRegressor  # noqa: PLC0415 - heavy (sklearn)

    names = list(scores)
    x = np.column_stack([scores[m] for m in names])
    forest = RandomForestRegressor(n_estimators=200, random_state=seed, n_jobs=1).fit(x, human)
    order = np.argsort(-forest.feature_importances_)[:top]
    chosen = [names[i] for i in order]
    weights = forest.feature_importances_[order]
    weights = tuple(weights / weights.sum()) if weights.sum() > 0 else tuple([1 / len(chosen)] * len(chosen))
    norms = {m: _normaliser(scores[m], m in lower) for m in chosen}
    return chosen, weights, norms


def hybrid(kind: str, scores: Mapping[str, Sequence[float]], human: Sequence[float],
           groups: Sequence[object] | None = None, lower_is_better: Sequence[str] = (), top: int = 3,
           oracle: bool = False, folds: int = 5, step: float = 0.05, seed: int = 0) -> HybridResult:
    """Hybrid-Simulation (``kind="simulation"``) or Hybrid-Learned (``kind="learned"``); see the module docstring.

    ``groups`` (e.g. source ids) keep every group in one fold; without them each row is its own group.
    """
    if kind not in ("simulation", "learned"):
        raise UserError(f"kind must be 'simulation' or 'learned', got {kind!r}")
    cols = {m: np.asarray(v, float) for m, v in scores.items()}
    h = np.asarray(human, float)
    keep = np.isfinite(h) & np.all([np.isfinite(c) for c in cols.values()], axis=0)
    cols = {m: c[keep] for m, c in cols.items()}
    h = h[keep]
    g = np.arange(len(h)) if groups is None else np.asarray(groups, dtype=object)[keep]
    lower = set(lower_is_better)
    top = min(top, len(cols))

    def fit(idx):
        sub = {m: c[idx] for m, c in cols.items()}
        if kind == "simulation":
            return _fit_simulation(sub, h[idx], lower, top, step)
        return _fit_learned(sub, h[idx], lower, top, seed)

    if oracle:
        chosen, weights, norms = fit(np.arange(len(h)))
        pred = weighted_geometric_mean([norms[m](cols[m]) for m in chosen], weights)
        return HybridResult(kind, True, pred, _pearson(pred, h),
                            [{"metrics": chosen, "weights": weights, "train_groups": set(g.tolist()),
                              "test_groups": set(g.tolist())}])
    unique = list(dict.fromkeys(g.tolist()))
    rng = np.random.default_rng(seed)
    rng.shuffle(unique)
    fold_of = {grp: k % folds for k, grp in enumerate(unique)}
    assignment = np.array([fold_of[x] for x in g.tolist()])
    pred = np.full(len(h), np.nan)
    records = []
    for k in range(min(folds, len(unique))):
        test = np.flatnonzero(assignment == k)
        train = np.flatnonzero(assignment != k)
        chosen, weights, norms = fit(train)
        pred[test] = weighted_geometric_mean([norms[m](cols[m][test]) for m in chosen], weights)
        records.append({"metrics": chosen, "weights": weights, "train_groups": set(g[train].tolist()),
                        "test_groups": set(g[test].tolist())})
    return HybridResult(kind, False, pred, _pearson(pred, h), records)


def overall_score(style: Sequence[float], content: Sequence[float], fluency: Sequence[float],
                  lower_is_better: Sequence[str] = ()) -> np.ndarray:
    """Geometric mean of the three min-max normalised scores (name a dimension in ``lower_is_better`` to flip it,
    e.g. ``("fluency",)`` for perplexity)."""
    parts = {"style": np.asarray(style, float), "content": np.asarray(content, float),
             "fluency": np.asarray(fluency, float)}
    cols = [_normaliser(v, k in set(lower_is_better))(v) for k, v in parts.items()]
    return weighted_geometric_mean(cols, [1, 1, 1])
