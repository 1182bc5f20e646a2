"""Masked BLEU / cosine (Mukherjee et al.): style words from VADER's lexicon masked before the content metric."""

from __future__ import annotations

import pytest

from styleeval.metrics import get_metric
from styleeval.metrics.bleu import sentence_bleu
from styleeval.metrics.masked import PLACEHOLDER, mask_style_words, vader_lexicon


def test_lexicon_is_vaders():
    lexicon = vader_lexicon()
    assert len(lexicon) == 7494  # vader_lexicon.txt 3.3.2: 7520 lines, 26 of them the same entry in another case
    assert lexicon["great"] == 3.1 and lexicon["terrible"] == -2.1 and ":)" in lexicon
    assert "food" not in lexicon


def test_masking_by_hand():
    assert mask_style_words("The food was great!") == f"The food was {PLACEHOLDER}!"
    assert mask_style_words("I love it :) but (terrible) service.") == (
        f"I {PLACEHOLDER} it {PLACEHOLDER} but ({PLACEHOLDER}) service.")
    assert mask_style_words("The food was great!", mask="remove") == "The food was!"
    assert mask_style_words("GREAT food", mask="remove") == "food"
    # min_valence keeps weak entries ("like" 1.5) and masks strong ones ("great" 3.1)
    assert mask_style_words("I like great food", min_valence=2.0) == f"I like {PLACEHOLDER} food"
    assert mask_style_words("nothing to mask here") == "nothing to mask here"
    with pytest.raises(ValueError, match="mask must be one of"):
        mask_style_words("x", mask="blank")


def test_masked_bleu_equals_bleu_of_the_masked_texts():
    sources = ["the food was great and the staff were friendly", "terrible service , we waited an hour"]
    rewrites = ["the food was awful and the staff were rude", "excellent service , we waited an hour"]
    masked = get_metric("s_masked_bleu").compute(sources, rewrites)
    by_hand = sentence_bleu([mask_style_words(r) for r in rewrites], [[mask_style_words(s)] for s in sources])
    assert masked == pytest.approx(by_hand)
    assert masked[1] == pytest.approx(100.0)  # only the sentiment word changed
    plain = get_metric("s_bleu").compute(sources, rewrites)
    assert all(m > p for m, p in zip(masked, plain, strict=True))
    refs = [["the food was lovely and the staff were kind"], ["good service , we waited an hour"]]
    r_masked = get_metric("r_masked_bleu:mask=remove").compute(sources, rewrites, refs)
    assert r_masked == pytest.approx(sentence_bleu([mask_style_words(r, "remove") for r in rewrites],
                                                   [[mask_style_words(x[0], "remove")] for x in refs]))
    sig = get_metric("s_masked_bleu").signature
    assert sig.startswith("s_masked_bleu|mask:vader-") and "|inner:[s_bleu|" in sig and sig.fields["inner"].name == "s_bleu"
    with pytest.raises(ValueError, match="mask must be one of"):
        get_metric("s_masked_bleu:mask=nope")


def test_masked_cosine_with_a_real_encoder():
    metric = get_metric("s_masked_cosine:model=minilm-offline")
    plain = get_metric("s_cosine:model=minilm-offline")
    src, rw = ["The pizza was great."], ["The pizza was terrible."]
    assert metric.compute(src, rw)[0] == pytest.approx(1.0, abs=1e-5)  # identical once masked
    assert plain.compute(src, rw)[0] < 0.95
    assert metric.name == "s_masked_cosine" and metric.inputs == "source"
