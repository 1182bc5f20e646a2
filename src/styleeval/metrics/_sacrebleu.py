"""Shared plumbing of the sacrebleu metrics (BLEU, chrF, TER): one cached scorer per kind, default settings."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from styleeval.errors import UserError
from styleeval.metrics.base import Inputs, Metric, targets
from styleeval.signature import Signature


@cache
def _scorer(kind: str):
    from sacrebleu.metrics import BLEU, CHRF, TER

    if kind == "bleu":
        return BLEU(effective_order=True)  # what sacrebleu.sentence_bleu uses
    if kind == "chrf":
        return CHRF()
    if kind == "ter":
        return TER()
    raise ValueError(f"unknown sacrebleu metric {kind!r}")


@cache
def sacrebleu_signature(kind: str, single_reference: bool) -> str:
    """sacrebleu's own signature of ``kind`` at sentence level (``nrefs:var`` when references vary)."""
    import copy

    scorer = copy.deepcopy(_scorer(kind))
    scorer.sentence_score("a b c d", ["a b c d"])  # sacrebleu needs nrefs before it signs
    sig = str(scorer.get_signature())
    return sig if single_reference else sig.replace("nrefs:1", "nrefs:var")


@cache
def corpus_signature(kind: str, single_reference: bool) -> Signature:
    """sacrebleu's own signature of its corpus score of ``kind`` (what ``sacrebleu -i`` prints beside it), named as
    sacrebleu names the score (``BLEU|nrefs:1|case:mixed|eff:no|...``; ``nrefs:var`` when references vary)."""
    scorer = corpus_scorer(kind)
    name = scorer.corpus_score(["a b c d"], [["a b c d"]]).name  # sacrebleu needs nrefs before it signs
    sig = str(scorer.get_signature())
    return Signature.parse(f"{name}|{sig if single_reference else sig.replace('nrefs:1', 'nrefs:var')}")


def sentence_scores(kind: str, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Sentence-level scores of ``kind`` for each hypothesis against its own list of references."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    scorer = _scorer(kind)
    return [scorer.sentence_score(h, list(r)).score for h, r in zip(hypotheses, references)]


AGGREGATES = ("corpus", "mean")


def corpus_scorer(kind: str) -> Any:
    """A new sacrebleu metric of ``kind`` with sacrebleu's corpus defaults (what ``sacrebleu -i`` computes)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    return {"bleu": BLEU, "chrf": CHRF, "ter": TER}[kind]()


class SacreBleuMetric(Metric):
    """A sacrebleu metric (``bleu``, ``chrf`` or ``ter``) comparing the rewrite with the source or references. Row
    scores are sentence scores; a system's score is sacrebleu's corpus score of its rewrites (``agg="corpus"``,
    default) or the mean of its sentence scores (``agg="mean"``, spec ``s_chrf:agg=mean``)."""

    def __init__(self, kind: str, inputs: Inputs = "source", agg: str = "corpus") -> None:
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        if agg not in AGGREGATES:
            raise UserError(f"agg must be one of {', '.join(AGGREGATES)}, got {agg!r}")
        self.aggregate = agg
        _scorer(kind)  # validates kind
        self.kind = kind
        self.inputs = inputs
        self.name = f"{'s' if inputs == 'source' else 'r'}_{kind}"
        self.higher_is_better = kind != "ter"

    @property
    def signature(self) -> Signature:
        return Signature.parse(f"{self.name}|{sacrebleu_signature(self.kind, self.inputs == 'source')}")

    @property
    def system_signature(self) -> Signature:
        if self.aggregate == "mean":
            return self.signature
        corpus = corpus_signature(self.kind, self.inputs == "source")
        return Signature.build(self.signature.name, {**self.signature.fields, "agg": "corpus", "corpus": corpus})

    def corpus_metric(self) -> Any:
        """sacrebleu's corpus metric of this kind (``None`` with ``agg=mean``)."""
        return corpus_scorer(self.kind) if self.aggregate == "corpus" else None

    def _score(self, sources, rewrites, references, styles):
        return sentence_scores(self.kind, rewrites, targets(self, sources, references))
