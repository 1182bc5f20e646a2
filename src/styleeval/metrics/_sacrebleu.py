"""Shared plumbing of the sacrebleu metrics (BLEU, chrF, TER): sacrebleu's own options, one cached scorer per kind and
settings.

The options are sacrebleu's constructor arguments, under sacrebleu's names (:func:`sacrebleu_options`): BLEU's
``tokenize``, ``lowercase``, ``smooth_method``, ``smooth_value``, ``effective_order``; chrF's ``char_order``,
``word_order`` (2: chrF++), ``beta``, ``lowercase``, ``whitespace``, ``eps_smoothing``; TER's ``case_sensitive``,
``normalized``, ``no_punct``, ``asian_support``. A metric spec takes them (``s_bleu:tokenize=intl``,
``s_chrf:word_order=2``), the signature is sacrebleu's own (``tok:intl``, ``nw:2``) and the scores are those of
sacrebleu's metric built with the same arguments.

>>> sentence_scores("chrf", ["the cat sat"], [["the cat sat down"]], word_order=2)
[68.3557292119746]
>>> sacrebleu_signature("bleu", True, settings(tokenize="intl", lowercase=True)).rsplit("|", 1)[0]  # then version
'nrefs:1|case:lc|eff:yes|tok:intl|smooth:exp'
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np

from styleeval.errors import UserError
from styleeval.metrics.base import Inputs, Metric, targets
from styleeval.optiontypes import Option, Options
from styleeval.signature import Signature
from styleeval.stats.corpus import corpus_statistics

KINDS = ("bleu", "chrf", "ter")
AGGREGATES = ("corpus", "mean")

Settings = tuple[tuple[str, Any], ...]
"""A scorer's options as sorted ``(name, value)`` pairs (hashable: scorers and signatures are cached by them)."""


@cache
def sacrebleu_options(kind: str) -> Options:
    """sacrebleu's constructor arguments of ``kind`` that a spec may set, under sacrebleu's names, with sacrebleu's
    choices (BLEU's tokenizers and smoothing methods). ``max_ngram_order``, ``trg_lang`` and ``force`` are left out:
    sacrebleu's signature does not show them (``trg_lang`` only picks a tokenizer: ``tokenize`` names it)."""
    from sacrebleu.metrics import BLEU  # noqa: PLC0415 - heavy (sacrebleu)

    if kind == "bleu":
        own = [
            Option("tokenize", str, "sacrebleu's tokenizer (default 13a)", choices=tuple(BLEU.TOKENIZERS)),
            Option("lowercase", bool, "lowercase hypothesis and references (signature case:lc)"),
            Option("smooth_method", str, "smoothing (default exp)", choices=tuple(BLEU.SMOOTH_DEFAULTS)),
            Option("smooth_value", float, "the value of smooth_method floor (default 0.1) or add-k (default 1)"),
            Option("effective_order", bool, "leave out n-gram orders a sentence lacks (default yes for row scores, "
                   "as sacrebleu.sentence_bleu; no for the corpus score, as sacrebleu -i); given, it sets both"),
        ]
    elif kind == "chrf":
        own = [
            Option("char_order", int, "character n-gram order (default 6)"),
            Option("word_order", int, "word n-gram order (default 0; 2: chrF++)"),
            Option("beta", int, "recall's weight against precision (default 2: chrF2)"),
            Option("lowercase", bool, "lowercase hypothesis and references"),
            Option("whitespace", bool, "keep whitespace in character n-grams"),
            Option("eps_smoothing", bool, "chrF++.py's epsilon smoothing (signature eff:no)"),
        ]
    elif kind == "ter":
        own = [
            Option("case_sensitive", bool, "case-sensitive (sacrebleu's TER lowercases by default)"),
            Option("normalized", bool, "normalize and tokenize punctuation"),
            Option("no_punct", bool, "remove punctuation"),
            Option("asian_support", bool, "split Asian characters into words"),
        ]
    else:
        raise ValueError(f"unknown sacrebleu metric {kind!r}")
    return Options(f"sacrebleu {kind}", own)


