#!/usr/bin/env python
"""Benchmark the LogProb scoring engine against the authors' naive loop, side by side in one run.

Both paths score the same sentences (the "Mind the Style Gap" test set), with the same random-weight model of a
real shape (SmolLM2-135M or Llama-3.2-1B), in the same dtype, on the same device, with the same token sets:

- naive: what the authors' script does: for every sample, three separate batch-1 forward passes (style,
  paraphrase, repeat) over prompt + rewrite, full-vocabulary logits and softmax at every position;
- engine: :class:`styleeval.LogProb` (shared-prefix KV reuse, length-sorted token-budget batches, LM head on
  the scored positions only).

It prints samples/s of both, the speedup, the largest score difference between them, the machine's measured
matmul peak in the benchmark dtype and the fraction of it that the engine achieves (useful FLOPs: no padding),
and ends with ``speedup: X.XX``.

    python scripts/bench_logprob.py --shape llama-3.2-1b --device cpu --dtype float32 --samples 8

The tokenizer is a byte-level BPE trained in-process on the test set (the real weights and tokenizers cannot
be downloaded here), so token counts are close to, not equal to, the real models'.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from styleeval import LogProb  # noqa: E402
from styleeval.chat import CONTEXTS, SYSTEM_PROMPT, user_message  # noqa: E402
from styleeval.logprob import logprob_equations  # noqa: E402
from styleeval.testing import LLAMA3_TEMPLATE, build_model, build_tokenizer  # noqa: E402


def load_test_set(data_dir: Path) -> list[tuple[str, str, str]]:
    """(source, rewrite, style) of the 500 test-set rows, read from the raw CSVs (no ``datasets`` needed)."""
    rows = []
    for k in range(1, 7):
        path = data_dir / "style_gap_testset" / "data" / f"syntest_anno{k}.csv"
        with open(path, encoding="utf-8", newline="") as fh:
            rows += [(r["input"], r["output"], r["style_to"]) for r in csv.DictReader(fh)]
    return rows


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device: torch.device, dtype: torch.dtype) -> float:
    """Measured FLOP/s of a large square matmul in ``dtype`` (best of several)."""
    n = 8192 if device.type == "cuda" else 2048
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(5 if device.type == "cuda" else 3):
        sync(device)
        t = time.perf_counter()
        reps = 10 if device.type == "cuda" else 2
        for _ in range(reps):
            a @ b
        sync(device)
        best = max(best, reps * 2 * n**3 / (time.perf_counter() - t))
    return best


def naive_scores(model, prompts, targets, device) -> list[tuple[float, float]]:
    """The authors' loop: three batch-1 forwards per sample, softmax over the full vocabulary everywhere."""
    out = []
    with torch.inference_mode():
        for i in range(len(targets)):
            per_ctx = []
            for ctx in CONTEXTS:
                ids = torch.tensor([prompts[ctx][i] + targets[i]], device=device)
                probs = torch.softmax(model(ids).logits[0].float(), dim=-1)
                start = len(prompts[ctx][i]) - 1
                p = torch.stack([probs[start + j, tok] for j, tok in enumerate(targets[i])])
                per_ctx.append(p.log().cpu())
            out.append(logprob_equations(*per_ctx))
    return out


