"""Evaluate and compare style-transfer systems: per-row scores of every metric, per-system means with bootstrap
confidence intervals, paired significance tests between systems (approximate randomization or paired bootstrap,
Holm-adjusted per metric), WMT-style significance clusters, and, when the input carries human ratings
(``human_<dimension>`` columns), the system-level agreement of each metric with them.

>>> rows = [{"system": system, "source": source, "rewrite": rewrite, "style": "formal"}
...         for system, source, rewrite in [
...             ("copy", "gimme the report", "gimme the report"), ("copy", "thx a lot", "thx a lot"),
...             ("copy", "u coming?", "u coming?"), ("formal", "gimme the report", "Please send me the report."),
...             ("formal", "thx a lot", "Thank you very much."), ("formal", "u coming?", "Are you coming?")]]
>>> report = evaluate_systems(rows, metrics=["s_chrf", "s_ter"])
>>> print(report.systems[["system", "metric", "n", "score"]].round(2).to_string(index=False))
system metric  n  score
  copy s_chrf  3  100.0
formal s_chrf  3   54.8
  copy  s_ter  3    0.0
formal  s_ter  3  125.0
>>> list(report.pairs.columns[:4])   # then delta, its CI, p, the Holm-adjusted p and whether it is significant
['metric', 'system_a', 'system_b', 'n_pairs']
>>> text = report.to_markdown()     # also report.plot("tradeoff.png"), write_outputs(report, "out/")
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from styleeval import stats
from styleeval.errors import RowError, RowsWarning, UserError, advising, option_text
from styleeval.labels import counted, system_statistic
from styleeval.metrics.registry import SYSTEM_METRICS, check_distinct_labels
from styleeval.stats.settings import DEFAULT_SETTINGS, TestSettings
from styleeval.systems.report import HUMAN_PREFIX, Coverage, SystemsReport, coverage_of, lacking_sources
from styleeval.validation import empty_rewrites_told, empty_rewrites_warning, empty_rows, text_value

if TYPE_CHECKING:
    from styleeval.metrics import Metric

DEFAULT_METRICS = SYSTEM_METRICS
"""LogProb content and style with the default model, the autorater's expected mode, S-BLEU and S-chrF."""
SYSTEM_COLUMNS = ["system", "metric", "aggregate", "n", "n_missing", "score", "mean", "ci_low", "ci_high", "cluster"]
PAIR_COLUMNS = ["metric", "system_a", "system_b", "n_pairs", "score_a", "score_b", "mean_a", "mean_b", "delta",
                "ci_low", "ci_high", "p", "p_adjusted", "significant"]
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
    import sys

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
        gaps = [str(r.get("_where") or f"row {k}") for k, (r, i) in enumerate(zip(records, ids)) if i is None]
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


