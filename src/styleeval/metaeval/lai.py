"""Lai et al. (2022)'s analyses of formality-transfer metrics, usable on any rated corpus with systems.

Definitions follow their scripts (``cal_iaa.py``, ``cal_corr_*.py`` of ``laihuiyuan/eval-formality-transfer``):

- inter-annotator agreement (their Table 1): Pearson between the two raters' raw ratings, per survey and aspect,
  pooled over aspects per survey ("overall"), and per aspect over all rows;
- segment level: Kendall's tau-like **per input**, over the systems' outputs of that input (human ties skipped,
  metric ties discordant), then **averaged over inputs**; inputs whose outputs all tie are skipped. This differs from
  the WMT17 pooled form (one tau over all pairs of all inputs), which weights inputs by their number of untied pairs
  (``kendall_tau_like(..., aggregate="pooled")``);
- system level: Pearson over the per-system means (human: mean of the two raters);
- top-N / last-N (their Figure 3): the tau-like over the N systems with the highest / lowest human mean;
- per direction (informal->formal, formal->informal; their Table 5 for fluency); metrics where lower is better
  (WMD, perplexity) are reported as absolute values, as in their tables;
- Table 4 (reference-based metrics only: ``r_bleu``, ``r_chrf``, ``r_rouge*``, ``r_cosine`` ...): the metric scored
  against the first reference and against each other reference of the four (``lai_formality`` with
  ``references=4``), compared with the same per-input tau-like (the first-reference scores in the role of the human
  scores) over the eight systems; and a multi-reference rows (``table="multi-reference"``): the metric against the
  first k references (k = 1..4) correlated with the human content ratings at both levels.

:func:`lai_analysis` returns one row per figure with the columns of ``lai.csv``: ``table``, ``metric``,
``dimension``, ``subset``, ``level`` (``system``/``segment``), ``statistic``, ``n``, ``value``, ``p``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from styleeval import progress as shown
from styleeval.corpora import load_corpus
from styleeval.corpora.lai_scores import DIMENSION
from styleeval.errors import UserError
from styleeval.escaping import md_cell, spreadsheet_safe
from styleeval.metaeval.data import RatedData
from styleeval.metaeval.plots import plot_lai_figures
from styleeval.metrics import Metric, get_metric
from styleeval.scoring import score_dataset
from styleeval.stats.correlation import kendall_tau_like

LAI_COLUMNS = ["table", "metric", "dimension", "subset", "level", "statistic", "n", "value", "p"]
ASPECTS = ("style", "content", "fluency")
SURVEY_GROUPS = {"1": "survey 1", "2": "survey 2", "4": "survey 3"}  # other ids (3, 5, 6): survey 4, as cal_iaa.py


def lai_frame(data: Any) -> pd.DataFrame:
    """One row per rated system output (references left out): system, input line, survey, direction, each rater's
    ratings per aspect and their means. ``data`` is the ``lai_formality`` ``datasets.Dataset`` (or records)."""
    rows = []
    for r in data:
        if r["is_reference_rewrite"]:
            continue
        extra = json.loads(r["extra"]) if isinstance(r["extra"], str) else (r["extra"] or {})
        row = {"id": r["id"], "system": r["system"], "line": int(r["source_id"]),
               "survey": SURVEY_GROUPS.get(str(extra.get("survey_id")), "survey 4"),
               "direction": extra.get("direction", "")}
        for aspect in ASPECTS:
            scores = r[f"{aspect}_scores"]
            row[f"{aspect}-1"], row[f"{aspect}-2"] = scores[0], scores[1]
            row[aspect] = (scores[0] + scores[1]) / 2
        rows.append(row)
    return pd.DataFrame(rows)


def _record(table, metric, dimension, subset, level, statistic, n, value, p=math.nan) -> dict[str, Any]:
    return {"table": table, "metric": metric, "dimension": dimension, "subset": subset, "level": level,
            "statistic": statistic, "n": int(n), "value": float(value), "p": float(p)}


def inter_annotator_agreement(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Table 1: Pearson between rater 1 and rater 2 per survey x aspect, per survey overall, per aspect overall."""
    out = []
    for survey in sorted(frame["survey"].unique()):
        sub = frame[frame["survey"] == survey]
        for aspect in ASPECTS:
            r, p = stats.pearsonr(sub[f"{aspect}-1"], sub[f"{aspect}-2"])
            out.append(_record(1, "human", aspect, survey, "segment", "pearson", len(sub), r, p))
        a = np.concatenate([sub[f"{x}-1"] for x in ASPECTS])
        b = np.concatenate([sub[f"{x}-2"] for x in ASPECTS])
        r, p = stats.pearsonr(a, b)
        out.append(_record(1, "human", "overall", survey, "segment", "pearson", len(sub), r, p))
    for aspect in ASPECTS:
        r, p = stats.pearsonr(frame[f"{aspect}-1"], frame[f"{aspect}-2"])
        out.append(_record(1, "human", aspect, "all", "segment", "pearson", len(frame), r, p))
    return out