def flops(config, lengths: list[tuple[int, int]], head_tokens: int) -> float:
    """Forward FLOPs of sequences given as (context already cached, new tokens), plus the LM head."""
    h, inter, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    kv = config.num_key_value_heads * (h // config.num_attention_heads)
    per_token = 2 * layers * (2 * h * h + 2 * h * kv + 3 * h * inter)
    total = 0.0
    for cached, new in lengths:
        total += new * per_token
        total += 4 * layers * h * (new * cached + new * (new + 1) / 2)  # QK^T and AV over the causal context
    return total + head_tokens * 2 * h * config.vocab_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["smollm2-135m", "llama-3.2-1b", "tiny"], default="smollm2-135m")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--samples", type=int, default=8, help="samples scored by the engine (cycles the test set)")
    parser.add_argument("--naive-samples", type=int, default=None, help="samples for the naive loop (default: same)")
    parser.add_argument("--batch-tokens", type=int, default=None, help="engine token budget (default: LogProb's, 512 on CPU, 16384 on GPU)")
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = load_test_set(Path(args.data_dir))
    n_engine = args.samples
    n_naive = args.naive_samples or n_engine
    data = [rows[i % len(rows)] for i in range(max(n_engine, n_naive))]
    sources, rewrites, styles = (list(x) for x in zip(*data))

    corpus = [SYSTEM_PROMPT] + [t for r in rows for t in r]
    tokenizer = build_tokenizer(corpus, vocab_size=8000, chat_template=LLAMA3_TEMPLATE)
    model = build_model(args.shape, vocab_size=len(tokenizer), dtype=dtype).to(device)
    lp = LogProb(model, tokenizer=tokenizer, device=device, dtype=dtype, batch_tokens=args.batch_tokens, progress=False)
    prompts = {ctx: lp.chat.prompt_ids([user_message(ctx, s, st) for s, st in zip(sources, styles)]) for ctx in CONTEXTS}
    targets = lp.chat.rewrite_ids(rewrites)

    print(f"device={device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else f'{torch.get_num_threads()} threads'})"
          f" dtype={args.dtype} shape={args.shape} params={sum(p.numel() for p in model.parameters()) / 1e6:.0f}M"
          f" vocab={model.config.vocab_size} batch_tokens={lp.engine.batch_tokens} torch={torch.__version__}")
    mean_prompt = sum(len(p) for ctx in CONTEXTS for p in prompts[ctx]) / (3 * len(data))
    print(f"tokens per sample: prompt {mean_prompt:.1f} per context, rewrite+eot {sum(map(len, targets)) / len(data):.1f}")

    peak_before = matmul_peak(device, dtype)
    # warm-up both paths
    naive_scores(model, {c: prompts[c][:2] for c in CONTEXTS}, targets[:2], device)
    lp.score(sources[:8], rewrites[:8], styles[:8])

    sync(device)
    t = time.perf_counter()
    naive = naive_scores(model, {c: prompts[c][:n_naive] for c in CONTEXTS}, targets[:n_naive], device)
    sync(device)
    t_naive = time.perf_counter() - t

    sync(device)
    t = time.perf_counter()
    fast = lp.score(sources[:n_engine], rewrites[:n_engine], styles[:n_engine])
    sync(device)
    t_engine = time.perf_counter() - t

    t = time.perf_counter()  # how much of the engine's time is prompt rendering + tokenization (on the CPU)
    for ctx in CONTEXTS:
        lp.chat.prompt_ids([user_message(ctx, s, st) for s, st in zip(sources[:n_engine], styles[:n_engine])])
    lp.chat.rewrite_ids(rewrites[:n_engine])
    t_tok = time.perf_counter() - t

    n_cmp = min(n_naive, n_engine)
    diff_c = max(abs(a[0] - b["content"]) for a, b in zip(naive[:n_cmp], fast[:n_cmp]))
    diff_s = max(abs(a[1] - b["style"]) for a, b in zip(naive[:n_cmp], fast[:n_cmp]))

    # useful FLOPs of the engine: the shared prefix once, then every suffix after its cached context
    all_prompts = [prompts[c][i] for c in CONTEXTS for i in range(n_engine)]
    from styleeval.engine import common_prefix_length

    prefix = min(common_prefix_length(all_prompts), min(map(len, all_prompts)) - 1)
    lengths = [(0, prefix)] + [(prefix, len(p) - prefix + len(targets[i % n_engine]) - 1)
                               for k, p in enumerate(all_prompts) for i in [k % n_engine]]
    head_tokens = 3 * sum(len(tg) for tg in targets[:n_engine])
    engine_flops = flops(model.config, lengths, head_tokens)
    naive_lengths = [(0, len(prompts[c][i]) + len(targets[i])) for c in CONTEXTS for i in range(n_naive)]
    naive_flops = flops(model.config, naive_lengths, sum(n for _, n in naive_lengths))
    peak = max(matmul_peak(device, dtype), peak_before)

    naive_rate, engine_rate = n_naive / t_naive, n_engine / t_engine
    print(f"naive : {n_naive} samples in {t_naive:.2f} s = {naive_rate:.3f} samples/s "
          f"({naive_flops / n_naive / 1e9:.0f} GFLOP/sample)")
    print(f"engine: {n_engine} samples in {t_engine:.2f} s = {engine_rate:.3f} samples/s "
          f"({engine_flops / n_engine / 1e9:.0f} GFLOP/sample, prefix {prefix} tokens shared; "
          f"{t_tok:.2f} s of it rendering and tokenizing)")
    print(f"max |score difference| over {n_cmp} samples: content {diff_c:.2e}, style {diff_s:.2e}")
    achieved = engine_flops / t_engine
    print(f"matmul peak ({args.dtype}): {peak / 1e12:.2f} TFLOP/s; engine achieves {achieved / 1e12:.2f} TFLOP/s "
          f"= {100 * achieved / peak:.0f}% of peak")
    if not math.isfinite(diff_c):
        raise SystemExit("scores differ: NaN")
    print(f"speedup: {engine_rate / naive_rate:.2f}")


if __name__ == "__main__":
    main()
