"""Sentence TER with sacrebleu (``s_ter``: rewrite vs source; ``r_ter``: rewrite vs references), sacrebleu's
defaults (case-insensitive) unless a spec sets sacrebleu's own options: ``s_ter:case_sensitive=yes``
(``case_sensitive``, ``normalized``, ``no_punct``, ``asian_support``; :func:`~._sacrebleu.sacrebleu_options`).
A row's score and a system's corpus TER are both :func:`ter_scores` of sentence statistics (a row's own: sacrebleu's
``sentence_score``; the system's rows' summed: its ``corpus_score``).

TER is an error rate (lower = better). The metric returns raw TER and declares ``higher_is_better = False``;
the meta-evaluation negates it before correlating, so a positive correlation always means agreement with
the human ratings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_ter(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence TER (edits per average reference word x 100; lower is better; ``options``: sacrebleu's
    ``TER`` arguments) of each hypothesis."""
    return sentence_scores("ter", hypotheses, references, **options)


def ter_scores(t: np.ndarray) -> np.ndarray:
    """sacrebleu's ``TER._compute_score_from_stats`` on each row of ``t`` ([edits, reference length]), in the same
    order of operations (bitwise sacrebleu's)."""
    edits, length = t[:, 0], t[:, 1]
    has_ref = length > 0
    return 100 * np.where(has_ref, edits / np.where(has_ref, length, 1.0), np.where(edits > 0, 1.0, 0.0))


class _TER(SacreBleuMetric):
    """sacrebleu's TER: row scores and corpus scores both of sentence statistics (:func:`ter_scores`; a row's is
    sacrebleu's ``sentence_score``, tested equal)."""

    kind = "ter"
    sentence_from_statistics = True

    def _scores_of_sums(self, scorer: Any, sums: np.ndarray, exact: bool) -> np.ndarray:
        return ter_scores(sums)


@register("s_ter")
class SourceTER(_TER):
    """``s_ter``: sentence TER of the rewrite with the source as the only reference."""

    kind = "ter"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("ter", "source", agg, **options)


@register("r_ter")
class ReferenceTER(_TER):
    """``r_ter``: sentence TER of the rewrite against all references of the row."""

    kind = "ter"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("ter", "reference", agg, **options)