def segment_tau(frame: pd.DataFrame, dimension: str, values: Sequence[float]) -> tuple[float, int]:
    """Lai's segment-level tau-like: per input line over the systems' outputs, averaged over lines."""
    tau, _ = kendall_tau_like(frame[dimension].to_numpy(), np.asarray(values, float), frame["line"].to_numpy(),
                              aggregate="mean")
    return tau, len(frame)


def system_r(frame: pd.DataFrame, dimension: str, values: Sequence[float]) -> tuple[float, float, int]:
    """Pearson over the per-system means."""
    df = pd.DataFrame({"system": frame["system"].to_numpy(), "h": frame[dimension].to_numpy(),
                       "m": np.asarray(values, float)})
    means = df.groupby("system", sort=False).mean()
    r, p = stats.pearsonr(means["m"], means["h"])
    return float(r), float(p), len(means)


def _both_levels(table, name, dimension, subset, frame, values, absolute=False) -> list[dict[str, Any]]:
    r, p, n_sys = system_r(frame, dimension, values)
    tau, n = segment_tau(frame, dimension, values)
    if absolute:
        r, tau = abs(r), abs(tau)
    return [_record(table, name, dimension, subset, "system", "pearson", n_sys, r, p),
            _record(table, name, dimension, subset, "segment", "tau_like", n, tau)]


def top_last_n(frame: pd.DataFrame, dimension: str, values: Sequence[float], name: str,
               sizes: Sequence[int] = (8, 7, 6, 5, 4, 3)) -> list[dict[str, Any]]:
    """Figure 3: tau-like over the top-N and last-N systems sorted by their human mean."""
    values = np.asarray(values, float)
    order = frame.groupby("system")[dimension].mean().sort_values(ascending=False).index.tolist()
    out = []
    for n in sizes:
        if n > len(order):
            continue
        for which, systems in (("top", order[:n]), ("last", order[-n:])):
            mask = frame["system"].isin(systems).to_numpy()
            tau, rows = segment_tau(frame[mask], dimension, values[mask])
            out.append(_record("figure 3", name, dimension, f"{which}-{n}", "segment", "tau_like", rows, tau))
    return out


def reference_agreement(frame: pd.DataFrame, name: str, by_reference: Sequence[Sequence[float]],
                        multi: Sequence[Sequence[float]] | None = None) -> list[dict[str, Any]]:
    """Table 4: the per-input tau-like between a metric's scores against reference 1 and against reference k
    (``by_reference[k - 1]``, each in ``frame`` row order); with ``multi`` (scores against the first k references),
    the human-content correlations of each k ("multi-reference" rows, subsets ``refs 1-k``)."""
    first = np.asarray(by_reference[0], float)
    lines = frame["line"].to_numpy()
    out = []
    for k, values in enumerate(by_reference[1:], start=2):
        tau, _ = kendall_tau_like(first, np.asarray(values, float), lines, aggregate="mean")
        out.append(_record(4, name, "content", f"reference {k}", "segment", "tau_like", len(frame), tau))
    for k, values in enumerate(multi or [], start=1):
        out += _both_levels("multi-reference", name, "content", f"refs 1-{k}", frame, values)
    return out


def lai_analysis(frame: pd.DataFrame, metrics: Mapping[str, tuple[str, Mapping[str, float], bool]],
                 iaa: bool = True) -> pd.DataFrame:
    """Every table: ``metrics`` maps a name to (dimension, {row id: score}, lower_is_better).

    Style metrics get Table 2 (system r, segment tau-like over all outputs) and Figure 3 (top/last-N); content metrics
    Figure 4 (the same two levels; ``-ref`` names are the reference-based variants); fluency metrics Table 5 (per
    direction, absolute values). Every metric also gets per-direction rows (subset = the direction).
    """
    rows = inter_annotator_agreement(frame) if iaa else []
    for name, (dimension, scores, lower) in metrics.items():
        missing = [i for i in frame["id"] if i not in scores]
        if missing:
            raise UserError(f"{name}: no score for {len(missing)} rows, e.g. {missing[0]!r}")
        values = np.array([scores[i] for i in frame["id"]], float)
        table = {"style": 2, "content": "figure 4", "fluency": 5}[dimension]
        if dimension != "fluency":
            rows += _both_levels(table, name, dimension, "all", frame, values, absolute=lower)
        if dimension == "style":
            rows += top_last_n(frame, dimension, values if not lower else -values, name)
        for direction in sorted(frame["direction"].unique()):
            mask = (frame["direction"] == direction).to_numpy()
            rows += _both_levels(table if dimension == "fluency" else "directions", name, dimension, direction,
                                 frame[mask], values[mask], absolute=lower)
    return pd.DataFrame(rows, columns=LAI_COLUMNS)


