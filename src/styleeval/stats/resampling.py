"""Resampling statistics of per-row scores: the bootstrap CI of a mean, paired tests of a difference of means (the
sign-flip permutation test, alias approximate randomization, and the paired bootstrap), and Holm's adjustment.

Every function is deterministic for a given ``seed``. Paired tests take two score vectors on the same inputs
(``a[i]`` and ``b[i]`` for input ``i``); NaN pairs must be removed by the caller (:func:`sign_flip_test` drops them).

Resamples are drawn in blocks of at most ``max_elements`` values (:data:`MAX_ELEMENTS`: 32 MB of float64), so memory
is O(block) whatever the number of rows and resamples. numpy's generator draws the same numbers whether a matrix is
drawn at once or a block of rows at a time, so the block size never changes a result (tested).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from styleeval.errors import UserError
from styleeval.signature import Signature

N_BOOT = 1000
"""Bootstrap resamples of CIs and of the paired bootstrap."""
N_TRIALS = 10_000
"""Shufflings of the paired approximate randomization test."""
SEED = 12345
"""The default seed of the system comparison: sacrebleu's (``SACREBLEU_SEED``), so that the same seed draws the same
shuffles and resamples as ``sacrebleu --paired-ar`` / ``--paired-bs``."""
ALTERNATIVES = ("two-sided", "greater")
MAX_ELEMENTS = 1 << 22
"""Values (resamples x rows) drawn per block; any block size gives the same numbers."""


def check_settings(*, alpha: float | None = None, trials: int | None = None, n_boot: int | None = None,
                   seed: int | None = None) -> None:
    """Refuse, naming the setting, what would make a p-value, CI or cluster wrong instead of failing: ``alpha`` in
    (0, 1), ``trials`` (shuffles or permutations) >= 1, ``n_boot`` (resamples; 0: no CI) >= 0, ``seed`` a
    non-negative integer (numpy's generators take no other). ``None``: not checked.

    >>> check_settings(alpha=0.05, trials=200, n_boot=0, seed=12345)
    >>> check_settings(trials=-3)
    Traceback (most recent call last):
    ...
    styleeval.errors.UserError: trials must be a positive integer, got -3
    """
    def integer(value: object) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

    if alpha is not None and not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise UserError(f"alpha must be in (0, 1), got {alpha}")
    if trials is not None and not (integer(trials) and trials >= 1):
        raise UserError(f"trials must be a positive integer, got {trials}")
    if n_boot is not None and not (integer(n_boot) and n_boot >= 0):
        raise UserError(f"n_boot (bootstrap resamples) must be a non-negative integer (0: no CI), got {n_boot}")
    if seed is not None and not (integer(seed) and seed >= 0):
        raise UserError(f"seed must be a non-negative integer, got {seed}")


def resample_blocks(total: int, width: int, max_elements: int = MAX_ELEMENTS) -> Iterator[int]:
    """Sizes of consecutive blocks of ``total`` resamples of ``width`` values each, at most ``max_elements`` values a
    block (at least one resample)."""
    if max_elements < 1:
        raise ValueError(f"max_elements must be positive, got {max_elements}")
    step = max(1, max_elements // max(1, width))
    for start in range(0, total, step):
        yield min(step, total - start)


def resampled_means(x: np.ndarray, n_boot: int, rng: np.random.Generator,
                    max_elements: int = MAX_ELEMENTS) -> np.ndarray:
    """The means of ``n_boot`` bootstrap resamples of ``x`` (rows drawn with replacement), ``n_boot`` x ``len(x)``
    indices drawn from ``rng`` in blocks."""
    n = len(x)
    return np.concatenate([x[rng.integers(0, n, size=(k, n))].mean(axis=1)
                           for k in resample_blocks(n_boot, n, max_elements)] or [np.empty(0)])


def percentile_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of ``values`` (numpy's linear interpolation)."""
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                      level: float = 0.95, max_elements: int = MAX_ELEMENTS) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``values`` (resampling rows with replacement); ``(nan, nan)`` for fewer
    than two values (a CI is undefined)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    return percentile_interval(resampled_means(x, n_boot, np.random.default_rng(seed), max_elements), level)


