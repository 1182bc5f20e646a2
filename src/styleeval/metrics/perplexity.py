"""``ppl``: perplexity of the rewrite under a causal LM, through the one scoring engine (lower is better).

Each rewrite is scored after the tokenizer's BOS token (EOS when it has none): ppl = exp(-mean log p) over its tokens.
Options: ``model`` (preset, Hub id or path; default ``1b``), ``device``, ``dtype``. The model is shared with LogProb.
"""

from __future__ import annotations

import math

from styleeval._version import __version__
from styleeval.errors import UserError
from styleeval.logprob import shared_logprob
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import check_options, register
from styleeval.signature import Signature


@register("ppl")
class Perplexity(Metric):
    """Perplexity of each rewrite (lower = more fluent; the meta-evaluation negates it)."""

    name = "ppl"
    inputs = "source"
    higher_is_better = False
    incremental = True
    takes_model = True

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("model", "device", "dtype")

    def __init__(self, model: str = "1b", device: str | None = None, dtype: str = "float32") -> None:
        self.options = {"model": str(model), "device": device, "dtype": str(dtype)}

    @classmethod
    def from_spec(cls, **opts: str) -> Perplexity:
        """From a spec's options: ``model``, ``device``, ``dtype``."""
        check_options(opts, cls.spec_options())
        return cls(**opts)

    def _lp(self):
        return shared_logprob(self.options["model"], device=self.options["device"], dtype=self.options["dtype"])

    @property
    def signature(self) -> Signature:
        identity = self._lp().backend.identity
        return Signature.build(self.name, {"model": identity.model_field, "dtype": identity.dtype, "prefix": "bos",
                                            "version": __version__})

    def _score(self, sources, rewrites, references, styles):
        lp = self._lp()
        tok = lp.tokenizer
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if start is None:
            raise UserError(f"ppl: the tokenizer of {lp.backend.identity.model!r} has neither a BOS nor an EOS token")
        ids = lp.chat.encoder.plain(list(rewrites))
        out = lp.backend.token_logprobs([[start]] * len(ids), ids)
        return [math.exp(-float(x.double().mean())) if len(x) else math.nan for x in out]
