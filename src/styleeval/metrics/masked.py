"""Masked metrics (Mukherjee et al., 2022; used in Mukherjee et al., 2025): the style words of the rewrite, the
source and the references are masked before a content metric compares them, so that changing the style is not
counted as losing content. ``s_masked_bleu`` / ``r_masked_bleu`` (sacrebleu sentence BLEU) and ``s_masked_cosine`` /
``r_masked_cosine`` (embedding cosine) wrap the unmasked metrics of this package.

Style words are the entries of a sentiment lexicon: VADER's (Hutto & Gilbert, 2014; 7,500 words and emoticons with a
valence, shipped in the ``vaderSentiment`` package). A whitespace-separated token is a style word when the token, or
the token without its leading/trailing punctuation, lower-cased, is in the lexicon with ``|valence| >= min_valence``.
``mask="placeholder"`` (default) replaces the word with one placeholder token, as Mir et al. (2019) masked style words
for content metrics; ``mask="remove"`` deletes it.

>>> mask_style_words("The food was great!")
'The food was customstyle!'
>>> mask_style_words("The food was great!", mask="remove")
'The food was!'
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import version
from importlib.resources import files

from styleeval.errors import UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import REGISTRY, metric_options, register
from styleeval.signature import Signature

PLACEHOLDER = "customstyle"
MASKS = ("placeholder", "remove")
_PUNCT = "\"'()[]{}.,;:!?-*`~"


@lru_cache(maxsize=1)
def vader_lexicon() -> dict[str, float]:
    """VADER's lexicon as {lower-cased entry: mean valence}, read from the installed ``vaderSentiment`` package."""
    try:
        text = (files("vaderSentiment") / "vader_lexicon.txt").read_text(encoding="utf-8")
    except (ImportError, FileNotFoundError) as err:
        raise UserError("masked metrics need the vaderSentiment package (pip install vaderSentiment)") from err
    out = {}
    for line in text.splitlines():
        parts = line.strip("\r").split("\t")
        if len(parts) >= 2 and parts[0]:
            out[parts[0].lower()] = float(parts[1])
    return out


def vader_version() -> str:
    """The installed vaderSentiment version (part of the masked metrics' signatures)."""
    return version("vaderSentiment")


def _style_part(token: str, min_valence: float) -> str | None:
    """The part of ``token`` that is a VADER entry with |valence| >= ``min_valence``: the whole token (an emoticon such
    as ":)", or a bare word), else the token without its surrounding punctuation; ``None`` when neither is."""
    lexicon = vader_lexicon()
    for candidate in (token, token.strip(_PUNCT)):
        valence = lexicon.get(candidate.lower()) if candidate else None
        if valence is not None and abs(valence) >= min_valence:
            return candidate
    return None


def is_style_word(token: str, min_valence: float = 0.0) -> bool:
    """Whether ``token`` (or its core without surrounding punctuation) is a VADER entry with |valence| >= min."""
    return _style_part(token, min_valence) is not None


def mask_style_words(text: str, mask: str = "placeholder", min_valence: float = 0.0) -> str:
    """``text`` with every style word (see the module docstring) replaced by :data:`PLACEHOLDER` or removed.

    Punctuation attached to a masked word is kept; whitespace is normalised to single spaces.
    """
    if mask not in MASKS:
        raise UserError(f"mask must be one of {', '.join(MASKS)}, got {mask!r}")
    out: list[str] = []
    for token in text.split():
        part = _style_part(token, min_valence)
        if part is None:
            out.append(token)
            continue
        start = token.find(part)
        left, right = token[:start], token[start + len(part):]
        if mask == "placeholder":
            out.append(left + PLACEHOLDER + right)
        elif out and not left:
            out[-1] += right  # "was great!" -> "was!"
        elif left or right:
            out.append(left + right)
    return " ".join(out)


@register("r_masked_cosine", inner="r_cosine")
@register("s_masked_cosine", inner="s_cosine")
@register("r_masked_bleu", inner="r_bleu")
@register("s_masked_bleu", inner="s_bleu")
class MaskedMetric(Metric):
    """A content metric computed on style-masked texts (``s_masked_bleu``, ``r_masked_cosine`` ...)."""

    def __init__(self, inner: Metric, mask: str = "placeholder", min_valence: float | str = 0.0) -> None:
        if mask not in MASKS:
            raise UserError(f"mask must be one of {', '.join(MASKS)}, got {mask!r}")
        self.inner = inner
        self.mask = mask
        self.min_valence = float(min_valence)
        self.inputs = inner.inputs
        self.higher_is_better = inner.higher_is_better
        prefix, _, rest = inner.name.partition("_")
        self.name = f"{prefix}_masked_{rest}"

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("mask", "min_valence", *metric_options(str(fixed["inner"])))

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        return f"{fixed['inner']} on texts whose style words (VADER's lexicon) are masked (Mukherjee et al. 2022)."

    @classmethod
    def from_spec(cls, inner: str, mask: str = "placeholder", min_valence: str = "0", **opts: str) -> MaskedMetric:
        """From a spec's options: ``mask``, ``min_valence``; the others go to the inner metric."""
        return cls(REGISTRY[inner](**opts), mask=mask, min_valence=min_valence)

    @property
    def signature(self) -> Signature:
        return Signature.build(self.name, {"mask": f"vader-{vader_version()}:{self.mask}:min{self.min_valence:g}",
                                           "inner": self.inner.signature})

    def _masked(self, texts: list[str]) -> list[str]:
        return [mask_style_words(t, self.mask, self.min_valence) for t in texts]

    def _score(self, sources, rewrites, references, styles):
        refs = None if references is None else [self._masked(list(r)) for r in references]
        return self.inner._score(self._masked(sources), self._masked(rewrites), refs, styles)
