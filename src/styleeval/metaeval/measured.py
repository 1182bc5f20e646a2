"""The paper's LLM rows measured with a model the paper did not try (``styleeval reproduce-paper --model M``).

Pauli et al. (2025) report LogProb and the LLM-as-autorater with Llama 3.x models of 1B to 70B parameters. With
``--model`` (repeatable), the same metrics are computed with ``M`` (each model given, in turn) on every corpus of the
tables and shown under the paper's rows of each group, one model's rows after another's in the order given: LogProb (content, style), the autorater in the paper's mode (the authors' prompt, a generated reply
read by the parser, unreadable ratings filled with the mean of the readable ones, the authors' rule) and in the
expected mode (the reply scaffold teacher-forced: a rating is always read). These rows are *measured*, never counted
as reproduced: the model is another one.

Besides the rows, :func:`measure` keeps what the paper's claims need (:mod:`styleeval.metaeval.claims` renders
them): every row's scores, the bootstrap interval of every Spearman value, and how many paper-mode replies could be
read (the ``unfilled`` metric: the same ratings without the fill, NaN where the reply could not be read).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import rankdata

from styleeval.metaeval.runner import MetaevalResult, run_metaeval

PAPER_PARAMETERS = {"3b": 3.21e9, "1b": 1.24e9, "8b": 8.03e9, "70b": 70.6e9}
"""Parameters of the paper's models (Llama 3.2 1B and 3B, Llama 3.1 8B, Llama 3 70B), from their model cards."""
KNOWN_PARAMETERS = {"smollm2-135m": 134.5e6, "qwen2.5-coder-0.5b": 0.494e9, "qwen2.5-coder-1.5b": 1.54e9}
"""Parameters of models ``--model`` may name, from their model cards (SmolLM2-135M-Instruct: 134.5M;
Qwen2.5-Coder-0.5B-Instruct: 0.49B, 494.0M counted from its config; Qwen2.5-Coder-1.5B-Instruct: 1.54B); another
model's point is left out of the figure, with a note."""
UNFILLED = "paper-mode ratings, unfilled"
"""The display name of the paper-mode ratings without the fill (NaN where a reply could not be read)."""


@dataclass(frozen=True)
class MeasuredRow:
    """One measured row: ``kind`` is ``LogProb`` or ``LLM-as-A`` (the autorater, in ``mode`` paper or expected)."""

    kind: str
    model: str
    mode: str = ""

    @property
    def label(self) -> str:
        """The row's name in the tables, e.g. ``LogProb smollm2-135m``, ``LLM-as-A smollm2-135m (paper mode)``."""
        return f"{self.kind} {self.model}" + (f" ({self.mode} mode)" if self.mode else "")

    @property
    def after(self) -> str:
        """The paper's row it is shown under (the smallest model of its group)."""
        return "LogProb 1b" if self.kind == "LogProb" else "LLM-as-A 3b"

    def spec(self, dimension: str) -> str:
        """The metric spec of the row for ``dimension`` (``content`` or ``style``)."""
        if self.kind == "LogProb":
            return f"logprob_{dimension}:model={self.model}"
        name = "autorater_meaning" if dimension == "content" else "autorater_style"
        return f"{name}:model={self.model}:mode={self.mode}"


def measured_rows(model: str) -> list[MeasuredRow]:
    """The rows ``--model`` adds: LogProb, the autorater in paper mode and in expected mode."""
    return [MeasuredRow("LLM-as-A", model, "paper"), MeasuredRow("LLM-as-A", model, "expected"),
            MeasuredRow("LogProb", model)]


def with_measured(table: dict[str, str], rows: list[MeasuredRow]) -> dict[str, str | None]:
    """``table`` (row -> published values) with each measured row (value ``None``) under its group's last row."""
    out: dict[str, str | None] = {}
    for name, published in table.items():
        out[name] = published
        out.update({r.label: None for r in rows if r.after == name})
    return out


