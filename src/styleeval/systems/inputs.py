"""The input checks of a system evaluation: each row read and checked (:class:`SystemRow`), the warnings on the rows
(reference copies), the first sources of a limited run, and what a corpus metric reads beside its row scores
(:class:`CorpusInputs`)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from styleeval.errors import RowsWarning, UserError, option_text
from styleeval.systems.report import HUMAN_PREFIX
from styleeval.validation import empty_rewrites_told, empty_rewrites_warning, empty_rows, text_value

if TYPE_CHECKING:
    from styleeval.metrics import Metric

INPUT_COLUMNS = ("row", "system", "source_id", "source", "rewrite", "style", "reference", "references")
"""Input columns a metric label may not take (``as=NAME``): its scores would replace or hide them."""


@dataclass(frozen=True)
class SystemRow:
    """One input row: a system's rewrite of a source (``source_id`` pairs rows across systems)."""

    row: int
    where: str
    system: str
    source_id: str
    source: str
    rewrite: str
    style: str
    references: list[str] | None = None
    human: Mapping[str, float] = field(default_factory=dict)


def _reference_list(record: Mapping[str, Any], where: str) -> list[str] | None:
    """A row's references: ``references`` / ``reference`` (a string, a list, or a JSON list in a CSV cell) plus any
    ``reference_2``, ``reference_3``... columns. A cell that looks like a Python list repr (``['a', 'b']``, what
    ``str(list)`` or pandas' ``to_csv`` writes) is an error: read as text it would be one wrong reference. A cell
    that is JSON's ``null`` (what ``json.dumps(None)`` writes for a row without references) means no reference,
    never the text "null"."""
    refs: list[str] = []
    value = record.get("references")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        value = record.get("reference")
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise UserError(f"{where}: reference {text!r:.60} looks like a Python list, not text; write a JSON "
                                'list (["first", "second"]) or one column per reference (reference, reference_2, '
                                "...)") from None
            if not isinstance(parsed, list) or not all(isinstance(r, str) for r in parsed):
                raise UserError(f"{where}: reference must be a JSON list of strings, got {text!r:.60}")
            refs += [r for r in parsed if r.strip()]
        elif text and text != "null":  # JSON's null (json.dumps(None)): no reference
            refs.append(value)
    elif value is not None and not (isinstance(value, float) and math.isnan(value)):
        if isinstance(value, (int, float, bool)) or not hasattr(value, "__iter__"):
            raise UserError(f"{where}: reference must be text or a list of texts, got {value!r:.40}")
        refs += [str(r) for r in value if r is not None and str(r).strip()]
    extra = sorted((int(m.group(1)), k) for k in record if isinstance(k, str)
                   and (m := re.fullmatch(r"reference_(\d+)", k)))
    for _, column in extra:
        cell = record[column]
        if isinstance(cell, str) and cell.strip() and cell.strip() != "null":
            refs.append(cell)
        elif cell is not None and not (isinstance(cell, float) and math.isnan(cell)) and not isinstance(cell, str):
            raise UserError(f"{where}: {column} must be text, got {cell!r:.40}")
    return refs or None


def magnitude_limit(rows: int) -> float:
    """The largest magnitude a score or rating may have among ``rows`` rows: then every sum, mean, difference,
    square and variance of them that a report computes (over rows, resamples, systems) stays finite
    (``sqrt(max float / (4 rows))``: 6.7e150 for 10^6 rows). A larger value would make a mean or a test infinite."""
    return math.sqrt(sys.float_info.max / (4 * max(rows, 1)))


