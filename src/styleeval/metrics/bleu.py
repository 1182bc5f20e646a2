"""Sentence BLEU with sacrebleu (``s_bleu``: rewrite vs source; ``r_bleu``: rewrite vs references), sacrebleu's
defaults unless a spec sets sacrebleu's own options: ``s_bleu:tokenize=intl:lowercase=yes`` (``tokenize``,
``lowercase``, ``smooth_method``, ``smooth_value``, ``effective_order``; :func:`~._sacrebleu.sacrebleu_options`).

A row's score is sacrebleu's own ``sentence_score`` (effective order by default); a system's corpus BLEU is
:func:`bleu_scores` of its rows' summed statistics (``Metric.statistics`` / ``Metric.score``: sacrebleu's
``corpus_score``, vectorised over resamples and shuffles)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence BLEU (0-100; exp smoothing, effective order, 13a tokenizer unless ``options``, sacrebleu's
    ``BLEU`` arguments, say otherwise) of each hypothesis."""
    return sentence_scores("bleu", hypotheses, references, **options)


def _libm(fn: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` (``math.log``, ``math.exp``) element by element: the C library's results, as sacrebleu's scalar code
    gets them (numpy's SIMD ``log``/``exp`` may differ in the last bit)."""
    return lambda x: np.array([fn(v) for v in np.ravel(x).tolist()], dtype=float).reshape(np.shape(x))


_NUMPY = (np.log, np.exp)
_EXACT = (_libm(math.log), _libm(math.exp))


def bleu_scores(metric: Any, t: np.ndarray, exact: bool = False) -> np.ndarray:
    """sacrebleu's ``BLEU.compute_bleu`` on each row of ``t`` ([sys_len, ref_len, correct..., total...]) with the
    settings of sacrebleu's ``BLEU`` object ``metric``, in the same order of operations: sacrebleu's scores up to
    numpy's ``log``/``exp`` (last bit); ``exact``: those of the C library (as ``math``'s), bitwise sacrebleu's
    (slow: for a few rows)."""
    log, exp = _EXACT if exact else _NUMPY
    order = metric.max_ngram_order
    method = metric.smooth_method
    value = metric.smooth_value
    if value is None:
        value = type(metric).SMOOTH_DEFAULTS[method]
    sys_len, ref_len = t[:, 0], t[:, 1]
    correct, total = t[:, 2:2 + order], t[:, 2 + order:2 + 2 * order]
    any_correct = (correct != 0).any(axis=1)  # checked before add-k changes the counts, as sacrebleu does
    short = sys_len < ref_len
    bp = np.where(short & (sys_len > 0), exp(1 - ref_len / np.where(sys_len > 0, sys_len, 1.0)),
                  np.where(short, 0.0, 1.0))
    smooth = np.ones(len(t))
    eff_order = np.full(len(t), order)
    live = np.ones(len(t), dtype=bool)  # the loop over orders has not hit a zero total (sacrebleu's "break")
    summed = np.zeros(len(t))  # Python's sum() of the first eff_order log-precisions, left to right
    for n in range(order):
        c, tot = correct[:, n], total[:, n]
        if method == "add-k" and n > 0:
            c, tot = c + value, tot + value
        live = live & (tot != 0)
        if metric.effective_order:
            eff_order = np.where(live, n + 1, eff_order)
        zero = live & (c == 0)
        safe = np.where(live, tot, 1.0)
        if method == "exp":
            smooth = np.where(zero, smooth * 2, smooth)
            if_zero = 100.0 / (smooth * safe)
        elif method == "floor":
            if_zero = 100.0 * value / safe
        else:
            if_zero = np.zeros(len(t))
        precision = np.where(zero, if_zero, np.where(live, 100.0 * c / safe, 0.0))
        logs = np.where(precision > 0, log(np.where(precision > 0, precision, 1.0)), -9999999999.0)  # my_log
        summed = np.where(n < eff_order, summed + logs, summed)
    return np.where(any_correct, bp * exp(summed / eff_order), 0.0)


class _BLEU(SacreBleuMetric):
    """sacrebleu's BLEU: sentence BLEU per row (sacrebleu's own ``sentence_score``), corpus BLEU of summed
    statistics (:func:`bleu_scores`)."""

    kind = "bleu"

    def _scores_of_sums(self, scorer: Any, sums: np.ndarray, exact: bool) -> np.ndarray:
        return bleu_scores(scorer, sums, exact)


@register("s_bleu")
class SourceBLEU(_BLEU):
    """``s_bleu``: sentence BLEU of the rewrite with the source as the only reference."""

    kind = "bleu"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("bleu", "source", agg, **options)


@register("r_bleu")
class ReferenceBLEU(_BLEU):
    """``r_bleu``: sentence BLEU of the rewrite against all references of the row."""

    kind = "bleu"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("bleu", "reference", agg, **options)
