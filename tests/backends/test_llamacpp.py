"""The llama.cpp backend (``backend="llamacpp"``) on the real GGUF file (the ``smollm2-135m`` preset, SmolLM2-135M-Instruct
Q4_1, as a user gets it): llama-cpp-python's own log-probabilities called directly, scores that never depend on
batch-mates, order or chunking (bit for bit), LogProb within quantization distance of the float32 engine, generation,
options, and the errors of a missing extra or a file that is not a GGUF. Runs where llama-cpp-python is installed."""

from __future__ import annotations

import csv
import random
import sys
import threading

import pytest
from _servers import need_module

llama_cpp = need_module("llama_cpp", "pip install -e '.[llamacpp]'; .ci/run builds it")

import torch  # noqa: E402

from styleeval import LogProb  # noqa: E402
from styleeval.backends import Decoding, open_backend, planner, shared_backend  # noqa: E402
from styleeval.backends.llamacpp import BLOCK, CMAKE_ARGS, LlamaCppBackend, build_tag, split_point  # noqa: E402
from styleeval.chat import ChatFormat  # noqa: E402
from styleeval.errors import UserError  # noqa: E402
from styleeval.gguf_files import PRESETS, REAL_WEIGHTS, preset_file  # noqa: E402
from styleeval.logprob.prompts import CONTEXTS, SYSTEM_PROMPT, user_message  # noqa: E402

SIGNED = "model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f"
CONTENT_TOLERANCE, STYLE_TOLERANCE = 0.15, 0.04
"""LogProb content and style of llama.cpp (Q4_1 weights times 8-bit activations, float16 KV cache) against the
float32 engine on the de-quantized weights: measured on the test set's first 60 rows, content max 0.086 (mean 0.021),
style max 0.015 (mean 0.004); quantization noise, not a bug (a bug moves scores by whole units)."""


@pytest.fixture(scope="session")
def gguf_path() -> str:
    """The preset's file, fetched as a user gets it (the session's cache)."""
    return str(preset_file(PRESETS[REAL_WEIGHTS]))


@pytest.fixture(scope="session")
def lcpp(gguf_path):
    """The llama.cpp backend on the preset, opened once per test run (one thread: predictable on a busy machine)."""
    return shared_backend(REAL_WEIGHTS, backend="llamacpp", n_threads=1)


@pytest.fixture(scope="module")
def pairs(lcpp, rows):
    """(prompt, continuation) token ids of real rows under the three instructions, plus an empty rewrite and a
    rewrite of one token, rendered with the GGUF's own tokenizer."""
    chat = ChatFormat(lcpp.tokenizer)
    picked = [rows[0], rows[13], ("Thanks for nothing.", "", "polite")]
    out = []
    for source, rewrite, style in picked:
        target = chat.rewrite_ids([rewrite])[0]
        for ctx in CONTEXTS:
            out.append((chat.prompt_ids([user_message(ctx, source, style)], SYSTEM_PROMPT)[0], target))
    out.append((out[0][0], out[0][1][:1]))  # one scored token: the shortest last call
    return out


def _direct(gguf_path, pairs):
    """Each pair's log-probabilities by llama-cpp-python alone: ``Llama.eval`` of the whole sequence (logits of every
    position) and its ``logits_to_logprobs``, read at the positions before each continuation token."""
    llm = llama_cpp.Llama(gguf_path, n_ctx=512, logits_all=True, n_threads=1, verbose=False)
    try:
        out = []
        for prompt, target in pairs:
            llm.reset()
            llm.eval(prompt + target)
            logprobs = llama_cpp.Llama.logits_to_logprobs(llm.scores[len(prompt) - 1 : len(prompt) + len(target) - 1])
            out.append(torch.tensor([float(logprobs[k][t]) for k, t in enumerate(target)], dtype=torch.float64))
        return out
    finally:
        llm.close()


