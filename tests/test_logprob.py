"""LogProb and the scoring engine against a slow, obviously-correct per-sample implementation."""

from __future__ import annotations

import math
import random
import warnings

import pytest
import torch
from _slow import float64_network, naive_token_logprobs

from styleeval import LogProb, LogProbScores
from styleeval.backends.base import common_prefix_length
from styleeval.backends.local.engine import ScoringEngine
from styleeval.chat import ChatFormat
from styleeval.logprob.prompts import SYSTEM_PROMPT
from styleeval.random_weights import CHATML_TEMPLATE, build_model, build_tokenizer

CONTEXT_INSTRUCTIONS = {
    "style": "Rewrite the following sentence to be {style}: {source}",
    "paraphrase": "Paraphrase the following sentence: {source}",
    "repeat": "Repeat the following sentence: {source}",
}


def slow_token_logprobs(model, tokenizer, source, rewrite, style, context, end_of_turn=True):
    """One full forward pass per (sample, context), full-vocabulary log-softmax at every position."""
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": CONTEXT_INSTRUCTIONS[context].format(style=style, source=source)},
    ]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target = tokenizer(rewrite, add_special_tokens=False)["input_ids"]
    if end_of_turn:
        target = target + [tokenizer.convert_tokens_to_ids("<|eot_id|>")]
    ids = torch.tensor([prompt_ids + target])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
    return [logp[len(prompt_ids) - 1 + j, tok].item() for j, tok in enumerate(target)]


def slow_scores(model, tokenizer, source, rewrite, style, end_of_turn=True):
    lp = {c: slow_token_logprobs(model, tokenizer, source, rewrite, style, c, end_of_turn) for c in CONTEXT_INSTRUCTIONS}
    n = len(lp["style"])
    content = sum(max(s, pa, r) for s, pa, r in zip(lp["style"], lp["paraphrase"], lp["repeat"], strict=True)) / n
    style = sum(math.exp(s) - max(math.exp(pa), math.exp(r)) for s, pa, r in zip(*lp.values(), strict=True)) / n
    return content, style, lp


@pytest.fixture(scope="module")
def expected(tiny_model, tiny_tokenizer, rows):
    return [slow_scores(tiny_model, tiny_tokenizer, *row) for row in rows]


@pytest.mark.parametrize("reuse_prefix", [True, False])
@pytest.mark.parametrize("batch_rows", [1, 3, 64])
def test_engine_equals_slow_path(tiny_model, tiny_tokenizer, rows, expected, batch_rows, reuse_prefix):
    order = list(range(len(rows)))
    random.Random(batch_rows).shuffle(order)
    shuffled = [rows[i] for i in order]
    lp = LogProb(
        tiny_model, tokenizer=tiny_tokenizer, device="cpu", max_batch_rows=batch_rows,
        reuse_prefix=reuse_prefix, progress=False,
    )
    got = lp.score(*map(list, zip(*shuffled, strict=True)), return_tokens=True)
    assert isinstance(got, LogProbScores) and len(got) == len(rows)
    worst = 0.0
    for k, i in enumerate(order):
        content, style, slow_lp = expected[i]
        tokens = got[k]["tokens"]
        assert len(tokens) == len(slow_lp["style"])
        for ctx in CONTEXT_INSTRUCTIONS:
            worst = max(worst, max(abs(t[ctx] - s) for t, s in zip(tokens, slow_lp[ctx], strict=True)))
        assert got[k]["content"] == pytest.approx(content, abs=1e-4)
        assert got[k]["style_strength"] == pytest.approx(style, abs=1e-6)
    assert worst <= 1e-4
    # the last token of every row is the end-of-turn token, including the empty rewrite's only token
    assert got[order.index(len(rows) - 1)]["tokens"][0]["token"] == "<|eot_id|>"


def test_results_independent_of_batching(tiny_model, tiny_tokenizer, rows):
    sources, rewrites, styles = map(list, zip(*rows, strict=True))
    base = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False).score(sources, rewrites, styles)
    tight = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", batch_tokens=40, progress=False)
    other = tight.score(sources, rewrites, styles)
    assert [r["content"] for r in other] == pytest.approx([r["content"] for r in base], abs=1e-5)
    assert other.style_strength == pytest.approx(base.style_strength, abs=1e-7)