def settings(**options: Any) -> Settings:
    """``options`` as :data:`Settings` (sorted, ``None`` left out); not checked (:func:`checked_settings` is)."""
    return tuple(sorted((k, v) for k, v in options.items() if v is not None))


def checked_settings(kind: str, options: Mapping[str, Any], who: str = "", extra: Sequence[str] = ()) -> Settings:
    """``options`` (strings from a spec or Python values) converted to sacrebleu's types and checked; a
    :class:`UserError` names the option and what it takes: every option ``who`` (default: sacrebleu's metric) takes,
    ``extra`` ones first, for an unknown one, with the closest."""
    declared = sacrebleu_options(kind)
    unknown = sorted(set(options) - set(declared.names))
    if unknown:
        known = [*extra, *declared.names]
        close = difflib.get_close_matches(unknown[0], known, 1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if kind == "ter" and "lowercase" in unknown:
            hint = " (sacrebleu's TER ignores case unless case_sensitive=yes)"
        who = who or f"sacrebleu's {dict(bleu='BLEU', chrf='chrF', ter='TER')[kind]}"
        raise UserError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}{hint}; "
                        f"{who} takes {', '.join(known)}")
    values = {k: declared[k].convert(v) for k, v in options.items() if v is not None}
    _check_values(kind, values)
    made = settings(**values)
    _scorer(kind, made)  # a tokenizer that needs a package not installed: one line now
    return made


def _check_values(kind: str, values: Mapping[str, Any]) -> None:
    """What sacrebleu would take silently but computes nonsense with (negative orders, a smoothing value that the
    smoothing method ignores)."""
    for key in ("char_order", "word_order", "beta"):
        if key in values and values[key] < 0:
            raise UserError(f"{key} must be >= 0, got {values[key]}")
    if kind == "chrf" and values.get("char_order", 6) + values.get("word_order", 0) == 0:
        raise UserError("char_order and word_order are both 0: chrF counts no n-gram")
    if "smooth_value" in values:
        from sacrebleu.metrics import BLEU  # noqa: PLC0415 - heavy (sacrebleu)

        method = values.get("smooth_method", "exp")
        if BLEU.SMOOTH_DEFAULTS[method] is None:
            takes = [m for m, v in BLEU.SMOOTH_DEFAULTS.items() if v is not None]
            default = "" if "smooth_method" in values else " (the default)"
            raise UserError(f"smooth_value applies to smooth_method {' or '.join(takes)}, not {method}{default}: "
                            f"add smooth_method={takes[0]} or {takes[1]}, or leave smooth_value out")
        if values["smooth_value"] <= 0:
            raise UserError(f"smooth_value must be > 0, got {values['smooth_value']}")


def _build(kind: str, options: Settings, sentence: bool) -> Any:
    """sacrebleu's metric of ``kind`` with ``options``; at sentence level BLEU's ``effective_order`` defaults to yes
    (what ``sacrebleu.sentence_bleu`` uses)."""
    from sacrebleu.metrics import BLEU, CHRF, TER  # noqa: PLC0415 - heavy (sacrebleu)

    kwargs = dict(options)
    if kind == "bleu" and sentence:
        kwargs.setdefault("effective_order", True)
    try:
        return {"bleu": BLEU, "chrf": CHRF, "ter": TER}[kind](**kwargs)
    except (ImportError, RuntimeError) as err:  # a tokenizer's package (ja-mecab, spm...) not installed
        text = " ".join(str(err).split())
        raise UserError(f"sacrebleu cannot build {kind} with {_shown(options)}: {text}") from err


def _shown(options: Settings) -> str:
    return ":".join(f"{k}={v}" for k, v in options) or "its defaults"


@cache
def _scorer(kind: str, options: Settings = ()) -> Any:
    """The sentence-level scorer of ``kind`` with ``options``, built once."""
    if kind not in KINDS:
        raise ValueError(f"unknown sacrebleu metric {kind!r}")
    return _build(kind, options, sentence=True)


