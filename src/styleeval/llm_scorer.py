"""One declaration per LLM scorer: :class:`LLMScorer` says once what LogProb and the autorater each are (their options,
the dimensions they score, the fields of their record files, how to build and call one, their command), and every
layer above derives its part from it: the metrics ``<name>_<dimension>`` (:mod:`styleeval.metrics.llm_metric`), the
file function (:func:`styleeval.files.runner.scorer_file`: ``score_file``, ``autorate_file``), the command
(:mod:`styleeval.commands._llm`: ``styleeval score``, ``styleeval autorate``), the ``evaluate`` module's
``_compute`` (:meth:`LLMScorer.evaluate`) and its app (:func:`styleeval.demo.app_row`).

The declarations sit beside their scorers: :data:`styleeval.logprob.declaration.LOGPROB`,
:data:`styleeval.autorater.declaration.AUTORATER`; :data:`styleeval.options.LLM_SCORERS` lists them.

>>> content = Dimension("content", "content", "content", "content preservation.")
>>> content.name, content.field
('content', 'content')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from styleeval.errors import RenamedKeys, UserError
from styleeval.evaluate_support import nan_mean
from styleeval.labels import warning_field
from styleeval.optiontypes import Option, Options

__all__ = ["MODEL_OPTIONS", "SYSTEM_PROMPT", "Command", "Dimension", "LLMScorer", "MeanFill"]

MODEL_OPTIONS = (
    Option("model", str, "preset (1b, 3b, 8b: the paper's; smollm2-135m: a real 135M chat model fetched on first "
           "use, no Hub account; tiny-random: random weights), Hub id, local path or .gguf file; on a server the "
           "served model name (default: 1b locally, the server's only model on a server)", short="-m",
           aliases=("model_id",)),
    Option("backend", str, "what computes the log-probabilities: a registered backend (built in: local, openai, "
           "llamacpp; default: openai when --base-url is given, else local)"),
)
"""The options every LLM scorer takes first: its model and the backend that computes with it."""

SYSTEM_PROMPT = Option("system_prompt", str, "auto (default): a system turn where the chat template has one, else "
                       "folded into the user turn (Gemma); system or fold to force either",
                       choices=("auto", "system", "fold"))
"""How a scorer's system prompt reaches a chat template without a system role."""

EVALUATE_INPUTS = ("predictions", "sources", "styles")
"""The inputs of every LLM scorer's ``evaluate`` module (named among the valid keywords of its errors)."""


@dataclass(frozen=True)
class Dimension:
    """One number a scorer gives each row: the metric ``<scorer>_<name>`` reads the scorer's row key ``key``; the
    record files and the ``evaluate`` module carry it as ``field`` (``None``: the metric alone, as the autorater's
    fluency, which only one prompt rates); ``summary`` is the metric's line in ``styleeval list metrics``."""

    name: str
    key: str
    field: str | None
    summary: str


@dataclass(frozen=True)
class MeanFill:
    """The authors' fill of unreadable ratings with the mean of the readable ones over a whole set (the metrics'
    and the ``evaluate`` module's ``fill`` option, ``mean`` or ``none``): ``applies(scorer)`` says whether the
    scorer's ratings can be unreadable, ``fill`` fills one dimension's list."""

    applies: Callable[[Any], bool]
    fill: Callable[[Sequence[float]], list[float]]


@dataclass(frozen=True)
class Command:
    """The scorer's file command (``styleeval <name> IN --out OUT``): its texts, the verb of its messages
    (``scored``), the rows per chunk; the summary line shows each field's mean with ``shown``, says why rows are
    ``left_out``, and, with ``compliance``, the share of records whose boolean field of that name is true."""

    name: str
    summary: str
    description: str
    epilog: str
    done: str
    chunk_size: int
    shown: Callable[[float], str]
    left_out: str
    compliance: str | None = None


