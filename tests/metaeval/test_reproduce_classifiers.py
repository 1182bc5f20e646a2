"""Issue 62: `styleeval reproduce-paper`'s Table 8 (fluency: GPT-2 perplexity, the CoLA classifier) and Lai et al.'s
style classifiers beside their released scores; offline their cells say "needs weights" and how to fill them."""

from __future__ import annotations

import numpy as np
import pytest

from styleeval.commands.reproduce_paper import classifier_folders
from styleeval.corpora import load_corpus
from styleeval.errors import UserError
from styleeval.metaeval import paper
from styleeval.metaeval.lai import lai_frame, segment_tau, system_r
from styleeval.metrics.classifier import StyleClassifier
from styleeval.random_weights import build_classifier


@pytest.fixture(scope="module")
def formality_classifier(tmp_path_factory):
    """A converted checkpoint as Lai et al.'s would be: two labels LABEL_0 / LABEL_1 (1 = formal), random weights."""
    model, tokenizer = build_classifier(labels=("LABEL_0", "LABEL_1"), seed=3)
    path = tmp_path_factory.mktemp("c-gyafc")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_offline_the_rows_say_which_weights_and_how_to_fill_them(data_dir, tmp_path):
    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path), no_progress=True,
                         unloaded={"ziegenbein_appropriateness": "not in the mirror"})
    text, counts = paper.classifier_sections(args)
    assert ("| ppl | 0.45 / – | 0.36 / – | 0.24* / – | 0.23 / – | needs weights (openai-community/gpt2: not in the "
            "local Hugging Face cache); to fill it, run `styleeval reproduce-paper --online`") in text
    assert "| clf_colo | 0.52 / – | 0.43 / – | 0.49 / – | 0.2 / – | needs weights (textattack/roberta-base-CoLA" in text
    assert "| n (ours) | 720 | 100 | – | – | rated rows |" in text
    assert counts == {"ok": 0, "close": 0, "differs": 0, "not computed": 8}
    # Lai et al.'s Table 2: published, their released scores (reproduced), the weights' row needs weights
    assert "| C-GYAFC | 0.97 / 0.42 | 0.967 / 0.420 | needs weights (not on the Hub" in text
    assert "| R-PT16 | 0.93 / 0.33 | 0.928 / 0.330 | needs weights" in text and "--classifier r-pt16=FOLDER" in text
    assert paper.FLUENCY_METRICS["clf_colo"] == "clf_confidence:model=textattack/roberta-base-CoLA:label=LABEL_1"


def test_a_converted_classifier_is_computed_beside_the_released_scores(data_dir, tmp_path, formality_classifier):
    args = paper.Options(data_dir=str(data_dir), cache_dir=str(tmp_path), no_progress=True,
                         classifiers={"c-gyafc": str(formality_classifier)})
    text = paper.lai_classifier_table(args)
    # the slow path: the classifier's P(formal) of every rated system output, 1 - P on formal->informal lines, and
    # Lai's two statistics on it
    frame = lai_frame(load_corpus("lai_formality", data_dir))
    rows = {r["id"]: r for r in load_corpus("lai_formality", data_dir)}
    probs = StyleClassifier(str(formality_classifier)).scores([rows[i]["rewrite"] for i in frame["id"]])
    formal = np.array([rows[i]["target_style"] == "formal" for i in frame["id"]])
    values = np.where(formal, probs[:, 1], probs[:, 0])
    r, _p, n_systems = system_r(frame, "style", values)
    tau, n = segment_tau(frame, "style", values)
    assert (n_systems, n) == (8, 640)
    assert f"| C-GYAFC | 0.97 / 0.42 | 0.967 / 0.420 | {r:.3f} / {tau:.3f} |" in text
    assert "| C-PT16 | 0.93 / 0.39 | 0.929 / 0.390 | needs weights" in text


def test_the_classifier_option_is_checked(tmp_path):
    assert classifier_folders([f"c-pt16={tmp_path}"]) == {"c-pt16": str(tmp_path)}
    with pytest.raises(UserError, match="NAME one of r-pt16, c-pt16, c-gyafc"):
        classifier_folders([f"gyafc={tmp_path}"])
    with pytest.raises(UserError, match="is not a folder"):
        classifier_folders([f"c-pt16={tmp_path / 'missing'}"])
    with pytest.raises(UserError, match="given twice"):
        classifier_folders([f"c-pt16={tmp_path}", f"c-pt16={tmp_path}"])
