"""Sentence chrF with sacrebleu defaults (``s_chrf``: rewrite vs source; ``r_chrf``: rewrite vs references)."""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """sacrebleu sentence chrF (0-100; character 6-grams, beta 2) of each hypothesis."""
    return sentence_scores("chrf", hypotheses, references)


@register("s_chrf")
class SourceChrF(SacreBleuMetric):
    """``s_chrf``: sentence chrF of the rewrite with the source as the only reference."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("chrf", "source", agg)


@register("r_chrf")
class ReferenceChrF(SacreBleuMetric):
    """``r_chrf``: sentence chrF of the rewrite against all references of the row."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("chrf", "reference", agg)