def test_float64_weights_are_scored_in_float64_through_the_head(tiny_model, tiny_tokenizer, rows):
    """Float64 weights keep float64 through the LM head and the log-softmax (the reference computation of
    tests/test_real_weights.py): the engine, in batches of three rows with shared prefixes and packed prompts, equals
    the naive float64 loop within float64 rounding (a float32 head alone would be ~1e-7 away)."""
    wide = float64_network(tiny_model)
    eot = tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>")
    lp = LogProb(wide, tokenizer=tiny_tokenizer, dtype=torch.float64, max_batch_rows=3, progress=False)
    got = lp.score(*map(list, zip(*rows, strict=True)), return_tokens=True)
    assert "dtype:float64" in got.signature
    worst = 0.0
    for result, row in zip(got, rows, strict=True):
        for context in CONTEXT_INSTRUCTIONS:
            want = naive_token_logprobs(wide, tiny_tokenizer, *row, context, eot)
            worst = max(worst, *(abs(t[context] - w) for t, w in zip(result["tokens"], want, strict=True)))
    assert worst <= 1e-12


def test_score_ranges(tiny_model, tiny_tokenizer):
    """Content is a mean log-probability (<= 0); style is a mean difference of probabilities (in [-1, 1])."""
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    got = lp.score(["a b c"], ["a b c"], "formal")
    assert got[0]["content"] <= 0.0
    assert -1.0 <= got[0]["style_strength"] <= 1.0


def test_prompt_and_token_sets_are_pinned(tiny_tokenizer):
    chat = ChatFormat(tiny_tokenizer)
    text = chat.prompt_text("Paraphrase the following sentence: hi", SYSTEM_PROMPT)
    assert text == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" + SYSTEM_PROMPT + "<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nParaphrase the following sentence: hi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    eot = tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>")
    assert chat.end_of_turn_id == eot
    assert chat.rewrite_ids(["hello", ""]) == [tiny_tokenizer("hello", add_special_tokens=False)["input_ids"] + [eot], [eot]]
    chatml = ChatFormat(tiny_tokenizer, chat_template=CHATML_TEMPLATE)
    assert chatml.end_of_turn_id == tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert chatml.template_hash != chat.template_hash
    assert ChatFormat(tiny_tokenizer, end_of_turn=False).rewrite_ids(["hello"]) == [
        tiny_tokenizer("hello", add_special_tokens=False)["input_ids"]
    ]


def test_end_of_turn_off(tiny_model, tiny_tokenizer, rows):
    source, rewrite, style = rows[0]
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", end_of_turn=False, progress=False)
    got = lp.score([source], [rewrite], style, return_tokens=True)
    content, strength, _ = slow_scores(tiny_model, tiny_tokenizer, source, rewrite, style, end_of_turn=False)
    assert got[0]["content"] == pytest.approx(content, abs=1e-4)
    assert len(got[0]["tokens"]) == len(tiny_tokenizer(rewrite, add_special_tokens=False)["input_ids"])
    assert "eot:no" in got.signature
    with pytest.warns(UserWarning, match="no scored token"):
        empty = lp.score(["x"], [""], "polite")
    assert math.isnan(empty[0]["content"]) and math.isnan(empty[0]["style_strength"])


def test_signature(tiny_model, tiny_tokenizer, tiny_model_dir):
    lp = LogProb(str(tiny_model_dir), device="cpu", progress=False)
    sig = lp.signature
    assert sig.startswith(f"logprob|model:{tiny_model_dir}@local-")
    assert "|variant:default|prompt:paper@e1b5f00a|dtype:float32|head:float32|tmpl:" in sig
    assert "|eot:yes|first:yes|backend:local|build:torch" in sig and "|version:" in sig
    assert lp.score(["a"], ["b"], "polite").signature == sig


def test_model_path_equals_model_object(tiny_model, tiny_tokenizer, tiny_model_dir, rows):
    sources, rewrites, styles = map(list, zip(*rows[:4], strict=True))
    a = LogProb(str(tiny_model_dir), device="cpu", progress=False).score(sources, rewrites, styles)
    b = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False).score(sources, rewrites, styles)
    assert a.content == pytest.approx(b.content, abs=1e-6)


