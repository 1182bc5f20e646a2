"""Mukherjee et al.'s added metrics: ROUGE (rouge-score) and perplexity through the scoring engine."""

from __future__ import annotations

import math

import pytest
import torch

from styleeval.metrics import get_metric


def test_rouge_by_hand():
    # unigrams: rewrite {the, cat, sat} vs source {the, cat, sat, on, the, mat}: overlap 3, P = 3/3, R = 3/6
    assert get_metric("s_rouge1").compute(["the cat sat on the mat"], ["the cat sat"]) == [pytest.approx(2 / 3)]
    # bigrams: (the cat), (cat sat) both in the source: P = 2/2, R = 2/5
    assert get_metric("s_rouge2").compute(["the cat sat on the mat"], ["the cat sat"]) == [
        pytest.approx(2 * 1 * 0.4 / 1.4)]
    best = get_metric("r_rougel").compute(["x"], ["the cat sat"], references=[["a dog", "the cat sat"]])
    assert best == [pytest.approx(1.0)]  # the best of the references
    assert get_metric("s_rougel").signature.startswith("s_rougel|stem:no|rouge_score:")


def test_perplexity_equals_a_slow_computation(tiny_model, tiny_tokenizer, tiny_model_dir):
    metric = get_metric(f"ppl:model={tiny_model_dir}")
    assert not metric.higher_is_better and metric.incremental
    rewrites = ["Could you send the report?", "The food was warm."]
    got = metric.compute(["s", "s"], rewrites)
    for text, value in zip(rewrites, got, strict=True):
        ids = [tiny_tokenizer.bos_token_id] + tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logp = torch.log_softmax(tiny_model(torch.tensor([ids])).logits[0].float(), -1)
        mean = sum(logp[i, ids[i + 1]].item() for i in range(len(ids) - 1)) / (len(ids) - 1)
        assert math.log(value) == pytest.approx(-mean, abs=1e-4)
