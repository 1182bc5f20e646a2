"""PINC (Chen & Dolan, 2011): the share of the rewrite's n-grams that do not occur in the source.

``PINC(s, c) = 1/N * sum_{n=1..N} (1 - |ngrams_n(s) & ngrams_n(c)| / |ngrams_n(c)|)`` over n-gram *sets*,
with whitespace tokens and N = 4. Orders for which the rewrite has no n-gram (rewrites shorter than n
tokens) are left out of the average; an empty rewrite scores 0. PINC measures novelty (higher = more
different from the source, i.e. less overlap), so like TER it declares ``higher_is_better = False``: the
meta-evaluation negates it before correlating and ranking, and a positive correlation then means that less novelty
goes with higher human ratings.
"""

from __future__ import annotations

from styleeval._version import __version__
from styleeval.errors import UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature


def _ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def pinc(source: str, rewrite: str, max_n: int = 4, lowercase: bool = False) -> float:
    """PINC of one (source, rewrite) pair, in [0, 1]."""
    if max_n < 1:
        raise UserError(f"max_n must be >= 1, got {max_n}")
    if lowercase:
        source, rewrite = source.lower(), rewrite.lower()
    src, cand = source.split(), rewrite.split()
    terms = []
    for n in range(1, max_n + 1):
        cand_ngrams = _ngrams(cand, n)
        if not cand_ngrams:
            break
        overlap = len(cand_ngrams & _ngrams(src, n))
        terms.append(1.0 - overlap / len(cand_ngrams))
    return sum(terms) / len(terms) if terms else 0.0


def sentence_pinc(sources: list[str], rewrites: list[str], max_n: int = 4, lowercase: bool = False) -> list[float]:
    """PINC of each (source, rewrite) pair."""
    if len(sources) != len(rewrites):
        raise ValueError(f"{len(sources)} sources but {len(rewrites)} rewrites")
    return [pinc(s, r, max_n, lowercase) for s, r in zip(sources, rewrites, strict=True)]


@register("s_pinc")
class SourcePINC(Metric):
    """``s_pinc``: PINC of the rewrite against its source (n-grams up to ``max_n``, whitespace tokens)."""

    name = "s_pinc"
    inputs = "source"
    higher_is_better = False  # novelty: higher = less overlap with the source

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("n", "lowercase")

    def __init__(self, max_n: int = 4, lowercase: bool = False) -> None:
        self.max_n = int(max_n)
        self.lowercase = bool(lowercase)
        if self.max_n < 1:
            raise UserError(f"s_pinc: max_n must be >= 1, got {max_n}")

    @classmethod
    def from_spec(cls, **opts: str) -> SourcePINC:
        """From a spec's options: ``n`` (default 4), ``lowercase`` (default no)."""
        lowercase = opts.pop("lowercase", "no").lower() in ("1", "yes", "true")
        max_n = int(opts.pop("n", "4"))
        if opts:
            raise UserError(f"unknown options {sorted(opts)} (known: n, lowercase)")
        return cls(max_n=max_n, lowercase=lowercase)

    @property
    def signature(self) -> Signature:
        return Signature.build(
            self.name,
            {"n": self.max_n, "tok": "whitespace", "case": "lc" if self.lowercase else "mixed",
             "version": __version__},
        )

    def _score(self, sources, rewrites, references, styles):
        return sentence_pinc(sources, rewrites, self.max_n, self.lowercase)
