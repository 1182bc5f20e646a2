"""The per-token table behind the Space adds up to the row's scores."""

from __future__ import annotations

import pytest

from styleeval import LogProb
from styleeval.explain import token_table


def test_token_table_means_are_the_scores(tiny_model, tiny_tokenizer):
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    row = lp.score(["Send me the report now."], ["Could you send me the report?"], "polite", return_tokens=True)[0]
    table = token_table(row)
    assert len(table) == len(row["tokens"]) and table[-1]["token"] == "<|eot_id|>"
    assert sum(r["content"] for r in table) / len(table) == pytest.approx(row["content"], abs=1e-9)
    assert sum(r["style"] for r in table) / len(table) == pytest.approx(row["style_strength"], abs=1e-9)
    for r in table:
        assert r["content"] == max(r["logp_style"], r["logp_paraphrase"], r["logp_repeat"])
        assert r[f"logp_{r['best']}"] == r["content"]
    with pytest.raises(ValueError, match="return_tokens=True"):
        token_table({"content": 0.0, "style": 0.0})
