"""LogProb (Pauli et al., 2025) as two metrics: ``logprob_content`` and ``logprob_style``.

Options: those of :data:`styleeval.options.LOGPROB_OPTIONS`: ``model`` (id, local path or preset such as ``1b``;
default ``1b``; with ``base_url`` the served model), ``variant`` (``default`` or ``authors``), ``device``, ``dtype``,
``head_dtype``, ``batch_tokens``, ``base_url`` (a vLLM server, e.g. ``http://127.0.0.1:8000/v1``), ``tokenizer``...,
e.g.
``logprob_content:model=3b:device=cuda:dtype=bfloat16`` or ``logprob_style:variant=authors:base_url=http://h:8000/v1``. Both metrics read the target
style of each row. :class:`styleeval.LogProb` is imported lazily; one scoring pass serves both dimensions
(the last result is kept in memory per option set).
"""

from __future__ import annotations

import hashlib
import json

from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature

_LAST: dict[tuple, tuple[str, list[dict]]] = {}


def _inputs_key(sources: list[str], rewrites: list[str], styles: list[str]) -> str:
    return hashlib.sha256(json.dumps([sources, rewrites, styles]).encode()).hexdigest()


@register("logprob_style", dimension="style")
@register("logprob_content", dimension="content")
class LogProbMetric(Metric):
    """One dimension (``content`` or ``style``) of :class:`styleeval.LogProb`."""

    needs_styles = True
    incremental = True
    inputs = "source"

    def __init__(self, dimension: str, **options: object) -> None:
        from styleeval.options import LOGPROB_OPTIONS

        if dimension not in ("content", "style"):
            raise ValueError(f"LogProb dimension must be 'content' or 'style', got {dimension!r}")
        self.dimension = dimension
        self.name = f"logprob_{dimension}"
        self.options = {k: v for k, v in LOGPROB_OPTIONS.from_spec(options).items() if v is not None}

    @property
    def _key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.options.items()))

    def _engine(self):
        from styleeval.backends.openai_server import ServerError
        from styleeval.logprob import shared_logprob

        try:
            return shared_logprob(**self.options)
        except (OSError, ImportError, RuntimeError, ServerError) as err:
            raise ValueError(f"cannot load LogProb model {self.options.get('model')!r}: {err}") from err

    @property
    def signature(self) -> Signature:
        """``logprob_<dim>|`` + the engine's signature (model@revision, dtype, template, ...).

        Loads the model once (the revision and chat template are part of the signature).
        """
        return self._engine().signature.renamed(self.name)

    def _score(self, sources, rewrites, references, styles):
        assert styles is not None
        key = _inputs_key(sources, rewrites, styles) + self._engine().signature  # new weights: new pass
        last = _LAST.get(self._key)
        if last is None or last[0] != key:
            from styleeval.backends.openai_server import ServerError

            try:
                scores = self._engine().score(sources, rewrites, styles)
            except ServerError as err:
                raise ValueError(str(err)) from err
            _LAST[self._key] = (key, [dict(s) for s in scores])
            last = _LAST[self._key]
        return [row[self.dimension] for row in last[1]]
