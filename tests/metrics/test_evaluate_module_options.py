"""The evaluate modules pass every option on to the backend (none accepted and dropped)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_trust_remote_code_reaches_the_model_loader(tiny_model_dir, monkeypatch):
    import evaluate

    import styleeval.backends
    import styleeval.models

    seen = []
    original = styleeval.models.load_model

    def recording(*args, **kwargs):
        seen.append(args[5] if len(args) > 5 else kwargs.get("trust_remote_code"))
        return original(*args, **kwargs)

    monkeypatch.setattr(styleeval.models, "load_model", recording)
    styleeval.backends.clear_shared()
    module = evaluate.load(str(ROOT / "metrics" / "logprob_style"))
    module.compute(predictions=["b c"], sources=["a c"], styles="polite", model=str(tiny_model_dir),
                   trust_remote_code=True, device="cpu")
    assert seen[0] is True  # the load from the folder (later wraps of the loaded object read no code)
    with pytest.raises(ValueError, match="model_id is another name for model"):
        module.compute(predictions=["b"], sources=["a"], styles="polite", model="x", model_id="y")
    with pytest.raises(ValueError, match="max_concurrency: not an option of the local backend"):
        module.compute(predictions=["b"], sources=["a"], styles="polite", model=str(tiny_model_dir),
                       max_concurrency=2)
