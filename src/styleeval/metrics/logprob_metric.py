"""LogProb (Pauli et al., 2025) as two metrics: ``logprob_content`` and ``logprob_style``.

Options: ``model`` (id, local path or preset such as ``1b``; default ``1b``), ``device``, ``dtype``,
``batch_tokens``, e.g. ``logprob_content:model=3b:device=cuda:dtype=bfloat16``. Both metrics read the target
style of each row. :class:`styleeval.LogProb` is imported lazily; one scoring pass serves both dimensions
(the last result is kept in memory per option set).
"""

from __future__ import annotations

import hashlib
import json

from styleeval.metrics.base import Metric
from styleeval.signature import format_signature, parse_signature

_LAST: dict[tuple, tuple[str, list[dict]]] = {}


def _inputs_key(sources: list[str], rewrites: list[str], styles: list[str]) -> str:
    return hashlib.sha256(json.dumps([sources, rewrites, styles]).encode()).hexdigest()


class LogProbMetric(Metric):
    """One dimension (``content`` or ``style``) of :class:`styleeval.LogProb`."""

    needs_styles = True
    inputs = "source"

    def __init__(self, dimension: str, model: str = "1b", device: str | None = None, dtype: str = "float32",
                 batch_tokens: int | str | None = None) -> None:
        if dimension not in ("content", "style"):
            raise ValueError(f"LogProb dimension must be 'content' or 'style', got {dimension!r}")
        self.dimension = dimension
        self.name = f"logprob_{dimension}"
        self.options = {"model": str(model), "device": device, "dtype": str(dtype),
                        "batch_tokens": None if batch_tokens is None else int(batch_tokens)}

    @property
    def _key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.options.items()))

    def _engine(self):
        from styleeval.logprob import shared_logprob

        opts = self.options
        try:
            return shared_logprob(opts["model"], device=opts["device"], dtype=opts["dtype"],
                                  batch_tokens=opts["batch_tokens"])
        except (OSError, ImportError, RuntimeError) as err:
            raise ValueError(f"cannot load LogProb model {opts['model']!r}: {err}") from err

    @property
    def signature(self) -> str:
        """``logprob_<dim>|`` + the engine's signature (model@revision, dtype, template, ...).

        Loads the model once (the revision and chat template are part of the signature).
        """
        _, fields = parse_signature(self._engine().signature)
        return format_signature(self.name, fields)

    def _score(self, sources, rewrites, references, styles):
        assert styles is not None
        key = _inputs_key(sources, rewrites, styles) + self._engine().signature  # new weights: new pass
        last = _LAST.get(self._key)
        if last is None or last[0] != key:
            scores = self._engine().score(sources, rewrites, styles)
            _LAST[self._key] = (key, [dict(s) for s in scores])
            last = _LAST[self._key]
        return [row[self.dimension] for row in last[1]]
