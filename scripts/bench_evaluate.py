#!/usr/bin/env python
"""Benchmark ``styleeval evaluate`` (every system's rewrite of a source in one LogProb call: one prompt run, its
rewrites packed as a token tree) against scoring each system's file separately (``styleeval score`` per system: each
source's prompt run once per system), interleaved chunk by chunk in one process on the same weights.

Workload: Lai et al.'s 9 formality systems (the 8 systems and the human references), 80 sources. A random-weight
model of a real shape (default SmolLM2-135M's) with a byte-level BPE trained on the texts, saved to a temporary
folder so that ``evaluate`` runs through its real path (``logprob_content`` / ``logprob_style`` metric specs with
``model=<folder>``). Chunks hold whole sources (all 9 systems); each is scored by both contenders in turn, the order
rotating. Reported: rows/s of each, the per-chunk ratio separate / evaluate (median, min-max), the largest score
difference, and last ``speedup: X.XX``.

    python scripts/bench_evaluate.py --sources 24 --chunk-sources 4
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="smollm2-135m", choices=["smollm2-135m", "llama-3.2-1b", "small", "tiny"])
    parser.add_argument("--sources", type=int, default=24, help="Lai sources used (x 9 systems)")
    parser.add_argument("--chunk-sources", type=int, default=4, help="sources per interleaved chunk")
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    args = parser.parse_args()

    from styleeval.corpora import load_corpus
    from styleeval.logprob import shared_logprob
    from styleeval.logprob.prompts import SYSTEM_PROMPT
    from styleeval.random_weights import LLAMA3_TEMPLATE, build_model, build_tokenizer
    from styleeval.stats import TestSettings
    from styleeval.systems import evaluate_systems

    ds = load_corpus("lai_formality", args.data_dir)
    rows = [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"]} for r in ds]
    sources = sorted({r["source_id"] for r in rows})[: args.sources]
    tokenizer = build_tokenizer([SYSTEM_PROMPT] + [r[k] for r in rows for k in ("source", "rewrite")],
                                vocab_size=8000, chat_template=LLAMA3_TEMPLATE)
    model = build_model(args.shape, vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id,
                        bos_token_id=tokenizer.bos_token_id)
    folder = tempfile.mkdtemp(prefix="bench-evaluate-")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    specs = [f"logprob_content:model={folder}:device=cpu", f"logprob_style:model={folder}:device=cpu"]
    lp = shared_logprob(folder, device="cpu")  # the very LogProb the metric specs resolve to
    systems = sorted({r["system"] for r in rows})

    def run_evaluate(chunk):
        report = evaluate_systems(chunk, specs, settings=TestSettings(trials=1000, n_boot=200))
        return report.scores.set_index(["system", "source_id"])["logprob_content"].to_dict()

    def run_separately(chunk):
        out = {}
        for system in systems:  # one `styleeval score` per system file
            mine = [r for r in chunk if r["system"] == system]
            scores = lp.score([r["source"] for r in mine], [r["rewrite"] for r in mine], [r["style"] for r in mine])
            out.update({(system, r["source_id"]): s["content"] for r, s in zip(mine, scores, strict=True)})
        return out

    run_evaluate([r for r in rows if r["source_id"] == sources[0]])  # warm-up: load, first prefix
    contenders = {"evaluate": run_evaluate, "separately": run_separately}
    totals = {name: 0.0 for name in contenders}
    ratios, max_diff, n_rows = [], 0.0, 0
    for k in range(0, len(sources), args.chunk_sources):
        ids = set(sources[k : k + args.chunk_sources])
        chunk = [r for r in rows if r["source_id"] in ids]
        n_rows += len(chunk)
        order = list(contenders) if (k // args.chunk_sources) % 2 == 0 else list(contenders)[::-1]
        times, results = {}, {}
        for name in order:
            start = time.perf_counter()
            results[name] = contenders[name](chunk)
            times[name] = time.perf_counter() - start
            totals[name] += times[name]
        ratios.append(times["separately"] / times["evaluate"])
        max_diff = max(max_diff, max(abs(results["evaluate"][key] - v) for key, v in results["separately"].items()))
        print(f"chunk {k // args.chunk_sources}: {len(chunk)} rows, evaluate {times['evaluate']:.2f}s, separately "
              f"{times['separately']:.2f}s, ratio {ratios[-1]:.2f}", flush=True)
    for name, seconds in totals.items():
        print(f"{name}: {n_rows / seconds:.2f} rows/s")
    print(f"separately / evaluate per chunk: median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, "
          f"max {max(ratios):.2f}); max |content difference| {max_diff:.2e}")
    print(f"speedup: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
