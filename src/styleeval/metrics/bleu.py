"""Sentence BLEU with sacrebleu defaults (``s_bleu``: rewrite vs source; ``r_bleu``: rewrite vs references)."""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """sacrebleu sentence BLEU (0-100; exp smoothing, effective order, 13a tokenizer) of each hypothesis."""
    return sentence_scores("bleu", hypotheses, references)


@register("s_bleu")
class SourceBLEU(SacreBleuMetric):
    """``s_bleu``: sentence BLEU of the rewrite with the source as the only reference."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("bleu", "source", agg)


@register("r_bleu")
class ReferenceBLEU(SacreBleuMetric):
    """``r_bleu``: sentence BLEU of the rewrite against all references of the row."""

    def __init__(self, agg: str = "corpus") -> None:
        super().__init__("bleu", "reference", agg)
