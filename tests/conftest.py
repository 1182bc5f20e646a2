"""Shared fixtures: the local data mirror and tiny random-weight chat models (never mocked)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT / ".." / "shared" / "data").resolve()

# Tests never touch the network: every loader reads the local mirror, every hub client is offline.
os.environ.setdefault("STYLEEVAL_DATA_DIR", str(SHARED_DATA))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The local mirror of the public corpora (``../shared/data``)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data mirror is missing at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """A byte-level BPE tokenizer trained in-process, with a Llama-3-style chat template."""
    from styleeval.testing import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tiny_tokenizer):
    """A 2-layer random-weight Llama in float32 whose LM head is scaled for peaked distributions."""
    from styleeval.testing import build_model

    return build_model("tiny", vocab_size=len(tiny_tokenizer), head_scale=30.0)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model, tiny_tokenizer, tmp_path_factory) -> Path:
    """The tiny model and tokenizer saved with ``save_pretrained``: usable wherever a model id is expected."""
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_model.save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path