def sign_flip_test(differences: Sequence[float], trials: int = N_TRIALS, seed: int = 0,
                   alternative: str = "two-sided", exact: bool = True, max_elements: int = MAX_ELEMENTS) -> float:
    """The paired permutation test of a mean difference: each pair's two scores are swapped at random (its
    difference's sign flipped) and the share of shufflings whose mean difference reaches the observed one is the
    p-value. ``alternative="two-sided"`` compares ``|mean|``, ``"greater"`` the mean itself (H1: ``mean > 0``).
    Non-finite differences are left out.

    With ``exact`` and ``2**n <= trials`` all 2^n sign patterns are enumerated and ``p = count / 2**n``; otherwise
    ``p = (count + 1) / (trials + 1)`` over ``trials`` random patterns, drawn in blocks of at most ``max_elements``
    signs. "Reaches" is ``>=`` up to a relative tolerance of 1e-12 (float sums of equal sets of numbers).
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
    total = float(d.sum())
    for k in resample_blocks(trials, n, max_elements):
        # the draws of rng.choice([-1, 1], (k, n)); sum(sign * d) = 2 * sum(d where +1) - sum(d), one BLAS product
        plus = rng.integers(0, 2, size=(k, n)).astype(np.float64)
        count += int((statistic((2 * (plus @ d) - total) / n) >= threshold).sum())
    return (count + 1) / (trials + 1)


def sign_flip_floor(n: int, trials: int = N_TRIALS, seed: int = 0, exact: bool = True,
                    max_elements: int = MAX_ELEMENTS) -> float:
    """The smallest p-value :func:`sign_flip_test` can give on ``n`` differences, whatever they are: the identity
    and the flip of every sign always reach the observed mean, so 2 / 2^n exactly; sampled, (c + 1) / (trials + 1)
    with c the drawn patterns that keep every sign or none (counted in the test's own draws; above 64 values the
    chance of one is below trials / 2^63 and c is taken as 0). NaN for ``n = 0``."""
    if n < 1:
        return math.nan
    if exact and 2**n <= trials:
        return 2 / 2**n
    constant = 0
    if n <= 64:
        rng = np.random.default_rng(seed)
        for k in resample_blocks(trials, n, max_elements):
            kept = rng.integers(0, 2, size=(k, n)).sum(axis=1)
            constant += int(((kept == 0) | (kept == n)).sum())
    return (constant + 1) / (trials + 1)


def paired_test_signature(test: str, aggregate: str, trials: int = N_TRIALS, n_boot: int = N_BOOT, seed: int = SEED,
                   exact: bool = False) -> Signature:
    """The signature of a paired test as the system comparison runs it: ``paired_ar`` (``trials`` shufflings;
    ``exact:yes`` when every sign pattern is enumerated) or ``paired_bs``, on the ``aggregate`` (``corpus``:
    sacrebleu's draws, trials that reach the observed difference counted, ``count:ge``; ``mean``: the sign-flip test
    (``count:ge``) or the two-sided percentile bootstrap (``count:two-sided``)), with the resamples of the CI of the
    difference and the seed.

    >>> paired_test_signature("ar", "corpus")
    'paired_ar|stat:corpus|trials:10000|count:ge|ci:bs-1000|seed:12345'
    """
    if test == "ar":
        fields: dict[str, object] = {"stat": aggregate, "trials": trials}
        if aggregate == "mean":
            fields["exact"] = exact
        fields["count"] = "ge"
    else:
        fields = {"stat": aggregate, "resamples": n_boot, "count": "ge" if aggregate == "corpus" else "two-sided"}
    fields.update(ci=f"bs-{n_boot}", seed=seed)
    return Signature.build(f"paired_{'ar' if test == 'ar' else 'bs'}", fields)


def approximate_randomization(a: Sequence[float], b: Sequence[float], trials: int = N_TRIALS,
                              seed: int = 0) -> float:
    """Two-sided p-value of ``mean(a) != mean(b)`` by paired approximate randomization: :func:`sign_flip_test` of
    ``a - b`` (exact enumeration when ``2**n <= trials``, else ``(count + 1) / (trials + 1)``, sacrebleu's
    convention)."""
    return sign_flip_test(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), trials, seed)


def paired_bootstrap_mean(a: Sequence[float], b: Sequence[float], n_boot: int = N_BOOT, seed: int = 0,
                          level: float = 0.95, max_elements: int = MAX_ELEMENTS) -> tuple[float, float, float]:
    """Paired bootstrap of ``mean(a) - mean(b)`` (resampling inputs): ``(ci_low, ci_high, p)`` with the percentile CI
    of the difference and the two-sided p-value ``min(1, 2 * (min(#(delta* <= 0), #(delta* >= 0)) + 1) / (n_boot +
    1))``: the +1 (as sacrebleu's) keeps p above 0, which a finite number of resamples cannot show."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0:
        return math.nan, math.nan, math.nan
    boot = resampled_means(d, n_boot, np.random.default_rng(seed), max_elements)
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
