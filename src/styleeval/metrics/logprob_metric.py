"""LogProb (Pauli et al., 2025) as two metrics: ``logprob_content`` and ``logprob_style``.

Options: ``model`` (id, local path or preset such as ``1b``; default ``1b``; with ``base_url`` the served model),
``variant`` (``default`` or ``authors``), ``device``, ``dtype``, ``head_dtype``, ``batch_tokens``, ``base_url`` (a
vLLM server, e.g. ``http://127.0.0.1:8000/v1``) and ``tokenizer``, e.g.
``logprob_content:model=3b:device=cuda:dtype=bfloat16`` or ``logprob_style:variant=authors:base_url=http://h:8000/v1``. Both metrics read the target
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
    incremental = True
    inputs = "source"

    def __init__(self, dimension: str, model: str | None = None, variant: str = "default", device: str | None = None,
                 dtype: str = "float32", head_dtype: str = "float32", batch_tokens: int | str | None = None,
                 base_url: str | None = None, tokenizer: str | None = None) -> None:
        from styleeval.logprob import HEAD_DTYPES, VARIANTS

        if dimension not in ("content", "style"):
            raise ValueError(f"LogProb dimension must be 'content' or 'style', got {dimension!r}")
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if head_dtype not in HEAD_DTYPES:
            raise ValueError(f"head_dtype must be one of {', '.join(HEAD_DTYPES)}, got {head_dtype!r}")
        self.dimension = dimension
        self.name = f"logprob_{dimension}"
        if model is None and base_url is None:
            model = "1b"
        self.options = {"model": None if model is None else str(model), "variant": variant, "device": device,
                        "dtype": str(dtype), "head_dtype": head_dtype,
                        "batch_tokens": None if batch_tokens is None else int(batch_tokens),
                        "base_url": base_url, "tokenizer": tokenizer}

    @property
    def _key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.options.items()))

    def _engine(self):
        from styleeval.logprob import shared_logprob

        opts = self.options
        try:
            if opts["base_url"] is not None:
                return shared_logprob(opts["model"], base_url=opts["base_url"], variant=opts["variant"],
                                      tokenizer=opts["tokenizer"])
            extra = {"head_dtype": opts["head_dtype"]} if opts["head_dtype"] != "float32" else {}
            if opts["variant"] != "default":
                extra["variant"] = opts["variant"]
            return shared_logprob(opts["model"], device=opts["device"], dtype=opts["dtype"],
                                  batch_tokens=opts["batch_tokens"], **extra)
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
            from styleeval.server import ServerError

            try:
                scores = self._engine().score(sources, rewrites, styles)
            except ServerError as err:
                raise ValueError(str(err)) from err
            _LAST[self._key] = (key, [dict(s) for s in scores])
            last = _LAST[self._key]
        return [row[self.dimension] for row in last[1]]
