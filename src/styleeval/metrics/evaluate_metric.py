"""Any Hugging Face ``evaluate`` module as a metric: ``s_evaluate:module=NAME`` / ``r_evaluate:module=NAME``.

The module is loaded by name or path (``evaluate.load``), e.g. ``bertscore``, ``bleurt``, ``comet``,
``meteor``. Per-row scores are read from the result key ``key`` (default: the first of ``scores``, ``f1``,
``score`` whose value is a list with one entry per row); modules that only return a corpus score (such as
``meteor``) are called once per row. ``s_meteor`` / ``r_meteor`` are not this wrapper: they call NLTK directly
(:mod:`styleeval.metrics.meteor`). Extra ``key=value`` options go to ``compute`` (``lang=en``,
``model_type=...``). Reference-based variants score the rewrite against each reference and keep the
maximum. Modules that also read the source (COMET) get it as ``sources``.
"""

from __future__ import annotations

from styleeval.errors import UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature

SCORE_KEYS = ("scores", "f1", "score")
NEEDS_SOURCES = {"comet"}


@register("rs_comet", inputs="reference", module="comet", display="rs_comet")
@register("r_bleurt", inputs="reference", module="bleurt")
@register("s_bleurt", inputs="source", module="bleurt")
@register("r_bertscore", inputs="reference", module="bertscore", lang="en")
@register("s_bertscore", inputs="source", module="bertscore", lang="en")
@register("r_evaluate", inputs="reference")
@register("s_evaluate", inputs="source")
class EvaluateMetric(Metric):
    """Wrap ``evaluate.load(module)``: predictions are rewrites, references the source or the references."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return (*(() if "module" in fixed else ("module",)), "key", "config")

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        module = fixed.get("module", "any evaluate module (module=NAME)")
        against = "source" if fixed["inputs"] == "source" else "references"
        return f"{module} of the rewrite against its {against}, through evaluate.load; other options go to compute."

    def __init__(self, module: str, inputs: str = "source", key: str | None = None, config: str | None = None,
                 **compute_kwargs: str) -> None:
        if not module:
            raise UserError("s_evaluate/r_evaluate need module=NAME_OR_PATH, e.g. s_evaluate:module=bertscore")
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        self.module = module
        self.inputs = inputs  # type: ignore[assignment]
        self.key = key
        self.config = config
        self.compute_kwargs = dict(compute_kwargs)
        base = module.rstrip("/").split("/")[-1].removesuffix(".py")
        self.name = f"{'s' if inputs == 'source' else 'r'}_{base}"
        self._loaded = None

    @classmethod
    def from_spec(cls, inputs: str, module: str | None = None, display: str | None = None, key: str | None = None,
                  config: str | None = None, **compute_kwargs: str) -> EvaluateMetric:
        """From a spec's options: ``module``, ``key``, ``config``; any other option goes to ``compute``."""
        metric = cls(module or "", inputs, key=key, config=config, **compute_kwargs)
        if display:
            metric.name = display
        return metric

    @property
    def signature(self) -> Signature:
        import evaluate  # noqa: PLC0415 - heavy (evaluate)

        opts = ",".join(f"{k}={v}" for k, v in sorted(self.compute_kwargs.items())) or "default"
        return Signature.build(
            self.name,
            {"evaluate": self.module, "config": self.config or "default", "key": self.key or "auto",
             "args": opts, "multi": "max", "version": evaluate.__version__},
        )

    def _load(self):
        if self._loaded is None:
            import evaluate  # noqa: PLC0415 - heavy (evaluate)

            try:
                self._loaded = evaluate.load(self.module, self.config) if self.config else evaluate.load(self.module)
            except Exception as err:
                raise UserError(f"cannot load evaluate module {self.module!r}: {err}") from err
        return self._loaded

    def _per_row(self, result: dict, n: int) -> list[float] | None:
        keys = [self.key] if self.key else [k for k in SCORE_KEYS if k in result]
        for k in keys:
            value = result.get(k)
            if isinstance(value, list) and len(value) == n:
                return [float(v) for v in value]
        if self.key and self.key not in result:
            raise UserError(f"evaluate module {self.module!r} returned no key {self.key!r} (keys: {list(result)})")
        return None

    def _compute(self, predictions: list[str], targets: list[str], sources: list[str]) -> list[float]:
        module = self._load()
        kwargs = dict(self.compute_kwargs)
        if self.module.split("/")[-1] in NEEDS_SOURCES:
            kwargs["sources"] = sources
        result = module.compute(predictions=predictions, references=targets, **kwargs)
        scores = self._per_row(result, len(predictions))
        if scores is not None:
            return scores
        out = []  # corpus-level module: one call per row
        for i in range(len(predictions)):
            row_kwargs = dict(kwargs)
            if "sources" in row_kwargs:
                row_kwargs["sources"] = [sources[i]]
            res = module.compute(predictions=[predictions[i]], references=[targets[i]], **row_kwargs)
            key = self.key or next((k for k in (*SCORE_KEYS, self.module) if k in res), None)
            if key is None:
                key = next(iter(res))
            value = res[key]
            out.append(float(value[0] if isinstance(value, list) else value))
        return out

    def _score(self, sources, rewrites, references, styles):
        if self.inputs == "source":
            return self._compute(rewrites, sources, sources)
        assert references is not None
        flat_rw = [rw for rw, refs in zip(rewrites, references, strict=True) for _ in refs]
        flat_ref = [ref for refs in references for ref in refs]
        flat_src = [s for s, refs in zip(sources, references, strict=True) for _ in refs]
        sims = self._compute(flat_rw, flat_ref, flat_src)
        out, k = [], 0
        for refs in references:
            out.append(max(sims[k : k + len(refs)]))
            k += len(refs)
        return out
