"""The LLM autorater (Pauli et al. 2025, D.2; Mukherjee et al. 2025, D) as metrics: ``autorater_meaning``,
``autorater_style`` and ``autorater_fluency`` (Mukherjee et al.'s fluency prompt: ``prompt=mukherjee``).

Options: those of :data:`styleeval.options.AUTORATER_OPTIONS`: ``model`` (preset, id or path; with ``base_url`` the
served model name), ``mode`` (``expected`` or
``paper``), ``prompt`` (``paper-small``, ``paper-70b``, ``mukherjee``, ``mukherjee-binary``), ``parser`` (``robust``, ``authors``), ``base_url``,
``tokenizer``, ``device``, ``dtype``, ``seed``, ``fill`` (paper mode: ``mean``, the authors' rule, fills every
unreadable rating with the mean of the readable ones over the whole dataset, once all its rows are rated -- never per
chunk; ``none`` leaves NaN), e.g. ``autorater_meaning:model=3b:mode=paper``. One rating pass serves both dimensions
(every row's result is kept in memory per option set). In the meta-evaluation the ``content`` dimension is compared with
``autorater_meaning``.
"""

from __future__ import annotations

from styleeval.autorater.prompts import PROMPTS, get_prompt
from styleeval.autorater.rater import fill_unparsed_with_mean, shared_autorater
from styleeval.backends import BackendError
from styleeval.errors import UserError
from styleeval.metrics.base import Metric, RowMemo, backend_failure
from styleeval.metrics.registry import register
from styleeval.options import AUTORATER_OPTIONS
from styleeval.signature import Signature

_ROWS = RowMemo()  # one rating pass serves both dimensions, whatever the chunking


@register("autorater_fluency", dimension="fluency")
@register("autorater_style", dimension="style")
@register("autorater_meaning", dimension="meaning")
class AutoraterMetric(Metric):
    """One dimension (``meaning``, ``style`` or ``fluency``) of :class:`styleeval.Autorater`."""

    needs_styles = True
    incremental = True
    inputs = "source"
    takes_model = True

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("fill", *(n for n, o in AUTORATER_OPTIONS.options.items() if o.type is not dict))

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        if fixed["dimension"] == "fluency":
            return "LLM-as-autorater 1-5 rating of fluency (prompt=mukherjee: Mukherjee et al.'s fluency prompt)."
        return f"LLM-as-autorater 1-5 rating of {fixed['dimension']} with the authors' prompts."

    def __init__(self, dimension: str, fill: str = "mean", **options: object) -> None:
        if dimension not in ("meaning", "style", "fluency"):
            raise UserError(f"autorater dimension must be 'meaning', 'style' or 'fluency', got {dimension!r}")
        if fill not in ("mean", "none"):
            raise UserError(f"fill must be 'mean' or 'none', got {fill!r}")
        self.dimension = dimension
        self.name = f"autorater_{dimension}"
        self.fill = fill
        self.options = {k: v for k, v in AUTORATER_OPTIONS.from_spec(options).items() if v is not None}
        rates = get_prompt(str(self.options.get("prompt", "paper-small"))).dimensions
        if dimension not in rates:
            rating = [p for p, prompt in PROMPTS.items() if dimension in prompt.dimensions]
            raise UserError(f"prompt {self.options.get('prompt', 'paper-small')} rates {' and '.join(rates)}, not "
                            f"{dimension}; choose prompt={' or prompt='.join(rating)}")

    @property
    def _key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.options.items()))

    def _judge(self):
        try:
            return shared_autorater(**self.options)
        except (OSError, ImportError, RuntimeError, BackendError) as err:
            raise UserError(f"cannot load the autorater {self.options.get('model')!r}: {err}") from err

    @property
    def signature(self) -> Signature:
        """``autorater_<dim>|`` + the judge's signature (model@revision, mode, prompt, parser, decoding, ...) and, in
        paper mode, the fill of unreadable ratings."""
        signature = self._judge().signature.renamed(self.name)
        if self._judge().mode == "paper":
            signature = Signature.build(self.name, {**signature.fields, "fill": self.fill})
        return signature

    def finalize(self, scores: list[float]) -> list[float]:
        """Applied once to the scores of a whole dataset: the authors' mean fill in paper mode (``fill=mean``)."""
        if self.fill == "mean" and self._judge().mode == "paper":

            return fill_unparsed_with_mean(scores)
        return list(scores)

    def _score(self, sources, rewrites, references, styles):
        assert styles is not None
        judge = self._judge()

        def compute(src, rw, st):
            try:
                return list(judge.rate(src, rw, st))
            except BackendError as err:
                raise backend_failure(err) from err

        rows = _ROWS.rows(self._key, judge.signature, sources, rewrites, styles, compute)
        return [row[self.dimension] for row in rows]
