"""styleeval.bundled in a checkout: the repository's own folders (the wheel's copy: tests/test_wheel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from styleeval import bundled, evaluate_module
from styleeval.corpora import corpus_names
from styleeval.errors import UserError

ROOT = Path(__file__).resolve().parents[1]


def test_a_checkout_finds_its_own_folders():
    assert bundled.checkout_root() == ROOT and bundled.base() == ROOT
    assert evaluate_module("logprob_style") == str(ROOT / "metrics" / "logprob_style")
    assert bundled.names("metrics") == ["llm_autorater", "logprob_style"]  # no __pycache__
    assert bundled.space_app() == ROOT / "spaces" / "style_eval_demo" / "app.py"
    assert all(bundled.dataset_card(n) == ROOT / "datasets" / n / "README.md" for n in corpus_names())


def test_an_unknown_entry_names_those_there():
    with pytest.raises(UserError, match=r"no evaluate module named 'logprob' in .*metrics; there are: "
                                        r"llm_autorater, logprob_style$"):
        evaluate_module("logprob")
    with pytest.raises(ValueError, match="unknown kind"):
        bundled.folder("scripts", "x")
