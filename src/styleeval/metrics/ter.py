"""Sentence TER with sacrebleu defaults (``s_ter``: rewrite vs source; ``r_ter``: rewrite vs references).

TER is an error rate (lower = better). The metric returns raw TER and declares ``higher_is_better = False``;
the meta-evaluation negates it before correlating, so a positive correlation always means agreement with
the human ratings.
"""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_ter(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """sacrebleu sentence TER (edits per average reference word x 100; lower is better) of each hypothesis."""
    return sentence_scores("ter", hypotheses, references)


@register("s_ter")
class SourceTER(SacreBleuMetric):
    """``s_ter``: sentence TER of the rewrite with the source as the only reference."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("ter", "source", agg)


@register("r_ter")
class ReferenceTER(SacreBleuMetric):
    """``r_ter``: sentence TER of the rewrite against all references of the row."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("ter", "reference", agg)
