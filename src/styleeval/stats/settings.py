"""The settings of the system comparison's statistics, as one value: which paired test, its significance level,
the bootstrap resamples, the shufflings of approximate randomization and the seed of every draw
(:class:`TestSettings`, taken by :func:`styleeval.systems.evaluate_systems` and ``compare_systems``).

>>> TestSettings()
TestSettings(test='ar', alpha=0.05, n_boot=1000, trials=10000, seed=12345)
>>> TestSettings(test="bootstrap", n_boot=200).trials
10000
>>> TestSettings(trials=0)
Traceback (most recent call last):
...
styleeval.errors.UserError: trials must be a positive integer, got 0
"""

from __future__ import annotations

from dataclasses import dataclass

from styleeval.errors import UserError
from styleeval.stats.resampling import N_BOOT, N_TRIALS, SEED, check_settings

TESTS = ("ar", "bootstrap")
"""The paired tests: approximate randomization (``ar``) and the paired bootstrap (``bootstrap``)."""


@dataclass(frozen=True)
class TestSettings:
    """The five settings of the paired tests and CIs of a system comparison, checked when made (a ``UserError``
    names the setting: :func:`~styleeval.stats.resampling.check_settings`).

    Attributes:
        test: ``"ar"`` (paired approximate randomization, ``trials`` shufflings) or ``"bootstrap"`` (paired
            bootstrap, ``n_boot`` resamples).
        alpha: significance level of the Holm-adjusted p-values, in (0, 1).
        n_boot: bootstrap resamples of the CIs (0: no CI).
        trials: shufflings of approximate randomization (at least 1).
        seed: the seed of every random draw (default: sacrebleu's, 12345: the corpus metrics' p-values are those
            ``sacrebleu --paired-ar`` prints, where no shuffle ties).
    """

    __test__ = False  # a settings value, not a test class for pytest

    test: str = "ar"
    alpha: float = 0.05
    n_boot: int = N_BOOT
    trials: int = N_TRIALS
    seed: int = SEED

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise UserError(f"test must be one of {', '.join(TESTS)}, got {self.test!r}")
        check_settings(alpha=self.alpha, trials=self.trials, n_boot=self.n_boot, seed=self.seed)


DEFAULT_SETTINGS = TestSettings()
"""The system comparison's defaults: approximate randomization with 10,000 shufflings, alpha 0.05, 1000 bootstrap
resamples, sacrebleu's seed."""