@cache
def sacrebleu_signature(kind: str, single_reference: bool, options: Settings = ()) -> str:
    """sacrebleu's own signature of ``kind`` at sentence level (``nrefs:var`` when references vary)."""
    scorer = copy.deepcopy(_scorer(kind, options))
    scorer.sentence_score("a b c d", ["a b c d"])  # sacrebleu needs nrefs before it signs
    sig = str(scorer.get_signature())
    return sig if single_reference else sig.replace("nrefs:1", "nrefs:var")


@cache
def corpus_signature(kind: str, single_reference: bool, options: Settings = ()) -> Signature:
    """sacrebleu's own signature of its corpus score of ``kind`` (what ``sacrebleu -i`` prints beside it), named as
    sacrebleu names the score (``BLEU|nrefs:1|case:mixed|eff:no|...``, ``chrF2++|...``; ``nrefs:var`` when
    references vary)."""
    scorer = corpus_scorer(kind, options)
    name = scorer.corpus_score(["a b c d"], [["a b c d"]]).name  # sacrebleu needs nrefs before it signs
    sig = str(scorer.get_signature())
    return Signature.parse(f"{name}|{sig if single_reference else sig.replace('nrefs:1', 'nrefs:var')}")


def sentence_scores(kind: str, hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                    **options: Any) -> list[float]:
    """Sentence-level scores of ``kind`` for each hypothesis against its own list of references, sacrebleu's metric
    built with ``options`` (its own arguments: ``tokenize="intl"``, ``word_order=2``...)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    scorer = _scorer(kind, checked_settings(kind, options))
    return [scorer.sentence_score(h, list(r)).score for h, r in zip(hypotheses, references, strict=True)]


def corpus_scorer(kind: str, options: Settings = ()) -> Any:
    """A new sacrebleu metric of ``kind`` with ``options`` and sacrebleu's corpus defaults (what ``sacrebleu -i``
    computes)."""
    return _build(kind, options, sentence=False)


def chrf_name(options: Mapping[str, Any]) -> str:
    """sacrebleu's name of a chrF score without the ``chrF``: ``++`` for ``word_order=2``, the ``beta`` where it is
    not 2 (``1++`` is sacrebleu's chrF1++).

    >>> chrf_name({}), chrf_name({"word_order": 2}), chrf_name({"beta": 1, "word_order": 1})
    ('', '++', '1+')
    """
    beta = options.get("beta", 2)
    return f"{beta if beta != 2 else ''}{'+' * options.get('word_order', 0)}"


class SacreBleuMetric(Metric):
    """A sacrebleu metric (``bleu``, ``chrf`` or ``ter``) comparing the rewrite with the source or references, built
    with sacrebleu's own ``options`` (:func:`sacrebleu_options`). Row scores are sentence scores; a system's score is
    sacrebleu's corpus score of its rewrites (``agg="corpus"``, default) or the mean of its sentence scores
    (``agg="mean"``, spec ``s_chrf:agg=mean``).

    chrF with ``word_order`` or ``beta`` other than sacrebleu's default is labelled as sacrebleu names the score:
    ``s_chrf:word_order=2`` is ``S-chrF++`` (sacrebleu's chrF2++), ``beta=1`` ``S-chrF1``."""

    kind: str = "bleu"
    """``bleu``, ``chrf`` or ``ter`` (each subclass's)."""
    sentence_from_statistics: bool = False
    """Whether a row's score is computed from its :meth:`statistics` (chrF's and TER's: sacrebleu's
    ``sentence_score`` is its scorer's score of the row's statistics, tested equal); BLEU's is sacrebleu's own
    ``sentence_score`` (its sentence scorer's effective order differs from the corpus scorer's)."""

    def __init__(self, kind: str, inputs: Inputs = "source", agg: str = "corpus", **options: Any) -> None:
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        if agg not in AGGREGATES:
            raise UserError(f"agg must be one of {', '.join(AGGREGATES)}, got {agg!r}")
        if kind not in KINDS:
            raise ValueError(f"unknown sacrebleu metric {kind!r}")
        self.aggregate = agg
        self.kind = kind
        self.inputs = inputs
        self.name = f"{'s' if inputs == 'source' else 'r'}_{kind}"
        self.options = checked_settings(kind, options, self.name, ("agg",))
        self.higher_is_better = kind != "ter"

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        """The options a spec of this metric takes: ``agg``, then sacrebleu's (``kind``: the subclass's)."""
        return ("agg", *sacrebleu_options(str(fixed.get("kind", cls.kind))).names)

    @property
    def label(self) -> str:
        """The alias, else the name, with sacrebleu's chrF suffix (``s_chrf++`` for ``word_order=2``)."""
        if self.alias:
            return self.alias
        return self.name + (chrf_name(dict(self.options)) if self.kind == "chrf" else "")

    @property
    def signature(self) -> Signature:
        """``s_bleu|`` + sacrebleu's sentence-level signature; chrF's ``beta`` (in sacrebleu's score name, not its
        signature) as ``beta:N`` where it is not 2."""
        sig = Signature.parse(f"{self.name}|{sacrebleu_signature(self.kind, self.inputs == 'source', self.options)}")
        beta = dict(self.options).get("beta", 2)
        if self.kind != "chrf" or beta == 2:
            return sig
        fields = dict(sig.fields)
        version = fields.pop("version")
        return Signature.build(self.name, {**fields, "beta": beta, "version": version})

    @property
    def system_signature(self) -> Signature:
        if self.aggregate == "mean":
            return self.signature
        corpus = corpus_signature(self.kind, self.inputs == "source", self.options)
        return Signature.build(self.signature.name, {**self.signature.fields, "agg": "corpus", "corpus": corpus})

    def statistics(self, sources: Sequence[str], rewrites: Sequence[str],
                   references: Sequence[Sequence[str] | str | None] | None = None,
                   styles: Sequence[str] | str | None = None) -> np.ndarray:
        """With ``agg=corpus``, each row's sacrebleu sentence statistics (rows x k: BLEU's lengths, matches and totals
        per order, chrF's hypothesis, reference and match counts per order, TER's edits and average reference length)
        under sacrebleu's corpus scorer (:func:`corpus_scorer`): their sum's :meth:`score` is sacrebleu's
        ``corpus_score``. With ``agg=mean``: ``[sentence score, 1]``."""
        sources, rewrites, refs, style_list = self._checked(sources, rewrites, references, styles)
        if self.aggregate == "mean":
            return self.statistics_of_values(self._scores_of(sources, rewrites, refs, style_list))
        if not rewrites:
            return np.zeros((0, 0))
        return corpus_statistics(corpus_scorer(self.kind, self.options), rewrites, targets(self, sources, refs))

    def score(self, sums: np.ndarray, exact: bool = False) -> np.ndarray:
        """With ``agg=corpus``, sacrebleu's corpus score of summed :meth:`statistics`, vectorised (sacrebleu's
        ``_compute_score_from_stats`` operation by operation; ``exact``: bitwise); with ``agg=mean``, the mean."""
        if self.aggregate == "mean":
            return super().score(sums, exact)
        totals = np.asarray(sums, dtype=float)
        flat = totals.reshape(-1, totals.shape[-1]) if totals.ndim else totals.reshape(1, 1)
        return self._scores_of_sums(corpus_scorer(self.kind, self.options), flat, exact).reshape(totals.shape[:-1])

    def _scores_of_sums(self, scorer: Any, sums: np.ndarray, exact: bool) -> np.ndarray:
        """Each row of ``sums`` (rows x k) scored as sacrebleu's ``scorer`` scores summed statistics (each kind's
        module: ``bleu.py``, ``chrf.py``, ``ter.py``)."""
        raise NotImplementedError

    def _score(self, sources, rewrites, references, styles):
        scorer = _scorer(self.kind, self.options)
        refs = targets(self, sources, references)
        if self.sentence_from_statistics:  # sacrebleu's sentence_score: its scorer's score of the row's statistics
            return self._scores_of_sums(scorer, corpus_statistics(scorer, rewrites, refs), exact=True).tolist()
        return [scorer.sentence_score(h, list(r)).score for h, r in zip(rewrites, refs, strict=True)]
