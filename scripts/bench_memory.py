#!/usr/bin/env python
"""Peak memory of LogProb scoring for the paper's model sizes: computed from each shape's config, and measured on a
random-weight model of that shape wherever it fits in this machine's memory.

For each shape (SmolLM2-135M, Llama-3.2-1B, Llama-3.2-3B, Llama-3.1-8B) and each engine precision (float32,
bfloat16), a child process builds a random-weight ``LlamaForCausalLM`` of that shape directly in that precision,
then scores ``--rows`` test-set-like rows with :class:`styleeval.LogProb` (default engine options); reported: the
weights' bytes (computed), the process's peak RSS (``VmHWM``: weights, the PyTorch runtime and the engine's working
memory: KV caches, the LM head's logits over the vocabulary), and the peak during scoring alone (the high-water mark
reset after the build). A measurement that would not fit (computed weights + 2 GB above the memory available now)
is skipped and said.

For llama.cpp (the GGUF as shipped, memory-mapped) the weights are the file's size: the published Q4_K_M files of
these models (their sizes below), plus llama.cpp's KV cache (float16, ``n_ctx`` positions) and the logits it keeps
(``n_ctx`` x vocabulary floats with ``logits_all``); measured for the 135M by ``scripts/bench_real.py``.

    python scripts/bench_memory.py --json results/memory.json
    python scripts/bench_memory.py --shapes smollm2-135m,llama-3.2-1b --dtypes bfloat16
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from styleeval.random_weights import SHAPES  # noqa: E402

PAPER_SHAPES = ("smollm2-135m", "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b")
Q4_K_M_BYTES = {"smollm2-135m": 105_467_072, "llama-3.2-1b": 807_694_464, "llama-3.2-3b": 2_019_377_696,
                "llama-3.1-8b": 4_920_734_272}
"""Sizes of the Q4_K_M GGUF files of SmolLM2-135M-Instruct, Llama-3.2-1B/3B-Instruct and Llama-3.1-8B-Instruct as
published on the Hub (bartowski's and HuggingFaceTB's conversions, 2024-2025); the preset's Q4_1 135M is
98,362,432 bytes."""
GB = 1e9


def n_params(shape: str) -> int:
    """Parameters of a Llama-style model of ``shape`` (embeddings, an untied head, attention, MLP, norms)."""
    c = SHAPES[shape]
    h, inter, layers, vocab = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    kv = c["num_key_value_heads"] * h // c["num_attention_heads"]
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * inter + 2 * h
    return int(vocab * h * (1 if c["tie_word_embeddings"] else 2) + layers * per_layer + h)


def llama_cpp_bytes(shape: str, n_ctx: int = 2048) -> dict[str, float]:
    """llama.cpp's memory for ``shape`` from its Q4_K_M file: weights, float16 KV cache, the logits of every
    position (``logits_all``)."""
    c = SHAPES[shape]
    kv_dim = c["num_key_value_heads"] * c["hidden_size"] // c["num_attention_heads"]
    kv = n_ctx * c["num_hidden_layers"] * 2 * kv_dim * 2
    logits = n_ctx * c["vocab_size"] * 4
    return {"weights": Q4_K_M_BYTES[shape], "kv_cache": kv, "logits": logits}


def hwm_mb() -> float:
    """This process's peak resident set size so far (VmHWM, MB)."""
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_hwm() -> None:
    """Reset the high-water mark to the current RSS (Linux: ``5`` to ``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w", encoding="utf-8") as fh:
        fh.write("5")


def measure(shape: str, dtype: str, rows: int, threads: int, conn: Any) -> None:
    """In a child: build the model in ``dtype``, score ``rows`` rows, send the peaks."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from styleeval import LogProb
    from styleeval.random_weights import LLAMA3_TEMPLATE, build_tokenizer

    torch.set_num_threads(threads)
    texts = ["Could you please send me the report by Friday?", "gimme the report now", "formal", "polite"]
    tokenizer = build_tokenizer(texts * 20, vocab_size=300, chat_template=LLAMA3_TEMPLATE)
    runtime = hwm_mb()
    torch.set_default_dtype(getattr(torch, dtype))  # built in its precision: no float32 copy on the way
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SHAPES[shape])).eval()
    torch.set_default_dtype(torch.float32)
    built = hwm_mb()
    reset_hwm()
    lp = LogProb(model, tokenizer=tokenizer, dtype=dtype, progress=False)
    sources = [f"hey, send me report number {i} right now, ok?" for i in range(rows)]
    rewrites = [f"Could you kindly send me report number {i} at your earliest convenience?" for i in range(rows)]
    start = time.perf_counter()
    lp.score(sources, rewrites, "polite")
    conn.send({"runtime_mb": runtime, "after_build_mb": built, "scoring_peak_mb": hwm_mb(),
               "score_s": time.perf_counter() - start, "signature": lp.signature})


def available_bytes() -> float:
    with open("/proc/meminfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=",".join(PAPER_SHAPES))
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--rows", type=int, default=4, help="rows scored per measurement (default %(default)s)")
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 2))
    parser.add_argument("--no-measure", action="store_true", help="computed numbers only")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    ctx = multiprocessing.get_context("spawn")
    results = []
    print(f"{'shape':<14} {'params':>7} {'backend':<17} {'weights':>8} {'peak RSS measured':>18} {'of it scoring':>14}"
          f" {'score s':>8}")
    for shape in args.shapes.split(","):
        params = n_params(shape)
        for dtype in args.dtypes.split(","):
            weights = params * (4 if dtype == "float32" else 2)
            record: dict[str, Any] = {"shape": shape, "params": params, "backend": f"engine {dtype}",
                                      "weights_bytes": weights}
            if args.no_measure:
                record["skipped"] = "--no-measure"
            elif weights + 2 * GB > available_bytes():
                record["skipped"] = f"needs ~{(weights + 2 * GB) / GB:.0f} GB, {available_bytes() / GB:.0f} GB available"
            else:
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=measure, args=(shape, dtype, args.rows, args.threads, child))
                proc.start()
                record.update(parent.recv())
                proc.join()
                record["peak_mb"] = max(record["after_build_mb"], record["scoring_peak_mb"])
            results.append(record)
            peak = f"{record['peak_mb'] / 1024:.2f} GB" if "peak_mb" in record else record["skipped"]
            scoring = f"{record['scoring_peak_mb'] / 1024:.2f} GB" if "peak_mb" in record else ""
            print(f"{shape:<14} {params / 1e9:>6.2f}B {'engine ' + dtype:<17} {weights / GB:>6.2f}GB {peak:>18} "
                  f"{scoring:>14} {record.get('score_s', float('nan')):>8.1f}", flush=True)
        parts = llama_cpp_bytes(shape)
        results.append({"shape": shape, "params": params, "backend": "llama.cpp Q4_K_M", "weights_bytes":
                        parts["weights"], "kv_cache_bytes": parts["kv_cache"], "logits_bytes": parts["logits"]})
        print(f"{shape:<14} {params / 1e9:>6.2f}B {'llama.cpp Q4_K_M':<17} {parts['weights'] / GB:>6.2f}GB "
              f"{'computed: + KV ' + format(parts['kv_cache'] / GB, '.2f') + ' + logits ' + format(parts['logits'] / GB, '.2f') + ' GB':>18}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
