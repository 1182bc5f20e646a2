"""LogProb (Pauli et al., 2025) as two metrics: ``logprob_content`` and ``logprob_style``.

Options: those of :data:`styleeval.options.LOGPROB_OPTIONS`: ``model`` (id, local path or preset such as ``1b``;
default ``1b``; with ``base_url`` the served model), ``variant`` (``default`` or ``authors``), ``prompt`` (a prompt set of
:data:`styleeval.logprob.prompts.PROMPT_SETS`), ``device``, ``dtype``,
``head_dtype``, ``batch_tokens``, ``base_url`` (a vLLM server, e.g. ``http://127.0.0.1:8000/v1``), ``tokenizer``...,
e.g.
``logprob_content:model=3b:device=cuda:dtype=bfloat16`` or ``logprob_style:variant=authors:base_url=http://h:8000/v1``. Both metrics read the target
style of each row. :class:`styleeval.LogProb` is imported lazily; one scoring pass serves both dimensions
(every row's result is kept in memory per option set).
"""

from __future__ import annotations

from styleeval.backends import BackendError
from styleeval.errors import UserError
from styleeval.logprob import shared_logprob
from styleeval.metrics.base import Metric, RowMemo, backend_failure
from styleeval.metrics.registry import register
from styleeval.options import LOGPROB_OPTIONS
from styleeval.signature import Signature

_ROWS = RowMemo()  # one scoring pass serves both dimensions, whatever the chunking


@register("logprob_style", dimension="style")
@register("logprob_content", dimension="content")
class LogProbMetric(Metric):
    """One dimension (``content`` or ``style``) of :class:`styleeval.LogProb`."""

    needs_styles = True
    incremental = True
    inputs = "source"
    takes_model = True

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return tuple(n for n, o in LOGPROB_OPTIONS.options.items() if o.type is not dict)

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        what = {"content": "content preservation", "style": "style strength"}[str(fixed["dimension"])]
        return f"{what} (Pauli et al. 2025), from an LLM's log-probabilities of the source and the rewrite."

    def __init__(self, dimension: str, **options: object) -> None:
        if dimension not in ("content", "style"):
            raise UserError(f"LogProb dimension must be 'content' or 'style', got {dimension!r}")
        self.dimension = dimension
        self.name = f"logprob_{dimension}"
        self.options = {k: v for k, v in LOGPROB_OPTIONS.from_spec(options).items() if v is not None}

    @property
    def _key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.options.items()))

    def _engine(self):
        try:
            return shared_logprob(**self.options)
        except (OSError, ImportError, RuntimeError, BackendError) as err:
            raise UserError(f"cannot load LogProb model {self.options.get('model')!r}: {err}") from err

    @property
    def signature(self) -> Signature:
        """``logprob_<dim>|`` + the engine's signature (model@revision, dtype, template, ...).

        Loads the model once (the revision and chat template are part of the signature).
        """
        return self._engine().signature.renamed(self.name)

    def _score(self, sources, rewrites, references, styles):
        assert styles is not None
        engine = self._engine()

        def compute(src, rw, st):
            try:
                return list(engine.score(src, rw, st))
            except BackendError as err:
                raise backend_failure(err) from err

        rows = _ROWS.rows(self._key, engine.signature, sources, rewrites, styles, compute)  # new weights: new pass
        key = "style_strength" if self.dimension == "style" else "content"  # LogProb's names for its numbers
        return [row[key] for row in rows]
