"""Sentence BLEU with sacrebleu (``s_bleu``: rewrite vs source; ``r_bleu``: rewrite vs references), sacrebleu's
defaults unless a spec sets sacrebleu's own options: ``s_bleu:tokenize=intl:lowercase=yes`` (``tokenize``,
``lowercase``, ``smooth_method``, ``smooth_value``, ``effective_order``; :func:`~._sacrebleu.sacrebleu_options`)."""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence BLEU (0-100; exp smoothing, effective order, 13a tokenizer unless ``options``, sacrebleu's
    ``BLEU`` arguments, say otherwise) of each hypothesis."""
    return sentence_scores("bleu", hypotheses, references, **options)


@register("s_bleu")
class SourceBLEU(SacreBleuMetric):
    """``s_bleu``: sentence BLEU of the rewrite with the source as the only reference."""

    kind = "bleu"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("bleu", "source", agg, **options)


@register("r_bleu")
class ReferenceBLEU(SacreBleuMetric):
    """``r_bleu``: sentence BLEU of the rewrite against all references of the row."""

    kind = "bleu"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("bleu", "reference", agg, **options)
