"""Sentence chrF with sacrebleu (``s_chrf``: rewrite vs source; ``r_chrf``: rewrite vs references), sacrebleu's
defaults unless a spec sets sacrebleu's own options: ``s_chrf:word_order=2`` is chrF++ (``char_order``,
``word_order``, ``beta``, ``lowercase``, ``whitespace``, ``eps_smoothing``; :func:`~._sacrebleu.sacrebleu_options`)."""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence chrF (0-100; character 6-grams, beta 2 unless ``options``, sacrebleu's ``CHRF`` arguments,
    say otherwise: ``word_order=2`` for chrF++) of each hypothesis."""
    return sentence_scores("chrf", hypotheses, references, **options)


@register("s_chrf")
class SourceChrF(SacreBleuMetric):
    """``s_chrf``: sentence chrF of the rewrite with the source as the only reference (``word_order=2``: chrF++)."""

    kind = "chrf"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("chrf", "source", agg, **options)


@register("r_chrf")
class ReferenceChrF(SacreBleuMetric):
    """``r_chrf``: sentence chrF of the rewrite against all references of the row (``word_order=2``: chrF++)."""

    kind = "chrf"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("chrf", "reference", agg, **options)
