"""The `evaluate` module metrics/logprob_style: loads offline from its folder, agrees with LogProb, caches the model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
METRIC_DIR = ROOT / "metrics" / "logprob_style"

SOURCES = [
    "give me the report now.",
    "the meeting was moved to Tuesday afternoon.",
    "This restaurant was awful, the food was cold.",
]
REWRITES = [
    "Could you please send me the report when you have a moment?",
    "The meeting was moved to Tuesday afternoon.",
    "This restaurant was lovely, the food was warm.",
]
STYLES = ["polite", "formal", "positive"]
KEYS = {"content", "style_strength", "content_mean", "style_strength_mean", "signature"}


@pytest.fixture(scope="module")
def load_metric():
    import evaluate

    assert evaluate.config.HF_EVALUATE_OFFLINE, "conftest must put evaluate offline before it is imported"
    return lambda: evaluate.load(str(METRIC_DIR), keep_in_memory=True)


@pytest.fixture
def model_loads(monkeypatch, load_metric):
    """Counts real model loads (``from_pretrained``) and starts from an empty module-level cache."""
    from transformers import AutoModelForCausalLM

    import styleeval.backends
    import styleeval.logprob

    styleeval.logprob._SHARED.clear()
    styleeval.backends.clear_shared()
    calls: list[str] = []
    original = AutoModelForCausalLM.from_pretrained

    def counting(name, *args, **kwargs):
        calls.append(str(name))
        return original(name, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", counting)
    return calls


def test_compute_matches_logprob_and_loads_the_model_once(load_metric, model_loads, tiny_model_dir):
    from styleeval import LogProb

    model_id = str(tiny_model_dir)
    first = load_metric().compute(
        predictions=REWRITES, sources=SOURCES, styles=STYLES, model_id=model_id, device="cpu"
    )
    assert set(first) == KEYS
    expected = LogProb(model_id, device="cpu", progress=False).score(SOURCES, REWRITES, STYLES)
    assert first["content"] == [row["content"] for row in expected]
    assert first["style_strength"] == [row["style_strength"] for row in expected]
    assert first["content_mean"] == pytest.approx(sum(expected.content) / 3, abs=1e-12)
    assert first["style_strength_mean"] == pytest.approx(sum(expected.style_strength) / 3, abs=1e-12)
    assert first["signature"] == expected.signature
    assert all(c <= 0 for c in first["content"])
    assert all(-1 <= s <= 1 for s in first["style_strength"])
    loads_so_far = len(model_loads)  # the metric's load + the reference LogProb's load

    # A second evaluate.load of the module and a second compute with other batching: the model is reused.
    second = load_metric().compute(
        predictions=REWRITES[:2], sources=SOURCES[:2], styles="polite", model_id=model_id, device="cpu",
        max_batch_rows=1, dtype="float32",
    )
    assert len(model_loads) == loads_so_far == 2
    again = LogProb(model_id, device="cpu", progress=False).score(SOURCES[:2], REWRITES[:2], "polite")
    assert second["content"] == pytest.approx(again.content, abs=1e-6)
    assert second["style_strength"] == pytest.approx(again.style_strength, abs=1e-6)
    assert second["signature"] == first["signature"]


def test_end_of_turn_off_changes_the_signature_not_the_model(load_metric, model_loads, tiny_model_dir):
    from styleeval import LogProb

    metric = load_metric()
    kwargs = dict(predictions=REWRITES, sources=SOURCES, styles=STYLES, model_id=str(tiny_model_dir), device="cpu")
    with_eot = metric.compute(**kwargs)
    without = metric.compute(**kwargs, end_of_turn=False)
    assert len(model_loads) == 1
    assert "eot:yes" in with_eot["signature"] and "eot:no" in without["signature"]
    expected = LogProb(str(tiny_model_dir), device="cpu", end_of_turn=False, progress=False).score(
        SOURCES, REWRITES, STYLES
    )
    assert without["content"] == pytest.approx(expected.content, abs=1e-9)
    assert without["content"] != with_eot["content"]


def test_authors_variant_is_a_view_of_the_same_model(load_metric, model_loads, tiny_model_dir):
    from styleeval import LogProb

    metric = load_metric()
    kwargs = dict(predictions=REWRITES, sources=SOURCES, styles=STYLES, model_id=str(tiny_model_dir), device="cpu")
    default = metric.compute(**kwargs)
    authors = metric.compute(**kwargs, variant="authors")
    assert len(model_loads) == 1
    assert "variant:default" in default["signature"] and "variant:authors|" in authors["signature"]
    expected = LogProb(str(tiny_model_dir), variant="authors", device="cpu", progress=False).score(
        SOURCES, REWRITES, STYLES
    )
    assert authors["content"] == pytest.approx(expected.content, abs=1e-9)
    assert authors["style_strength"] == pytest.approx(expected.style_strength, abs=1e-9)
    assert authors["signature"] == expected.signature


def test_each_number_has_one_name_everywhere(load_metric, tiny_model_dir, tmp_path):
    """Issue 61, item 1: one number had three names: ``content``/``style`` in LogProb's rows, ``content``/
    ``style_strength`` in ``styleeval score``'s records, ``content_preservation``/``style_strength`` here. Now
    ``content`` and ``style_strength`` everywhere (``style`` is the target style in every input and record); the old
    keys still read, with a FutureWarning naming the new one."""
    import json

    from styleeval import LogProb
    from styleeval.cli import main
    from styleeval.files import read_scores

    model = str(tiny_model_dir)
    scores = LogProb(model, device="cpu", progress=False).score(SOURCES, REWRITES, STYLES)
    module = load_metric().compute(predictions=REWRITES, sources=SOURCES, styles=STYLES, model=model, device="cpu")
    table = tmp_path / "in.jsonl"
    table.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": st}) + "\n"
                             for s, r, st in zip(SOURCES, REWRITES, STYLES, strict=True)), encoding="utf-8")
    assert main(["score", str(table), "--model", model, "--device", "cpu", "--out", str(tmp_path / "o.jsonl"),
                 "-q"]) == 0
    records = read_scores(tmp_path / "o.jsonl")

    names = {"content", "style_strength"}
    assert all(set(row) == names for row in scores)
    assert set(module) == KEYS and names <= set(records[0])
    assert [r["style"] for r in records] == STYLES  # why the number cannot be called `style`
    for name in names:
        want = [row[name] for row in scores]
        assert getattr(scores, name) == want
        assert module[name] == pytest.approx(want, abs=1e-9)
        assert [r[name] for r in records] == pytest.approx(want, abs=1e-6)
        assert module[f"{name}_mean"] == pytest.approx(sum(want) / len(want), abs=1e-9)
    assert all(-1 <= v <= 1 for v in scores.style_strength) and all(v < 0 for v in scores.content)

    with pytest.warns(FutureWarning, match="the key 'style' is now 'style_strength'"):
        assert scores[1]["style"] == scores[1]["style_strength"]
    with pytest.warns(FutureWarning, match=r"\.style is now LogProbScores\.style_strength"):
        assert scores.style == scores.style_strength
    for old, new in (("content_preservation", "content"), ("content_preservation_mean", "content_mean")):
        with pytest.warns(FutureWarning, match=f"the key '{old}' is now '{new}'"):
            assert module[old] == module[new]
    with pytest.raises(KeyError):
        module["style"]  # noqa: B018 - the target style is no result


def test_bad_input_is_reported(load_metric, tiny_model_dir):
    metric = load_metric()
    with pytest.raises(ValueError, match="styles"):
        metric.compute(predictions=REWRITES, sources=SOURCES, styles=["polite", "", "formal"],
                       model_id=str(tiny_model_dir), device="cpu")
    with pytest.raises(ValueError, match="Mismatch in the number"):
        metric.compute(predictions=REWRITES, sources=SOURCES[:2], styles=STYLES, model_id=str(tiny_model_dir))


@pytest.mark.parametrize("module", ["logprob_style", "llm_autorater"])
def test_a_missing_or_non_text_row_is_refused_naming_the_row_and_the_fix(module):
    """Issue 61, item 5: a None prediction got evaluate's "Module inputs don't match the expected format" (first
    row), or reached the scorer and was named ``rewrites[1]`` (any other row), not the project's refusal that the
    README promises. Both modules, loaded as users load them, on tiny-random."""
    import evaluate

    from styleeval import evaluate_module

    metric = evaluate.load(str(evaluate_module(module)), keep_in_memory=True)
    given = {"predictions": REWRITES, "sources": SOURCES, "styles": "polite", "model": "tiny-random"}
    cases = [
        ({"predictions": [None, *REWRITES[1:]]},
         r"^predictions\[0\] is None \(missing\); give every row its text \(a rewrite that is really empty is \"\""),
        ({"predictions": [REWRITES[0], None, REWRITES[2]]}, r"^predictions\[1\] is None \(missing\); give every row"),
        ({"predictions": [*REWRITES[:2], 3]}, r"^predictions\[2\] is int, not str: 3; give every row its text as a str$"),
        ({"sources": [SOURCES[0], math.nan, SOURCES[2]]}, r"^sources\[1\] is nan \(missing\); .*keep_default_na=False"),
        ({"styles": ["polite", None, "formal"]}, r"^styles\[1\] is None \(missing\)"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message) as err:
            metric.compute(**{**given, **change})
        assert "expected format" not in str(err.value)
    with pytest.raises(ValueError, match=r"^predictions\[1\] of this add_batch call is None \(missing\)"):
        metric.add_batch(predictions=["Could you?", None], sources=SOURCES[:2], styles="polite")
    result = metric.compute(**given)  # nothing of the refused calls was kept
    assert len(result["content" if module == "logprob_style" else "meaning"]) == 3, result


def test_empty_input_gives_empty_lists(load_metric, tiny_model_dir):
    result = load_metric().compute(predictions=[], sources=[], styles=[], model_id=str(tiny_model_dir), device="cpu")
    assert result["content"] == [] and result["style_strength"] == []
    assert math.isnan(result["content_mean"])


def test_module_folder_layout():
    import yaml

    assert not (ROOT / "metrics" / "__init__.py").exists(), "it would shadow the installed 'datasets'/'metrics'"
    assert {p.name for p in METRIC_DIR.iterdir() if p.is_file()} >= {
        "logprob_style.py", "README.md", "app.py", "requirements.txt"
    }
    card = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---")[1])
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(header["tags"])
    assert {"title", "emoji", "colorFrom", "colorTo", "sdk_version", "pinned", "description"} <= set(header)
    assert "Mind the Style Gap" in card and "end_of_turn=False" in card