def evaluate_systems(
    rows: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None,
    metrics: Sequence[str | Metric] | str = DEFAULT_METRICS,
    *,
    dataset: str | None = None,
    limit: int | None = None,
    style: str | None = None,
    settings: TestSettings = DEFAULT_SETTINGS,
    sort_by: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
    data_dir: str | Path | None = None,
) -> SystemsReport:
    """Score every row with every metric and compare the systems (see the module docstring).

    Args:
        rows: dicts or a DataFrame with ``source``, ``rewrite``, ``style`` (or ``style=``), ``system``, optional
            ``source_id``, ``reference``/``references`` (for ``r_*`` metrics) and ``human_<dimension>`` ratings.
        metrics: registry specs, as in the meta-evaluation (``logprob_content``, ``s_chrf``, ``precomputed:...``) or
            metric objects: a list, or one comma-separated string as on the command line.
        dataset: instead of ``rows``, a rated corpus whose systems are compared (``"lai_formality"``: its 9 systems
            with their references and human ratings; :func:`~styleeval.systems.dataset.dataset_rows`), read from
            ``data_dir``.
        limit: only the first ``limit`` sources (in the order the rows first give them), every system's rows of
            them; the report says so.
        settings: the paired test (``"ar"``: approximate randomization, ``trials`` shufflings; ``"bootstrap"``:
            paired bootstrap, ``n_boot`` resamples), the significance level ``alpha`` of the Holm-adjusted p-values,
            the bootstrap resamples ``n_boot`` of the CIs and the ``seed`` of every random draw (default: sacrebleu's,
            12345: the corpus metrics' p-values are those ``sacrebleu --paired-ar`` prints, where no shuffle ties):
            a :class:`~styleeval.stats.TestSettings`, checked when made.
        sort_by: the metric systems are ranked by in the report (default: the first metric).
        cache_dir: where per-row scores are kept (a killed run resumes; a rerun with more metrics computes only the
            new ones); ``None``: not kept.
        progress: progress bars on stderr (the metric being computed, its rows, the comparison); ``None``: where
            stderr is a terminal.
        log: a callback for notes as they happen.
        data_dir: the local corpus mirror of metrics that read corpus files (``lai:<score>``), as in the
            meta-evaluation.
    """
    from styleeval import progress as shown
    from styleeval.backends import BackendError
    from styleeval.scoring import ScoresCache, score_dataset
    from styleeval.scoring.score import ShardError

    _check_settings(settings)  # before any scoring
    rows = _input_rows(rows, dataset, style, data_dir)
    checked, objs, order, data, subset = _prepare(rows, metrics, style, data_dir, limit)
    notes: list[str] = []
    note = _noter(notes, log)
    if subset:
        note(f"evaluated on {subset}: every system's rows of them, {counted(len(checked), 'row')}")
    for warning in input_warnings(checked, any(m.needs_references for m in objs)):  # shown as warnings (the CLI: "styleeval evaluate: warning: ...")
        warnings.warn(warning, stacklevel=2)
        notes.append(str(warning))  # and kept in the report's notes
    cache = ScoresCache(cache_dir)
    scores = pd.DataFrame({"row": [r.row for r in checked], "system": [r.system for r in checked],
                           "source_id": [r.source_id for r in checked]})
    signatures: dict[str, str] = {}  # the row scores' (compared at the end of the run)
    system_signatures: dict[str, str] = {}  # what the report prints: the system score's too (corpus scorer)
    better: dict[str, bool] = {}
    corpus: dict[str, CorpusInputs] = {}
    not_computed: dict[str, str] = {}
    progress = shown.enabled(progress)
    metrics_bar = shown.bar(objs, desc="metrics", unit="metric", progress=progress)
    for metric in metrics_bar:
        metrics_bar.set_postfix_str(metric.label)  # shown while its model loads, before its rows' bar
        try:
            # "loading model ..." where a metric's model loads (torch, weights); advice as a metric spec takes it
            with shown.watched(progress), advising("spec", metric.name):
                signatures[metric.label] = str(metric.signature)
                system_signatures[metric.label] = str(metric.system_signature)
                values = score_dataset(metric, data, cache, progress=progress)
        except ShardError:
            raise
        except (UserError, BackendError) as err:  # weights, extras, a server, bad options; a bug keeps its traceback
            err = _input_row(err, checked, order)
            signatures.pop(metric.label, None)
            system_signatures.pop(metric.label, None)
            same = next((label for label, why in not_computed.items() if why == str(err)), None)
            not_computed[metric.label] = str(err)
            message = f"{metric.label}: not computed ({f'the same cause as {same}' if same else err})"
            if metric is objs[-1] and not better and not any(r.human for r in checked):
                notes.append(message)  # nothing was computed: the error that ends the run says it, once
            else:
                note(message)
            continue
        column = np.full(len(checked), np.nan)
        column[order] = values
        scores[metric.label] = column
        better[metric.label] = metric.higher_is_better
        if metric.aggregate == "corpus":
            corpus[metric.label] = CorpusInputs(metric, [r.source for r in checked], [r.rewrite for r in checked],
                                                [r.references for r in checked])
        missing = int(np.isnan(column).sum())
        if missing:
            why = " (no reference)" if metric.needs_references else ""
            note(f"{metric.label}: {missing} of {counted(len(column), 'row')} {'has' if missing == 1 else 'have'} no "
                 f"score{why}; {'it is' if missing == 1 else 'they are'} left out and counted")
    _check_unchanged(objs, signatures, cache, data.fingerprint)
    for column in sorted({k for r in checked for k in r.human}):
        scores[column] = [r.human.get(column, np.nan) for r in checked]
        better[column] = True
    if len(scores.columns) == 3:
        raise UserError(_nothing_computed(not_computed))
    report = compare_systems(scores, system_signatures, better, settings=settings, sort_by=sort_by, notes=notes,
                             log=log, corpus=corpus, progress=progress)
    report.not_computed = not_computed
    report.texts = pd.DataFrame({"source": [r.source for r in checked], "rewrite": [r.rewrite for r in checked],
                                 "style": [r.style for r in checked], "references": [r.references for r in checked]})
    report.subset = subset
    return report


