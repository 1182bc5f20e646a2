"""The statistics of styleeval, in one place below the meta-evaluation and the system comparison (as
mt-metrics-eval keeps WMT's in one ``stats.py``); neither of those defines a statistic of its own.

- :mod:`.resampling`: bootstrap CI of a mean, the sign-flip permutation test (paired approximate randomization),
  the paired bootstrap of a difference of means, Holm's adjustment;
- :mod:`.correlation`: Spearman / Pearson / Kendall with their bootstrap CI, Lai et al.'s Kendall tau-like, system-level
  correlation;
- :mod:`.compare`: is one metric's correlation with the humans higher than another's (Williams' test, paired
  bootstrap of a correlation difference);
- :mod:`.pairwise`: pairwise accuracy, tie-calibrated acc_eq, soft pairwise accuracy, PERM-BOTH;
- :mod:`.clusters`: significance clusters of a ranking (WMT's rule);
- :mod:`.corpus`: corpus scores of additive sentence statistics (sacrebleu's BLEU, chrF, TER; the metric's own score
  function on arrays), their bootstrap CIs and paired tests on sacrebleu's draws, vectorised over the statistics;
- :mod:`.settings`: :class:`TestSettings`, the five settings of the system comparison's tests and CIs (test, alpha,
  n_boot, trials, seed), checked when made.
"""

from __future__ import annotations

from styleeval.stats.clusters import significance_clusters
from styleeval.stats.compare import Comparison, paired_bootstrap_correlation, williams_t, williams_test
from styleeval.stats.corpus import (
    CorpusComparison,
    PairResult,
    ScoreFunction,
    compare_corpus,
    corpus_bootstrap_ci,
    corpus_score,
    corpus_statistics,
    paired_corpus_test,
    reference_streams,
    score_from_statistics,
    score_function,
    score_of_rows,
    scores_from_statistics,
)
from styleeval.stats.correlation import (
    Correlation,
    DegenerateScoresError,
    check_scores,
    correlate,
    kendall_tau_like,
    pearson,
    spearman,
    spearman_bootstrap_ci,
    system_level,
)
from styleeval.stats.pairwise import (
    accuracy_at,
    paired_permutation_p,
    pairwise_accuracy,
    perm_both,
    soft_pairwise_accuracy,
    tie_calibrated_accuracy,
)
from styleeval.stats.resampling import (
    N_BOOT,
    N_TRIALS,
    SEED,
    approximate_randomization,
    bootstrap_mean_ci,
    check_settings,
    holm,
    paired_bootstrap_mean,
    paired_test_signature,
    percentile_interval,
    sign_flip_floor,
    sign_flip_test,
)
from styleeval.stats.settings import TestSettings

__all__ = [
    "N_BOOT", "N_TRIALS", "SEED", "CorpusComparison", "PairResult", "compare_corpus", "corpus_bootstrap_ci",
    "corpus_score", "corpus_statistics", "paired_corpus_test", "paired_test_signature", "reference_streams",
    "ScoreFunction", "score_from_statistics", "score_function", "score_of_rows", "scores_from_statistics",
    "sign_flip_floor", "Comparison", "Correlation",
    "DegenerateScoresError", "accuracy_at", "approximate_randomization", "bootstrap_mean_ci", "check_scores",
    "check_settings",
    "correlate", "holm", "kendall_tau_like", "paired_bootstrap_correlation", "paired_bootstrap_mean",
    "paired_permutation_p", "pairwise_accuracy", "pearson", "percentile_interval", "perm_both", "sign_flip_test",
    "significance_clusters", "soft_pairwise_accuracy", "spearman", "spearman_bootstrap_ci", "system_level",
    "tie_calibrated_accuracy", "williams_t", "williams_test",
    "TestSettings",
]
