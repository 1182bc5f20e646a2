"""Metric names -> metric objects. A spec is ``name`` or ``name:key=value:key=value``.

>>> get_metric("s_chrf").compute(["a cat sat", "a dog ran"], ["a cat sat", "a cat sat"])   # rewrites, sources
[100.0, 4.761904761904762]
>>> get_metric("r_ter").compute(["a cat sat"], ["a cat"], references=[["a cat sat down"]])      # one list per row
[50.0]
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from styleeval.errors import UserError, listing_advice
from styleeval.http_pools import redacted, redacted_text
from styleeval.labels import metric_label
from styleeval.metrics.base import Metric
from styleeval.registry import Registry

Factory = Callable[..., Metric]

@dataclass(frozen=True)
class RegisteredMetric:
    """A metric as :func:`register` records it: called with a spec's options (strings) it builds the metric;
    ``cls`` is the registered class (or function), for what it declares (``takes_model``), ``fixed`` the keyword
    arguments :func:`register` fixes (``inputs="source"``), ``named`` the keyword arguments its factory names (the
    spec's options where the class declares none)."""

    factory: Factory
    cls: object
    fixed: dict[str, object]
    named: tuple[str, ...]

    def __call__(self, **opts: str) -> Metric:
        return self.factory(**opts)


REGISTRY: Registry[RegisteredMetric] = Registry("metric")
"""Metric name -> its :class:`RegisteredMetric` (a :class:`~styleeval.registry.Registry`; ``REGISTRY[name](**opts)``
builds one). Filled by :func:`register` where each metric class is defined; :func:`_discover` imports every module
of :mod:`styleeval.metrics` so that all are known."""


def register(name: str, **fixed: object) -> Callable:
    """Class (or function) decorator: the metric is available as ``name``; ``fixed`` keyword arguments are passed on
    with the spec's options (``@register("s_cosine", inputs="source")``). The class builds itself from the spec's
    string options with a ``from_spec`` classmethod where they need converting, else its constructor takes them."""

    def decorate(obj):
        build = getattr(obj, "from_spec", None) or obj
        takes = [p for p in inspect.signature(build).parameters.values() if p.name not in fixed]
        free = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes)
        named = sorted(p.name for p in takes if p.kind is not inspect.Parameter.VAR_KEYWORD)

        def factory(**opts: str) -> Metric:
            if opts and not takes:
                raise UserError(f"takes no options, got {sorted(opts)}")
            unknown = sorted(set(opts) - set(named) - set(fixed))
            if unknown and not free:
                raise UserError(f"unknown options {unknown} (known: {named})")
            return build(**{**fixed, **opts})  # a spec may override a fixed option (module=PATH)

        REGISTRY.add(name, RegisteredMetric(factory, obj, dict(fixed), tuple(named)))
        return obj

    return decorate


NAMESPACES: Registry[tuple[Callable[..., Metric], tuple[str, ...], str]] = Registry("metric namespace")
"""Namespace -> (factory, its options, what a member names): ``lai:<score>`` is a member ``<score>`` of ``lai`` (a
:class:`~styleeval.registry.Registry`). Filled by :func:`register_namespace` where the factory is defined."""


def register_namespace(namespace: str, options: tuple[str, ...] = (), member: str = "name") -> Callable:
    """Function decorator: specs ``<namespace>:<member>[:key=value...]`` are built by the function, called as
    ``factory(member, data_dir=..., **options)`` (``data_dir``: the spec's own, else the run's corpus mirror, when
    ``data_dir`` is among ``options``). ``member`` says what the part after the colon names, for help texts."""

    def decorate(factory):
        NAMESPACES.add(namespace, (factory, tuple(options), member), lazy=False)
        return factory

    return decorate


