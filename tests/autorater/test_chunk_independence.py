"""A rating is a function of its row and the signature: the same rows rated in chunks of 1, 3 and all give identical
values (paper-70b sampling seeded per row; the authors' mean fill applied once over the whole set)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import JUDGE_REWRITES, JUDGE_SOURCES, JUDGE_STYLE

from styleeval.autorater import Autorater
from styleeval.autorater.rater import fill_unparsed_with_mean, row_seed

SOURCES = JUDGE_SOURCES * 2 + ["the car is red.", "we won the game."]
REWRITES = JUDGE_REWRITES[::-1] + JUDGE_REWRITES + ["The car is crimson.", "We lost the game."]


def _in_chunks(rate, size: int) -> list:
    out = []
    for start in range(0, len(SOURCES), size):
        out += list(rate(SOURCES[start : start + size], REWRITES[start : start + size]))
    return out


def test_sampled_replies_do_not_depend_on_batch_mates(tiny_model, tiny_tokenizer):
    judge = Autorater(tiny_model, tokenizer=tiny_tokenizer, mode="paper", prompt="paper-70b", max_new_tokens=6,
                      progress=False)
    replies = {size: [r["reply"] for r in _in_chunks(lambda s, r: judge.rate(s, r, JUDGE_STYLE), size)]
               for size in (1, 3, len(SOURCES))}
    assert replies[1] == replies[3] == replies[len(SOURCES)]
    assert len(set(replies[1])) > 1  # really sampled, not one constant reply
    conv = judge.prompt.messages(SOURCES[0], REWRITES[0], JUDGE_STYLE)
    assert row_seed(0, conv) == row_seed(0, conv) != row_seed(1, conv)


def test_an_interrupted_sampled_run_equals_an_uninterrupted_one(tmp_path, tiny_model, tiny_tokenizer):
    from styleeval.files import AUTORATER_RECORDS, autorate_file, read_scores

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": JUDGE_STYLE}) + "\n"
                           for s, r in zip(SOURCES, REWRITES, strict=True)), encoding="utf-8")

    def judge():
        return Autorater(tiny_model, tokenizer=tiny_tokenizer, mode="paper", prompt="paper-70b", max_new_tokens=6,
                         progress=False)

    whole, parts = tmp_path / "whole.jsonl", tmp_path / "parts.jsonl"
    autorate_file(inp, whole, judge=judge(), progress=False)
    autorate_file(inp, parts, judge=judge(), progress=False, max_rows=2)
    autorate_file(inp, parts, judge=judge(), progress=False, chunk_size=3)
    assert [r["reply"] for r in read_scores(whole, AUTORATER_RECORDS)] == \
        [r["reply"] for r in sorted(read_scores(parts, AUTORATER_RECORDS), key=lambda r: r["row"])]


def test_the_authors_fill_is_over_the_whole_dataset(judge_model_dir):
    """Paper mode on the judge (2 of 3 replies readable): per-row outputs keep NaN; the meta-evaluation fills with
    the mean over every row of the dataset, whatever the chunking."""
    from styleeval.metaeval.data import RatedData
    from styleeval.metrics import get_metric
    from styleeval.scoring import score_dataset

    judge = Autorater(str(judge_model_dir), mode="paper", progress=False)
    raw = [r["meaning"] for r in _in_chunks(lambda s, r: judge.rate(s, r, JUDGE_STYLE), 3)]
    assert sum(math.isnan(v) for v in raw) >= 2  # rows 0 and 5 ("I cannot rate this")
    want = fill_unparsed_with_mean(raw)
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "politeness", "target_style": JUDGE_STYLE,
             "source_id": str(i), "source": s, "rewrite": r, "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(i % 5), "style_mean": 1.0, "fluency_mean": None}
            for i, (s, r) in enumerate(zip(SOURCES, REWRITES, strict=True))]
    data = RatedData.from_rows(rows, name="toy")
    metric = get_metric(f"autorater_meaning:model={judge_model_dir}:mode=paper")
    got = {}
    for flush in (1e-9, 1e9):  # one row per chunk, then everything in one chunk
        got[flush] = score_dataset(metric, data, cache=None, flush_seconds=flush, min_chunk_rows=1)
    assert np.array_equal(got[1e-9], got[1e9])
    assert got[1e9].tolist() == pytest.approx(want)
    assert "fill:mean" in metric.signature
    unfilled = get_metric(f"autorater_meaning:model={judge_model_dir}:mode=paper:fill=none")
    assert np.isnan(score_dataset(unfilled, data, cache=None)).sum() == sum(math.isnan(v) for v in raw)