def _input_rows(rows: Iterable[Mapping[str, Any]] | pd.DataFrame | None, dataset: str | None, style: str | None,
                data_dir: str | Path | None) -> Iterable[Mapping[str, Any]] | pd.DataFrame:
    """``rows``, or the rows of corpus ``dataset`` (:func:`~styleeval.systems.dataset.dataset_rows`): exactly one
    of them, and no ``style`` with a corpus (:func:`~styleeval.systems.dataset.check_input_choice`)."""
    from styleeval.systems.dataset import check_input_choice, dataset_rows

    check_input_choice(rows is not None, dataset, style)
    return rows if dataset is None else dataset_rows(dataset, data_dir)


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


def _prepare(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, metrics: Sequence[Any] | str, style: str | None,
             data_dir: str | Path | None,
             limit: int | None = None) -> tuple[list[SystemRow], list[Any], list[int], Any, str]:
    """The checked rows (those of the first ``limit`` sources: :func:`first_sources`), the metric objects (specs
    built here: unknown names and missing extras fail before the rows are read; metric objects as given), the
    scoring inputs: rows sorted by source, so that every system's rewrite of a source lands in one scoring call (one
    prompt, one tree), with ``order`` mapping them back; and what ``limit`` kept (``""``: every row)."""
    from styleeval.metrics import Metric, get_metric
    from styleeval.scoring import ScoringInputs

    if isinstance(metrics, str):  # "s_chrf,s_bleu", as on the command line
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    if not metrics:
        raise UserError("give at least one metric")
    objs = [m if isinstance(m, Metric) else get_metric(m, data_dir=None if data_dir is None else str(data_dir))
            for m in metrics]
    checked, subset = first_sources(check_rows(rows, style), limit)
    check_distinct_labels(metrics, objs)
    labels = [m.label for m in objs]
    check_labels(labels)
    order = sorted(range(len(checked)), key=lambda i: (checked[i].source_id, checked[i].source, checked[i].style))
    data = ScoringInputs(
        name="systems", ids=[str(checked[i].row) for i in order], sources=[checked[i].source for i in order],
        rewrites=[checked[i].rewrite for i in order], references=[checked[i].references for i in order],
        styles=[checked[i].style for i in order], source_ids=[checked[i].source_id for i in order],
    )
    return checked, objs, order, data, subset


def _input_row(err: Exception, checked: Sequence[SystemRow], order: Sequence[int]) -> Exception:
    """A :class:`~styleeval.errors.RowError` of the scoring inputs (rows sorted by source: :func:`_prepare`) as the
    error of its input row, named as the input names it (``outputs.jsonl, line 113``, or ``row 111`` in Python)."""
    if not isinstance(err, RowError) or not 0 <= err.row < len(order):
        return err
    row = checked[order[err.row]]
    return err.at(row.row, row.where)


def score_shard(
    rows: Iterable[Mapping[str, Any]] | pd.DataFrame,
    metrics: Sequence[str | Metric] | str,
    shard: Any,
    cache_dir: str | Path,
    *,
    style: str | None = None,
    progress: bool | None = None,
    data_dir: str | Path | None = None,
    limit: int | None = None,
) -> dict[str, int]:
    """Shard ``K/N`` of :func:`evaluate_systems`'s scoring, for job arrays: the LLM metrics' rows of every source
    ``j`` with ``j mod N == K`` are scored into the shard's own files in ``cache_dir`` (resumable); the other
    metrics are fast and left to the run that puts the shards together (``evaluate_systems`` with the same
    ``cache_dir`` and ``limit``, which names any shard not run or not finished). Returns metric label -> rows in this
    shard."""
    from styleeval import progress as shown
    from styleeval.files.shards import Shard
    from styleeval.scoring import ScoresCache, score_dataset

    progress = shown.enabled(progress)
    part = Shard.parse(shard)
    assert part is not None
    checked, objs, order, data, _ = _prepare(rows, metrics, style, data_dir, limit)
    cache = ScoresCache(cache_dir)
    done = {}
    for metric in objs:
        if getattr(metric, "incremental", False):
            try:
                with shown.watched(progress), advising("spec", metric.name):
                    values = score_dataset(metric, data, cache, progress=progress, shard=part)
            except RowError as err:
                raise _input_row(err, checked, order) from err
            done[metric.label] = int(np.isfinite(values).sum())
    return done


