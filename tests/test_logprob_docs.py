"""docs/logprob.md says exactly what LogProb computes (issue 61, item 6): its strings are the code's (the system prompt,
the three instructions, the authors' template, the pinned date, the prompt sets' signed digests and how they are
computed), and its re-implementation in plain transformers, run as written, gives styleeval's numbers on the tiny
random-weight model in both variants."""

from __future__ import annotations

import hashlib
import json
import math
import re
from contextlib import nullcontext
from pathlib import Path

import pytest

from styleeval import LogProb
from styleeval.chat import TEMPLATE_KWARGS, ChatFormat
from styleeval.logprob.prompts import AUTHORS_TEMPLATE, INSTRUCTIONS, PROMPT_SETS, SYSTEM_PROMPT

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "logprob.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^ *```(\w+)\n(.*?)^ *```", DOC, re.S | re.M)
ROWS = [  # (source, rewrite, style): ordinary rows, a one-character rewrite, an empty rewrite
    ("give me the report now.", "Could you please send me the report?", "polite"),
    ("the food was cold and the staff rude.", "The food was warm and the staff were lovely.", "positive"),
    ("see you", "B", "formal"),
    ("ok then.", "", "polite"),
]


def reimplementation() -> dict:
    """The namespace of the page's one Python block that defines ``logprob``, executed as written."""
    code = [text for lang, text in BLOCKS if lang == "python" and "def logprob(" in text]
    assert len(code) == 1
    namespace: dict = {}
    exec(compile(code[0], "docs/logprob.md", "exec"), namespace)
    return namespace


def test_the_pages_strings_are_the_codes():
    text_blocks = [text.strip() for lang, text in BLOCKS if lang == "text"]
    assert SYSTEM_PROMPT in text_blocks
    instructions = next(t for t in text_blocks if t.startswith("style:"))
    assert dict(re.findall(r"^(\w+): +(.*)$", instructions, re.M)) == INSTRUCTIONS
    assert AUTHORS_TEMPLATE in text_blocks
    assert f'date_string="{TEMPLATE_KWARGS["date_string"]}"' in DOC
    for name in ("paper", "authors"):  # the signed field, and how the page says it is computed
        prompt_set = PROMPT_SETS[name]
        assert f"prompt:{prompt_set.signed}" in DOC
        text = json.dumps({"system": prompt_set.system, "instructions": [[c, prompt_set.instructions[c]] for c in
                                                                         ("style", "paraphrase", "repeat")],
                           "template": prompt_set.template, "end_of_turn": prompt_set.end_of_turn}, ensure_ascii=False)
        assert prompt_set.digest == hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    namespace = reimplementation()  # the re-implementation uses the same strings
    assert namespace["SYSTEM_PROMPT"] == SYSTEM_PROMPT and namespace["INSTRUCTIONS"] == INSTRUCTIONS
    assert namespace["AUTHORS_TEMPLATE"] == AUTHORS_TEMPLATE and namespace["DATE"] == TEMPLATE_KWARGS


def test_the_page_is_linked_from_the_readme_and_the_docs():
    assert "docs/logprob.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "logprob.md" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


@pytest.mark.filterwarnings("ignore:1 of 4 rewrites is empty")
@pytest.mark.parametrize("variant", ["default", "authors"])
def test_the_pages_reimplementation_gives_styleevals_numbers(tiny_model, tiny_tokenizer, variant):
    logprob = reimplementation()["logprob"]
    got = LogProb(tiny_model, tokenizer=tiny_tokenizer, variant=variant, device="cpu", progress=False)
    with pytest.warns(UserWarning, match="no scored token") if variant == "authors" else nullcontext():
        scores = got.score(*map(list, zip(*ROWS, strict=True)))
    for row, score in zip(ROWS, scores, strict=True):
        want = logprob(tiny_model, tiny_tokenizer, *row, variant=variant)
        if variant == "authors" and row[1] == "":  # only <|eot_id|>, the context: nothing scored
            assert all(math.isnan(v) for v in want) and math.isnan(score["content"]) and math.isnan(score["style_strength"])
            continue
        assert score["content"] == pytest.approx(want[0], abs=2e-6), row
        assert score["style_strength"] == pytest.approx(want[1], abs=2e-6), row
        assert not math.isnan(want[0])
    assert len({round(s["content"], 4) for s in scores if not math.isnan(s["content"])}) >= 3  # rows told apart



def test_the_pages_prompt_snippet_gives_styleevals_prompt_ids(tiny_tokenizer):
    snippet = [text for lang, text in BLOCKS if lang == "python" and "def logprob(" not in text]
    assert len(snippet) == 1
    instruction = INSTRUCTIONS["style"].format(style="polite", source="give me the report now.")
    namespace = {"tokenizer": tiny_tokenizer, "instruction": instruction, "SYSTEM_PROMPT": SYSTEM_PROMPT}
    exec(compile(snippet[0], "docs/logprob.md", "exec"), namespace)
    assert namespace["prompt_ids"] == ChatFormat(tiny_tokenizer).prompt_ids([instruction], SYSTEM_PROMPT)[0]
