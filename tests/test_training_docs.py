"""docs/training.md agrees with itself and with the script it reports: each reward in its tables is content + 24 x
style of the same row (to the tables' rounding), the weights table's per-task counts add up to its totals, and the
held-out rows' BLEU is to the one reference per sentence the corpus has."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from styleeval.rewards import STYLE_WEIGHT

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")


def table_row(label: str) -> list[str]:
    """The cells after the label of the one table row that starts with ``label``."""
    lines = [line for line in DOC.splitlines() if line.startswith(f"| {label} |")]
    assert len(lines) == 1, label
    return [cell.strip().strip("*") for cell in lines[0].strip("|").split("|")[1:]]


def test_before_after_rewards_are_content_plus_weighted_style():
    rewards, contents, styles = (table_row(label) for label in
                                 ("**reward** (content + 24 x style)", "LogProb content", "LogProb style"))
    for reward, content, style in zip(rewards, contents, styles, strict=True):
        # each to 0.0005, style's x 24: within 0.013
        assert float(reward) == pytest.approx(float(content) + STYLE_WEIGHT * float(style), abs=0.013)


@pytest.mark.parametrize("label", ["the instruction echo's first line alone", "run 1's collapsed output",
                                   "the source copied unchanged", "Lai's human formal reference"])
def test_scored_rewrites_rewards_are_content_plus_weighted_style(label):
    reward, content, style = (float(cell) for cell in table_row(label))
    # reward and content to 0.005, style to 0.0005 (x 24): within 0.022
    assert reward == pytest.approx(content + STYLE_WEIGHT * style, abs=0.022)


def test_weights_table_per_task_counts_add_up_to_the_totals():
    cell = table_row("**24** (default)")[0]
    total = int(cell.split()[0].strip("*"))
    pairs = [(int(a), int(b)) for a, b in re.findall(r"(\d+) of (\d+)", cell)]
    assert total == 139 and sum(a for a, _ in pairs) == total
    assert sum(b for _, b in pairs) == 257 and "among the 257 rewrites" in DOC


def test_held_out_rows_have_the_one_reference_the_docs_name(data_dir):
    spec = importlib.util.spec_from_file_location("train_grpo", ROOT / "scripts" / "train_grpo_formality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    train, held_out = module.formality_sources(str(data_dir))
    assert (len(train), len(held_out)) == (110, 20)
    assert [len(references) for _, references in held_out] == [1] * 20
    assert "one per sentence" in DOC and "four human" not in DOC


def test_the_recipe_runs_as_written(real_backend, tmp_path, monkeypatch):
    """Issue 61, item 9: the recipe had `...` in it; it is now run as written (one GRPO step of the real 135M model on
    two sentences, LoRA), in a scratch folder, and leaves the checkpoint it says it does."""
    blocks = re.findall(r"^## The recipe\n\n```python\n(.*?)^```", DOC, re.S | re.M)
    assert len(blocks) == 1 and "..." not in blocks[0]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(blocks[0], "docs/training.md", "exec"), namespace)
    trainer = namespace["trainer"]
    assert trainer.state.global_step == 1 and namespace["reward"].signature.startswith("logprob|model:gguf:smollm2-135M")
    assert (tmp_path / "runs" / "try-grpo" / "checkpoint-1" / "adapter_config.json").is_file()
    assert any("logprob/content" in entry for entry in trainer.state.log_history)