def _check_unchanged(metrics: Sequence[Any], signatures: Mapping[str, str], cache: Any, fingerprint: str) -> None:
    """Probe every shared backend again at the end of the run: a metric whose signature changed meanwhile (a server
    redeployed with other weights) is an error, and its cache entries of this run are removed (they may hold rows
    of either model)."""
    from styleeval.backends import verify_shared

    verify_shared()
    changed = [(m.label, signatures[m.label], str(m.signature)) for m in metrics
               if m.label in signatures and str(m.signature) != signatures[m.label]]
    if cache.root is not None:
        for _, old, _ in changed:
            cache.path(old, fingerprint).unlink(missing_ok=True)
            cache.partial_path(old, fingerprint).unlink(missing_ok=True)
    if changed:
        raise UserError("the model behind " + "; ".join(f"{label} changed during this run ({old} is now {new})"
                                                        for label, old, new in changed)
                        + "; its cached scores of this run were removed: run again for the model you want")


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


def _check_scores(scores: pd.DataFrame, labels: list[str]) -> None:
    """The rows :func:`compare_systems` compares: one per (system, source_id), finite or missing (NaN) scores."""
    if scores.empty or not labels:
        raise UserError("no rows to compare: give a frame with the columns row, system, source_id and at least one "
                        "metric column")
    missing = [c for c in ("system", "source_id") if c not in scores.columns]
    if missing:
        raise UserError(f"scores needs the columns {', '.join(missing)}")
    rows = scores["row"] if "row" in scores.columns else pd.Series(range(len(scores)), index=scores.index)
    doubled = scores.duplicated(["system", "source_id"], keep=False)
    if doubled.any():
        first = scores[doubled].iloc[0]
        same = rows[doubled & (scores["system"] == first["system"]) & (scores["source_id"] == first["source_id"])]
        raise UserError(f"system {first['system']!r} has {len(same)} rows for source {first['source_id']!r:.60} "
                        f"(rows {', '.join(map(str, same.tolist()[:5]))}); each system needs one row per source_id, "
                        "or every row would be paired with every other")
    limit = magnitude_limit(len(scores))
    for label in labels:
        values = pd.to_numeric(scores[label], errors="coerce").to_numpy(float)
        bad = np.flatnonzero(np.isinf(values))
        if len(bad):
            raise UserError(f"{label}: {len(bad)} infinite scores (rows {', '.join(map(str, rows.iloc[bad][:5]))})"
                            "; a mean or a test over them is meaningless: fix the scores, or make them missing "
                            "(NaN) to leave the rows out")
        big = np.flatnonzero(np.abs(values) > limit)
        if len(big):
            raise UserError(f"{label}: {len(big)} scores too large to average (rows "
                            f"{', '.join(map(str, rows.iloc[big][:5]))}: {values[big[0]]:.3g}): a mean or a test over "
                            f"{len(values)} rows would overflow (scores must be within +-{limit:.3g}); fix or rescale "
                            "the scores, or make them missing (NaN)")


def _check_settings(settings: Any) -> None:
    """``settings`` must be a :class:`~styleeval.stats.TestSettings` (whose fields are checked when it is made)."""
    if not isinstance(settings, TestSettings):
        raise UserError(f"settings must be a styleeval.stats.TestSettings (test, alpha, n_boot, trials, seed), got "
                        f"{settings!r:.60}")


