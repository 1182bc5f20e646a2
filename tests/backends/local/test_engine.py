"""The shared-prompt path (each distinct prompt run once, its rewrites packed after it as a token tree) against the
slow path, and the render-once prompt texts against full template rendering."""

from __future__ import annotations

import random

import pytest
import torch
from test_logprob import slow_scores

from styleeval import LogProb
from styleeval.backends.local.engine import ScoringEngine
from styleeval.chat import ChatFormat
from styleeval.logprob.prompts import CONTEXTS, SYSTEM_PROMPT, user_message
from styleeval.random_weights import CHATML_TEMPLATE


@pytest.fixture(scope="module")
def grouped_rows(rows):
    """Sources with 1 to 4 rewrites each (repeated prompts), prompts of mixed lengths, and empty rewrites."""
    out = []
    for k, (source, rewrite, style) in enumerate(rows[:12]):
        variants = [rewrite, rewrite.upper(), rewrite[: len(rewrite) // 2], ""][: 1 + k % 4]
        out += [(source, v, style) for v in variants]
    return out


def test_packed_equals_slow_path(tiny_model, tiny_tokenizer, grouped_rows):
    expected = [slow_scores(tiny_model, tiny_tokenizer, *row)[:2] for row in grouped_rows]
    order = list(range(len(grouped_rows)))
    random.Random(7).shuffle(order)
    shuffled = [grouped_rows[i] for i in order]
    for batch_tokens in (64, 512, 10**5):
        lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", batch_tokens=batch_tokens, progress=False)
        assert lp.backend.engine.pack_prompts
        got = lp.score(*map(list, zip(*shuffled, strict=True)))
        for k, i in enumerate(order):
            assert got[k]["content"] == pytest.approx(expected[i][0], abs=1e-5)
            assert got[k]["style_strength"] == pytest.approx(expected[i][1], abs=1e-5)


def test_packed_equals_unpacked_per_token(tiny_model, tiny_tokenizer, grouped_rows):
    chat = ChatFormat(tiny_tokenizer)
    sources, rewrites, styles = map(list, zip(*grouped_rows, strict=True))
    prompts = [p for ctx in CONTEXTS for p in chat.prompt_ids([user_message(ctx, s, st)
                                                             for s, st in zip(sources, styles, strict=True)], SYSTEM_PROMPT)]
    targets = chat.rewrite_ids(rewrites) * len(CONTEXTS)
    targets[3] = []  # an empty continuation
    packed = ScoringEngine(tiny_model, batch_tokens=300, pack_prompts=True).token_logprobs(prompts, targets)
    plain = ScoringEngine(tiny_model, batch_tokens=300).token_logprobs(prompts, targets)
    assert [len(x) for x in packed] == [len(t) for t in targets]
    for a, b in zip(packed, plain, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=0)
    assert packed[3].numel() == 0


def test_single_row_and_all_empty(tiny_model, tiny_tokenizer):
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    one = lp.score(["the cat sat"], ["The cat sat down."], "formal")
    want = slow_scores(tiny_model, tiny_tokenizer, "the cat sat", "The cat sat down.", "formal")
    assert one[0]["content"] == pytest.approx(want[0], abs=1e-5)
    engine = ScoringEngine(tiny_model, pack_prompts=True)
    out = engine.token_logprobs([[1, 2, 3], [1, 2, 3]], [[], []])
    assert [x.numel() for x in out] == [0, 0]


@pytest.mark.parametrize("template", [None, CHATML_TEMPLATE, "verbatim"])
def test_render_once_equals_full_rendering_on_every_test_set_row(tiny_tokenizer, data_dir, template):
    import csv

    if template == "verbatim":  # a template that neither trims nor pads the content
        template = ("{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>{{ m['content'] }}"
                    "<|eot_id|>{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant"
                    "<|end_header_id|>{% endif %}")
    chat = ChatFormat(tiny_tokenizer, chat_template=template)
    rows = []
    for k in range(1, 7):
        with open(data_dir / "style_gap_testset" / "data" / f"syntest_anno{k}.csv", encoding="utf-8") as fh:
            rows += [(r["input"], r["style_to"]) for r in csv.DictReader(fh)]
    assert len(rows) == 500
    users = [user_message(ctx, s, st) for ctx in CONTEXTS for s, st in rows] + ["  padded user text \n", ""]
    assert chat.prompt_texts(users, SYSTEM_PROMPT) == [chat.prompt_text(u, SYSTEM_PROMPT) for u in users]
    ids = chat.prompt_ids(users, SYSTEM_PROMPT)
    full = tiny_tokenizer([chat.prompt_text(u, SYSTEM_PROMPT) for u in users], add_special_tokens=False)["input_ids"]
    assert ids == [list(x) for x in full]


def test_benchmark_smoke_run(data_dir):
    """The interleaved benchmark runs end to end on the tiny shape (no timing assertion)."""
    import os
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "scripts" / "bench_logprob.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # the two runs side by side (~half the wall time): a thread each
    with ThreadPoolExecutor(2) as pool:
        procs = list(pool.map(lambda workload: subprocess.run(
            [sys.executable, str(script), "--shape", "tiny", "--workload", workload, "--samples", "4",
             "--contenders", "engine,unpacked,naive", "--data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=300, env=env), ("testset", "lai")))
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
        assert "speedup:" in proc.stdout and "% of peak" in proc.stdout


def test_thread_guard(monkeypatch):
    from styleeval.backends.local.engine import available_cpus, guard_threads

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        torch.set_num_threads(available_cpus() + 7)
        guard_threads()
        assert torch.get_num_threads() == available_cpus()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")  # an explicit choice is left alone
        torch.set_num_threads(1)
        guard_threads()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_pipelined_pieces_equal_one_piece(tiny_model, tiny_tokenizer, grouped_rows):
    # pieces of ~5 rows: the next piece is tokenized in a thread while one is scored; a prompt's rewrites never split
    from styleeval.logprob import _pieces

    order = list(range(len(grouped_rows)))
    random.Random(3).shuffle(order)
    shuffled = [grouped_rows[i] for i in order]
    sources, rewrites, styles = map(list, zip(*shuffled, strict=True))
    whole = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False).score(
        sources, rewrites, styles, return_tokens=True)
    piecewise = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False, pipeline_rows=5)
    got = piecewise.score(sources, rewrites, styles, return_tokens=True)
    for a, b in zip(got, whole, strict=True):
        assert a["content"] == pytest.approx(b["content"], abs=1e-6) and a["style_strength"] == pytest.approx(b["style_strength"], abs=1e-6)
        assert [t["token"] for t in a["tokens"]] == [t["token"] for t in b["tokens"]]
    keys = [(s, st) for s, st in zip(sources, styles, strict=True)]
    pieces = _pieces(sorted(range(len(keys)), key=lambda i: keys[i]), keys, 5)
    assert len(pieces) > 3 and sorted(i for p in pieces for i in p) == list(range(len(keys)))
    owner = {}
    for k, piece in enumerate(pieces):
        for i in piece:
            assert owner.setdefault(keys[i], k) == k  # every (source, style) in one piece
    # an overlong row is named by its position in the caller's list, whatever piece it falls in
    long_sources = sources[:-1] + ["word " * 3000]
    with pytest.raises(ValueError, match=f"row {len(sources) - 1}: prompt \\+ rewrite is"):
        piecewise.score(long_sources, rewrites, styles)
    with pytest.raises(ValueError, match="pipeline_rows must be positive"):
        LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", pipeline_rows=0)


def _layout_by_hand(batch, prefix_len, width):
    """The tree layout one token at a time: a node sees the prefix, the prompt, its ancestors and itself."""
    n = len(batch)
    mask = torch.zeros((n, 1, width, prefix_len + width), dtype=torch.bool)
    mask[:, :, :, :prefix_len] = True
    positions = torch.zeros((n, width), dtype=torch.long)
    for b, row in enumerate(batch):
        trunk = row.start + 1
        for q in range(width):
            positions[b, q] = prefix_len + q
            mask[b, 0, q, prefix_len + q] = True
            if q < trunk:
                mask[b, 0, q, prefix_len : prefix_len + q + 1] = True
        parents = [] if row.parents is None else row.parents
        depth = []
        for j, parent in enumerate(parents):
            q = trunk + j
            mask[b, 0, q, prefix_len : prefix_len + trunk] = True
            d, a = 1, parent
            while a != -1:
                mask[b, 0, q, prefix_len + trunk + a] = True
                d, a = d + 1, parents[a]
            depth.append(d)
            positions[b, q] = prefix_len + trunk - 1 + d
    return mask, positions


def test_tree_layout_equals_a_token_by_token_construction():
    """A tree's position ids and reads, and the keys its invariant layout lets each token see, equal a mask and
    positions built one token at a time."""
    from styleeval.backends.local import invariant
    from styleeval.backends.local.engine import _Row

    rng = random.Random(0)
    batch = []
    for b in range(5):
        trunk = rng.randint(1, 6)
        n_nodes = rng.choice([0, 1, 4, 9])
        parents = [rng.randint(-1, j - 1) for j in range(n_nodes)]
        reads = [rng.randint(-1, n_nodes - 1) for _ in range(3)]
        batch.append(_Row(b, list(range(trunk + n_nodes)), trunk - 1, torch.zeros((3, 1), dtype=torch.long),
                          parents, reads))
    width = max(len(r.suffix) for r in batch) + 2  # some padding
    positions, gather = ScoringEngine._tree_positions(batch, 4, width), ScoringEngine._read_positions(batch)
    want_mask, want_positions = _layout_by_hand(batch, 4, width)
    assert torch.equal(positions, want_positions)
    for b, row in enumerate(batch):
        seen = {}  # query -> the keys it sees, from the layout's sequences
        for seq in invariant.tree_sequences(4, row.start + 1, row.parents):
            for q, rank in seq.queries:
                assert q not in seen  # each query computed once
                seen[q] = sorted(seq.keys[: rank + 1])
        real = len(row.suffix)
        assert sorted(seen) == list(range(real))
        assert [seen[q] for q in range(real)] == [want_mask[b, 0, q].nonzero().flatten().tolist()
                                                  for q in range(real)]
    want_gather = [r.start if p < 0 else r.start + 1 + p for r in batch for p in r.reads]
    assert gather.tolist() == want_gather


def test_trees_with_no_reads_and_different_candidate_counts_share_a_batch(tiny_model):
    from styleeval.backends import TokenTree

    engine = ScoringEngine(tiny_model, batch_tokens=10**5)
    trees = [TokenTree([1, 2, 3], [], []), TokenTree([1, 2], [(5, -1)], [(-1, [4, 5]), (0, [6])]),
             TokenTree([1, 2, 4], [], [(-1, [7])])]
    together = engine.tree_logprobs(trees)
    assert together[0] == []
    for tree, got in zip(trees[1:], together[1:], strict=True):
        alone = engine.tree_logprobs([tree])[0]
        assert [len(x) for x in got] == [len(c) for _, c in tree.reads]
        for a, b in zip(got, alone, strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0)


def _prompts_and_targets(tokenizer, rows):
    chat = ChatFormat(tokenizer)
    sources, rewrites, styles = map(list, zip(*rows, strict=True))
    prompts = [p for ctx in CONTEXTS for p in chat.prompt_ids([user_message(ctx, s, st)
                                                             for s, st in zip(sources, styles, strict=True)], SYSTEM_PROMPT)]
    return prompts, chat.rewrite_ids(rewrites) * len(CONTEXTS)


def _fed_tokens(engine, prompts, targets):
    """``engine.token_logprobs(prompts, targets)`` and the tokens the decoder was fed meanwhile (padding included)."""
    fed = []
    handle = engine.decoder.register_forward_pre_hook(lambda _m, _a, kw: fed.append(kw["input_ids"].numel()),
                                                      with_kwargs=True)
    try:
        return engine.token_logprobs(prompts, targets), sum(fed)
    finally:
        handle.remove()


def test_prefix_kept_across_calls_is_exact_and_not_run_again(tiny_model, tiny_tokenizer, grouped_rows):
    """The system turn's KV cache is kept from one call to the next: later calls equal a fresh engine's results and
    feed exactly the prefix's tokens fewer; prefixes shorter (a slice of the kept one), longer (an extension) or
    different from the kept one are exact too."""
    kept = ScoringEngine(tiny_model, batch_tokens=300, pack_prompts=True)
    first = _prompts_and_targets(tiny_tokenizer, grouped_rows[:9])
    second = _prompts_and_targets(tiny_tokenizer, grouped_rows[9:])
    one = _prompts_and_targets(tiny_tokenizer, grouped_rows[3:4])
    other = ([[7, 8, 9, 10]], [[11, 12]])  # shares nothing with the chat prompts
    kept.token_logprobs(*first)
    prefix = min(len(p) for p in second[0]) - 1
    prefix = min(prefix, *(next((i for i, (a, b) in enumerate(zip(p, second[0][0], strict=True)) if a != b), len(p))
                           for p in second[0]))
    assert prefix > 10  # the system turn
    for prompts, targets in (second, one, second, other, first):
        fresh = ScoringEngine(tiny_model, batch_tokens=300, pack_prompts=True)
        got, fed_kept = _fed_tokens(kept, prompts, targets)
        want, fed_fresh = _fed_tokens(fresh, prompts, targets)
        for a, b in zip(got, want, strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0)
        if prompts is second[0]:
            assert fed_fresh - fed_kept == prefix


def test_kept_prefix_is_dropped_when_the_weights_change(tiny_model, tiny_tokenizer, grouped_rows):
    import copy

    model = copy.deepcopy(tiny_model)
    engine = ScoringEngine(model, batch_tokens=300, pack_prompts=True)
    prompts, targets = _prompts_and_targets(tiny_tokenizer, grouped_rows[:6])
    before = engine.token_logprobs(prompts, targets)
    with torch.no_grad():
        model.model.layers[0].self_attn.v_proj.weight.mul_(1.5)  # in place: the cached prefix is now stale
    after = engine.token_logprobs(prompts, targets)
    want = ScoringEngine(model, batch_tokens=300, pack_prompts=True).token_logprobs(prompts, targets)
    assert max((a - b).abs().max().item() for a, b in zip(before, after, strict=True) if len(a)) > 1e-3
    for a, b in zip(after, want, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=0)
    model.to(torch.float64)  # a new storage: also a change (the kept float32 prefix and head are not used)
    wide = engine.token_logprobs(prompts[:1], targets[:1])[0]
    assert wide.dtype == torch.float64  # float64 weights keep float64 through the head
    assert torch.equal(wide, ScoringEngine(model, batch_tokens=300, pack_prompts=True).token_logprobs(
        prompts[:1], targets[:1])[0])


def test_a_call_never_switches_the_model(tiny_model, tiny_tokenizer, grouped_rows):
    """Issue 37: the engine used to switch the model's attention implementation for its plain batches (restored after
    the call), state another thread's generation or scoring on the same model would see. Now the implementation is
    set once, when the first engine is built (the batch-invariant attention, which runs the model's own SDPA on any
    pass without the engine's layout), and only read by every call; a pass of someone else's (generation) gives the
    same bits as before the engine existed."""
    import copy

    from styleeval.backends.local import invariant

    model = copy.deepcopy(tiny_model)
    prompts, targets = _prompts_and_targets(tiny_tokenizer, grouped_rows[:8])
    ids = torch.tensor([prompts[0] + targets[0]])
    before = model(ids).logits
    seen = []
    hook = model.model.layers[0].register_forward_pre_hook(lambda *_: seen.append(model.config._attn_implementation))
    try:
        for pack in (False, True):
            ScoringEngine(model, batch_tokens=200, pack_prompts=pack).token_logprobs(prompts, targets)
        ScoringEngine(model, share_prompts=True, min_shared=1).candidate_logprobs(prompts[:6], [3, 4])
    finally:
        hook.remove()
    assert len(seen) > 4 and set(seen) == {f"{invariant.NAME}_sdpa"}
    assert torch.equal(model(ids).logits, before)  # without a layout: transformers' SDPA attention, unchanged


def test_head_blocks_gathered_across_batches(tiny_model, tiny_tokenizer, grouped_rows):
    """The LM head runs on blocks of ``head_rows`` scored positions gathered across decoder batches: every block but
    the last is full, and the results do not depend on the block size (plain rows, token trees, candidates)."""
    from styleeval.backends import TokenTree

    prompts, targets = _prompts_and_targets(tiny_tokenizer, grouped_rows)
    trees = [TokenTree([1, 2, 3], [(4, -1), (5, 0)], [(-1, [4, 6]), (1, [7])]), TokenTree([1, 2], [], [(-1, [9])])]
    results = {}
    for head_rows in (1, 7, None):
        engine = ScoringEngine(tiny_model, batch_tokens=200, head_rows=head_rows, pack_prompts=True)
        sizes = []
        real = engine._head_logprobs
        engine._head_logprobs = lambda h, t, real=real, sizes=sizes: (sizes.append(len(h)), real(h, t))[1]
        results[head_rows] = (engine.token_logprobs(prompts, targets), engine.tree_logprobs(trees),
                              engine.candidate_logprobs(prompts[:5], [3, 4, 5]))
        total = sum(len(t) for t in targets) + 3 + 5
        assert sum(sizes) == total
        assert engine.head_rows == (head_rows or 1024)
        if head_rows == 7:  # full blocks only, except the last of each call
            assert sizes.count(7) >= len(sizes) - 3 and len(sizes) >= total // 7
    for head_rows in (1, 7):
        got, want = results[head_rows], results[None]
        for a, b in zip(got[0], want[0], strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0)
        for tree_got, tree_want in zip(got[1], want[1], strict=True):
            for a, b in zip(tree_got, tree_want, strict=True):
                assert torch.allclose(a, b, atol=1e-5, rtol=0)
        assert torch.allclose(got[2], want[2], atol=1e-5, rtol=0)


def test_out_of_memory_in_the_head_halves_its_blocks(tiny_model, tiny_tokenizer, grouped_rows):
    prompts, targets = _prompts_and_targets(tiny_tokenizer, grouped_rows[:8])
    want = ScoringEngine(tiny_model).token_logprobs(prompts, targets)
    engine = ScoringEngine(tiny_model, head_rows=64)
    real = engine._head_logprobs

    def limited(hidden, ids):  # the device "has memory" for 10 rows of logits at most
        if len(hidden) > 10:
            raise torch.OutOfMemoryError("simulated")
        return real(hidden, ids)

    engine._head_logprobs = limited
    for _ in range(2):  # halved for the rest of the call; the next call starts again from the engine's 64
        sizes = []
        engine._head_logprobs = lambda h, t, sizes=sizes: (sizes.append(len(h)), limited(h, t))[1]
        with pytest.warns(UserWarning, match="out of memory in the LM head on 64 rows; halving it for the rest"):
            got = engine.token_logprobs(prompts, targets)
        assert sizes[:4] == [64, 32, 16, 8] and max(sizes[4:]) == 8
        assert engine.head_rows == 64
        for a, b in zip(got, want, strict=True):
            assert torch.allclose(a, b, atol=1e-5, rtol=0)
