"""The metric interface shared by every baseline: a stateless function wrapped in a thin class.

A metric scores ``rewrites`` against ``sources`` (``s_`` metrics), against ``references`` (``r_`` metrics)
or both, and returns one float per row, in input order. Each metric has a sacrebleu-like ``signature``
(name, settings, library versions) that keys the scores cache.

A metric also owns the sufficient statistics of a system's score (as sacrebleu's and torchmetrics' metrics do):
:meth:`Metric.statistics` gives each row's (rows x k), which add up over a system's rows, and :meth:`Metric.score`
makes the system score of the sums, vectorised. A mean metric's statistics are ``[value, 1]`` and its score
``sums[..., 0] / sums[..., 1]``; sacrebleu's corpus BLEU, chrF and TER have their own (``metrics/bleu.py``,
``chrf.py``, ``ter.py``).

>>> statistics = Metric.statistics_of_values([1.0, 2.0, 6.0])
>>> statistics.tolist(), float(Metric().score(statistics.sum(axis=0)))
([[1.0, 1.0], [2.0, 1.0], [6.0, 1.0]], 3.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from styleeval.errors import RowError, UserError, rows_named_by
from styleeval.signature import Signature
from styleeval.validation import broadcast_texts, check_rewrites, check_texts, empty_rewrites_told

Inputs = Literal["source", "reference", "source+reference"]


def check_references(references: Any, n: int) -> list[list[str]]:
    """Return ``references`` as one non-empty list of strings per row, or raise a ``ValueError`` naming the row.

    A row may hold one string or a list of strings (several references).
    """
    if references is None:
        raise UserError("references are required by a reference-based metric but none were given")
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise UserError(f"references must be a list (one entry per row), got {type(references).__name__}")
    if len(references) != n:
        raise UserError(f"references has {len(references)} rows but {n} were expected (lengths must match)")
    out: list[list[str]] = []
    for i, refs in enumerate(references):
        if refs is None:
            raise UserError(f"references[{i}] is None: this row has no reference")
        if isinstance(refs, str):
            refs = [refs]
        refs = list(refs)
        if not refs:
            raise UserError(f"references[{i}] is an empty list: this row has no reference")
        for j, r in enumerate(refs):
            if not isinstance(r, str):
                raise UserError(f"references[{i}][{j}] is {type(r).__name__}, not str: {r!r:.60}")
        out.append(refs)
    return out


class Metric:
    """Base class of every metric: subclasses set the class attributes and implement :meth:`_score`.

    Attributes:
        name: the registry name (``s_bleu``, ``r_chrf``, ...).
        inputs: what the rewrite is compared with: ``"source"``, ``"reference"`` or ``"source+reference"``.
        aggregate: ``"mean"`` or ``"corpus"`` (see the attribute).
        higher_is_better: ``False`` for error rates (TER); the meta-evaluation negates such scores.
        needs_styles: whether the metric reads the target style of each row (LogProb).
        incremental: slow metrics (LLMs) whose scores the meta-evaluation saves chunk by chunk.
        alias: a display name (``as=NAME`` in a spec) so that one run can compare configurations of one metric.
        takes_model: an LLM metric whose ``model`` option names the model (``--model`` of ``evaluate`` and
            ``metaeval`` sets it where a spec names none).
    """

    name: str = "metric"
    inputs: Inputs = "source"
    higher_is_better: bool = True
    needs_styles: bool = False
    incremental: bool = False
    alias: str | None = None
    takes_model: bool = False
    aggregate: str = "mean"
    """How a system's score is made from its rows: ``"mean"`` of the row scores, or ``"corpus"``: the metric's corpus
    statistic (:meth:`statistics` and :meth:`score`; sacrebleu's BLEU, chrF and TER, as papers report them)."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...] | None:
        """The options a metric spec of this class takes (``name:key=value``; ``fixed``: what the registry fixes,
        ``inputs="source"``...), for ``styleeval list metrics``; ``None``: its constructor's (or ``from_spec``'s)
        keyword arguments, which the registry reads."""
        return None

    @classmethod
    def spec_summary(cls, **fixed: object) -> str | None:
        """One line saying what the metric registered with ``fixed`` computes, for ``styleeval list metrics``;
        ``None``: the first sentence of the class docstring."""
        return None

    @property
    def label(self) -> str:
        """The metric's name in tables and plots: its alias when it has one, else its registry name."""
        return self.alias or self.name

    @property
    def signature(self) -> Signature:
        """A sacrebleu-like :class:`~styleeval.signature.Signature` naming the metric, its settings and library
        versions."""
        raise NotImplementedError

    @property
    def system_signature(self) -> Signature:
        """The signature of a system's score: the row scores' (:attr:`signature`); a corpus-aggregated metric adds
        ``agg:corpus`` and the corpus scorer's own signature (``corpus:[...]``), which computes the system score."""
        return self.signature

    @property
    def needs_references(self) -> bool:
        """Whether rows without a reference cannot be scored."""
        return "reference" in self.inputs

    def compute(
        self,
        sources: Sequence[str],
        rewrites: Sequence[str],
        references: Sequence[Sequence[str] | str | None] | None = None,
        styles: Sequence[str] | str | None = None,
    ) -> list[float]:
        """Score each rewrite; returns one float per row, in input order.

        Raises ``ValueError`` naming the argument and the row on bad input (wrong type, None, length mismatch,
        a missing reference for a reference-based metric, a missing style for a style-aware one).
        """
        return self._scores_of(*self._checked(sources, rewrites, references, styles))

    __call__ = compute

    def _scores_of(self, sources: list[str], rewrites: list[str], references: list[list[str]] | None,
                   styles: list[str] | None) -> list[float]:
        """:meth:`_score` of checked inputs (:meth:`_checked`), one float per row."""
        n = len(rewrites)
        if n == 0:
            return []
        with empty_rewrites_told():  # said by _checked, for the rows as given: a scorer inside says it no more
            scores = [float(s) for s in self._score(sources, rewrites, references, styles)]
        if len(scores) != n:  # pragma: no cover - guards subclasses
            raise RuntimeError(f"{self.name} returned {len(scores)} scores for {n} rows")
        return scores

    def _checked(self, sources: Any, rewrites: Any, references: Any,
                 styles: Any) -> tuple[list[str], list[str], list[list[str]] | None, list[str] | None]:
        """:meth:`compute`'s inputs checked (the empty rewrites warned about), as :meth:`_score` takes them."""
        rewrites = check_rewrites(rewrites, stacklevel=3)
        n = len(rewrites)
        sources = check_texts("sources", sources, n)
        refs = check_references(references, n) if self.needs_references else None
        style_list = broadcast_texts("styles", styles, n) if self.needs_styles else None
        return sources, rewrites, refs, style_list

    def statistics(
        self,
        sources: Sequence[str],
        rewrites: Sequence[str],
        references: Sequence[Sequence[str] | str | None] | None = None,
        styles: Sequence[str] | str | None = None,
    ) -> np.ndarray:
        """Each row's sufficient statistics of a system's score (rows x k, float64; :meth:`compute`'s inputs and
        errors): they add up over a system's rows, and :meth:`score` of their sum is the system's score. A mean
        metric's are ``[value, 1]`` (:meth:`statistics_of_values` of :meth:`compute`)."""
        return self.statistics_of_values(self._scores_of(*self._checked(sources, rewrites, references, styles)))

    @staticmethod
    def statistics_of_values(values: Sequence[float]) -> np.ndarray:
        """A mean's statistics of row scores: ``[value, 1]`` per row (rows x 2)."""
        column = np.asarray(values, dtype=float).reshape(-1)
        return np.column_stack([column, np.ones(len(column))])

    def score(self, sums: np.ndarray, exact: bool = False) -> np.ndarray:
        """The system score of summed :meth:`statistics`, vectorised: ``sums`` (..., k) -> scores (...). A mean
        metric's: ``sums[..., 0] / sums[..., 1]`` (NaN for no row). ``exact``: the scores as the metric prints them
        (sacrebleu's corpus scores bitwise; the same numbers up to the last bit otherwise, faster)."""
        totals = np.asarray(sums, dtype=float)
        count = totals[..., 1]
        return np.divide(totals[..., 0], count, out=np.full(count.shape, np.nan), where=count != 0)

    def finalize(self, scores: list[float]) -> list[float]:
        """Applied once to the scores of everything being aggregated (a whole meta-evaluation dataset), after all its
        chunks are scored: a fill that depends on the whole set (the autorater's) goes here, never in
        :meth:`_score`, so that scores do not depend on chunking. Default: unchanged."""
        return list(scores)

    def _score(
        self,
        sources: list[str],
        rewrites: list[str],
        references: list[list[str]] | None,
        styles: list[str] | None,
    ) -> Sequence[float]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature!r})"