#: Table 4 of Lai et al. (2022) as printed (reference 2, 3, 4 rows). The column header did not survive in the paper's
#: text; the order below is the one of their Figure 4 without COMET-w, the order that their Table 3 also uses.
TABLE4 = {"bleu": (0.28, 0.25, 0.37), "chrf": (0.37, 0.41, 0.41), "rouge-1": (0.33, 0.37, 0.46),
          "rouge-2": (0.10, 0.12, 0.24), "rouge-l": (0.36, 0.35, 0.46), "wmd": (0.46, 0.47, 0.49),
          "meteor": (0.21, 0.34, 0.31), "bertscore": (0.59, 0.60, 0.60), "bleurt": (0.61, 0.60, 0.56),
          "comet": (0.61, 0.55, 0.62)}
#: Our metrics that compute Lai's Table 4 columns (r_meteor: NLTK's METEOR, the Pauli et al. variant; r_bertscore,
#: r_bleurt, rs_comet need weights: they run through evaluate modules where those can be loaded).
TABLE4_METRICS = {"r_bleu": "bleu", "r_chrf": "chrf", "r_rouge1": "rouge-1", "r_rouge2": "rouge-2",
                  "r_rougel": "rouge-l", "r_meteor": "meteor", "r_bertscore": "bertscore", "r_bleurt": "bleurt",
                  "rs_comet": "comet"}


def published() -> list[dict[str, Any]]:
    """Lai et al.'s published figures that :func:`lai_analysis` reproduces (Tables 1, 2, 4 and 5). Table 4 rows carry
    our metric name where we have one (``r_bleu`` for their BLEU ...), else ``lai:<column>``."""
    t1 = {"content": (0.90, 0.84, 0.83, 0.81, 0.86), "style": (0.45, 0.48, 0.68, 0.62, 0.52),
          "fluency": (0.71, 0.63, 0.70, 0.63, 0.66), "overall": (0.70, 0.66, 0.72, 0.68, None)}
    out = []
    for aspect, values in t1.items():
        for subset, v in zip(("survey 1", "survey 2", "survey 3", "survey 4", "all"), values, strict=True):
            if v is not None:
                out.append({"table": 1, "metric": "human", "dimension": aspect, "subset": subset,
                            "level": "segment", "statistic": "pearson", "published": v})
    for metric, (r, tau) in {"lai:r-pt16": (0.93, 0.33), "lai:c-pt16": (0.93, 0.39),
                             "lai:c-gyafc": (0.97, 0.42)}.items():
        out.append({"table": 2, "metric": metric, "dimension": "style", "subset": "all", "level": "system",
                    "statistic": "pearson", "published": r})
        out.append({"table": 2, "metric": metric, "dimension": "style", "subset": "all", "level": "segment",
                    "statistic": "tau_like", "published": tau})
    for subset, (r, tau) in {"informal->formal": (0.96, 0.52), "formal->informal": (0.65, 0.35)}.items():
        out.append({"table": 5, "metric": "lai:ppl", "dimension": "fluency", "subset": subset, "level": "system",
                    "statistic": "pearson", "published": r})
        out.append({"table": 5, "metric": "lai:ppl", "dimension": "fluency", "subset": subset, "level": "segment",
                    "statistic": "tau_like", "published": tau})
    ours = {v: k for k, v in TABLE4_METRICS.items()}
    for column, values in TABLE4.items():
        for k, v in zip((2, 3, 4), values, strict=True):
            out.append({"table": 4, "metric": ours.get(column, f"lai:{column}"), "dimension": "content",
                        "subset": f"reference {k}", "level": "segment", "statistic": "tau_like", "published": v})
    return out


