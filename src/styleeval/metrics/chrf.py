"""Sentence chrF with sacrebleu (``s_chrf``: rewrite vs source; ``r_chrf``: rewrite vs references), sacrebleu's
defaults unless a spec sets sacrebleu's own options: ``s_chrf:word_order=2`` is chrF++ (``char_order``,
``word_order``, ``beta``, ``lowercase``, ``whitespace``, ``eps_smoothing``; :func:`~._sacrebleu.sacrebleu_options`).

A row's score and a system's corpus chrF are both :func:`chrf_scores` of sentence statistics (a row's own: sacrebleu's
``sentence_score``; the system's rows' summed: its ``corpus_score``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence chrF (0-100; character 6-grams, beta 2 unless ``options``, sacrebleu's ``CHRF`` arguments,
    say otherwise: ``word_order=2`` for chrF++) of each hypothesis."""
    return sentence_scores("chrf", hypotheses, references, **options)


def chrf_scores(metric: Any, t: np.ndarray) -> np.ndarray:
    """sacrebleu's ``CHRF._compute_f_score`` on each row of ``t`` ([hyp, ref, match] per character then word
    order) with the settings of sacrebleu's ``CHRF`` object ``metric``, in the same order of operations (no
    ``log``/``exp``: bitwise sacrebleu's)."""
    eps = 1e-16
    factor = metric.beta ** 2
    score = np.zeros(len(t))
    avg_prec, avg_rec = np.zeros(len(t)), np.zeros(len(t))
    effective = np.zeros(len(t))
    for i in range(metric.order):
        n_hyp, n_ref, n_match = t[:, 3 * i], t[:, 3 * i + 1], t[:, 3 * i + 2]
        has_hyp, has_ref = n_hyp > 0, n_ref > 0
        prec = np.where(has_hyp, n_match / np.where(has_hyp, n_hyp, 1.0), eps)
        rec = np.where(has_ref, n_match / np.where(has_ref, n_ref, 1.0), eps)
        denom = factor * prec + rec
        score += np.where(denom > 0, (1 + factor) * prec * rec / np.where(denom > 0, denom, 1.0), eps)
        both = has_hyp & has_ref
        avg_prec = np.where(both, avg_prec + prec, avg_prec)
        avg_rec = np.where(both, avg_rec + rec, avg_rec)
        effective += both
    if metric.eps_smoothing:
        return 100 * score / metric.order
    some = effective > 0
    avg_prec = np.where(some, avg_prec / np.where(some, effective, 1.0), 0.0)
    avg_rec = np.where(some, avg_rec / np.where(some, effective, 1.0), 0.0)
    nonzero = avg_prec + avg_rec != 0
    f = (1 + factor) * avg_prec * avg_rec
    f = f / np.where(nonzero, factor * avg_prec + avg_rec, 1.0)
    return np.where(nonzero, 100 * f, 0.0)


class _ChrF(SacreBleuMetric):
    """sacrebleu's chrF: row scores and corpus scores both of sentence statistics (:func:`chrf_scores`; a row's is
    sacrebleu's ``sentence_score``, tested equal)."""

    kind = "chrf"
    sentence_from_statistics = True

    def _scores_of_sums(self, scorer: Any, sums: np.ndarray, exact: bool) -> np.ndarray:
        return chrf_scores(scorer, sums)


@register("s_chrf")
class SourceChrF(_ChrF):
    """``s_chrf``: sentence chrF of the rewrite with the source as the only reference (``word_order=2``: chrF++)."""

    kind = "chrf"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("chrf", "source", agg, **options)


@register("r_chrf")
class ReferenceChrF(_ChrF):
    """``r_chrf``: sentence chrF of the rewrite against all references of the row (``word_order=2``: chrF++)."""

    kind = "chrf"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("chrf", "reference", agg, **options)