def compare_systems(
    scores: pd.DataFrame,
    signatures: Mapping[str, str],
    higher_is_better: Mapping[str, bool] | None = None,
    *,
    settings: TestSettings = DEFAULT_SETTINGS,
    sort_by: str | None = None,
    notes: list[str] | None = None,
    log: Callable[[str], None] | None = None,
    corpus: Mapping[str, CorpusInputs] | None = None,
    progress: bool | None = None,
) -> SystemsReport:
    """The comparison part of :func:`evaluate_systems`, on per-row scores already computed: ``scores`` has the
    columns ``row``, ``system``, ``source_id`` and one column per metric (or ``human_*`` rating), one row per
    (system, source_id) and no infinite or overflowing score (``UserError`` naming the rows otherwise).

    Per metric, systems are compared on the sources every scored system has (a note names what is left out). A
    system's ``score`` is the mean of its row scores, or for metrics in ``corpus`` sacrebleu's corpus score of its
    rewrites (CI: bootstrap over rows recomputing it; paired tests on sacrebleu's draws, :func:`stats.compare_corpus`).
    Resamples and shuffles are drawn over the sources in the order they first appear in ``scores`` (sacrebleu's: the
    line order of its files), whatever the ids look like.
    Systems are ranked by score and clustered by WMT's rule on the Holm-adjusted p-values. When no pair of a metric
    can be significant (the smallest p its test can give, times Holm's factor for the number of pairs, exceeds
    ``alpha``), a note says so. ``settings``: the test, ``alpha``, ``n_boot``, ``trials`` and ``seed``
    (:class:`~styleeval.stats.TestSettings`). ``progress``: a bar over the metrics compared (``None``: where stderr
    is a terminal)."""
    from styleeval import progress as shown

    _check_settings(settings)
    notes = [] if notes is None else notes
    corpus = dict(corpus or {})
    labels = [c for c in scores.columns if c not in ("row", "system", "source_id")]
    _check_scores(scores, labels)
    better = {c: True for c in labels}
    better.update(higher_is_better or {})
    signatures = dict(signatures)
    note = _noter(notes, log)
    sort_by = sort_by or labels[0]
    if sort_by not in labels:
        raise UserError(f"sort_by (--sort-by) {sort_by!r} is not among the metrics ({', '.join(labels)})")

    systems = sorted(scores["system"].unique())
    if len(systems) == 1:
        note(f"only one system ({systems[0]}): nothing to compare, no pairs")
    coverage = coverage_of(scores)
    if coverage.cut:
        note(coverage.note())
    appearance = _first_appearance(scores)
    system_rows, pair_rows, aggregates = [], [], {}
    test_signatures: dict[str, str] = {}
    for label in shown.bar(labels, desc="comparing systems", unit="metric", progress=progress):
        inputs = corpus.get(label)
        aggregates[label] = "corpus" if inputs is not None else "mean"
        per_system = {s: _in_input_order(part, appearance)  # every system's rows in one source order
                      for s, part in _shared_sources(scores, label, systems, coverage, note).items()}
        n = len(next(iter(per_system.values()))) if per_system else 0
        pairs = list(itertools.combinations(per_system, 2))
        if not n:
            for a, b in pairs:
                note(f"{label}: systems {a} and {b} share no scored source; not paired")
            pairs = []
        comparison = _comparison(label, inputs, per_system, pairs, n, settings)
        system_rows += [_system_row(scores, label, s, per_system.get(s), comparison, aggregates[label], note)
                        for s in systems]
        metric_pairs = [_pair_row(label, a, b, per_system[a], per_system[b], comparison) for a, b in pairs]
        for pair, adjusted in zip(metric_pairs, stats.holm([p["p"] for p in metric_pairs])):
            pair["p_adjusted"] = adjusted
            pair["significant"] = bool(adjusted <= settings.alpha)
        if metric_pairs:
            test_signatures[label] = str(stats.paired_test_signature(
                settings.test, aggregates[label], settings.trials, settings.n_boot, settings.seed,
                exact=2**n <= settings.trials))
            floor = min(r.p_min for r in comparison.pairs.values())
            _note_out_of_reach(label, n, len(metric_pairs), floor, settings, note)
        pair_rows += metric_pairs
    systems_frame = pd.DataFrame(system_rows, columns=SYSTEM_COLUMNS[:-1])
    pairs_frame = pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)
    report = SystemsReport(systems_frame, pairs_frame, scores, signatures, better, notes, settings.test,
                           settings.alpha, sort_by,
                           pd.DataFrame(), aggregates, test_signatures, coverage=coverage)
    clusters = {m: _clusters(report, m) for m in labels}
    systems_frame["cluster"] = [clusters[m].get(s, np.nan) for s, m in zip(systems_frame["system"],
                                                                           systems_frame["metric"])]
    report.agreement = _agreement(report, corpus)
    return report


def _first_appearance(scores: pd.DataFrame) -> np.ndarray:
    """Each row's source as the rank of its first appearance in ``scores``: the order the input gives the sources,
    which is sacrebleu's (the line order of its files), whatever the ids look like ("10" sorts before "2")."""
    return pd.factorize(scores["source_id"], use_na_sentinel=False)[0]


def _in_input_order(part: pd.DataFrame, appearance: np.ndarray) -> pd.DataFrame:
    """A system's rows (with ``_i``, their positions in ``scores``) in the order their sources first appear: every
    resample and shuffle is drawn over the sources in this order."""
    return part.iloc[np.argsort(appearance[part["_i"].to_numpy()], kind="stable")]


