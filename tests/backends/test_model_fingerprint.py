"""A local model changed in place is a different model: its signature changes, `score` refuses to resume onto
the old output, the metaeval cache recomputes, and the shared model caches load the new weights."""

from __future__ import annotations

import json
import shutil

import pytest

from styleeval.models import model_fingerprint

ROWS = [("give me the report now.", "Could you send the report?", "polite"),
        ("the food was cold.", "The food was warm.", "positive"),
        ("see you at 5", "I look forward to seeing you at five.", "formal")]


@pytest.fixture
def model_copy(tiny_model_dir, tmp_path):
    path = tmp_path / "model"
    shutil.copytree(tiny_model_dir, path)
    return path


def _replace_weights(path, tokenizer):
    from styleeval.random_weights import build_model

    build_model("tiny", vocab_size=len(tokenizer), head_scale=30.0, seed=7).save_pretrained(path)


def test_fingerprint_follows_the_content(model_copy, tiny_model_dir, tiny_tokenizer):
    first = model_fingerprint(model_copy)
    assert first.startswith("local-") and len(first) == 18
    assert model_fingerprint(tiny_model_dir) == first  # a copy of the same files
    assert model_fingerprint(model_copy) == first  # served from the (path, size, mtime) cache
    (model_copy / "README.md").write_text("notes do not change scores")
    assert model_fingerprint(model_copy) == first
    _replace_weights(model_copy, tiny_tokenizer)
    assert model_fingerprint(model_copy) != first


def test_score_refuses_to_resume_onto_another_model(model_copy, tiny_tokenizer, tmp_path):
    from styleeval import LogProb
    from styleeval.files import score_file

    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": st}) + "\n" for s, r, st in ROWS))
    out = tmp_path / "out.jsonl"
    before = LogProb(str(model_copy), device="cpu", progress=False).signature
    score_file(inp, out, str(model_copy), chunk_size=1, max_rows=1, device="cpu", progress=False)
    _replace_weights(model_copy, tiny_tokenizer)
    after = LogProb(str(model_copy), device="cpu", progress=False).signature
    assert before != after and before.split("@")[0] == after.split("@")[0]
    with pytest.raises(ValueError, match="different settings"):
        score_file(inp, out, str(model_copy), chunk_size=1, device="cpu", progress=False)


def test_metaeval_cache_and_shared_models_see_the_new_weights(model_copy, tiny_tokenizer, tmp_path):
    from styleeval.autorater.rater import shared_autorater
    from styleeval.logprob import shared_logprob
    from styleeval.metaeval.data import RatedData
    from styleeval.metrics import get_metric
    from styleeval.scoring import ScoresCache, score_dataset

    rows = [{"id": f"t/{i}", "dataset": "t", "task": "politeness", "target_style": st, "source_id": str(i),
             "source": s, "rewrite": r, "reference": None, "system": "a", "is_reference_rewrite": False,
             "content_mean": float(i), "style_mean": None, "fluency_mean": None} for i, (s, r, st) in enumerate(ROWS)]
    data = RatedData.from_rows(rows, "t")
    cache = ScoresCache(tmp_path / "cache")
    spec = f"logprob_content:model={model_copy}:device=cpu"
    old = score_dataset(get_metric(spec), data, cache)
    score_dataset(get_metric(spec), data, cache)
    assert (cache.hits, cache.misses) == (1, 1)
    old_lp, old_judge = shared_logprob(str(model_copy), device="cpu"), shared_autorater(str(model_copy), device="cpu")

    _replace_weights(model_copy, tiny_tokenizer)
    new = score_dataset(get_metric(spec), data, cache)
    assert cache.misses == 2 and list(new) != list(old)  # recomputed with the new weights, not served stale
    assert shared_logprob(str(model_copy), device="cpu") is not old_lp
    assert shared_autorater(str(model_copy), device="cpu") is not old_judge