def run_lai(metrics: Sequence[Any], dimension: str = "style", data_dir: str | None = None, cache: Any = None,
            out_dir: str | None = None, progress: bool | None = None, plots: bool = True,
            figure_format: str = "png") -> pd.DataFrame:
    """Score ``metrics`` (specs or metric objects) on ``lai_formality`` and run :func:`lai_analysis`; with ``out_dir`` write ``lai.csv``,
    ``lai.md`` (every published number beside ours) and, with ``plots``, ``lai_figure3.png`` / ``lai_figure4.png`` (or
    ``.pdf`` / ``.svg``: ``figure_format``; the paths of those written in ``result.attrs["figures"]``).
    ``lai:<score>`` metrics take their own dimension (Lai's files say which aspect each score is for); the others take
    ``dimension``. Reference-based metrics also get Table 4 and the
    multi-reference rows (:func:`reference_agreement`), scored on the corpus with its four references."""
    ds = load_corpus("lai_formality", data_dir)
    frame = lai_frame(ds)
    data = RatedData.from_rows(ds, "lai_formality")
    wanted: dict[str, tuple[str, dict[str, float], bool]] = {}
    referenced = []
    for spec in metrics:
        metric = spec if isinstance(spec, Metric) else get_metric(spec, data_dir=data_dir)
        if metric.needs_references and not metric.name.startswith(("lai:", "precomputed")):
            referenced.append(metric)
        values = score_dataset(metric, data, cache, progress=shown.enabled(progress))
        dim = DIMENSION.get(metric.name.removeprefix("lai:"), dimension) if metric.name.startswith("lai:") else dimension
        wanted[metric.label] = (dim, dict(zip(data.ids, values.tolist(), strict=True)), not metric.higher_is_better)
    result = lai_analysis(frame, wanted)
    if referenced:
        four = RatedData.from_rows(load_corpus("lai_formality", data_dir, references=4), "lai_formality")
        position = {row_id: i for i, row_id in enumerate(four.ids)}
        rows = [position[row_id] for row_id in frame["id"]]
        sources = [four.sources[i] for i in rows]
        rewrites = [four.rewrites[i] for i in rows]
        refs = [four.references[i] for i in rows]
        extra = []
        for metric in referenced:  # against reference 1: the scores the analysis above already has
            first = [wanted[metric.label][1][row_id] for row_id in frame["id"]]
            single = [first, *(metric.compute(sources, rewrites, [[r[k]] for r in refs]) for k in (1, 2, 3))]
            multi = [single[0], *(metric.compute(sources, rewrites, [r[:k] for r in refs]) for k in (2, 3, 4))]
            extra += reference_agreement(frame, metric.label, single, multi)
        result = pd.concat([result, pd.DataFrame(extra, columns=LAI_COLUMNS)], ignore_index=True)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)

        spreadsheet_safe(result).to_csv(out / "lai.csv", index=False, float_format="%.6g")
        (out / "lai.md").write_text(comparison_markdown(result), encoding="utf-8")
        figures = []
        if plots:
            figures = plot_lai_figures(result, out, figure_format)
        result.attrs["figures"] = [str(path) for path in figures]
    return result


def comparison_markdown(result: pd.DataFrame) -> str:
    """Every published number of Tables 1, 2, 4 and 5 beside ours (rounded to 2 decimals), then all our rows; every
    cell of both tables through :func:`~styleeval.escaping.md_cell` (``informal->formal`` alike in both)."""
    keys = ["table", "metric", "dimension", "subset", "level", "statistic"]
    pub = pd.DataFrame(published())
    merged = pub.merge(result, on=keys, how="left")
    lines = ["# Lai et al. (2022) analyses", "", "| table | metric | aspect | subset | level | statistic | n | "
             "published | ours | diff |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in merged.itertuples():
        ours = "–" if not np.isfinite(r.value) else f"{r.value:.2f}"
        diff = "–" if not np.isfinite(r.value) else f"{r.value - r.published:+.2f}"
        n = "–" if not np.isfinite(r.n) else str(int(r.n))
        cells = [md_cell(v) for v in (r.table, r.metric, r.dimension, r.subset, r.level, r.statistic)]
        lines.append(f"| {' | '.join(cells)} | {n} | {r.published:.2f} | {ours} | {diff} |")
    lines += ["", "## All numbers", "", "| " + " | ".join(LAI_COLUMNS) + " |", "|" + "---|" * len(LAI_COLUMNS)]
    for r in result.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:.4f}" if isinstance(v, float) else md_cell(v) for v in r) + " |")
    return "\n".join(lines) + "\n"