def _shared_sources(scores: pd.DataFrame, label: str, systems: list[str], coverage: Coverage,
                    note: Callable[[str], None]) -> dict[str, pd.DataFrame]:
    """Each scored system's rows of ``label`` (columns system, source_id, the score, ``_i`` = the row's position in
    ``scores``) on the sources every scored system has. Where the metric's own cut is not the input's (``coverage``,
    said once for every metric), a note names the systems that cause it: those with no score on sources that other
    scored systems have."""
    frame = scores[["system", "source_id", label]].assign(_i=np.arange(len(scores)))
    frame = frame[pd.to_numeric(frame[label], errors="coerce").notna()]
    source = pd.factorize(frame["source_id"])[0]  # sources as integers: set operations at numpy speed
    of_system = {s: (frame["system"] == s).to_numpy() for s in systems}
    scored = [s for s in systems if of_system[s].any()]
    for s in sorted(set(systems) - set(scored)):
        note(f"{label}: system {s} has no scored row; it is not ranked or paired")
    common = functools.reduce(np.intersect1d, (source[of_system[s]] for s in scored)) if scored \
        else np.empty(0, dtype=source.dtype)
    shared = np.isin(source, common)
    if (~shared).any() and len(common) != coverage.shared:
        lacking = lacking_sources(frame["system"].astype(str).to_numpy(), frame["source_id"].astype(str).to_numpy(),
                                  scored)
        total = len(np.unique(source))
        who = ", ".join(f"{s} has none on {len(m)}{f' of {total}' if not k else ''} ("
                        f"{', '.join(repr(e) for e in m[:Coverage.EXAMPLES])}{', ...' if len(m) > Coverage.EXAMPLES else ''})"
                        for k, (s, m) in enumerate(lacking.items()))
        note(f"{label}: scores are missing on some sources: {who}; {label} compares the systems on the "
             f"{len(common)} of {counted(total, 'scored source')} that every scored system has: "
             f"{int(shared.sum())} of {counted(len(frame), 'scored row')}")
    return {s: frame[of_system[s] & shared] for s in scored}


def _comparison(label: str, inputs: CorpusInputs | None, per_system: Mapping[str, pd.DataFrame],
                pairs: list[tuple[str, str]], n: int, settings: TestSettings) -> stats.CorpusComparison:
    """Every system's score of ``label`` with its bootstrap CI and the tests of ``pairs``, one structure whatever
    the aggregate: a corpus metric's from its rows' statistics (:func:`_corpus_comparison`), a mean's (a human
    rating's too) by the tests of a mean (:func:`_mean_comparison`; their draws are not sacrebleu's)."""
    if inputs is None:
        return _mean_comparison(label, per_system, pairs, n, settings)
    return _corpus_comparison(inputs, per_system, pairs, settings) if n else stats.CorpusComparison({}, {})


def _corpus_comparison(inputs: CorpusInputs, per_system: Mapping[str, pd.DataFrame], pairs: list[tuple[str, str]],
                       settings: TestSettings) -> stats.CorpusComparison:
    """Corpus scores, CIs and paired tests of a corpus metric: each system's sentence statistics read once, every
    system resampled and shuffled in one matrix product (:func:`stats.compare_corpus` with the metric's score)."""
    statistics = {s: inputs.statistics(part["_i"]) for s, part in per_system.items()}
    return stats.compare_corpus(inputs.metric.score, statistics, pairs, test=settings.test, trials=settings.trials,
                                n_boot=settings.n_boot, seed=settings.seed)


def _mean_comparison(label: str, per_system: Mapping[str, pd.DataFrame], pairs: list[tuple[str, str]], n: int,
                     settings: TestSettings) -> stats.CorpusComparison:
    """Means of the row scores with their bootstrap CIs, and each pair's test of a difference of means (the
    sign-flip test or the paired bootstrap of the mean difference; ``p_min``: :func:`_mean_test_floor`)."""
    systems = {}
    for system, part in per_system.items():
        values = part[label].to_numpy(float)
        low, high = stats.bootstrap_mean_ci(values, n_boot=settings.n_boot, seed=settings.seed)
        systems[system] = (float(values.mean()) if len(values) else math.nan, low, high)
    floor = _mean_test_floor(n, settings) if pairs else math.nan
    results = {}
    for a, b in pairs:
        va, vb = per_system[a][label].to_numpy(float), per_system[b][label].to_numpy(float)
        low, high, p_boot = stats.paired_bootstrap_mean(va, vb, n_boot=settings.n_boot, seed=settings.seed)
        p = stats.approximate_randomization(va, vb, trials=settings.trials, seed=settings.seed) \
            if settings.test == "ar" else p_boot
        results[(a, b)] = stats.PairResult(systems[a][0], systems[b][0], float((va - vb).mean()), low, high, p, floor)
    return stats.CorpusComparison(systems, results)


