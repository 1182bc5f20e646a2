"""score_dataset in chunks: no chunking changes a score (issue 45); the chunk rule itself: tests/test_run.py."""

from __future__ import annotations

import numpy as np

from styleeval.metaeval.data import RatedData
from styleeval.metrics import get_metric
from styleeval.run import FULL_CHUNK_ROWS
from styleeval.scoring import ScoresCache, score_dataset

SOURCES = ["I need the report now.", "Send it.", "we r late again lol", "Stop calling me.", "This is fine."]


def _rows(n: int) -> list[dict]:
    """``n`` rows, 1 to 3 rewrites per source (a source's rows adjacent, as in the corpora)."""
    rows, i = [], 0
    while len(rows) < n:
        for k in range(1 + i % 3):
            if len(rows) == n:
                break
            j = len(rows)
            rows.append({"id": f"toy/{j}", "dataset": "toy", "task": "formality", "target_style": "formal",
                         "source_id": str(i), "source": SOURCES[i % len(SOURCES)] + f" ({i})",
                         "rewrite": f"Rewrite {k} of sentence {i}, kindly." if k else "", "reference": None,
                         "system": f"s{k}", "is_reference_rewrite": False, "content_mean": float(j % 5),
                         "style_mean": None, "fluency_mean": None})
        i += 1
    return rows


def test_no_chunking_changes_a_logprob_score(tiny_model_dir, tmp_path):
    """score_dataset in chunks of one source, of 32 rows (the default floor), and all rows at once: bit-identical
    content and style scores, and the cache written in chunks serves the same array."""
    data = RatedData.from_rows(_rows(45), "toy")
    got = {}
    for metric_name in ("logprob_content", "logprob_style"):
        metric = get_metric(f"{metric_name}:model={tiny_model_dir}")
        one_source = score_dataset(metric, data, flush_seconds=1e-9, min_chunk_rows=1)
        default = score_dataset(metric, data, ScoresCache(tmp_path / metric_name), flush_seconds=1e-9)
        whole = score_dataset(metric, data, flush_seconds=1e9, min_chunk_rows=len(data))
        assert np.isfinite(whole).all()
        assert np.array_equal(one_source, whole) and np.array_equal(default, whole)
        cached = score_dataset(metric, data, ScoresCache(tmp_path / metric_name))
        assert np.array_equal(cached, whole)
        got[metric_name] = whole
    assert not np.array_equal(got["logprob_content"], got["logprob_style"])
    assert FULL_CHUNK_ROWS == 32


def test_a_skipped_row_is_named_by_its_row_in_the_data(tiny_model_dir):
    """A row too long for the model, skipped (``on_overflow=skip``), is named by its position in the data, whatever
    the chunk it was scored in and the rows of its chunk that repeat another (LogProb's content and style share one
    pass over the distinct rows): row 35 of 40, in the chunk of rows 32-39 where row 33 repeats row 32. It was named
    "row 3" (its place in its chunk), or "row 2" (among the distinct rows)."""
    import random
    import warnings

    from styleeval.errors import RowsWarning

    words = random.Random(0)
    long = " ".join("".join(words.choice("qxzjkvw") for _ in range(5)) for _ in range(2500))  # > 4096 tokens
    rows = _rows(40)
    for r in rows:
        r["source_id"] = r["id"]  # every row its own source: chunks of 32 rows, then 8
        r["rewrite"] = r["rewrite"] or "Kindly."
    rows[33] = {**rows[32], "id": "toy/33", "source_id": "toy/33"}
    rows[35]["source"] = long
    data = RatedData.from_rows(rows, "toy")
    for name in ("logprob_content", "logprob_style"):
        metric = get_metric(f"{name}:model={tiny_model_dir}:on_overflow=skip")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scores = score_dataset(metric, data, min_chunk_rows=32)
        assert np.flatnonzero(np.isnan(scores)).tolist() == [35]
        named = [w.message.rows for w in caught if isinstance(w.message, RowsWarning)]
        assert named == ([[35]] if name == "logprob_content" else []), named  # said once: style reuses the pass
