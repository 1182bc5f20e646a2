"""Metric names -> metric objects. A spec is ``name`` or ``name:key=value:key=value``.

>>> get_metric("s_bleu").compute(["a cat sat"], ["a cat sat"])
[100.0]
"""

from __future__ import annotations

import re
from collections.abc import Callable

from styleeval.metrics.base import Metric

Factory = Callable[..., Metric]


def _sacre(cls_path: str) -> Factory:
    def make(**opts: str) -> Metric:
        if opts:
            raise ValueError(f"takes no options, got {sorted(opts)}")
        import importlib

        module, cls = cls_path.rsplit(".", 1)
        return getattr(importlib.import_module(module), cls)()

    return make


def _pinc(**opts: str) -> Metric:
    from styleeval.metrics.pinc import SourcePINC

    lowercase = opts.pop("lowercase", "no").lower() in ("1", "yes", "true")
    max_n = int(opts.pop("n", "4"))
    if opts:
        raise ValueError(f"unknown options {sorted(opts)} (known: n, lowercase)")
    return SourcePINC(max_n=max_n, lowercase=lowercase)


def _cosine(inputs: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.cosine import DEFAULT_MODEL, CosineMetric

        known = {"model", "device", "batch_size"}
        if set(opts) - known:
            raise ValueError(f"unknown options {sorted(set(opts) - known)} (known: {sorted(known)})")
        return CosineMetric(inputs, model=opts.get("model", DEFAULT_MODEL), device=opts.get("device"),
                            batch_size=int(opts.get("batch_size", 64)))

    return make


def _evaluate(inputs: str, module: str | None = None, name: str | None = None, **fixed: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.evaluate_metric import EvaluateMetric

        merged = {**fixed, **opts}
        mod = merged.pop("module", module)
        key = merged.pop("key", None)
        config = merged.pop("config", None)
        metric = EvaluateMetric(mod or "", inputs, key=key, config=config, **merged)
        if name:
            metric.name = name
        return metric

    return make


def _logprob(dimension: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.logprob_metric import LogProbMetric

        known = {"model", "variant", "device", "dtype", "head_dtype", "batch_tokens", "base_url", "tokenizer"}
        if set(opts) - known:
            raise ValueError(f"unknown options {sorted(set(opts) - known)} (known: {sorted(known)})")
        return LogProbMetric(dimension, **opts)

    return make


def _rouge(kind: str, inputs: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.rouge import ROUGE

        if set(opts) - {"stem"}:
            raise ValueError(f"unknown options {sorted(set(opts) - {'stem'})} (known: ['stem'])")
        return ROUGE(kind, inputs, **opts)

    return make


def _ppl(**opts: str) -> Metric:
    from styleeval.metrics.perplexity import Perplexity

    known = {"model", "device", "dtype"}
    if set(opts) - known:
        raise ValueError(f"unknown options {sorted(set(opts) - known)} (known: {sorted(known)})")
    return Perplexity(**opts)


def _precomputed(**opts: str) -> Metric:
    from styleeval.metrics.precomputed import from_file

    known = {"file", "column", "lower_is_better", "name"}
    if set(opts) - known or not {"file", "column"} <= set(opts):
        raise ValueError(f"precomputed needs file= and column= (options: {sorted(known)}), got {sorted(opts)}")
    return from_file(**opts)


def _autorater(dimension: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.autorater_metric import AutoraterMetric

        return AutoraterMetric(dimension, **opts)

    return make


def _masked(inner: str) -> Factory:
    def make(**opts: str) -> Metric:
        from styleeval.metrics.masked import MaskedMetric

        mask = opts.pop("mask", "placeholder")
        min_valence = opts.pop("min_valence", "0")
        return MaskedMetric(REGISTRY[inner](**opts), mask=mask, min_valence=min_valence)

    return make


def _paper_bleu(cls: str) -> Factory:
    return _sacre(f"styleeval.metrics.paper_bleu.{cls}")


REGISTRY: dict[str, Factory] = {
    "s_bleu": _sacre("styleeval.metrics.bleu.SourceBLEU"),
    "r_bleu": _sacre("styleeval.metrics.bleu.ReferenceBLEU"),
    "s_chrf": _sacre("styleeval.metrics.chrf.SourceChrF"),
    "r_chrf": _sacre("styleeval.metrics.chrf.ReferenceChrF"),
    "s_ter": _sacre("styleeval.metrics.ter.SourceTER"),
    "r_ter": _sacre("styleeval.metrics.ter.ReferenceTER"),
    "s_pinc": _pinc,
    "s_paper_bleu": _paper_bleu("SourcePaperBLEU"),
    "r_paper_bleu": _paper_bleu("ReferencePaperBLEU"),
    "s_cosine": _cosine("source"),
    "r_cosine": _cosine("reference"),
    "s_evaluate": _evaluate("source"),
    "r_evaluate": _evaluate("reference"),
    "s_bertscore": _evaluate("source", "bertscore", lang="en"),
    "r_bertscore": _evaluate("reference", "bertscore", lang="en"),
    "s_bleurt": _evaluate("source", "bleurt"),
    "r_bleurt": _evaluate("reference", "bleurt"),
    "s_meteor": _evaluate("source", "meteor"),
    "r_meteor": _evaluate("reference", "meteor"),
    "rs_comet": _evaluate("reference", "comet", name="rs_comet"),
    "logprob_content": _logprob("content"),
    "logprob_style": _logprob("style"),
    "autorater_meaning": _autorater("meaning"),
    "autorater_style": _autorater("style"),
    "precomputed": _precomputed,
    "s_rouge1": _rouge("rouge1", "source"),
    "s_rouge2": _rouge("rouge2", "source"),
    "s_rougel": _rouge("rougeL", "source"),
    "r_rouge1": _rouge("rouge1", "reference"),
    "r_rouge2": _rouge("rouge2", "reference"),
    "r_rougel": _rouge("rougeL", "reference"),
    "ppl": _ppl,
    "s_masked_bleu": _masked("s_bleu"),
    "r_masked_bleu": _masked("r_bleu"),
    "s_masked_cosine": _masked("s_cosine"),
    "r_masked_cosine": _masked("r_cosine"),
}

#: Cheap metrics that need no model weights (the CLI default).
DEFAULT_METRICS = ("s_bleu", "r_bleu", "s_chrf", "r_chrf", "s_ter", "r_ter", "s_pinc", "s_paper_bleu")


def available_metrics() -> list[str]:
    """Every registered metric name."""
    return sorted(REGISTRY)


NAMESPACES = ("lai",)
"""Metric names with a namespace: ``lai:<score>`` (Lai et al.'s precomputed scores)."""

_OPTION_SPLIT = re.compile(r":(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name:key=value:key=value`` into the name and an options dict.

    A colon splits only where a ``key=`` follows, so values may hold colons (``base_url=http://host:8000/v1``).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a metric spec must be a non-empty string, got {spec!r}")
    name, *parts = _OPTION_SPLIT.split(spec.strip())
    if ":" in name and name.split(":", 1)[0] in NAMESPACES:  # lai:comet
        pass
    elif ":" in name:  # a colon not followed by key=value right after the name
        raise ValueError(f"metric spec {spec!r}: option {name.split(':', 1)[1]!r} is not key=value")
    opts: dict[str, str] = {}
    for part in parts:
        if "=" not in part:
            raise ValueError(f"metric spec {spec!r}: option {part!r} is not key=value")
        key, value = part.split("=", 1)
        opts[key.strip()] = value.strip()
    return name.strip(), opts


def get_metric(spec: str) -> Metric:
    """The metric object for ``spec`` (``s_bleu``, ``logprob_content:model=3b``, ``s_evaluate:module=bleurt``).

    ``as=NAME`` gives the metric a display name (:attr:`Metric.label`), e.g. ``logprob_content:model=3b:as=LP-3B``,
    so that one meta-evaluation can compare configurations of the same metric.
    """
    name, opts = parse_spec(spec)
    alias = opts.pop("as", None)
    if alias is not None and not alias.strip():
        raise ValueError(f"metric {spec!r}: as= needs a name")
    if name.startswith("lai:"):
        from styleeval.metrics.precomputed import lai_metric

        known = {"data_dir"}
        if set(opts) - known:
            raise ValueError(f"metric {spec!r}: unknown options {sorted(set(opts) - known)} (known: data_dir)")
        metric = lai_metric(name.split(":", 1)[1], opts.get("data_dir"))
        metric.spec = spec.strip()  # type: ignore[attr-defined]
        if alias is not None:
            metric.alias = alias.strip()
        return metric
    if name not in REGISTRY:
        raise ValueError(f"unknown metric {name!r}; available: {', '.join(available_metrics())}")
    try:
        metric = REGISTRY[name](**opts)
    except ValueError as err:
        if str(err).startswith(("cannot", "unknown metric")):
            raise
        raise ValueError(f"metric {spec!r}: {err}") from err
    metric.spec = spec.strip()  # type: ignore[attr-defined]
    if alias is not None:
        metric.alias = alias.strip()
    return metric