def _system_row(scores: pd.DataFrame, label: str, system: str, part: pd.DataFrame | None,
                comparison: stats.CorpusComparison, aggregate: str, note: Callable[[str], None]) -> dict[str, Any]:
    """One line of ``systems.csv``: the system's score (corpus or mean) with its bootstrap CI."""
    values = part[label].to_numpy(float) if part is not None else np.array([])
    score, low, high = comparison.systems.get(system, (math.nan, math.nan, math.nan))
    if len(values) == 1:
        note(f"{label}: system {system} has one scored row; its confidence interval is undefined")
    return {"system": system, "metric": label, "aggregate": aggregate,
            "n": len(values), "n_missing": int((scores["system"] == system).sum()) - len(values), "score": score,
            "mean": float(values.mean()) if len(values) else math.nan, "ci_low": low, "ci_high": high}


def _pair_row(label: str, a: str, b: str, part_a: pd.DataFrame, part_b: pd.DataFrame,
              comparison: stats.CorpusComparison) -> dict[str, Any]:
    """One line of ``pairs.csv`` (before Holm; the two systems' rows in the same source order)."""
    va, vb = part_a[label].to_numpy(float), part_b[label].to_numpy(float)
    pair = {"metric": label, "system_a": a, "system_b": b, "n_pairs": len(va), "mean_a": float(va.mean()),
            "mean_b": float(vb.mean())}
    result = comparison.pairs[(a, b)]
    pair.update({k: getattr(result, k) for k in ("score_a", "score_b", "delta", "ci_low", "ci_high", "p")})
    return pair


def _mean_test_floor(n: int, settings: TestSettings) -> float:
    """The smallest p the test of a mean-aggregated metric can give on ``n`` paired rows, whatever they hold."""
    if settings.test == "ar":
        return stats.sign_flip_floor(n, settings.trials, settings.seed)
    return 2 / (settings.n_boot + 1)  # stats.paired_bootstrap_mean's p with no resample on the other side


def _note_out_of_reach(label: str, n: int, pairs: int, floor: float, settings: TestSettings,
                       note: Callable[[str], None]) -> None:
    """The note when no pair of a metric can be significant: the smallest p its test can give with ``n`` paired
    sources (``floor``), times Holm's factor for ``pairs`` pairs (the smallest adjusted p is at least that), exceeds
    alpha. One rule for every statistic (mean, corpus, human ratings; AR and bootstrap)."""
    adjusted = min(1.0, pairs * floor)
    if adjusted > settings.alpha:
        holm = f" ({pairs} pairs: {adjusted:.3g} after Holm's adjustment)" if pairs > 1 else ""
        note(f"{label}: with {n} paired sources the {settings.test} test cannot give p below {floor:.3g}{holm}, "
             f"above alpha = {settings.alpha:g}: no pair can be significant")


def _nothing_computed(not_computed: dict[str, str]) -> str:
    """The error of a run where no metric could be computed: each metric and why it was not (a cause shared by
    several metrics said once, after them); the run's other notes and warnings are not causes, and are shown where
    they are shown otherwise."""
    causes: dict[str, list[str]] = {}
    for label, why in not_computed.items():
        causes.setdefault(why, []).append(label)
    said = "; ".join(f"{', '.join(labels)}: not computed ({why})" for why, labels in causes.items())
    return f"no metric could be computed: {said}" if said else "no metric could be computed"


def _noter(notes: list[str], log: Callable[[str], None] | None) -> Callable[[str], None]:
    """``note(message)``: kept in ``notes`` and passed to ``log`` as it happens."""
    def note(message: str) -> None:
        notes.append(message)
        if log is not None:
            log(message)

    return note


def _clusters(report: SystemsReport, metric: str) -> dict[str, int]:
    """WMT's clusters of the ranking: ``better(a, b)`` when the pair is significant and its difference favours a."""
    sign = 1.0 if report.higher_is_better.get(metric, True) else -1.0
    better = set()
    for r in report.pairs.itertuples():
        if r.metric == metric and r.significant:
            better.add((r.system_a, r.system_b) if sign * r.delta > 0 else (r.system_b, r.system_a))
    return stats.significance_clusters(report.ranking(metric), lambda a, b: (a, b) in better)


AGREEMENT_COLUMNS = ["human", "metric", "aggregate", "system_score", "negated", "n_systems", "n_rows", "pearson", "pairwise_accuracy",
                     "left_out", "n_systems_own", "pearson_own", "pairwise_accuracy_own"]