@dataclass
class Measurement:
    """The measured rows of one dimension: the meta-evaluation of their metrics (named by the rows' labels, and
    :data:`UNFILLED`), with a bootstrap interval of every Spearman value."""

    model: str
    dimension: str
    rows: list[MeasuredRow]
    result: MetaevalResult
    data: dict[str, Any] = field(default_factory=dict)
    """Dataset name -> its :class:`~styleeval.metaeval.RatedData`."""

    @property
    def logprob(self) -> str:
        """The LogProb row's label."""
        return next(r.label for r in self.rows if r.kind == "LogProb")

    def autorater(self, mode: str) -> str:
        """The autorater row's label in ``mode`` (``paper`` or ``expected``)."""
        return next(r.label for r in self.rows if r.mode == mode)

    def cell(self, label: str, dataset: str, subset: str) -> dict[str, Any] | None:
        """The correlation record of a row in one column (``spearman``, ``spearman_p``, ``ci_low``, ``ci_high``,
        ``n``), or ``None``."""
        table = self.result.correlations
        hit = table[(table.metric == label) & (table.dataset == dataset) & (table.subset == subset)]
        return None if hit.empty else hit.iloc[0].to_dict()

    def values(self) -> dict[tuple[str, str, str], tuple[float, float]]:
        """(row, dataset, subset) -> (Spearman, p) of every measured row, as the paper tables take them."""
        labels = {r.label for r in self.rows}
        return {(r.metric, r.dataset, r.subset): (r.spearman, r.spearman_p)
                for r in self.result.correlations.itertuples() if r.metric in labels}

    def readable(self, dataset: str) -> tuple[int, int] | None:
        """Paper mode: (replies whose rating of this dimension could be read, rated rows) on ``dataset``; ``None`` when
        the paper-mode row was not computed there."""
        scores = self.result.scores.get((dataset, UNFILLED))
        if scores is None:
            return None
        rated = np.isfinite(self.result.human[dataset])
        return int(np.isfinite(scores[rated]).sum()), int(rated.sum())

    def signatures(self) -> dict[str, str]:
        """Row label -> the signature of its metric (model, quantization, dtype, prompt, ...)."""
        return {r.label: self.result.signatures[r.label] for r in self.rows if r.label in self.result.signatures}


def measure(model: str, dimension: str, datasets: list[str], loader: Callable[[str], Any], *, cache: Any = None,
            progress: bool | None = None, n_boot: int = 1000, seed: int = 0,
            log: Callable[[str], None] | None = None) -> Measurement:
    """Compute the measured rows of ``dimension`` on ``datasets`` (loaded by ``loader``), with the paper-mode
    ratings also unfilled (:data:`UNFILLED`). Scores come from and go to ``cache`` (a stopped run resumes there)."""
    rows = measured_rows(model)
    specs = [f"{r.spec(dimension)}:as={r.label}" for r in rows]
    paper = next(r for r in rows if r.mode == "paper")
    specs.append(f"{paper.spec(dimension)}:fill=none:as={UNFILLED}")
    result = run_metaeval(datasets, specs, dimension, cache=cache, loader=loader, n_boot=n_boot, seed=seed,
                          progress=progress, log=log, allow_missing=True)
    return Measurement(model, dimension, rows, result, {name: loader(name) for name in datasets})


def parameters(model: str) -> float | None:
    """The parameter count of a model ``--model`` names, where known (:data:`KNOWN_PARAMETERS`)."""
    return KNOWN_PARAMETERS.get(model.lower())


def rank_gaps(human: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Per row, the metric's rank minus the human rank, both as fractions in [0, 1] (average ranks for ties); NaN
    where either is missing. Large positive: the metric rates the row far higher than people do."""
    gaps = np.full(len(human), math.nan)
    keep = np.isfinite(human) & np.isfinite(scores)
    n = int(keep.sum())
    if n > 1:
        gaps[keep] = (rankdata(scores[keep]) - rankdata(human[keep])) / (n - 1)
    return gaps