@dataclass(frozen=True)
class LLMScorer:
    """An LLM scorer, declared once (see the module docstring).

    ``name`` prefixes its metrics (``logprob`` -> ``logprob_content``); ``label`` names it in messages about its
    dimensions, ``loading`` in "cannot load {loading} {model!r}"; ``options``: what it and its backends take (the
    CLI's flags, the ``evaluate`` keywords, the metric specs); ``make(model, **options)`` builds one,
    ``shared(**options)`` returns the one of this process for these options; ``rows(scorer, sources, rewrites,
    styles)`` scores rows (one dict per row, with the scorer's ``signature``). Its record files hold each dimension's ``field``, then ``extras`` (read
    from a row by name; ``texts`` the ones that hold text); ``evaluate_extras(rows)`` adds to the ``evaluate``
    module's result, ``renamed`` maps its keys of earlier versions; ``check(dimension, options)`` refuses a dimension
    the options do not score; ``fill``: the authors' mean fill, where ratings can be unreadable; the app shows the
    row keys ``app_fields`` (and the signature, where ``app_signed``)."""

    name: str
    label: str
    loading: str
    options: Options
    dimensions: tuple[Dimension, ...]
    make: Callable[..., Any]
    shared: Callable[..., Any]
    rows: Callable[[Any, list[str], list[str], Any], Sequence[dict[str, Any]]]
    command: Command
    extras: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    evaluate_extras: Callable[[Sequence[dict[str, Any]]], dict[str, Any]] = lambda rows: {}
    renamed: Mapping[str, str] = field(default_factory=dict)
    check: Callable[[str, Mapping[str, Any]], None] | None = None
    fill: MeanFill | None = None
    app_fields: tuple[str, ...] = ()
    app_signed: bool = True

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Its metrics' names, one per dimension."""
        return tuple(f"{self.name}_{d.name}" for d in self.dimensions)

    @property
    def fields(self) -> tuple[Dimension, ...]:
        """The dimensions its record files and its ``evaluate`` module carry."""
        return tuple(d for d in self.dimensions if d.field is not None)

    def dimension(self, name: str) -> Dimension:
        """The dimension ``name``; another name is a ``UserError`` listing them."""
        for d in self.dimensions:
            if d.name == name:
                return d
        *first, last = (repr(d.name) for d in self.dimensions)
        raise UserError(f"{self.label} dimension must be {', '.join(first)} or {last}, got {name!r}")

    def record(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """A scored row's record fields (the numbers as floats, then the extras)."""
        return {**{d.field: float(row[d.key]) for d in self.fields if d.field},
                **{name: row.get(name) for name in self.extras}}

    def evaluate(self, module: str, predictions: list[str], sources: list[str], styles: Any,
                 given: Mapping[str, Any]) -> dict[str, Any]:
        """What its ``evaluate`` module's ``_compute`` returns: each dimension's list, :attr:`evaluate_extras`, each
        list's NaN-aware mean, the signature (and the random-weights warning); ``given``: the module's keywords
        (``fill`` where the scorer has one, checked after the others)."""
        given = dict(given)
        fill = given.pop("fill", "mean") if self.fill else None
        options = self.options.from_kwargs(module, given, fixed=(*EVALUATE_INPUTS, *(("fill",) if self.fill else ())))
        if self.fill and fill not in ("mean", "none"):
            raise ValueError(f"{module}: fill must be 'mean' or 'none', got {fill!r}")
        scorer = self.shared(**options)
        rows = self.rows(scorer, sources, predictions, styles)
        values = {d.key: [row.get(d.key, math.nan) for row in rows] for d in self.fields}
        if self.fill and fill == "mean" and self.fill.applies(scorer):  # the authors' rule, once over this call's rows
            values = {key: self.fill.fill(column) for key, column in values.items()}
        result = {**values, **self.evaluate_extras(rows), **{f"{k}_mean": nan_mean(v) for k, v in values.items()},
                  "signature": rows.signature,  # type: ignore[attr-defined]
                  **warning_field(rows.signature)}  # type: ignore[attr-defined] # with tiny-random: "random weights"
        return RenamedKeys(result, dict(self.renamed)) if self.renamed else result