def given_text(value: Any) -> str | None:
    """A ``source_id`` (or ``system``) cell as text: ``None`` when missing (empty, None, NaN: no system is named
    "nan"); an integral float (what pandas makes of integer ids beside a gap) as the integer's text."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            return str(int(value))
    return str(value)


def check_rows(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, style: str | None = None) -> list[SystemRow]:
    """Input rows (dicts or a DataFrame) validated: ``source``, ``rewrite``, ``style`` (or ``style=``), ``system``;
    optional ``source_id`` (default: the source text; given for some rows, it must be given for all), references
    (``reference`` / ``references``: text, a list, or a JSON list in a CSV cell; ``reference_2``, ``reference_3``...
    columns) and ``human_<dimension>`` ratings. A ``UserError`` names the row: a missing or empty value (an empty
    rewrite is a rewrite, warned about by :func:`evaluate_systems`; a missing one, None or NaN, is refused), a
    duplicate (system, source_id), one source_id with two source texts, two styles or two sets of references (a system
    without references is fine), a Python list repr as a reference, a non-finite rating, a rating too large to average (:func:`magnitude_limit`)."""
    records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
    out: list[SystemRow] = []
    seen: dict[tuple[str, str], str] = {}
    texts: dict[str, tuple[str, str, str]] = {}  # source_id -> (source, style, first row)
    refs: dict[str, tuple[list[str], str]] = {}  # source_id -> (references, first row)
    ids = [given_text(r.get("source_id")) for r in records]
    limit = magnitude_limit(len(records))
    if any(i is not None for i in ids) and any(i is None for i in ids):
        gaps = [str(r.get("_where") or f"row {k}") for k, (r, i) in enumerate(zip(records, ids, strict=True))
                if i is None]
        raise UserError(f"source_id is missing in {len(gaps)} rows ({', '.join(gaps[:5])}"
                        f"{', ...' if len(gaps) > 5 else ''}) but given in others; give every row its source_id, or "
                        "none (then the source text pairs the rows)")
    for i, record in enumerate(records):
        where = str(record.get("_where") or f"row {i}")
        values = {}
        for column in ("source", "rewrite", "style", "system"):
            value = style if column == "style" and style is not None else record.get(column)
            if column == "rewrite":  # missing: refused; empty: a rewrite, warned about (styleeval.validation)
                values[column] = text_value(value, f"{where}: 'rewrite'")
                continue
            if column == "system" and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and not (isinstance(value, float) and math.isnan(value)):
                value = str(value)
            if not isinstance(value, str) or not value.strip():
                hint = {"style": " (or give one style for all rows: --style / style=)",
                        "system": " (or one file per system: --system-from-filename)"}.get(column, "")
                raise UserError(f"{where}: {column!r} is missing or empty{hint}")
            values[column] = value
        source_id = ids[i] if ids[i] is not None else values["source"]
        key = (values["system"], source_id)
        if key in seen:
            raise UserError(f"{where}: system {key[0]!r} has a second row for source {source_id!r:.60} (first at "
                            f"{seen[key]}); give each input one row per system, or distinct source_id values")
        seen[key] = where
        first = texts.setdefault(source_id, (values["source"], values["style"], where))
        if first[0] != values["source"]:
            raise UserError(f"{where}: source_id {source_id!r:.40} has the source {values['source']!r:.40} but "
                            f"{first[0]!r:.40} at {first[2]}; one source_id must name one source")
        if first[1] != values["style"]:  # the systems would not have done the same task: no paired comparison
            raise UserError(f"{where}: source {source_id!r:.40} has the style {values['style']!r:.40} but "
                            f"{first[1]!r:.40} at {first[2]}; every system's row of one source must have its style "
                            "(or give distinct source_id values)")
        references = _reference_list(record, where)
        if references is not None:  # a system without references (the human references themselves) is not scored
            known = refs.setdefault(source_id, (references, where))
            if sorted(known[0]) != sorted(references):
                raise UserError(f"{where}: source {source_id!r:.40} has the references {references!r:.60} but "
                                f"{known[0]!r:.60} at {known[1]}; r_* metrics compare every system with the same "
                                "references of a source")
        human = {}
        for column, value in record.items():
            if isinstance(column, str) and column.startswith(HUMAN_PREFIX) and value not in (None, ""):
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    raise UserError(f"{where}: {column} must be a number, got {value!r:.40}") from None
                if math.isinf(number):
                    raise UserError(f"{where}: {column} is {value!r}; ratings must be finite (leave the cell empty "
                                    "for a missing rating)")
                if abs(number) > limit:
                    raise UserError(f"{where}: {column} is {value!r}, too large: a mean or a test over {len(records)} "
                                    f"rows would overflow (ratings must be within +-{limit:.3g})")
                if not math.isnan(number):
                    human[column] = number
        out.append(SystemRow(i, where, values["system"], source_id, values["source"], values["rewrite"],
                             values["style"], references, human))
    if not out:
        raise UserError("no rows to evaluate")
    return out


COPY_SOURCE = "(copy source)"
"""The copy baseline: every source copied unchanged, scored as a system (what similarity metrics reward)."""
HUMAN_REFERENCE = "(human reference)"
"""The human-reference baseline: each source's first human reference, scored as a system (not by reference-based
metrics: against the references it would be scored against itself)."""
BASELINES = (COPY_SOURCE, HUMAN_REFERENCE)
"""The pseudo-systems a report shows beside the systems, as reference points (:func:`baseline_rows`)."""


def check_baseline_names(checked: Sequence[SystemRow]) -> None:
    """A ``UserError`` where an input system has a baseline's name (:data:`BASELINES`): its rows and the baseline's
    would be one system."""
    for row in checked:
        if row.system in BASELINES:
            raise UserError(f"{row.where}: the system name {row.system!r} is the name of a baseline the report adds; "
                            "rename the system, or leave the baselines out (--no-baselines, baselines=False)")


def reference_system(checked: Sequence[SystemRow]) -> str | None:
    """The input system whose rewrites are the human references already (a rated corpus's reference rows, which
    carry no references themselves): on every source with references, its rewrite is one of them. ``None``: none."""
    refs = {r.source_id: {ref.strip() for ref in r.references} for r in checked if r.references}
    if not refs:
        return None
    for system in dict.fromkeys(r.system for r in checked):
        rows = [r for r in checked if r.system == system and r.source_id in refs]
        if len(rows) == len(refs) and all(r.rewrite.strip() in refs[r.source_id] for r in rows):
            return system
    return None


def baseline_rows(checked: Sequence[SystemRow]) -> list[SystemRow]:
    """The rows of the baselines (:data:`BASELINES`), one per source in the order the rows first give them, after
    the input's rows (``row`` numbers after the input's last): :data:`COPY_SOURCE` rewrites each source as itself
    (with the source's references: R-* metrics score a copy of the source too); :data:`HUMAN_REFERENCE` is the
    first reference of each source that has references, with no references itself (a reference scored against
    the references is scored against itself: R-* metrics leave it out), unless an input system is the references
    already (:func:`reference_system`: a rated corpus's reference rows, which have human ratings)."""
    first: dict[str, SystemRow] = {}
    refs: dict[str, list[str]] = {}
    for row in checked:
        first.setdefault(row.source_id, row)
        if row.references:
            refs.setdefault(row.source_id, row.references)
    out: list[SystemRow] = []
    start = max((r.row for r in checked), default=-1) + 1
    for source_id, row in first.items():
        out.append(SystemRow(start + len(out), f"{COPY_SOURCE}, source {source_id!r:.60}", COPY_SOURCE,
                             source_id, row.source, row.source, row.style, refs.get(source_id)))
    if refs and reference_system(checked) is None:
        for source_id, row in first.items():
            if source_id in refs:
                out.append(SystemRow(start + len(out), f"{HUMAN_REFERENCE}, source {source_id!r:.60}",
                                     HUMAN_REFERENCE, source_id, row.source, refs[source_id][0], row.style))
    return out


class ReferenceCopyWarning(RowsWarning):
    """A system's rewrites are its references (on at least :data:`COPY_SHARE` of its rows with references)."""


COPY_SHARE = 0.9
"""The share of a system's rows with references whose rewrite is one of them, from which it is warned about."""
COPY_MIN_ROWS = 10
"""A system is warned about only from this many rows with references (one row of ``--limit 1`` that a good system
rewrote as the reference did is no copy)."""


def input_warnings(checked: Sequence[SystemRow], references_used: bool = True) -> list[RowsWarning]:
    """What the input's rows hold that the user should know before reading the numbers: empty rewrites (scored as
    given: :func:`styleeval.validation.warn_empty_rewrites`'s rule) and, where a metric of the run reads the
    references (``references_used``), systems whose rewrites are their own references (:func:`reference_copies`)."""
    out: list[RowsWarning] = []
    empty = empty_rows([r.rewrite for r in checked])
    if empty:
        named = [checked[i].where for i in empty] if any(r.where != f"row {r.row}" for r in checked) else []
        out.append(empty_rewrites_warning([checked[i].row for i in empty], len(checked), named))
    return out + (reference_copies(checked) if references_used else [])


def reference_copies(checked: Sequence[SystemRow]) -> list[ReferenceCopyWarning]:
    """A warning for each system whose rewrite is one of the row's references on at least :data:`COPY_SHARE` of its
    rows with references, and on at least :data:`COPY_MIN_ROWS` rows (the references themselves given as a system,
    carrying themselves as references): its R-* scores are those of a perfect system (R-chrF 100) and mean nothing."""
    out = []
    for system in dict.fromkeys(r.system for r in checked):
        rows = [r for r in checked if r.system == system and r.references]
        same = [r.row for r in rows if r.rewrite.strip() in {ref.strip() for ref in r.references or []}]
        if len(rows) >= COPY_MIN_ROWS and len(same) >= COPY_SHARE * len(rows):
            name = system.replace("{", "{{").replace("}", "}}")
            out.append(ReferenceCopyWarning(
                f"system {name}: rewrites equal its references on {{count}}/{len(rows)} rows; its reference-based "
                "scores (R-*) are meaningless (those of a copy of the references); if these rows are the references, "
                "leave their reference cells empty: a system without references is not scored by R-* metrics", same))
    return out


def first_sources(checked: list[SystemRow], limit: int | None) -> tuple[list[SystemRow], str]:
    """The rows of the first ``limit`` sources, in the order the rows first give them (every system's rows of
    them), and what was kept, as the report says it (``"the first 5 of 80 sources (--limit 5)"``; ``""``: all of
    them). ``limit`` must be a positive integer (``None``: no limit)."""
    if limit is None:
        return checked, ""
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
        raise UserError(f"limit must be a positive integer (the number of sources to evaluate), got {limit!r}")
    sources = list(dict.fromkeys(r.source_id for r in checked))
    if limit >= len(sources):
        return checked, ""
    kept = set(sources[:limit])
    option = option_text("limit", int(limit)) or "limit"
    return [r for r in checked if r.source_id in kept], f"the first {limit} of {len(sources)} sources ({option})"


@dataclass(frozen=True)
class CorpusInputs:
    """What a corpus-aggregated metric needs beside its row scores: the metric (its :meth:`~Metric.statistics` and
    :meth:`~Metric.score`), each input row's source, rewrite and references (aligned with the scores' rows)."""

    metric: Metric
    sources: Sequence[str]
    rewrites: Sequence[str]
    references: Sequence[Sequence[str] | None]
    _known: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def statistics(self, rows: Iterable[int]) -> np.ndarray:
        """The metric's statistics of the input rows ``rows`` (rows x k, in that order), each row's read once (a
        row's statistics are its own: the systems table's and the agreement's rows share them)."""
        rows = [int(k) for k in rows]
        missing = [k for k in dict.fromkeys(rows) if k not in self._known]
        if missing:
            with empty_rewrites_told():  # evaluate_systems said it for the rows as given
                computed = self.metric.statistics([self.sources[k] for k in missing],
                                                  [self.rewrites[k] for k in missing],
                                                  [self.references[k] for k in missing])
            self._known.update(zip(missing, computed, strict=True))
        return np.array([self._known[k] for k in rows], dtype=float) if rows else np.zeros((0, 0))


def check_labels(labels: Iterable[str]) -> None:
    """A metric label must not name an input column (``as=system``, ``as=human_content``...): its scores would
    replace or hide that column."""
    for label in labels:
        if label in INPUT_COLUMNS or label.startswith(HUMAN_PREFIX) or re.fullmatch(r"reference_\d+", label):
            raise UserError(f"metric label {label!r} names an input column; give the metric another name "
                            f"(as=NAME)")