def check_options(given: dict[str, object], known: set[str] | tuple[str, ...]) -> None:
    """A spec's option that the metric does not take is an error listing the ones it takes."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise UserError(f"unknown options {unknown} (known: {sorted(known)})")


_DISCOVERED = False


def _discover() -> None:
    """Import every metric module once (each registers its metrics)."""
    global _DISCOVERED
    if _DISCOVERED:
        return

    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not info.name.startswith("_") and info.name not in ("base", "registry"):
            importlib.import_module(f"styleeval.metrics.{info.name}")
    _DISCOVERED = True


#: Cheap metrics that need no model weights (the meta-evaluation's default).
DEFAULT_METRICS = ("s_bleu", "r_bleu", "s_chrf", "r_chrf", "s_ter", "r_ter", "s_pinc", "s_paper_bleu")
#: The system evaluation's default (``styleeval evaluate``): LogProb content and style with the default model, the
#: autorater's expected mode, S-BLEU and S-chrF.
SYSTEM_METRICS = ("logprob_content", "logprob_style", "autorater_meaning", "autorater_style", "s_bleu", "s_chrf")


def available_metrics() -> list[str]:
    """Every registered metric name."""
    _discover()
    return sorted(REGISTRY)


def metric_options(name: str) -> tuple[str, ...]:
    """The options a spec of metric ``name`` takes (besides ``as=``, which every metric takes): what its class
    declares (``spec_options(**fixed)``: :meth:`Metric.spec_options`), else its constructor's (or ``from_spec``'s)
    keyword arguments.

    >>> metric_options("s_chrf")
    ('agg', 'char_order', 'word_order', 'beta', 'lowercase', 'whitespace', 'eps_smoothing')
    """
    _discover()
    if name not in REGISTRY:
        raise UserError(f"unknown metric {name!r}")
    entry = REGISTRY[name]
    declare = getattr(entry.cls, "spec_options", None)
    declared = declare(**entry.fixed) if callable(declare) else None
    return tuple(declared) if declared is not None else entry.named


def metric_summary(name: str) -> str:
    """One line saying what metric ``name`` computes (``styleeval list metrics``): what its class declares
    (:meth:`Metric.spec_summary`), else the first sentence of its class (or function) docstring, as plain text,
    without a leading ``name:``.

    >>> metric_summary("s_bleu")
    'sentence BLEU of the rewrite with the source as the only reference.'
    """
    _discover()
    if name not in REGISTRY:
        raise UserError(f"unknown metric {name!r}")
    cls = REGISTRY[name].cls
    declare = getattr(cls, "spec_summary", None)
    declared = declare(**REGISTRY[name].fixed) if callable(declare) else None
    if declared:
        return declared
    doc = " ".join((getattr(cls, "__doc__", None) or "").split("\n\n")[0].split())
    first = re.split(r"(?<=[a-z0-9)\]`'\"])\.\s", doc, maxsplit=1)[0].replace("``", "")
    first = re.sub(rf"^{re.escape(name)}:\s*", "", first)
    return first if first.endswith(".") or not first else first + "."


_OPTION_SPLIT = re.compile(r":(?=\s*[A-Za-z_][A-Za-z0-9_]*\s*=)")
_SECRET_OPTION = re.compile(r"(?i)(?:^|_)(?:api_?key|key|token|secret|password|auth|authorization)$")
"""Options whose value is a secret (``api_key``, a plugin's ``hf_token``...; not ``tokenizer`` or ``max_tokens``)."""


def shown_spec(spec: str) -> str:
    """``spec`` (or a piece of one) as it may be printed in a message: a secret option's value (``api_key=``) as
    ``***``, the user-info of a URL in it (``base_url=http://token@host/v1``; a ``*_url`` option's value also without
    a scheme) as ``***@``."""
    name, *parts = _OPTION_SPLIT.split(spec)
    shown = [name]
    for part in parts:
        key, _, value = part.partition("=")
        if _SECRET_OPTION.search(key.strip()) and value.strip():
            value = value.replace(value.strip(), "***", 1)
        elif key.strip().lower().endswith("url"):
            value = redacted(value)
        shown.append(f"{key}={value}")
    return redacted_text(":".join(shown))


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name:key=value:key=value`` into the name and an options dict.

    A colon splits only where a ``key=`` follows, so values may hold colons (``base_url=http://host:8000/v1``).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise UserError(f"a metric spec must be a non-empty string, got {spec!r}")
    name, *parts = _OPTION_SPLIT.split(spec.strip())
    if ":" in name:
        _discover()  # namespaces are registered by the metric modules
    if ":" in name and name.split(":", 1)[0] not in NAMESPACES:  # a colon not followed by key=value (lai:comet is ok)
        raise UserError(f"metric spec {shown_spec(spec)!r}: option {shown_spec(name.split(':', 1)[1])!r} is not "
                        "key=value")
    opts: dict[str, str] = {}
    for part in parts:
        if "=" not in part:
            raise UserError(f"metric spec {shown_spec(spec)!r}: option {shown_spec(part)!r} is not key=value")
        key, value = part.split("=", 1)
        if key.strip() in opts:
            raise UserError(f"metric spec {shown_spec(spec)!r}: option {key.strip()!r} given twice; give it once")
        opts[key.strip()] = value.strip()
    return name.strip(), opts


def check_distinct_labels(given: Sequence[str | Metric], objs: Sequence[Metric]) -> None:
    """One run shows each metric under its display name: two specs that would be shown alike (``s_bleu`` and
    ``s_bleu:tokenize=intl`` both as S-BLEU; ``s_chrf`` and ``s_chrf:word_order=2:as=S-chrF``) are one
    :class:`UserError` naming them, with the fix (``as=NAME`` on one of them).

    >>> check_distinct_labels(["s_bleu", "s_bleu:tokenize=intl"], [get_metric("s_bleu"), get_metric("s_bleu:tokenize=intl")])
    Traceback (most recent call last):
    ...
    styleeval.errors.UserError: s_bleu and s_bleu:tokenize=intl would both be shown as S-BLEU; give each configuration its own name with as=NAME (e.g. s_bleu:tokenize=intl:as=S-BLEU-2)
    """
    shown: dict[str, list[tuple[str, str]]] = {}  # display name, folded -> (spec as given, display name)
    for spec, metric in zip(given, objs, strict=True):
        label = metric_label(metric.label)
        text = shown_spec((spec if isinstance(spec, str) else metric.label).strip())
        shown.setdefault(label.casefold(), []).append((text, label))
    for same in shown.values():
        if len(same) > 1:
            specs = [text for text, _ in same]
            label = same[0][1]
            names = ", ".join(specs[:-1]) + f" and {specs[-1]}"
            raise UserError(f"{names} would {'both' if len(same) == 2 else 'all'} be shown as {label}; give each "
                            f"configuration its own name with as=NAME (e.g. {specs[-1]}:as={label}-2)")


def label_clash(name: str) -> str | None:
    """The registered metric shown under the same label as ``name`` (``s_BLEU`` and ``s_bleu`` are both "S-BLEU"),
    or ``None``: scores computed elsewhere must not be shown as one of styleeval's metrics.

    >>> label_clash("s_BLEU"), label_clash("my_bleu")
    ('s_bleu', None)
    """
    shown = metric_label(name).casefold()
    return next((m for m in available_metrics() if metric_label(m).casefold() == shown), None)


def with_model(specs: list[str | Metric], model: str) -> list[str | Metric]:
    """``--model`` of ``evaluate`` and ``metaeval``: ``:model=MODEL`` added to every spec of an LLM metric
    (:attr:`Metric.takes_model`: ``logprob_*``, ``autorater_*``, ``ppl``) that names no model; a ``UserError`` when
    it applies to none of ``specs`` (no LLM metric, or every one names its own model: the option would do nothing).

    >>> with_model(["s_bleu", "logprob_content", "autorater_style:model=3b"], "tiny-random")
    ['s_bleu', 'logprob_content:model=tiny-random', 'autorater_style:model=3b']
    """
    if not model or not model.strip():
        raise UserError("--model needs a model: a preset (smollm2-135m, 1b, 3b, 8b, qwen-1.5b, tiny-random), a Hub id, "
                        "a path or a .gguf file")
    _discover()
    llm = sorted(n for n, entry in REGISTRY.items() if getattr(entry.cls, "takes_model", False))
    out, applied, own = [], False, []
    for spec in specs:
        if not isinstance(spec, str):  # a metric object is built already: its model is its own
            out.append(spec)
            continue
        name, opts = parse_spec(spec)
        takes = getattr(getattr(REGISTRY.get(name), "cls", None), "takes_model", False)
        if takes and "model" in opts:
            own.append(spec.strip())
        applied |= takes and "model" not in opts
        out.append(f"{spec.strip()}:model={model.strip()}" if takes and "model" not in opts else spec)
    if own and not applied:
        raise UserError(f"--model {model} applies to no metric: {', '.join(own)} name{'s' if len(own) == 1 else ''} "
                        f"{'its' if len(own) == 1 else 'their'} own model; write model={model.strip()} in "
                        f"{'that spec' if len(own) == 1 else 'those specs'} (e.g. "
                        f"{parse_spec(own[0])[0]}:model={model.strip()}), or leave the model out of it")
    if not applied:
        raise UserError(f"--model {model} names the model of the LLM metrics ({', '.join(llm)}), but none of the "
                        "metrics is one: add one to --metrics, or leave --model out")
    return out


def get_metric(spec: str, data_dir: str | None = None) -> Metric:
    """The metric object for ``spec`` (``s_bleu``, ``logprob_content:model=3b``, ``s_evaluate:module=bleurt``).

    ``data_dir`` is the run's local corpus mirror: metrics that read corpus files (``lai:<score>``) use it unless the
    spec names its own ``data_dir=``.

    ``as=NAME`` gives the metric a display name (:attr:`Metric.label`), e.g. ``logprob_content:model=3b:as=LP-3B``,
    so that one meta-evaluation can compare configurations of the same metric.
    """
    name, opts = parse_spec(spec)
    alias = opts.pop("as", None)
    if alias is not None and not alias.strip():
        raise UserError(f"metric {shown_spec(spec)!r}: as= needs a name")
    _discover()
    namespace, _, member = name.partition(":")
    if member and namespace in NAMESPACES:
        factory, known, _ = NAMESPACES[namespace]
        if set(opts) - set(known):
            raise UserError(f"metric {shown_spec(spec)!r}: unknown options {sorted(set(opts) - set(known))} (known: "
                            f"{', '.join(known) or 'none'})")
        if "data_dir" in known:
            opts["data_dir"] = opts.get("data_dir") or data_dir
        build: Callable[[], Metric] = lambda: factory(member, **opts)  # noqa: E731
    elif name in REGISTRY:
        build = lambda: REGISTRY[name](**opts)  # noqa: E731
    else:
        close = difflib.get_close_matches(name, list(REGISTRY), 1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        spaces = "".join(f", {ns}:<{m}>" for ns, (_, _, m) in NAMESPACES.items())
        raise UserError(f"unknown metric {name!r}{hint}; available: {', '.join(available_metrics())}{spaces}, "
                        "precomputed:file=...:column=..."
                        + listing_advice("styleeval list metrics", "styleeval.metrics.available_metrics()"))
    try:
        metric = build()
    except UserError as err:
        if str(err).startswith(("cannot", "unknown metric")):
            raise
        raise UserError(f"metric {shown_spec(spec)!r}: {err}") from err
    metric.spec = spec.strip()  # type: ignore[attr-defined]
    if alias is not None:
        metric.alias = alias.strip()
    return metric
