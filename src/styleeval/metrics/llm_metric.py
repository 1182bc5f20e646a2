"""Every LLM scorer's dimensions as metrics, one class for all (:class:`LLMMetric`), registered once per dimension of
each declaration of :data:`styleeval.options.LLM_SCORERS` (a plugin's: :func:`register_llm_metrics`):

- LogProb (Pauli et al., 2025): ``logprob_content`` and ``logprob_style``. Options: those of
  :data:`styleeval.options.LOGPROB_OPTIONS`: ``model`` (id, local path or preset such as ``1b``; default ``1b``;
  with ``base_url`` the served model), ``variant`` (``default`` or ``authors``), ``prompt`` (a prompt set of
  :data:`styleeval.logprob.prompts.PROMPT_SETS`), ``device``, ``dtype``, ``head_dtype``, ``batch_tokens``,
  ``base_url`` (a vLLM server, e.g. ``http://127.0.0.1:8000/v1``), ``tokenizer``..., e.g.
  ``logprob_content:model=3b:device=cuda:dtype=bfloat16`` or
  ``logprob_style:variant=authors:base_url=http://h:8000/v1``.
- The LLM autorater (Pauli et al. 2025, D.2; Mukherjee et al. 2025, D): ``autorater_meaning``, ``autorater_style``
  and ``autorater_fluency`` (Mukherjee et al.'s fluency prompt: ``prompt=mukherjee``). Options: those of
  :data:`styleeval.options.AUTORATER_OPTIONS`: ``model`` (preset, id or path; with ``base_url`` the served model
  name), ``mode`` (``expected`` or ``paper``), ``prompt`` (``paper-small``, ``paper-70b``, ``mukherjee``,
  ``mukherjee-binary``), ``parser`` (``robust``, ``authors``), ``base_url``, ``tokenizer``, ``device``, ``dtype``,
  ``seed``, ``fill`` (paper mode: ``mean``, the authors' rule, fills every unreadable rating with the mean of the
  readable ones over the whole dataset, once all its rows are rated -- never per chunk; ``none`` leaves NaN), e.g.
  ``autorater_meaning:model=3b:mode=paper``. In the meta-evaluation the ``content`` dimension is compared with
  ``autorater_meaning``.

Every metric reads the target style of each row. One scoring pass of a scorer serves all its dimensions (every
row's result is kept in memory per scorer and option set).
"""

from __future__ import annotations

from typing import Any

from styleeval.backends import BackendError
from styleeval.errors import UserError
from styleeval.llm_scorer import LLMScorer
from styleeval.metrics.base import Metric, RowMemo, backend_failure
from styleeval.metrics.registry import register
from styleeval.options import LLM_SCORERS
from styleeval.signature import Signature

_ROWS = RowMemo()  # one scoring pass serves every dimension of a scorer, whatever the chunking

SCORERS: dict[str, LLMScorer] = {}
"""Every scorer whose metrics are registered (:func:`register_llm_metrics`), by name: a pickled :class:`LLMMetric`
names its scorer (a declaration holds functions, which pickle does not carry) and is unpickled with this one."""


class LLMMetric(Metric):
    """One dimension of an LLM scorer (``scorer``: its :class:`~styleeval.llm_scorer.LLMScorer`)."""

    needs_styles = True
    incremental = True
    inputs = "source"
    takes_model = True

    @classmethod
    def spec_options(cls, scorer: LLMScorer, **fixed: object) -> tuple[str, ...]:
        own = tuple(n for n, o in scorer.options.options.items() if o.type is not dict)
        return ("fill", *own) if scorer.fill else own

    @classmethod
    def spec_summary(cls, scorer: LLMScorer, dimension: str, **fixed: object) -> str:
        return scorer.dimension(dimension).summary

    def __init__(self, scorer: LLMScorer, dimension: str, **options: object) -> None:
        if not isinstance(scorer, LLMScorer):  # a spec's scorer=...: the metric's name chooses its scorer
            raise UserError(f"unknown options ['scorer'] (a metric's scorer is its name's prefix: {', '.join(SCORERS)})")
        self.scorer = scorer
        self.dimension = scorer.dimension(dimension).name
        self.name = f"{scorer.name}_{dimension}"
        self.fill = options.pop("fill", "mean") if scorer.fill else None
        if self.fill not in (None, "mean", "none"):
            raise UserError(f"fill must be 'mean' or 'none', got {self.fill!r}")
        self.options = {k: v for k, v in scorer.options.from_spec(options).items() if v is not None}
        if scorer.check is not None:
            scorer.check(self.dimension, self.options)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "scorer": self.scorer.name}  # pickled by name, as the metrics of one module were

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["scorer"] not in SCORERS:
            raise UserError(f"cannot unpickle the metric {state.get('name')!r}: no LLM scorer {state['scorer']!r} is "
                            "registered here; import the module that declares it first")
        self.__dict__.update(state, scorer=SCORERS[state["scorer"]])

    @property
    def _key(self) -> tuple:
        return (self.scorer.name, *sorted((k, str(v)) for k, v in self.options.items()))

    def _shared(self) -> Any:
        try:
            return self.scorer.shared(**self.options)
        except (OSError, ImportError, RuntimeError, BackendError) as err:
            raise UserError(f"cannot load {self.scorer.loading} {self.options.get('model')!r}: {err}") from err

    def _fills(self) -> bool:
        return self.scorer.fill is not None and self.scorer.fill.applies(self._shared())

    @property
    def signature(self) -> Signature:
        """``<scorer>_<dimension>|`` + the scorer's signature (model@revision, dtype, template...; the autorater's
        mode, prompt, parser, decoding) and, where ratings can be unreadable (paper mode), their ``fill``.

        Loads the model once (the revision and chat template are part of the signature).
        """
        signature = self._shared().signature.renamed(self.name)
        if self._fills():
            signature = Signature.build(self.name, {**signature.fields, "fill": self.fill})
        return signature

    def finalize(self, scores: list[float]) -> list[float]:
        """Applied once to the scores of a whole dataset: the authors' mean fill in paper mode (``fill=mean``)."""
        if self.fill == "mean" and self._fills():
            return self.scorer.fill.fill(scores)  # type: ignore[union-attr]
        return list(scores)

    def _score(self, sources, rewrites, references, styles):
        assert styles is not None
        scorer = self._shared()

        def compute(src, rw, st):
            try:
                return list(self.scorer.rows(scorer, src, rw, st))
            except BackendError as err:
                raise backend_failure(err) from err

        rows = _ROWS.rows(self._key, scorer.signature, sources, rewrites, styles, compute)  # new weights: new pass
        key = self.scorer.dimension(self.dimension).key
        return [row[key] for row in rows]


def register_llm_metrics(scorer: LLMScorer) -> LLMScorer:
    """Register one :class:`LLMMetric` per dimension of ``scorer`` (``<name>_<dimension>``): the built-in scorers'
    (:data:`styleeval.options.LLM_SCORERS`) here, a plugin's where it is declared; returns ``scorer``."""
    for dimension in scorer.dimensions:
        register(f"{scorer.name}_{dimension.name}", scorer=scorer, dimension=dimension.name)(LLMMetric)
    SCORERS[scorer.name] = scorer
    return scorer


for _scorer in LLM_SCORERS:
    register_llm_metrics(_scorer)