def test_bfloat16_runs_and_is_close(tiny_model_dir, rows):
    sources, rewrites, styles = map(list, zip(*rows[:4], strict=True))
    fp32 = LogProb(str(tiny_model_dir), device="cpu", progress=False).score(sources, rewrites, styles)
    bf16 = LogProb(str(tiny_model_dir), device="cpu", dtype="bfloat16", progress=False)
    assert "dtype:bfloat16" in bf16.signature
    assert bf16.score(sources, rewrites, styles).content == pytest.approx(fp32.content, abs=0.5)


def test_out_of_memory_halves_the_batch(tiny_model, tiny_tokenizer, rows):
    sources, rewrites, styles = map(list, zip(*rows, strict=True))
    base = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False).score(sources, rewrites, styles)
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", batch_tokens=4096, progress=False)
    real = lp.backend.engine._score_batch
    sizes = []

    def limited(batch, *args):  # the device "has memory" for 4 rows at most
        sizes.append(len(batch))
        if len(batch) > 4:
            raise torch.OutOfMemoryError("simulated")
        return real(batch, *args)

    lp.backend.engine._score_batch = limited
    for _ in range(2):  # halved for the rest of the call; the next call starts again from the engine's 4096
        sizes.clear()
        with pytest.warns(UserWarning, match="out of memory"):
            got = lp.score(sources, rewrites, styles)
        assert got.content == pytest.approx(base.content, abs=1e-5)
        assert sizes[0] > 4 and max(s for s in sizes if s <= 4) <= 4
        assert lp.backend.engine.batch_tokens == 4096


# -- engine details --------------------------------------------------------------------------------------


def test_common_prefix_length():
    assert common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_length([[5, 1], [1, 5]]) == 0
    assert common_prefix_length([]) == 0


def test_engine_without_shared_prefix_and_empty_continuation(tiny_model):
    engine = ScoringEngine(tiny_model, batch_tokens=8)
    prompts, conts = [[5, 6, 7], [9], [5, 6]], [[10, 11], [12, 13, 14], []]
    got = engine.token_logprobs(prompts, conts)
    assert got[2].numel() == 0
    for p, c, lp in zip(prompts[:2], conts[:2], got[:2], strict=True):
        with torch.no_grad():
            logp = torch.log_softmax(tiny_model(torch.tensor([p + c])).logits[0], -1)
        slow = torch.tensor([logp[len(p) - 1 + j, t].item() for j, t in enumerate(c)])
        assert torch.allclose(lp, slow, atol=1e-5)
    with pytest.raises(ValueError, match="prompt 0 is empty"):
        engine.token_logprobs([[]], [[1]])


# -- bad input -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lp(tiny_model, tiny_tokenizer):
    return LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)


def test_mismatched_lengths(lp):
    with pytest.raises(ValueError, match=r"rewrites has 1 rows but 2 were expected"):
        lp.score(["a", "b"], ["a"], "polite")
    with pytest.raises(ValueError, match=r"styles has 3 rows but 2 were expected"):
        lp.score(["a", "b"], ["a", "b"], ["x", "y", "z"])


def test_none_and_non_strings(lp):
    with pytest.raises(ValueError, match=r"rewrites\[1\] is None"):
        lp.score(["a", "b"], ["a", None], "polite")
    with pytest.raises(ValueError, match=r"sources\[0\] is int"):
        lp.score([3], ["a"], "polite")
    with pytest.raises(ValueError, match=r"styles\[1\] is empty"):
        lp.score(["a", "b"], ["a", "b"], ["polite", " "])
    with pytest.raises(ValueError, match="sources must be a list of strings"):
        lp.score("abc", ["a"], "polite")


