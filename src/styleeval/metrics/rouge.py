"""ROUGE-1, ROUGE-2, ROUGE-L F-measure (Google's ``rouge-score`` package, no stemming): ``s_rouge1`` ... against
the source, ``r_rouge1`` ... against the references (the best over several)."""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import version

from styleeval.errors import UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import check_options, register
from styleeval.signature import Signature

KINDS = ("rouge1", "rouge2", "rougeL")


@lru_cache(maxsize=8)
def _scorer(kind: str, stem: bool):
    try:
        from rouge_score.rouge_scorer import RougeScorer  # noqa: PLC0415 - heavy (nltk, via rouge_score.rouge_scorer)
    except ImportError as err:  # pragma: no cover - a dependency
        raise UserError("ROUGE needs the rouge-score package (pip install rouge-score)") from err
    return RougeScorer([kind], use_stemmer=stem)


def rouge(target: str, prediction: str, kind: str = "rougeL", stem: bool = False) -> float:
    """The F-measure of ``prediction`` against ``target``."""
    return float(_scorer(kind, stem).score(target, prediction)[kind].fmeasure)


@register("r_rougel", kind="rougeL", inputs="reference")
@register("r_rouge2", kind="rouge2", inputs="reference")
@register("r_rouge1", kind="rouge1", inputs="reference")
@register("s_rougel", kind="rougeL", inputs="source")
@register("s_rouge2", kind="rouge2", inputs="source")
@register("s_rouge1", kind="rouge1", inputs="source")
class ROUGE(Metric):
    """``s_rouge*`` (against the source) and ``r_rouge*`` (best over the references)."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("stem",)

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        against = "the source" if fixed["inputs"] == "source" else "the references (the best)"
        return f"{fixed['kind']} F-measure of the rewrite against {against} (Google's rouge-score)."

    def __init__(self, kind: str, inputs: str, stem: bool | str = False) -> None:
        if kind not in KINDS:
            raise UserError(f"ROUGE kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.kind = kind
        self.inputs = inputs  # type: ignore[assignment]
        self.stem = stem if isinstance(stem, bool) else str(stem).lower() in ("1", "true", "yes")
        self.name = f"{'s' if inputs == 'source' else 'r'}_{kind.lower()}"

    @classmethod
    def from_spec(cls, kind: str, inputs: str, **opts: str) -> ROUGE:
        """From a spec's options: ``stem``."""
        check_options(opts, cls.spec_options())
        return cls(kind, inputs, **opts)

    @property
    def signature(self) -> Signature:
        return Signature.build(self.name, {"stem": self.stem, "rouge_score": version("rouge-score")})

    def _score(self, sources, rewrites, references, styles):
        if self.inputs == "source":
            return [rouge(s, r, self.kind, self.stem) for s, r in zip(sources, rewrites, strict=True)]
        return [max(rouge(ref, r, self.kind, self.stem) for ref in refs)
                for refs, r in zip(references, rewrites, strict=True)]
