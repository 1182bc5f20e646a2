"""Every registered metric, one parametrized test: n floats back in input order, a stable signature, bad input an
error naming the row. A metric added with @register is picked up here; one without an offline spec fails the test."""

from __future__ import annotations

import textwrap

import pytest

from styleeval.metrics import available_metrics, get_metric
from styleeval.signature import Signature

SOURCES = ["the food was cold and the staff rude.", "give me the report now.", "the meeting is on Tuesday."]
REWRITES = ["The food was warm and the staff kind.", "Could you send me the report?", "The meeting is on Monday."]
REFERENCES = [["The food was warm, the staff lovely."], ["Please send me the report."],
              ["The meeting is on Tuesday, I think."]]
STYLES = ["positive", "polite", "formal"]

MODULE = '''
import datasets
import evaluate


class Overlap(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="test", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, lang=None):  # lang: what s_bertscore passes
        return {"scores": [float(len(set(p.split()) & set(r.split()))) for p, r in zip(predictions, references, strict=True)]}
'''


@pytest.fixture(scope="module")
def offline_specs(tiny_model_dir, judge_model_dir, classifier_dir, tmp_path_factory) -> dict[str, str]:
    """An offline spec of every registered metric (local model folders, a local evaluate module, a score file)."""
    folder = tmp_path_factory.mktemp("overlap")
    (folder / "overlap.py").write_text(textwrap.dedent(MODULE))
    module = f"module={folder / 'overlap.py'}:key=scores"
    scores = tmp_path_factory.mktemp("scores") / "scores.csv"
    scores.write_text("id,value\n" + "".join(f"toy/{i},{i / 2}\n" for i in range(3)), encoding="utf-8")
    specs = {name: name for name in ("s_bleu", "r_bleu", "s_chrf", "r_chrf", "s_ter", "r_ter", "s_pinc",
                                     "s_paper_bleu", "r_paper_bleu", "s_rouge1", "s_rouge2", "s_rougel", "r_rouge1",
                                     "r_rouge2", "r_rougel", "s_masked_bleu", "r_masked_bleu", "s_meteor", "r_meteor")}
    for name in ("s_cosine", "r_cosine", "s_masked_cosine", "r_masked_cosine"):
        specs[name] = f"{name}:model=minilm-offline"
    for name in ("s_evaluate", "r_evaluate", "s_bertscore", "r_bertscore", "s_bleurt", "r_bleurt", "rs_comet"):
        specs[name] = f"{name}:{module}"
    for name in ("logprob_content", "logprob_style", "ppl"):
        specs[name] = f"{name}:model={tiny_model_dir}:device=cpu"
    for name in ("autorater_meaning", "autorater_style"):
        specs[name] = f"{name}:model={judge_model_dir}:device=cpu"
    specs["autorater_fluency"] = f"autorater_fluency:model={judge_model_dir}:device=cpu:prompt=mukherjee"
    specs["precomputed"] = f"precomputed:file={scores}:column=value"
    for name in ("clf_accuracy", "clf_confidence", "s_clf_emd"):  # STYLES mapped to the tiny classifier's labels
        specs[name] = f"{name}:model={classifier_dir}:labels=positive=positive,polite=neutral,formal=negative"
    for name in ("s_clf_kl", "s_clf_js", "s_clf_cosine", "r_clf_emd", "r_clf_kl", "r_clf_js", "r_clf_cosine"):
        specs[name] = f"{name}:model={classifier_dir}"
    return specs


@pytest.mark.parametrize("name", available_metrics())
def test_every_registered_metric(name, offline_specs):
    assert name in offline_specs, f"{name} is registered but has no offline spec here: add one"
    metric = get_metric(offline_specs[name])
    signature = metric.signature
    assert signature == get_metric(offline_specs[name]).signature  # stable across instances
    assert isinstance(signature, Signature) and signature.name
    back = Signature.parse(str(signature))  # written and read back: every field, nested ones included
    assert back == signature and back.fields == signature.fields
    assert Signature.build(back.name, back.fields) == signature
    if getattr(metric, "needs_ids", False):  # precomputed: looked up by corpus row id
        assert metric.score_ids(["toy/2", "toy/0", "toy/1"]) == [1.0, 0.0, 0.5]
        return
    refs = REFERENCES if metric.needs_references else None
    styles = STYLES if metric.needs_styles else None
    scores = metric.compute(SOURCES, REWRITES, refs, styles)
    assert len(scores) == 3 and all(isinstance(v, float) for v in scores)
    reordered = metric.compute(SOURCES[::-1], REWRITES[::-1], refs[::-1] if refs else None,
                               styles[::-1] if styles else None)
    assert reordered == pytest.approx(scores[::-1], rel=1e-5, abs=1e-5, nan_ok=True)  # input order, whatever the batch
    with pytest.raises(ValueError, match=r"rewrites\[1\]"):
        metric.compute(SOURCES[:2], [REWRITES[0], None], refs[:2] if refs else None, styles[:2] if styles else None)
