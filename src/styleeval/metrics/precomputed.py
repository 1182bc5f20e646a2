"""Scores computed elsewhere as metrics of the meta-evaluation: ``precomputed:file=...:column=...`` and ``lai:<name>``.

A score file (CSV or JSONL) has an ``id`` column with the corpus row ids (``lai_formality/BART/0``...) and one column
per metric. The metric looks scores up by row id; a row of the dataset missing from the file, a non-numeric value or
an id the file has twice is an error naming the row. ``lai:<name>`` reads Lai et al.'s own per-sentence scores of
the ``lai_formality`` corpus (:mod:`styleeval.corpora.lai_scores`: ``lai:comet``, ``lai:bleurt-ref``,
``lai:c-gyafc``, ``lai:chatgpt-style``...). Both are named "precomputed" in their signature, with the file's SHA-256.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from styleeval.errors import UserError
from styleeval.files.records import iter_records
from styleeval.labels import counted, metric_label
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import label_clash, register, register_namespace
from styleeval.signature import Signature


class PrecomputedMetric(Metric):
    """Scores looked up by corpus row id (the meta-evaluation passes the ids: ``needs_ids``)."""

    needs_ids = True
    inputs = "source"

    def __init__(self, name: str, scores: Mapping[str, float], origin: str, digest: str,
                 higher_is_better: bool = True) -> None:
        self.name = name
        self.scores = dict(scores)
        self.origin = origin
        self.digest = digest
        self.higher_is_better = higher_is_better

    @property
    def signature(self) -> Signature:
        """``<name>|precomputed:<origin>|sha256:<first 12 hex of the scores' content>``."""
        return Signature.build(self.name, {"precomputed": self.origin, "sha256": self.digest})

    def score_ids(self, ids: Sequence[str]) -> list[float]:
        """The score of each row id (``ValueError`` naming the first id the file lacks)."""
        missing = [i for i in ids if i not in self.scores]
        if missing:
            raise UserError(f"{self.name}: {counted(len(missing), 'row')} {'has' if len(missing) == 1 else 'have'} no "
                            f"precomputed score in {self.origin}, "
                            f"e.g. {missing[0]!r}")
        if ids:  # ids of this dataset that the dataset does not have: a typo or another version of the corpus
            prefix = str(ids[0]).split("/", 1)[0] + "/"
            known = set(ids)
            unknown = [k for k in self.scores if k.startswith(prefix) and k not in known]
            if unknown:
                raise UserError(f"{self.name}: {self.origin} has scores for {len(unknown)} ids that "
                                f"{prefix.rstrip('/')} does not have, e.g. {unknown[0]!r}")
        return [self.scores[i] for i in ids]

    def _score(self, sources, rewrites, references, styles):
        raise UserError(f"{self.name} scores rows by their corpus id; use it in the meta-evaluation "
                        "(or call score_ids(ids))")


def _digest(scores: Mapping[str, float]) -> str:
    h = hashlib.sha256()
    for key in sorted(scores):
        h.update(f"{key}\t{scores[key]!r}\n".encode())
    return h.hexdigest()[:12]


PRECOMPUTED_OPTIONS = ("file", "column", "lower_is_better", "name")


@register("precomputed")
def from_spec(**opts: str) -> PrecomputedMetric:
    """``precomputed:file=FILE:column=COLUMN[:lower_is_better=yes][:name=NAME]``."""
    known = set(PRECOMPUTED_OPTIONS)
    if set(opts) - known or not {"file", "column"} <= set(opts):
        raise UserError(f"precomputed needs file= and column= (options: {sorted(known)}), got {sorted(opts)}")
    return from_file(**opts)


def _spec_options(**fixed: object) -> tuple[str, ...]:
    return PRECOMPUTED_OPTIONS


def _spec_summary(**fixed: object) -> str:
    return "scores read from a CSV/JSONL file, keyed by the corpus row id (the meta-evaluation)."


# what a metric class declares (Metric.spec_options, spec_summary), for ``styleeval list metrics``
from_spec.spec_options = _spec_options  # type: ignore[attr-defined]
from_spec.spec_summary = _spec_summary  # type: ignore[attr-defined]


def from_file(file: str, column: str, lower_is_better: bool | str = False, name: str | None = None) -> PrecomputedMetric:
    """A precomputed metric from column ``column`` of a CSV / JSONL score file keyed by ``id``."""

    path = Path(file)
    for what, text in (("column", name or column), ("file name", path.name)):
        if any(c in text for c in "|[]"):
            raise UserError(f"{path}: the {what} {text!r} holds '|', '[' or ']', which a metric's signature cannot "
                            "hold; rename it")
    label = name or column
    clash = label_clash(label)
    if clash is not None:  # its scores would be shown, correlated and ranked as styleeval's metric
        what = "name" if name else "column"
        raise UserError(f"{path}: the {what} {label!r} is the name of styleeval's metric {clash}, so its scores would be "
                        f"labelled as that metric's; rename the {what} (e.g. {label}_own): both are shown as "
                        f"{metric_label(clash)}")
    scores: dict[str, float] = {}
    seen_header = False
    for where, record in iter_records(path):
        if where == "header":
            seen_header = True
            if "id" not in record or column not in record:
                raise UserError(f"{path}: needs the columns 'id' and {column!r} (found: {', '.join(record)})")
            continue
        if "id" not in record or column not in record:
            raise UserError(f"{path}, {where}: missing 'id' or {column!r}")
        key, raw = str(record["id"]), record[column]
        try:
            value = float(raw) if raw not in (None, "") else math.nan
        except (TypeError, ValueError):
            raise UserError(f"{path}, {where}: {column!r} of row {key!r} is not a number: {raw!r:.40}") from None
        if isinstance(raw, bool):
            raise UserError(f"{path}, {where}: {column!r} of row {key!r} is not a number: {raw!r}")
        if key in scores:
            raise UserError(f"{path}, {where}: row id {key!r} appears twice")
        scores[key] = value
    if not scores:
        raise UserError(f"{path}: no scores" + ("" if seen_header else " (empty file)"))
    flag = lower_is_better if isinstance(lower_is_better, bool) else str(lower_is_better).lower() in ("1", "true", "yes")
    return PrecomputedMetric(name or column, scores, f"{path.name}:{column}", _digest(scores),
                             higher_is_better=not flag)


@register_namespace("lai", options=("data_dir",), member="score")
def lai_metric(score: str, data_dir: str | None = None) -> PrecomputedMetric:
    """``lai:<score>``: one of Lai et al.'s precomputed scores (:data:`styleeval.corpora.lai_scores.SCORES`)."""
    from styleeval.corpora.lai_scores import LOWER_IS_BETTER, SCORES  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    if score not in SCORES:
        raise UserError(f"unknown Lai score {score!r}; choose from {', '.join(SCORES)}")
    values = _lai_scores(data_dir)[score]
    return PrecomputedMetric(f"lai:{score}", values, f"lai_formality:{score}", _digest(values),
                             higher_is_better=score not in LOWER_IS_BETTER)


@lru_cache(maxsize=4)
def _lai_scores(data_dir: str | None) -> dict[str, dict[str, float]]:
    """Lai's scores, read once per process per mirror."""
    from styleeval.corpora.lai_scores import load_lai_scores  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    return load_lai_scores(data_dir)
