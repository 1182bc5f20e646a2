"""The BLEU variant behind the "Mind the Style Gap" tables (Pauli et al., 2025): ``s_paper_bleu``.

The authors called NLTK 3.9.1 ``sentence_bleu`` with raw strings, i.e. ``sentence_bleu([rewrite], source,
smoothing_function=SmoothingFunction().method1)``. NLTK iterates over a string, so the "tokens" are
**characters**: this is BLEU over character 1- to 4-grams, with the **source as the hypothesis** and the
**rewrite as the (single) reference**. This module reimplements exactly that definition without NLTK:

- modified precision p_n = sum of clipped counts / max(1, number of hypothesis n-grams), kept as an
  unreduced fraction (numerator, denominator);
- if no unigram matches, the score is 0;
- smoothing ``method1``: every p_n whose numerator is 0 becomes (0 + epsilon) / denominator, epsilon = 0.1;
- brevity penalty with the reference length closest to the hypothesis length (ties: the shorter),
  BP = 1 if c > r, 0 if c == 0, else exp(1 - r / c);
- BLEU = BP * exp(sum_n 0.25 * log p_n), in [0, 1].

Use ``s_bleu`` (sacrebleu, word level, rewrite as hypothesis) for new work; this variant exists so that the
paper's numbers can be reproduced.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from styleeval._version import __version__
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature

EPSILON = 0.1
WEIGHTS = (0.25, 0.25, 0.25, 0.25)


def _ngram_counts(seq: Sequence[str], n: int) -> Counter:
    return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))


def modified_precision(references: Sequence[Sequence[str]], hypothesis: Sequence[str], n: int) -> tuple[int, int]:
    """NLTK's modified n-gram precision as an unreduced (numerator, denominator) pair."""
    counts = _ngram_counts(hypothesis, n) if len(hypothesis) >= n else Counter()
    max_counts: dict[tuple, int] = {}
    for ref in references:
        ref_counts = _ngram_counts(ref, n) if len(ref) >= n else Counter()
        for ngram in counts:
            max_counts[ngram] = max(max_counts.get(ngram, 0), ref_counts[ngram])
    clipped = sum(min(count, max_counts[ngram]) for ngram, count in counts.items())
    return clipped, max(1, sum(counts.values()))


def closest_ref_length(references: Sequence[Sequence[str]], hyp_len: int) -> int:
    """The reference length closest to ``hyp_len`` (the shorter one on ties), as in NLTK."""
    return min((len(r) for r in references), key=lambda r: (abs(r - hyp_len), r))


def brevity_penalty(closest_ref_len: int, hyp_len: int) -> float:
    """NLTK's brevity penalty."""
    if hyp_len > closest_ref_len:
        return 1.0
    if hyp_len == 0:
        return 0.0
    return math.exp(1 - closest_ref_len / hyp_len)


def nltk_sentence_bleu(
    references: Sequence[Sequence[str]], hypothesis: Sequence[str], weights: Sequence[float] = WEIGHTS,
    epsilon: float = EPSILON,
) -> float:
    """NLTK ``sentence_bleu(references, hypothesis, weights, SmoothingFunction(epsilon).method1)``.

    ``references`` and ``hypothesis`` are token sequences; pass strings to get NLTK's raw-string behaviour
    (character tokens).
    """
    fractions = [modified_precision(references, hypothesis, n) for n in range(1, len(weights) + 1)]
    hyp_len = len(hypothesis)
    bp = brevity_penalty(closest_ref_length(references, hyp_len), hyp_len)
    if fractions[0][0] == 0:
        return 0.0
    precisions = [(num + epsilon) / den if num == 0 else num / den for num, den in fractions]
    return bp * math.exp(math.fsum(w * math.log(p) for w, p in zip(weights, precisions, strict=True)))


def paper_bleu(source: str, rewrite: str) -> float:
    """The paper's S-Bleu of one pair: character 4-gram BLEU of the source against the rewrite."""
    return nltk_sentence_bleu([rewrite], source)


def _signature(name: str, hyp: str, **extra: str) -> Signature:
    fields = {"tok": "char", "order": 4, "hyp": hyp, "ref": "rewrite", "smooth": f"method1-{EPSILON}", "bp": "closest"}
    return Signature.build(name, {**fields, **extra, "version": __version__})


@register("s_paper_bleu")
class SourcePaperBLEU(Metric):
    """``s_paper_bleu``: the paper's BLEU (characters, source as hypothesis, rewrite as reference, method1)."""

    name = "s_paper_bleu"
    inputs = "source"

    @property
    def signature(self) -> Signature:
        return _signature(self.name, hyp="source")

    def _score(self, sources, rewrites, references, styles):
        return [paper_bleu(s, r) for s, r in zip(sources, rewrites, strict=True)]


@register("r_paper_bleu")
class ReferencePaperBLEU(Metric):
    """``r_paper_bleu``: the same definition with the reference as hypothesis (max over references).

    A guess at the paper's R-Bleu (the reference plays the role the source plays in S-Bleu); documented in
    ``docs/reproduction.md`` with how close it gets.
    """

    name = "r_paper_bleu"
    inputs = "reference"

    @property
    def signature(self) -> Signature:
        return _signature(self.name, hyp="reference", multi="max")

    def _score(self, sources, rewrites, references, styles):
        assert references is not None
        return [max(nltk_sentence_bleu([r], ref) for ref in refs) for r, refs in zip(rewrites, references, strict=True)]