def _agreement(report: SystemsReport, corpus: Mapping[str, CorpusInputs]) -> pd.DataFrame:
    """System-level agreement of every metric with every human dimension, over like sets: per human dimension, every
    metric on the same systems and rows, those where every metric (that scores any row) and the rating have a
    score, on the sources every such system has (``n_systems``, ``n_rows``; ``left_out`` names the systems left out
    and why). A system's score there is what the systems table computes (``aggregate``: sacrebleu's corpus score or
    the mean of the row scores), recomputed on those rows where they are fewer than the table's; ``pearson`` is
    Pearson's r of the system scores, ``pairwise_accuracy`` the share of system pairs ordered as the humans order
    them (human ties as WMT's Agreement); ``system_score`` names the statistic (``corpus BLEU``, ``mean sentence
    BLEU``, ``mean row score``: :func:`~styleeval.labels.system_statistic`). Lower-is-better metrics are negated (``negated``). ``*_own``: each metric
    on its own systems and rows (the systems table's scores), comparable across metrics only where
    ``n_systems_own`` equals ``n_systems``."""
    humans = [m for m in report.metrics if m.startswith(HUMAN_PREFIX)]
    scored = set(report.systems.loc[report.systems["n"] > 0, "metric"])
    metrics = [m for m in report.signatures if m in scored]
    own = report.systems.pivot(index="system", columns="metric", values="score")
    rows = []
    for human in humans:
        mask, left_out = _like_rows(report.scores, [*metrics, human])
        positions = np.flatnonzero(mask)
        human_scores = _scores_on(report.scores, human, positions, None, own)
        for metric in metrics:
            sign = 1.0 if report.higher_is_better.get(metric, True) else -1.0
            values = _scores_on(report.scores, metric, positions, corpus.get(metric), own)
            r, accuracy = _system_agreement(human_scores, sign * values)
            both = own[[human, metric]].dropna()
            r_own, accuracy_own = _system_agreement(both[human], sign * both[metric])
            aggregate = report.aggregates.get(metric, "mean")
            rows.append({"human": human, "metric": metric, "aggregate": aggregate,
                         "system_score": system_statistic(aggregate, report.signatures.get(metric, "")).label,
                         "negated": sign < 0, "n_systems": len(human_scores), "n_rows": int(mask.sum()),
                         "pearson": r, "pairwise_accuracy": accuracy, "left_out": left_out,
                         "n_systems_own": len(both), "pearson_own": r_own, "pairwise_accuracy_own": accuracy_own})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _like_rows(scores: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, str]:
    """The rows where every one of ``columns`` has a score, on the sources every system with such a row has; and
    which systems that leaves out, and why (``"reference (no r_chrf score)"``; ``""``: none)."""
    values = scores[columns].apply(pd.to_numeric, errors="coerce")
    complete = values.notna().all(axis=1).to_numpy()
    systems = scores["system"].to_numpy()
    kept = sorted(set(systems[complete]))
    per_source = pd.Series(systems[complete]).groupby(scores["source_id"].to_numpy()[complete]).nunique()
    common = per_source.index[per_source.to_numpy() == len(kept)]
    mask = complete & scores["source_id"].isin(common).to_numpy()
    reasons = []
    for system in sorted(set(systems) - set(kept)):
        mine = values[systems == system]
        unscored = [c for c in columns if mine[c].isna().all()]
        reasons.append(f"{system} (no {', '.join(unscored)} score)" if unscored else
                       f"{system} (no row that every metric and the rating score)")
    return mask, ", ".join(reasons)


def _scores_on(scores: pd.DataFrame, metric: str, positions: np.ndarray, inputs: CorpusInputs | None,
               own: pd.DataFrame) -> pd.Series:
    """Each system's score of ``metric`` on the rows at ``positions`` of ``scores``: the mean of their row scores, or
    the corpus score: the systems table's where its rows are these (the rows :func:`_shared_sources` compares),
    else recomputed on these."""
    systems = scores["system"].to_numpy()
    if inputs is None:
        values = pd.to_numeric(scores[metric], errors="coerce").to_numpy(float)
        return pd.Series(values[positions]).groupby(systems[positions]).mean()
    table_rows = np.flatnonzero(_like_rows(scores, [metric])[0])
    out = {}
    for system in sorted(set(systems[positions])):
        rows = positions[systems[positions] == system]
        if np.array_equal(rows, table_rows[systems[table_rows] == system]):
            out[system] = float(own.loc[system, metric])
        else:
            out[system] = stats.score_of_rows(inputs.metric.score, inputs.statistics(rows))
    return pd.Series(out, dtype=float)


def _system_agreement(human: pd.Series, metric: pd.Series) -> tuple[float, float]:
    """Pearson's r of two system -> score series (NaN below 3 systems) and their pairwise accuracy."""
    both = pd.concat([human.rename("h"), metric.rename("m")], axis=1).dropna()
    r = stats.pearson(both["h"], both["m"]) if len(both) > 2 else math.nan
    return r, stats.pairwise_accuracy(both["h"].to_dict(), both["m"].to_dict())