def backend_failure(err: Any) -> UserError:
    """A backend's :class:`~styleeval.backends.BackendError` as a metric's error: a :class:`RowError` keeping its row
    (which the callers re-address to their own rows), else a :class:`UserError` with its message."""
    if getattr(err, "row", None) is None:
        return UserError(str(err))
    return RowError(err.row, f"{err.what}: {err.reason}" if err.what else err.reason)


class RowMemo:
    """The per-row results of one scorer shared by the metrics of its dimensions (LogProb content and style, the
    autorater's meaning and style): a row already computed under the same signature is not computed again, whatever
    the chunks it arrives in (the meta-evaluation sizes each metric's chunks by its own speed)."""

    def __init__(self) -> None:
        self._memo: dict[tuple, tuple[str, dict[tuple[str, str, str], dict[str, Any]]]] = {}

    def rows(self, key: tuple, signature: str, sources: list[str], rewrites: list[str], styles: list[str],
             compute: Any) -> list[dict[str, Any]]:
        """The result of every row; ``compute(sources, rewrites, styles)`` runs once on the distinct rows not yet
        known under ``signature`` (results in order, one dict per row)."""
        known_signature, table = self._memo.get(key, ("", {}))
        if known_signature != signature:
            table = {}
            self._memo[key] = (signature, table)
        wanted = list(zip(sources, rewrites, styles, strict=True))
        missing = list(dict.fromkeys(row for row in wanted if row not in table))
        if missing:
            try:
                with rows_named_by(lambda i: wanted.index(missing[i])):  # warnings too name the caller's rows
                    results = compute([r[0] for r in missing], [r[1] for r in missing], [r[2] for r in missing])
            except RowError as err:  # a row of ``missing``: named as the caller's
                if not 0 <= err.row < len(missing):
                    raise
                raise err.at(wanted.index(missing[err.row])) from err
            table.update(zip(missing, (dict(r) for r in results), strict=True))
        return [table[row] for row in wanted]


def targets(metric: Metric, sources: list[str], references: list[list[str]] | None) -> list[list[str]]:
    """What each rewrite is compared with: ``[source]`` for ``s_`` metrics, the references for ``r_`` ones."""
    if metric.inputs == "source":
        return [[s] for s in sources]
    assert references is not None
    return references
