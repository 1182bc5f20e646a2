"""Issue 61, item 7: every report that uses a model names it and what its numbers are worth (its known agreement
with the human ratings, :data:`styleeval.hub.MODEL_AGREEMENT`; ``tiny-random``: random weights, numbers mean
nothing): ``evaluate``'s terminal table, report.md, report.json and tradeoff figure, ``metaeval``'s report.md and
``styleeval list models``."""

from __future__ import annotations

import json

from styleeval.hub import MODEL_AGREEMENT, UNKNOWN_AGREEMENT
from styleeval.labels import model_worth, model_worth_lines

TINY = "tiny-random"
SOURCES = ["send me the report now", "give me your notes", "tell me when you are done", "fix the bug today"]
TINY_LINE = "Model: tiny-random, for LogProb content, LogProb style: random weights, numbers mean nothing"


def test_each_model_is_named_with_its_known_agreement_or_that_none_is_known():
    signatures = {
        "logprob_content": "logprob|model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f|variant:default",
        "logprob_style": "logprob|model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f|variant:default",
        "autorater_meaning": "autorater|model:meta-llama/Llama-3.1-8B-Instruct@0e9e39f|mode:expected",
        "mine": "logprob|model:my-finetune@local-1234abcd|variant:default",
        "s_bleu": "s_bleu|tok:13a",
    }
    worth = {w.model: w for w in model_worth(signatures)}
    assert list(worth) == ["gguf:smollm2-135M:Q4_1", "meta-llama/Llama-3.1-8B-Instruct", "my-finetune"]
    assert worth["gguf:smollm2-135M:Q4_1"].preset == "smollm2-135m"
    assert worth["gguf:smollm2-135M:Q4_1"].metrics == ("logprob_content", "logprob_style")
    assert "Spearman 0.28" in worth["gguf:smollm2-135M:Q4_1"].agreement
    assert worth["meta-llama/Llama-3.1-8B-Instruct"].agreement == MODEL_AGREEMENT["8b"]
    assert worth["my-finetune"].preset is None and worth["my-finetune"].agreement == UNKNOWN_AGREEMENT
    assert model_worth_lines(signatures)[1] == ("Model: meta-llama/Llama-3.1-8B-Instruct (8b), for autorater_meaning: "
                                                "LogProb content vs the human content ratings of the paper's test "
                                                "set: Spearman 0.63, the autorater 0.67 (the paper's Table 4)")
    assert model_worth_lines({"s_bleu": "s_bleu|tok:13a"}) == []


def test_evaluate_names_the_model_in_the_terminal_the_report_the_json_and_the_figure(tmp_path):
    from matplotlib import pyplot as plt

    from styleeval.systems import evaluate_systems
    from styleeval.systems.report import tradeoff_figure, write_outputs

    rows = [{"source": s, "rewrite": r, "style": "polite", "system": name} for s in SOURCES
            for name, r in (("A", f"Could you {s}"), ("B", s.upper()))]
    report = evaluate_systems(rows, [f"logprob_content:model={TINY}", f"logprob_style:model={TINY}", "s_bleu"])
    assert TINY_LINE in report.to_text(width=200).splitlines()
    paths = write_outputs(report, tmp_path)
    assert f"- {TINY_LINE}" in paths["report"].read_text(encoding="utf-8").splitlines()
    saved = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert saved["models"] == [{"model": TINY, "preset": TINY, "metrics": ["logprob_content", "logprob_style"],
                                "agreement": "random weights, numbers mean nothing"}]
    fig = tradeoff_figure(report)
    assert any(TINY_LINE in t.get_text() for t in fig.texts)
    plt.close(fig)
    plain = evaluate_systems(rows, ["s_bleu"])  # no model: no line
    assert "Model:" not in plain.to_text() and plain.to_dict()["models"] == []


def test_metaeval_report_names_the_model(tmp_path):
    from styleeval.metaeval import run_metaeval, write_report

    rows = [{"id": f"toy/{k}", "dataset": "toy", "task": "politeness", "target_style": "polite",
             "source_id": str(i), "source": s, "rewrite": r, "reference": None, "system": name,
             "is_reference_rewrite": False, "content_mean": float((i + k) % 5 + 1), "style_mean": 1.0,
             "fluency_mean": None}
            for k, (i, s, name, r) in enumerate((i, s, name, r) for i, s in enumerate(SOURCES * 2)
                                                for name, r in (("A", f"Could you {s}"), ("B", s.upper())))]
    result = run_metaeval(["toy"], [f"logprob_content:model={TINY}", "s_bleu"], dimension="content",
                          loader=lambda name: rows, n_boot=0)
    write_report(result, tmp_path, plots=False)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert ("- Model: tiny-random, for LogProb content: random weights, numbers mean nothing"
            in report.split("Spearman correlation between")[0])


def test_list_models_says_what_each_presets_numbers_are_worth(capsys):
    from styleeval.cli import main

    assert main(["list", "models"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "0.5 GB in float32); LogProb content vs the human content ratings of the paper's test set: Spearman 0.28" in text
    assert "(marked 'random weights' wherever shown); random weights, numbers mean nothing" in text
    assert "Qwen/Qwen2.5-1.5B-Instruct: ungated, the size of 1b (not the paper's); agreement with humans not measured" \
        in text


def test_the_space_content_reading_has_a_threshold_per_model_and_says_how_reliable_it_is():
    """The Space's "look for swapped, invented or dropped content" fired at 135M on good rewrites (the paper's
    test-set rewrites that keep the content: mean token probability often below 0.5). Its threshold is now the
    measured one per preset (scripts/calibrate_reading.py), and where it fires it says how reliable it is there."""
    import math

    from styleeval.demo import CONTENT_ERROR_AT, READING_CALIBRATION, UNCALIBRATED, Demo, reading_content

    threshold, reliability = READING_CALIBRATION["smollm2-135m"]
    assert threshold == 0.11 < CONTENT_ERROR_AT and "fires on 45% of" in reliability and "on 52% of" in reliability
    between = math.log((threshold + CONTENT_ERROR_AT) / 2)  # a 135M good rewrite's typical reading
    assert reading_content(between, "smollm2-135m").endswith(f"close to a faithful rewrite ({reliability})")
    assert reading_content(between).endswith(f"look for swapped, invented or dropped content in the highlighted "
                                             f"tokens ({UNCALIBRATED})")
    assert reading_content(math.log(threshold / 2), "smollm2-135m").endswith(f"({reliability})")
    out = Demo(model=TINY, autorater=False).score("give me the report now.", "Could you send me the report?",
                                                  "polite")
    assert out["content_reading"].endswith(f"({UNCALIBRATED})")  # random weights: no token is explained
