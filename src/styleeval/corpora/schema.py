"""The common long schema of the rating corpora, and the schema of STEL.

One row per rated rewrite. Per-rater score lists keep the original scale and are position-aligned with
``rater_ids`` where rater ids exist. ``extra`` holds the dataset-specific fields as a JSON string (keys
sorted), so every rating corpus has identical :data:`RATING_FEATURES` and they concatenate with
``datasets.concatenate_datasets``. ``*_rescaled`` are the means mapped to [0, 1] with
``(mean - scale_min) / (scale_max - scale_min)``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from datasets import Dataset, Features, List, Value

ASPECTS = ("content", "style", "fluency")

RATING_FEATURES = Features(
    {
        "id": Value("string"),
        "dataset": Value("string"),
        "task": Value("string"),
        "target_style": Value("string"),
        "source_id": Value("string"),
        "source": Value("string"),
        "rewrite": Value("string"),
        "reference": List(Value("string")),
        "system": Value("string"),
        "is_reference_rewrite": Value("bool"),
        "content_scores": List(Value("float64")),
        "style_scores": List(Value("float64")),
        "fluency_scores": List(Value("float64")),
        "content_mean": Value("float64"),
        "style_mean": Value("float64"),
        "fluency_mean": Value("float64"),
        "content_rescaled": Value("float64"),
        "style_rescaled": Value("float64"),
        "fluency_rescaled": Value("float64"),
        "n_raters": Value("int32"),
        "rater_ids": List(Value("string")),
        "scale_min": Value("float64"),
        "scale_max": Value("float64"),
        "extra": Value("string"),
    }
)

STEL_FEATURES = Features(
    {
        "id": Value("string"),
        "component": Value("string"),
        "group": Value("string"),
        "anchor_1": Value("string"),
        "anchor_2": Value("string"),
        "sentence_1": Value("string"),
        "sentence_2": Value("string"),
        "correct_alternative": Value("int32"),
        "votes_correct": Value("int32"),
        "source_index": Value("int32"),
        "source_file": Value("string"),
    }
)


def _mean(values: Sequence[float] | None) -> float | None:
    return None if not values else math.fsum(values) / len(values)


def rating_row(
    *,
    id: str,
    dataset: str,
    task: str,
    target_style: str,
    source_id: str,
    source: str,
    rewrite: str,
    reference: list[str] | None,
    system: str,
    is_reference_rewrite: bool,
    content_scores: list[float] | None,
    style_scores: list[float] | None,
    fluency_scores: list[float] | None,
    n_raters: int,
    rater_ids: list[str] | None,
    scale_min: float,
    scale_max: float,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """One row of the long schema; the means and rescaled means are computed from the score lists."""
    row: dict[str, Any] = {
        "id": id,
        "dataset": dataset,
        "task": task,
        "target_style": target_style,
        "source_id": source_id,
        "source": source,
        "rewrite": rewrite,
        "reference": reference,
        "system": system,
        "is_reference_rewrite": is_reference_rewrite,
    }
    scores = {"content": content_scores, "style": style_scores, "fluency": fluency_scores}
    for aspect in ASPECTS:
        row[f"{aspect}_scores"] = scores[aspect]
    for aspect in ASPECTS:
        row[f"{aspect}_mean"] = _mean(scores[aspect])
    span = float(scale_max) - float(scale_min)
    for aspect in ASPECTS:
        mean = row[f"{aspect}_mean"]
        row[f"{aspect}_rescaled"] = None if mean is None else (mean - float(scale_min)) / span
    row.update(
        n_raters=n_raters,
        rater_ids=rater_ids,
        scale_min=float(scale_min),
        scale_max=float(scale_max),
        extra=json.dumps(extra, sort_keys=True, ensure_ascii=False),
    )
    return row


def rating_dataset(rows: list[dict[str, Any]]) -> Dataset:
    """A ``datasets.Dataset`` with :data:`RATING_FEATURES` from rows built by :func:`rating_row`."""
    return Dataset.from_list(rows, features=RATING_FEATURES)
