"""Sentence TER with sacrebleu (``s_ter``: rewrite vs source; ``r_ter``: rewrite vs references), sacrebleu's
defaults (case-insensitive) unless a spec sets sacrebleu's own options: ``s_ter:case_sensitive=yes``
(``case_sensitive``, ``normalized``, ``no_punct``, ``asian_support``; :func:`~._sacrebleu.sacrebleu_options`).

TER is an error rate (lower = better). The metric returns raw TER and declares ``higher_is_better = False``;
the meta-evaluation negates it before correlating, so a positive correlation always means agreement with
the human ratings.
"""

from __future__ import annotations

from collections.abc import Sequence

from styleeval.metrics._sacrebleu import SacreBleuMetric, sentence_scores
from styleeval.metrics.registry import register


def sentence_ter(hypotheses: Sequence[str], references: Sequence[Sequence[str]], **options: object) -> list[float]:
    """sacrebleu sentence TER (edits per average reference word x 100; lower is better; ``options``: sacrebleu's
    ``TER`` arguments) of each hypothesis."""
    return sentence_scores("ter", hypotheses, references, **options)


@register("s_ter")
class SourceTER(SacreBleuMetric):
    """``s_ter``: sentence TER of the rewrite with the source as the only reference."""

    kind = "ter"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("ter", "source", agg, **options)


@register("r_ter")
class ReferenceTER(SacreBleuMetric):
    """``r_ter``: sentence TER of the rewrite against all references of the row."""

    kind = "ter"

    def __init__(self, agg: str = "corpus", **options: object) -> None:
        super().__init__("ter", "reference", agg, **options)