def test_token_logprobs_equal_llama_cpp_pythons_own(lcpp, gguf_path, pairs):
    """The backend (blocks of the KV cache reused, logits only where scored, float64 log-softmax) against
    llama-cpp-python called directly on each sequence alone (``eval`` with ``logits_all``, its float32
    ``logits_to_logprobs``): the same up to the float32 log-softmax (measured 2e-7).
    ``create_completion(echo=True, logprobs=k)`` is not the reference: in llama-cpp-python 0.3.36 it reads each
    prompt token's log-probability from the logits computed *at* that token (one position late) and drops the BOS id
    wherever it occurs (``<|im_start|>`` here)."""
    mine = lcpp.token_logprobs([p for p, _ in pairs], [c for _, c in pairs], group=3)
    theirs = _direct(gguf_path, pairs)
    assert [len(m) for m in mine] == [len(c) for _, c in pairs]
    assert all(m.dtype == torch.float32 for m in mine)
    worst = max(float((m.double() - t).abs().max()) for m, t in zip(mine, theirs, strict=True) if len(t))
    assert worst < 1e-5


def test_a_score_never_depends_on_batch_mates_order_or_chunking(lcpp, pairs):
    """Every pair alone (a fresh backend: an empty KV cache, another context size), all at once, shuffled, in chunks
    of other sizes and after unrelated calls: bit-identical tensors. Blocks of the KV cache reused from other prompts
    are the same computation as a fresh one. (Measured besides: 1, 2 and 3 threads give the same bits.)"""
    fresh = LlamaCppBackend(REAL_WEIGHTS, n_threads=1, n_ctx=1024, progress=False)
    try:
        alone = [fresh.token_logprobs([p], [c])[0] for p, c in pairs]
    finally:
        fresh.close()
    prompts, targets = [p for p, _ in pairs], [c for _, c in pairs]
    together = lcpp.token_logprobs(prompts, targets)
    order = list(range(len(pairs)))
    random.Random(3).shuffle(order)
    lcpp.token_logprobs([prompts[0][:BLOCK + 5]], [prompts[0][BLOCK + 5 : BLOCK + 9]])  # leaves another cache
    shuffled = lcpp.token_logprobs([prompts[i] for i in order], [targets[i] for i in order])
    chunked = [v for k in range(0, len(pairs), 4) for v in lcpp.token_logprobs(prompts[k : k + 4], targets[k : k + 4])]
    for i in range(len(pairs)):
        assert torch.equal(together[i], alone[i])
        assert torch.equal(shuffled[order.index(i)], alone[i])
        assert torch.equal(chunked[i], alone[i])


def test_split_points_never_leave_a_one_token_call():
    """A llama.cpp call of one token takes another kernel path (measured up to 0.5 nat apart on this model): no
    pair's layout has one, except a one-token prompt's reply."""
    for n_prompt in range(1, 3 * BLOCK):
        for n_extra in (0, 1, 2, 7):
            m = split_point(n_prompt, n_extra)
            assert 0 <= m < n_prompt
            assert m % BLOCK != 1
            assert n_prompt + n_extra - m >= min(2, n_prompt + n_extra)


def test_candidate_logprobs_equal_token_logprobs_bit_for_bit(lcpp, pairs):
    prompts = [p for p, _ in pairs[:4]]
    candidates = [pairs[0][1][0], 17, 33, 49151]
    fast = lcpp.candidate_logprobs(prompts, candidates, shared_prefixes=True)
    slow = lcpp.token_logprobs([p for p in prompts for _ in candidates], [[c] for _ in prompts for c in candidates])
    assert fast.shape == (len(prompts), len(candidates)) and fast.dtype == torch.float32
    assert torch.equal(fast.view(-1), torch.stack([v[0] for v in slow]))