def test_unknown_device(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="device: unknown device 'gpu0'"):
        LogProb(tiny_model, tokenizer=tiny_tokenizer, device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cuda")
    with pytest.raises(ValueError, match="dtype: unknown dtype"):
        LogProb(tiny_model, tokenizer=tiny_tokenizer, dtype="float8")


def test_model_without_chat_template(tiny_model):
    plain = build_tokenizer(chat_template=None)
    with pytest.raises(ValueError, match="has no chat template"):
        LogProb(tiny_model, tokenizer=plain, device="cpu")
    ok = LogProb(tiny_model, tokenizer=plain, device="cpu", chat_template=CHATML_TEMPLATE, progress=False)
    assert ok.chat.end_of_turn_id == plain.convert_tokens_to_ids("<|im_end|>")
    assert ok.score(["a"], ["b"], "polite")[0]["content"] <= 0


def test_overflow_error_and_skip(tiny_tokenizer):
    short = build_model("tiny", vocab_size=len(tiny_tokenizer), max_position_embeddings=256)
    long_source = "word " * 200
    lp = LogProb(short, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    with pytest.raises(ValueError, match=r"row 1: prompt \+ rewrite is \d+ tokens, longer than the model's context of 256"):
        lp.score(["hi", long_source], ["hello", "x"], "polite")
    skip = LogProb(short, tokenizer=tiny_tokenizer, device="cpu", on_overflow="skip", progress=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = skip.score(["hi", long_source], ["hello", "x"], "polite")
    assert any("skipped" in str(w.message) for w in caught)
    assert not math.isnan(got[0]["content"]) and math.isnan(got[1]["content"]) and math.isnan(got[1]["style_strength"])
    with pytest.raises(ValueError, match="on_overflow must be"):
        LogProb(short, tokenizer=tiny_tokenizer, on_overflow="truncate")


def test_accepts_any_iterable_of_strings(lp):
    import numpy as np

    a = lp.score(("x y", "z"), np.array(["x", "z z"]), iter(["polite", "formal"]))
    b = lp.score(["x y", "z"], ["x", "z z"], ["polite", "formal"])
    assert a.content == b.content and a.style_strength == b.style_strength
    with pytest.raises(ValueError, match="styles must be a list of strings, got dict"):
        lp.score(["a"], ["b"], {"style": "polite"})


def test_empty_input(lp):
    got = lp.score([], [], [])
    assert got == [] and got.signature == lp.signature


@pytest.mark.parametrize("arch", ["qwen2", "gpt2"])
def test_engine_on_other_architectures(arch, tiny_tokenizer):
    """Prefix reuse and batching are exact for other decoder families too (GQA Qwen2, learned-position GPT-2)."""
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    vocab = len(tiny_tokenizer)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(
            vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        ))
    else:
        model = GPT2LMHeadModel(GPT2Config(
            vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=512, bos_token_id=0, eos_token_id=0,
        ))
    model.eval()
    sources, rewrites = ["give me the report now.", "ur ready 4 the party??"], ["Could you send it?", "Are you ready?"]
    fast = LogProb(model, tokenizer=tiny_tokenizer, device="cpu", chat_template=CHATML_TEMPLATE, progress=False)
    got = fast.score(sources, rewrites, "polite", return_tokens=True)
    eot = tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    for k, (source, rewrite) in enumerate(zip(sources, rewrites, strict=True)):
        target = tiny_tokenizer(rewrite, add_special_tokens=False)["input_ids"] + [eot]
        for ctx, instruction in CONTEXT_INSTRUCTIONS.items():
            prompt = tiny_tokenizer.apply_chat_template(
                [{"role": "system", "content": SYSTEM_PROMPT},
                 {"role": "user", "content": instruction.format(style="polite", source=source)}],
                chat_template=CHATML_TEMPLATE, add_generation_prompt=True, tokenize=False,
            )
            prompt_ids = tiny_tokenizer(prompt, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(model(torch.tensor([prompt_ids + target])).logits[0], -1)
            slow = [logp[len(prompt_ids) - 1 + j, t].item() for j, t in enumerate(target)]
            assert [t[ctx] for t in got[k]["tokens"]] == pytest.approx(slow, abs=1e-4)


def test_a_model_whose_outputs_are_not_finite_is_said_once_naming_it(tiny_model, tiny_tokenizer, rows):
    """Issue 59 (also found): a model with NaN weights gave NaN for every row with no word of why (and the reward
    floored every row silently). Said once per scorer, naming the model; the rows still score NaN."""
    import copy

    from styleeval.logprob import NotFiniteWarning
    from styleeval.rewards import LogProbReward

    broken = copy.deepcopy(tiny_model)
    with torch.no_grad():
        broken.model.layers[0].mlp.down_proj.weight[0, 0] = math.nan
    sources, rewrites, styles = map(list, zip(*rows[:4], strict=True))
    lp = LogProb(broken, tokenizer=tiny_tokenizer, progress=False)
    with pytest.warns(NotFiniteWarning) as told:
        scores = lp.score(sources, rewrites, styles)
    assert all(math.isnan(c) for c in scores.content) and len(told) == 1
    assert str(told[0].message) == (
        f"the model {lp.backend.identity.model_field} gives log-probabilities that are not finite (NaN or inf) for 4 "
        "of 4 rows, which score NaN: its weights hold NaN or inf values, or its dtype overflows (float16: try "
        "bfloat16 or float32); said once")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotFiniteWarning)
        lp.score(sources, rewrites, styles)  # once per scorer
    reward = LogProbReward(backend=lp.backend, style="formal")
    with pytest.warns(NotFiniteWarning, match="said once"):
        assert reward(prompts=sources, completions=rewrites, source=sources) == [reward.floor] * 4
    healthy = LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NotFiniteWarning)
        assert all(math.isfinite(c) for c in healthy.score(sources, rewrites, styles).content)


def test_a_style_likely_misspelt_is_said_once_with_the_closest_known_style(tiny_model_dir, tmp_path, monkeypatch):
    """Issue 61, item 3: ``polyte`` and ``Polite.`` were taken silently and gave other numbers than ``polite``. Each
    is said once per process (a StyleSpellingWarning naming the closest known style and how to silence it), a
    deliberate free-text style is not, and the advice silences it, in Python and on the command line."""
    import os
    import subprocess
    import sys

    from styleeval import validation
    from styleeval.validation import StyleSpellingWarning

    monkeypatch.setattr(validation, "_STYLES_TOLD", set())
    lp = LogProb(str(tiny_model_dir), device="cpu", progress=False)
    source, rewrite = "give me the report now.", "Could you send me the report?"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        polite = lp.score([source], [rewrite], "polite")
        misspelt = lp.score([source] * 3, [rewrite] * 3, ["polyte", "Polite.", "polyte"])
        again = lp.score([source], [rewrite], ["polyte"])
        lp.score([source] * 5, [rewrite] * 5, ["like a pirate", "impolite", "simpler", "more formal", "formal"])
    said = [str(w.message) for w in caught if issubclass(w.category, StyleSpellingWarning)]
    assert len(said) == 2, said
    assert said[0].startswith("unknown style 'polyte': did you mean 'polite'? The style is free text"), said[0]
    assert said[1].startswith("unknown style 'Polite.': did you mean 'polite'? ('Polite.' differs from it in case, "
                              "spaces or punctuation)"), said[1]
    assert '"Rewrite the following sentence to be polyte: ..."' in said[0]
    assert said[0].endswith('silence this with warnings.filterwarnings("ignore", '
                            'category=styleeval.validation.StyleSpellingWarning) (said once per style)'), said[0]
    # why it matters: the numbers differ (the words of the instruction differ), the same for the same spelling
    assert min(abs(row["content"] - polite[0]["content"]) for row in misspelt) > 1e-3, (misspelt, polite)
    assert again[0]["content"] == pytest.approx(misspelt[0]["content"], abs=1e-5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=StyleSpellingWarning)  # the advice, for a deliberate style
        lp.score([source], [rewrite], "politee")
    assert not [w for w in caught if issubclass(w.category, StyleSpellingWarning)]

    # the command line: a `styleeval score: warning:` line with its own advice, which silences it
    table = tmp_path / "in.csv"
    table.write_text(f"source,rewrite\n{source},{rewrite}\n", encoding="utf-8")
    command = [sys.executable, "-m", "styleeval", "score", str(table), "--model", str(tiny_model_dir),
               "--device", "cpu", "--style", "polyte", "-q"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONWARNINGS", None)
    loud = subprocess.run([*command, "--out", str(tmp_path / "a.jsonl")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert loud.returncode == 0, loud.stderr
    advice = 'silence this with PYTHONWARNINGS="ignore:unknown style \'polyte\'"'
    assert "styleeval score: warning: unknown style 'polyte': did you mean 'polite'?" in loud.stderr, loud.stderr
    assert advice in loud.stderr and loud.stderr.count("warning: unknown style") == 1, loud.stderr
    quiet = subprocess.run([*command, "--out", str(tmp_path / "b.jsonl")], capture_output=True, text=True,
                           env={**env, "PYTHONWARNINGS": "ignore:unknown style 'polyte'"}, timeout=300)
    assert quiet.returncode == 0 and "unknown style" not in quiet.stderr, quiet.stderr
