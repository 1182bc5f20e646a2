"""Issue 62: the style-classifier metrics (clf_accuracy, clf_confidence) on a tiny random RoBERTa classifier, against
a plain transformers pipeline call on the same folder; batch invariance to the bit; the label rules; errors naming
the row."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from transformers import pipeline

from styleeval.errors import RowError, UserError
from styleeval.metrics import get_metric
from styleeval.metrics.classifier import ClassifierScore, StyleClassifier
from styleeval.random_weights import build_classifier
from styleeval.validation import EmptyRewritesWarning


@pytest.fixture(scope="module")
def texts(rows) -> list[str]:
    """48 real texts of varied lengths (sources and rewrites of the test set), an empty one, repeats."""
    out = [t for source, rewrite, _ in rows for t in (source, rewrite)]
    return [*out, out[0], out[5]]


@pytest.fixture(scope="module")
def naive(classifier_dir, texts) -> np.ndarray:
    """The slow, obviously correct path: ``pipeline("text-classification", top_k=None)``, one text per call, each
    label's score put back in the model's label order."""
    clf = pipeline("text-classification", model=str(classifier_dir), top_k=None, device="cpu")
    labels = [clf.model.config.id2label[i] for i in range(clf.model.config.num_labels)]
    out = []
    for text in texts:
        scores = {d["label"]: d["score"] for d in clf([text])[0]}
        out.append([scores[name] for name in labels])
    return np.array(out)


def test_scores_equal_the_pipeline(classifier_dir, texts, naive):
    scores = StyleClassifier(str(classifier_dir)).scores(texts)
    assert scores.shape == naive.shape == (len(texts), 3)
    assert np.abs(scores - naive).max() < 2e-6  # the pipeline's softmax is float32, ours float64 of the same logits
    assert (scores.argmax(1) == naive.argmax(1)).all()
    assert len(set(naive.argmax(1).tolist())) >= 2  # the random model decides differently for different texts


def test_accuracy_and_confidence_follow_the_target_label(classifier_dir, texts, naive):
    styles = ["negative", "neutral", "positive"] * (len(texts) // 3) + ["positive"] * (len(texts) % 3)
    sources = ["a source."] * len(texts)
    with pytest.warns(EmptyRewritesWarning):  # the empty text is scored as given, as by the pipeline
        accuracy = get_metric(f"clf_accuracy:model={classifier_dir}").compute(sources, texts, styles=styles)
        confidence = get_metric(f"clf_confidence:model={classifier_dir}").compute(sources, texts, styles=styles)
    index = {"negative": 0, "neutral": 1, "positive": 2}
    for row, (style, acc, conf) in enumerate(zip(styles, accuracy, confidence, strict=True)):
        assert acc == float(naive[row].argmax() == index[style]), row
        assert conf == pytest.approx(naive[row, index[style]], abs=2e-6), row
    assert 0 < sum(accuracy) < len(texts)


def test_a_row_is_the_same_to_the_bit_whatever_its_batch_mates(classifier_dir, texts):
    alone = [StyleClassifier(str(classifier_dir)).scores([t])[0] for t in texts[:6]]
    mixed = StyleClassifier(str(classifier_dir)).scores(texts[::-1])[::-1]
    pieces = np.concatenate([StyleClassifier(str(classifier_dir)).scores(texts[i:i + 4]) for i in range(0, 8, 4)])
    for row in range(6):
        assert np.array_equal(alone[row], mixed[row]), row
        assert np.array_equal(alone[row], pieces[row]), row


def test_label_rules(classifier_dir, naive, texts):
    styles = ["formal", "informal"] * 3
    mapped = get_metric(f"clf_confidence:model={classifier_dir}:labels=formal=positive,informal=0")
    assert mapped.compute(["s"] * 6, texts[:6], styles=styles) == pytest.approx(
        [naive[i, 2 if i % 2 == 0 else 0] for i in range(6)], abs=2e-6)
    fixed = get_metric(f"clf_confidence:model={classifier_dir}:label=NEUTRAL")  # case-insensitive, styles not read
    assert not fixed.needs_styles
    assert fixed.compute(["s"] * 6, texts[:6]) == pytest.approx(list(naive[:6, 1]), abs=2e-6)
    assert "label:NEUTRAL" in fixed.signature and "label:formal=positive,informal=0" in mapped.signature
    with pytest.raises(RowError, match=r"row 1: target style 'polite' is not a label .*negative, neutral, positive"):
        get_metric(f"clf_accuracy:model={classifier_dir}").compute(["s", "s"], texts[:2], styles=["positive", "polite"])
    with pytest.raises(RowError, match=r"row 1: target style 'sad' is not in labels="):
        mapped.compute(["s", "s"], texts[:2], styles=["formal", "sad"])
    with pytest.raises(UserError, match="style=LABEL pairs"):
        get_metric(f"clf_accuracy:model={classifier_dir}:labels=formal")
    with pytest.raises(UserError, match="not both"):
        get_metric(f"clf_accuracy:model={classifier_dir}:label=0:labels=a=1")
    with pytest.raises(UserError, match="needs model="):
        get_metric("clf_accuracy")


def test_signature_names_the_weights_and_the_batch_shape(classifier_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(classifier_dir, copy)
    first = get_metric(f"clf_confidence:model={copy}:label=0").signature
    assert first.fields["model"].startswith(f"{copy.resolve()}@local-")
    assert first.fields["batch"] == "8" and first.fields["fn"] == "softmax"
    model, tokenizer = build_classifier(labels=("negative", "neutral", "positive"), seed=1)
    model.save_pretrained(copy)  # other weights in the same folder: another signature
    assert get_metric(f"clf_confidence:model={copy}:label=0").signature.fields["model"] != first.fields["model"]
    assert get_metric(f"clf_confidence:model={copy}:label=0:batch_size=4").signature.fields["batch"] == "4"


def test_a_model_object_and_a_one_output_model(texts):
    model, tokenizer = build_classifier(labels=("acceptable",), seed=2)
    metric = ClassifierScore("confidence", model=model, tokenizer=tokenizer, label="acceptable")
    assert metric.signature.fields["fn"] == "sigmoid"
    with torch.no_grad():
        logits = [model(**tokenizer(t, return_tensors="pt")).logits[0, 0].item() for t in texts[:4]]
    assert metric.compute(["s"] * 4, texts[:4]) == pytest.approx([1 / (1 + np.exp(-x)) for x in logits], abs=2e-6)
    with pytest.raises(UserError, match="clf_accuracy needs a single-label classifier"):
        ClassifierScore("accuracy", model=model, tokenizer=tokenizer, label="0").compute(["s"], texts[:1])
    with pytest.raises(UserError, match="without its tokenizer"):
        ClassifierScore("confidence", model=model, label="0").compute(["s"], texts[:1])


def test_a_text_too_long_is_refused_naming_the_row(classifier_dir):
    long = "word " * 400
    with pytest.raises(RowError, match=r"row 1: \d+ tokens, more than the classifier .* takes \(128\)"):
        get_metric(f"clf_confidence:model={classifier_dir}:label=0").compute(["a", "b"], ["fine.", long])