def test_a_prompts_blocks_are_prefilled_once_for_all_its_continuations(lcpp, pairs):
    """Pairs are evaluated by prompt (the planner's order), so a prompt's 16-token blocks are computed once for its
    continuations even when its rows are interleaved with another prompt's: llama.cpp calls counted, each block once
    (the blocks the two prompts share once for both), then one last call per pair."""
    p, q = pairs[0][0], pairs[1][0]  # two instructions on one source: they share the system turn's blocks
    conts = [pairs[0][1], pairs[0][1][:1], pairs[0][1][:3]]
    mp, mq = split_point(len(p), 1), split_point(len(q), 1)
    shared = planner.reusable_prefix(p[:mp], q[:mq], BLOCK)
    blocks = -(-mp // BLOCK) + -(-(mq - shared) // BLOCK)
    assert shared >= BLOCK and mp - shared > BLOCK  # the order matters: each prompt has blocks of its own
    lcpp.token_logprobs([list(range(100, 140))], [[7, 8]])  # a cache that shares nothing with either prompt
    fed = []
    real = lcpp._decode
    lcpp._decode = lambda tokens, start, outputs=(): (fed.append(len(tokens)), real(tokens, start, outputs))[1]
    try:
        got = lcpp.token_logprobs([p, q, p, q, p], [conts[0], conts[0], conts[1], conts[1], conts[2]])
    finally:
        del lcpp._decode
    assert len(fed) == blocks + 5
    assert sum(fed) == (mp + mq - shared + sum(len(p) - mp + len(c) for c in conts)
                        + sum(len(q) - mq + len(c) for c in conts[:2]))
    alone = lcpp.token_logprobs([p, p, p], conts)
    assert all(torch.equal(got[k], alone[j]) for k, j in ((0, 0), (2, 1), (4, 2)))


def test_threads_sharing_the_backend_get_what_they_would_alone(lcpp, pairs):
    """llama.cpp's context is not thread-safe: calls hold the backend's lock, and each answer is its own."""
    prompts, targets = [p for p, _ in pairs[:8]], [c for _, c in pairs[:8]]
    alone = lcpp.token_logprobs(prompts, targets)
    results: dict[int, list[torch.Tensor]] = {}
    barrier = threading.Barrier(4)

    def work(k: int) -> None:
        barrier.wait()
        picked = list(range(k, len(prompts), 4))
        results[k] = lcpp.token_logprobs([prompts[i] for i in picked], [targets[i] for i in picked])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, values in results.items():
        for j, i in enumerate(range(k, len(prompts), 4)):
            assert torch.equal(values[j], alone[i])


def test_logprob_is_within_quantization_distance_of_the_float32_engine(lcpp, real_backend, rows):
    """LogProb on real rows with the llama.cpp backend and with the float32 engine (the same file de-quantized): the
    numbers differ by quantization only, and the signatures tell them apart."""
    picked = rows[:4]
    sources, rewrites, styles = (list(x) for x in zip(*picked, strict=True))
    quantized = LogProb(backend=lcpp).score(sources, rewrites, styles)
    engine = LogProb(backend=real_backend).score(sources, rewrites, styles)
    for a, b in zip(quantized, engine, strict=True):
        assert abs(a["content"] - b["content"]) < CONTENT_TOLERANCE
        assert abs(a["style_strength"] - b["style_strength"]) < STYLE_TOLERANCE
    fields = quantized.signature.fields
    assert SIGNED in quantized.signature and fields["backend"] == "llamacpp" and fields["dtype"] == "Q4_1"
    assert quantized.signature != engine.signature and engine.signature.fields["backend"] == "local"
    assert fields["build"] == build_tag(llama_cpp)  # the kernels' build: llama.cpp's, and torch's for the engine
    assert engine.signature.fields["build"] == real_backend.engine.build != fields["build"]
    assert fields["tok"] == engine.signature.fields["tok"]  # the GGUF's own tokenizer: the converted folder's
    again = LogProb(REAL_WEIGHTS, backend="llamacpp", n_threads=1, progress=False)  # opened by name
    assert list(again.score(sources[:2], rewrites[:2], styles[:2])) == list(quantized)[:2]


def test_the_tokenizer_is_the_ggufs_own(lcpp):
    """The ids of chat strings (the template's control tokens, accents, digits, runs of spaces) are llama.cpp's."""
    chat = ChatFormat(lcpp.tokenizer)
    texts = [lcpp.tokenizer.decode(chat.prompt_ids([user_message(c, "Thanks  a lot, naïve 42!", "formal")], SYSTEM_PROMPT)[0])
             for c in CONTEXTS]
    texts += ["<|im_start|>user\nHi<|im_end|>\n", " leading space\n\n\ttabs — and “quotes”", "1234567 x 89"]
    for text in texts:
        assert lcpp.tokenizer.encode(text, add_special_tokens=False) == lcpp._llm.tokenize(
            text.encode("utf-8"), add_bos=False, special=True)
    lcpp.check_tokenizer()


def test_the_tokenizer_signs_alike_read_from_the_file_or_from_the_cache(tiny_model, tiny_tokenizer, tmp_path):
    """The first open reads the GGUF's tokenizer from the file, later ones from styleeval's cache: both must be the
    same tokenizer, with the same ``tok:`` field. A Qwen2 tokenizer read from a GGUF has no normalizer, and NFC once
    saved and read back (the Hub's has NFC): the first judge of a process on Qwen2.5-Coder-0.5B signed
    ``tok:2b30df480f25``, every later one ``tok:a503704b48f3``. What is used is the tokenizer read back, each time."""
    from _gguf import write_gguf

    from styleeval.backends.llamacpp import _gguf_tokenizer
    from styleeval.gguf_files import read_info
    from styleeval.models import tokenizer_fingerprint

    info = read_info(write_gguf(tiny_model, tiny_tokenizer, tmp_path / "tiny-qwen2.gguf", architecture="qwen2"))
    fresh, from_cache = _gguf_tokenizer(info, cached=False)
    kept, again = _gguf_tokenizer(info)
    assert (from_cache, again) == (False, True)
    assert type(fresh).__name__ == "Qwen2Tokenizer" and fresh.backend_tokenizer.normalizer is not None
    assert tokenizer_fingerprint(fresh) == tokenizer_fingerprint(kept)
    text = "Cafe\u0301 au lait"  # not NFC: both tokenizers give the ids of its NFC form
    assert fresh.encode(text, add_special_tokens=False) == kept.encode("Caf\u00e9 au lait", add_special_tokens=False)


def test_generation_is_deterministic_and_sampling_follows_each_rows_seed(lcpp, pairs):
    prompts = [pairs[0][0], pairs[3][0], pairs[7][0]]
    greedy = Decoding(do_sample=False, max_new_tokens=12)
    alone = [lcpp.generate([p], greedy, [0])[0] for p in prompts]
    assert lcpp.generate(prompts, greedy, [5, 6, 7]) == alone  # seeds do not matter to greedy decoding
    assert all(reply.strip() for reply in alone)
    assert all(len(lcpp.tokenizer.encode(r, add_special_tokens=False)) <= 12 for r in alone)
    sampled = Decoding(do_sample=True, max_new_tokens=12, temperature=1.0, top_p=0.95)
    seeds = [11, 12, 13]
    together = lcpp.generate(prompts, sampled, seeds)
    assert [lcpp.generate([p], sampled, [s])[0] for p, s in zip(prompts, seeds, strict=True)] == together
    assert lcpp.generate(prompts[::-1], sampled, seeds[::-1]) == together[::-1]
    assert len({lcpp.generate([prompts[0]], sampled, [s])[0] for s in range(4)}) > 1
    first = lcpp.tokenizer.encode(alone[0], add_special_tokens=False)[1]
    cut = lcpp.generate(prompts[:1], greedy, [0], stop_ids=[first])[0]  # a stop id ends the reply before it
    assert alone[0].startswith(cut) and len(cut) < len(alone[0])


def test_the_autorater_runs_on_it(lcpp):
    from styleeval import Autorater

    judge = Autorater(backend=lcpp, mode="expected")
    res = judge.rate(["give me the report now."], ["Could you send me the report?"], "polite")
    assert 1 <= res[0]["meaning"] <= 5 and 1 <= res[0]["style"] <= 5
    assert "backend:llamacpp" in res.signature and SIGNED in res.signature


def test_options_that_do_not_apply_are_refused(lcpp, capsys):
    from styleeval.cli import main

    with pytest.raises(UserError, match="n_threads: not an option of the local backend"):
        open_backend(REAL_WEIGHTS, backend="local", n_threads=2)
    with pytest.raises(UserError, match="device: not an option of the llamacpp backend"):
        open_backend(REAL_WEIGHTS, backend="llamacpp", device="cpu")
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    shown = capsys.readouterr().out
    assert "--n-threads" in shown and "--n-ctx" in shown and "llamacpp backend" in shown
    assert lcpp.max_length == 4096 and lcpp.identity.kind == "llamacpp"
    with pytest.raises(UserError, match="n_threads must be positive"):
        open_backend(REAL_WEIGHTS, backend="llamacpp", n_threads=0)


def test_a_missing_extra_is_one_line_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if it were not installed
    with pytest.raises(UserError) as err:
        open_backend(str(tmp_path / "model.gguf"), backend="llamacpp")
    text = str(err.value)
    assert "\n" not in text and 'pip install "styleeval[llamacpp]"' in text and CMAKE_ARGS in text
    assert LlamaCppBackend.weights_error(REAL_WEIGHTS) is not None


def test_what_is_not_a_gguf_file_is_one_line(tmp_path):
    text_file = tmp_path / "notes.gguf"
    text_file.write_text("not a model\n", encoding="utf-8")
    other = tmp_path / "weights.bin"
    other.write_bytes(b"\x00" * 64)
    for model, said in ((text_file, "not a GGUF file"), (other, "not a GGUF file"),
                        ("meta-llama/Llama-3.2-1B-Instruct", "reads GGUF files"),
                        (tmp_path / "absent.gguf", "no such GGUF file")):
        with pytest.raises(UserError, match=said) as err:
            open_backend(str(model), backend="llamacpp")
        assert "\n" not in str(err.value)
    assert LlamaCppBackend.missing_weights(str(tmp_path / "absent.gguf")).endswith("no such GGUF file")
    assert LlamaCppBackend.missing_weights(None) is None


def test_a_hostile_chat_template_never_reaches_llama_cpp_python(tiny_model, tiny_tokenizer, tmp_path):
    """llama-cpp-python compiles every chat template of a file when it opens it, and Jinja folds the constants of a
    sandbox that intercepts no operator at compile time: on main ``{{ 'x' * 10**10 }}`` built its 10 GB there (issue
    59, item 3). The templates are checked first: one line naming the file (a fresh process, its address space capped
    at 4 GB: a regression fails instead of filling the machine)."""
    import copy
    import os
    import subprocess

    from _gguf import write_gguf

    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template = "{{ 'x' * 10**10 }}" + tiny_tokenizer.chat_template
    path = str(write_gguf(tiny_model, tokenizer, tmp_path / "hostile.gguf"))
    script = ("import resource\nresource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
              "from styleeval.backends.llamacpp import LlamaCppBackend\nfrom styleeval.errors import UserError\n"
              f"try:\n    LlamaCppBackend({path!r}, n_threads=1)\nexcept UserError as err:\n    print(err)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == (f"the chat template of {path!r} (tokenizer.chat_template) cannot be rendered: it makes more "
                           "than 16,777,216 characters (a string of 1 character repeated 10000000000 times), folding "
                           "its constants as Jinja does while compiling\n")


def test_the_cli_scores_a_file_with_it(lcpp, tmp_path):
    from styleeval.cli import main
    from styleeval.files import read_scores

    rows = [("give me the report now.", "Could you send me the report?", "polite"),
            ("the food was cold.", "The food was warm.", "positive"),
            ("Thanks for nothing.", "", "polite")]
    inp = tmp_path / "in.csv"
    with open(inp, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "rewrite", "style"])
        writer.writerows(rows)
    out = tmp_path / "out.jsonl"
    code = main(["score", str(inp), "--out", str(out), "--backend", "llamacpp", "--model", REAL_WEIGHTS,
                 "--n-threads", "1", "-q"])
    assert code == 0
    records = read_scores(out)
    want = LogProb(backend=lcpp).score(*(list(x) for x in zip(*rows, strict=True)))
    assert [r["row"] for r in records] == [0, 1, 2]
    assert [(r["content"], r["style_strength"]) for r in records] == [(w["content"], w["style_strength"]) for w in want]
    assert {r["signature"] for r in records} == {want.signature}
    refused = main(["score", str(inp), "--out", str(tmp_path / "no.jsonl"), "--backend", "local",
                    "--model", REAL_WEIGHTS, "--n-threads", "2", "-q"])
    assert refused != 0
