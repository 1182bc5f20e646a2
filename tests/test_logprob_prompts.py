"""LogProb's prompt sets (issue 60, item 3): their text is signed, so an edited instruction changes the signature, and a
resumed file or a cached score made with another text is refused, never reused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _slow import CONTEXT_INSTRUCTIONS

from styleeval import LogProb
from styleeval.cli import main
from styleeval.errors import UserError
from styleeval.logprob.prompts import (
    AUTHORS_END_OF_TURN,
    AUTHORS_TEMPLATE,
    PROMPT_SETS,
    SYSTEM_PROMPT,
    PromptSet,
    register_prompt_set,
    unregister_prompt_set,
)
from styleeval.signature import Signature

PAPER_SIGNED, AUTHORS_SIGNED = "paper@e1b5f00a", "authors@62e40d73"
"""The signed prompt fields of the paper's text: an edit of the text fails here first, on purpose (a new digest is a
new signature: say it in the change)."""


def _edited(prompt_set: PromptSet, **change) -> PromptSet:
    fields = {"system": prompt_set.system, "instructions": dict(prompt_set.instructions),
              "template": prompt_set.template, "end_of_turn": prompt_set.end_of_turn, **change}
    return PromptSet(prompt_set.name, **fields)


@pytest.fixture
def edited_paper():
    """The registered ``paper`` set replaced by one whose repeat instruction is edited (as a change to prompts.py
    would), then put back, registry order and shared scorers included."""
    import styleeval.logprob

    saved = [(name, PROMPT_SETS[name]) for name in PROMPT_SETS]
    edited = _edited(PROMPT_SETS["paper"], instructions={**PROMPT_SETS["paper"].instructions,
                                                         "repeat": "Repeat this sentence: {source}"})
    styleeval.logprob._SHARED.clear()
    unregister_prompt_set("paper")
    register_prompt_set(edited)
    yield edited
    for name, _ in saved:
        unregister_prompt_set(name)
    for _, prompt_set in saved:
        register_prompt_set(prompt_set)
    styleeval.logprob._SHARED.clear()


def test_the_paper_text_is_the_slow_references_and_signed_as_pinned():
    paper, authors = PROMPT_SETS["paper"], PROMPT_SETS["authors"]
    assert dict(paper.instructions) == CONTEXT_INSTRUCTIONS  # tests/_slow.py's own verbatim copy of Table 2
    assert (paper.system, paper.template, paper.end_of_turn) == (SYSTEM_PROMPT, None, None)
    assert (authors.system, dict(authors.instructions)) == (SYSTEM_PROMPT, CONTEXT_INSTRUCTIONS)
    assert (authors.template, authors.end_of_turn) == (AUTHORS_TEMPLATE, AUTHORS_END_OF_TURN)
    assert (paper.signed, authors.signed) == (PAPER_SIGNED, AUTHORS_SIGNED)
    assert list(PROMPT_SETS) == ["paper", "authors"]


@pytest.mark.parametrize("change", [
    {"system": SYSTEM_PROMPT + " "},
    {"instructions": {**CONTEXT_INSTRUCTIONS, "style": "Rewrite the following sentence to be {style}:  {source}"}},
    {"instructions": {**CONTEXT_INSTRUCTIONS, "paraphrase": "Paraphrase the sentence: {source}"}},
    {"instructions": {**CONTEXT_INSTRUCTIONS, "repeat": "Repeat the following sentence: {source}."}},
    {"template": AUTHORS_TEMPLATE.replace("<|eot_id|>", "<|eot_id|>\n", 1), "end_of_turn": AUTHORS_END_OF_TURN},
])
def test_every_text_of_a_set_is_in_its_digest(change):
    base = PROMPT_SETS["authors"] if "template" in change else PROMPT_SETS["paper"]
    edited = _edited(base, **change)
    assert edited.name == base.name and edited.digest != base.digest and edited.signed != base.signed
    assert _edited(base).signed == base.signed  # the same text, the same digest


def test_an_edited_instruction_changes_the_signature_and_the_numbers(tiny_model, tiny_tokenizer, rows):
    sources, rewrites, styles = map(list, zip(*rows[:3], strict=True))
    paper = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    edited_set = _edited(PROMPT_SETS["paper"], instructions={**CONTEXT_INSTRUCTIONS,
                                                             "style": "Rewrite this sentence to be {style}: {source}"})
    edited = LogProb(backend=paper.backend, prompt=edited_set, progress=False)
    a, b = paper.score(sources, rewrites, styles), edited.score(sources, rewrites, styles)
    old, new = Signature.parse(a.signature), Signature.parse(b.signature)
    assert old.fields["prompt"] == PAPER_SIGNED and new.fields["prompt"] == edited_set.signed != PAPER_SIGNED
    assert {k: v for k, v in old.fields.items() if k != "prompt"} == {k: v for k, v in new.fields.items()
                                                                      if k != "prompt"}
    assert list(old.fields)[:3] == ["model", "variant", "prompt"]
    assert a.style_strength != b.style_strength  # the style context's text is what the style score reads


@pytest.mark.parametrize("kwargs, message", [
    ({"prompt": "nope"}, "unknown LogProb prompt set 'nope'; choose one of paper, authors"),
    ({"prompt": "authors"}, "writes its own template.*use variant='authors'"),
    ({"prompt": "paper", "variant": "authors"}, "variant='authors' needs a prompt set with a hand-written template"),
])
def test_a_prompt_set_the_variant_cannot_use_is_refused_before_any_model(kwargs, message):
    with pytest.raises(UserError, match=message):
        LogProb("no/such-model-is-opened", **kwargs)


@pytest.mark.parametrize("fields, message", [
    ({"instructions": {"style": "{style}: {source}", "repeat": "{source}"}}, "instructions for style, paraphrase"),
    ({"instructions": {**CONTEXT_INSTRUCTIONS, "repeat": "Repeat {style}: {source}"}}, "the repeat instruction"),
    ({"instructions": {**CONTEXT_INSTRUCTIONS, "style": "Rewrite to be {style}"}}, "the style instruction"),
    ({"template": "{user}{system}", "end_of_turn": "<|eot_id|>"}, r"\{system\}, then \{user\}"),
    ({"template": AUTHORS_TEMPLATE}, "come together"),
])
def test_a_malformed_prompt_set_is_refused(fields, message):
    with pytest.raises(UserError, match=message):
        PromptSet("mine", **{"system": "s", "instructions": CONTEXT_INSTRUCTIONS, **fields})


def test_resuming_a_file_scored_with_another_prompt_text_is_refused(tmp_path, tiny_model_dir, edited_paper, capsys):
    rows = [{"source": f"source number {i}.", "rewrite": f"rewrite number {i}!", "style": "polite"} for i in range(4)]
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    score = ["score", str(inp), "--out", str(out), "--model", str(tiny_model_dir), "--device", "cpu", "-q"]
    assert main([*score, "--max-rows", "2"]) == 0  # scored with the edited text: "interrupted" after 2 rows
    written = out.read_text(encoding="utf-8")
    assert f"prompt:{edited_paper.signed}|" in written
    unregister_prompt_set("paper")  # the text as it ships
    register_prompt_set(PromptSet("paper", SYSTEM_PROMPT, CONTEXT_INSTRUCTIONS))
    assert main(score) == 2
    err = capsys.readouterr().err
    assert (f"was written with different settings: row 0 has prompt '{edited_paper.signed}', this run asks for "
            f"'{PAPER_SIGNED}'") in err
    assert out.read_text(encoding="utf-8") == written  # nothing added


def test_a_cached_score_of_another_prompt_text_is_not_served(tmp_path, tiny_model_dir, edited_paper):
    import styleeval.logprob
    from styleeval.metaeval.data import RatedData
    from styleeval.metrics import get_metric
    from styleeval.scoring import ScoresCache, score_dataset

    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"source number {i}.", "rewrite": f"Rewrite number {i}, kindly.", "reference": None,
             "system": "s", "is_reference_rewrite": False, "content_mean": float(i), "style_mean": None,
             "fluency_mean": None} for i in range(4)]
    data, cache = RatedData.from_rows(rows, "toy"), ScoresCache(tmp_path / "cache")
    spec = f"logprob_style:model={tiny_model_dir}:device=cpu"
    edited_metric = get_metric(spec)
    edited_scores = score_dataset(edited_metric, data, cache)
    edited = Signature.parse(str(edited_metric.signature))  # read now: a metric signs with its current scorer
    assert edited.fields["prompt"] == edited_paper.signed
    assert cache.load(edited, data.fingerprint, len(data)) is not None
    unregister_prompt_set("paper")  # the text as it ships, in the same process: a scorer of its own
    register_prompt_set(PromptSet("paper", SYSTEM_PROMPT, CONTEXT_INSTRUCTIONS))
    styleeval.logprob._SHARED.clear()
    metric = get_metric(spec)
    assert Signature.parse(metric.signature).fields["prompt"] == PAPER_SIGNED
    assert metric.signature != edited
    assert cache.load(metric.signature, data.fingerprint, len(data)) is None
    assert cache.path(metric.signature, data.fingerprint) != cache.path(edited, data.fingerprint)
    scores = score_dataset(metric, data, cache)
    assert np.isfinite(scores).all() and not np.array_equal(scores, edited_scores)
