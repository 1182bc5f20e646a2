#!/usr/bin/env python
"""Benchmark the LogProb scoring engine against its peers, interleaved chunk by chunk in one process.

Every contender scores the same rows with the same random-weight model of a real shape and the same token ids
(prompts and rewrites tokenized once by :class:`styleeval.LogProb`'s chat format):

- ``engine``: :class:`styleeval.LogProb` (shared system-prompt KV cache, every distinct prompt run once with its
  rewrites packed after it as a token tree, LM head on the scored positions only);
- ``unpacked``: the engine without prompt packing (each (prompt, rewrite) pair on its own; shows what packing buys);
- ``naive``: the authors' loop: three batch-1 forward passes per row over prompt + rewrite, full softmax everywhere;
- ``lm-eval``: lm-evaluation-harness's ``HFLM._loglikelihood_tokens`` (``pip install lm-eval``; skipped without it);
- ``vllm``: a vLLM server's ``prompt_logprobs`` (``--vllm-url``; the server must serve ``--model-dir``, which this
  script writes with ``--save-model-dir`` so that both use the same weights).

The rows are cut into chunks (whole sources, so that a chunk holds a source's rewrites together, as metaeval data
does); each chunk is scored by every contender in turn, the order rotating from chunk to chunk (A B, B A, ...), so
that a noisy machine slows all contenders alike. Reported: samples/s per contender, per-chunk ratios (median and
min-max) of each contender's time to the engine's, the largest score difference to the engine, the measured matmul
peak and the fraction of it the engine achieves on the FLOPs its shared-prompt plan needs (no padding counted; the
system turn, shared by every row of the workload, counted once per run: the engine keeps its KV cache across calls) --
overall against the best peak seen, and per chunk against the mean of the peaks measured just before and just after
that chunk (the machine's speed drifts by 20% and more between minutes on a shared CPU) -- and last
``speedup: X.XX`` (median engine vs naive).

    python scripts/bench_logprob.py --workload lai --shape smollm2-135m --samples 54
    python scripts/bench_logprob.py --workload testset --shape llama-3.2-1b --samples 16 --contenders engine,naive

The tokenizer is a byte-level BPE trained in-process on the texts (the real tokenizers cannot be downloaded here),
so token counts are close to, not equal to, the real models'.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from styleeval import LogProb  # noqa: E402
from styleeval.backends.base import common_prefix_length  # noqa: E402
from styleeval.logprob import logprob_equations  # noqa: E402
from styleeval.logprob.prompts import CONTEXTS, SYSTEM_PROMPT  # noqa: E402
from styleeval.random_weights import LLAMA3_TEMPLATE, build_model, build_tokenizer  # noqa: E402


def load_test_set(data_dir: Path) -> list[tuple[str, str, str, str]]:
    """(source id, source, rewrite, style) of the 500 test-set rows, in file order (a source's rewrites adjacent)."""
    rows = []
    for k in range(1, 7):
        path = data_dir / "style_gap_testset" / "data" / f"syntest_anno{k}.csv"
        with open(path, encoding="utf-8", newline="") as fh:
            rows += [(f"{k}/{r['sample_id']}", r["input"], r["output"], r["style_to"]) for r in csv.DictReader(fh)]
    return rows


def load_lai(data_dir: Path) -> list[tuple[str, str, str, str]]:
    """Lai et al.'s 720 rated rows (80 sources x 9 rewrites), grouped by source."""
    from styleeval.corpora import load_corpus

    ds = load_corpus("lai_formality", data_dir)
    rows = list(zip(ds["source_id"], ds["source"], ds["rewrite"], ds["target_style"], strict=True))
    return sorted(rows, key=lambda r: r[0])


def chunks_by_source(rows: list, size: int) -> list[list]:
    """Consecutive chunks of about ``size`` rows that never split a source's rewrites."""
    out, current = [], []
    for i, row in enumerate(rows):
        current.append(row)
        last_of_source = i + 1 == len(rows) or rows[i + 1][0] != row[0]
        if len(current) >= size and last_of_source:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


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


def flops(config, lengths: list[tuple[int, int]], head_tokens: int) -> float:
    """Forward FLOPs of token runs given as (context already cached, new tokens), plus the LM head."""
    h, inter, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    kv = config.num_key_value_heads * (h // config.num_attention_heads)
    per_token = 2 * layers * (2 * h * h + 2 * h * kv + 3 * h * inter)
    total = 0.0
    for cached, new in lengths:
        total += new * per_token
        total += 4 * layers * h * (new * cached + new * (new + 1) / 2)  # QK^T and AV over the causal context
    return total + head_tokens * 2 * h * config.vocab_size


def global_prefix(prompts: list[list[int]]) -> int:
    """Tokens the engine runs once for all ``prompts`` (their common prefix, at least one prompt token left)."""
    return min(common_prefix_length(prompts), min(map(len, prompts)) - 1)


def plan_flops(config, prompts: list[list[int]], targets: list[list[int]], done: int = 0) -> float:
    """FLOPs the shared-prompt plan needs: the prompts' common prefix once (its first ``done`` tokens excepted: already
    run, the engine keeps them across calls), each distinct prompt once after it, each rewrite once after its prompt,
    the LM head on the scored tokens."""
    prefix = global_prefix(prompts)
    lengths = [(done, prefix - done)]
    seen = set()
    for p, t in zip(prompts, targets, strict=True):
        if tuple(p) not in seen:
            seen.add(tuple(p))
            lengths.append((prefix, len(p) - prefix))
        if t:
            lengths.append((len(p), len(t) - 1))
    return flops(config, lengths, sum(len(t) for t in targets))


# -- contenders: each takes (prompts per context, targets) and returns [(content, style)] -----------------------
def naive(model, device):
    def run(prompts, targets):
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

    return run


def engine(lp):
    def run(prompts, targets):
        flat_p = [prompts[ctx][i] for i in range(len(targets)) for ctx in CONTEXTS]
        flat_t = [targets[i] for i in range(len(targets)) for _ in CONTEXTS]
        lps = lp.backend.engine.token_logprobs(flat_p, flat_t)
        return [logprob_equations(*lps[3 * i : 3 * i + 3]) for i in range(len(targets))]

    return run


def lm_eval_contender(model, tokenizer, batch_size: int):
    from lm_eval.models.huggingface import HFLM

    hflm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size, max_length=4096)

    def run(prompts, targets):
        out = []
        reqs = [(("", ""), prompts[ctx][i], targets[i]) for i in range(len(targets)) for ctx in CONTEXTS]
        # _loglikelihood_tokens returns the summed log-likelihood per request: enough to time it; scores per token
        # are not exposed, so only the timing is compared
        hflm._loglikelihood_tokens(reqs, disable_tqdm=True)
        out = [(math.nan, math.nan)] * len(targets)
        return out

    return run


def vllm_contender(url: str, concurrency: int):
    from styleeval.backends.openai_server import ServerBackend

    backend = ServerBackend(None, url, need_tokenizer=False, max_concurrency=concurrency, progress=False)

    def run(prompts, targets):
        flat_p = [prompts[ctx][i] for i in range(len(targets)) for ctx in CONTEXTS]
        flat_t = [targets[i] for i in range(len(targets)) for _ in CONTEXTS]
        lps = backend.token_logprobs(flat_p, flat_t, group=len(CONTEXTS))
        return [logprob_equations(*lps[3 * i : 3 * i + 3]) for i in range(len(targets))]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=["testset", "lai"], default="testset")
    parser.add_argument("--shape", choices=["smollm2-135m", "llama-3.2-1b", "small", "tiny"], default="smollm2-135m")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    parser.add_argument("--samples", type=int, default=48, help="rows scored (whole sources, from the start)")
    parser.add_argument("--chunk", type=int, default=None, help="rows per interleaved chunk (default 16; lai 18)")
    parser.add_argument("--contenders", default="engine,naive",
                        help="comma-separated: engine, unpacked, naive, lm-eval, vllm (engine is always run)")
    parser.add_argument("--batch-tokens", type=int, default=None, help="engine token budget (LogProb's default)")
    parser.add_argument("--vllm-url", default=None, help="a vLLM server serving --model-dir")
    parser.add_argument("--model-dir", default=None, help="load the model from this folder (saved by --save-model-dir)")
    parser.add_argument("--save-model-dir", default=None, help="save the random model + tokenizer here and exit")
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    if args.threads:
        torch.set_num_threads(args.threads)
    data_dir = Path(args.data_dir)
    test_rows, all_rows = load_test_set(data_dir), None
    rows = test_rows if args.workload == "testset" else load_lai(data_dir)
    chunk = args.chunk or (18 if args.workload == "lai" else 16)
    chunks = chunks_by_source(rows, chunk)
    picked, n = [], 0
    for c in chunks:
        if n >= args.samples:
            break
        picked.append(c)
        n += len(c)
    chunks = picked

    if args.model_dir:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
        model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=dtype).to(device).eval()
    else:
        all_rows = test_rows + (load_lai(data_dir) if data_dir.exists() else [])
        corpus = [SYSTEM_PROMPT] + [t for r in all_rows for t in r[1:]]
        tokenizer = build_tokenizer(corpus, vocab_size=8000, chat_template=LLAMA3_TEMPLATE)
        model = build_model(args.shape, vocab_size=len(tokenizer), dtype=dtype,
                            eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id).to(device)
    if args.save_model_dir:
        model.save_pretrained(args.save_model_dir)
        tokenizer.save_pretrained(args.save_model_dir)
        print(f"saved to {args.save_model_dir}; serve it with vLLM and pass --vllm-url and --model-dir")
        return

    lp = LogProb(model, tokenizer=tokenizer, device=device, dtype=dtype, batch_tokens=args.batch_tokens, progress=False)
    wanted = ["engine"] + [c for c in args.contenders.split(",") if c and c != "engine"]
    runners = {"engine": engine(lp)}
    for name in wanted[1:]:
        if name == "naive":
            runners[name] = naive(model, device)
        elif name == "unpacked":
            runners[name] = engine(LogProb(model, tokenizer=tokenizer, device=device, dtype=dtype,
                                           batch_tokens=args.batch_tokens, pack_prompts=False, progress=False))
        elif name == "lm-eval":
            try:
                runners[name] = lm_eval_contender(model, tokenizer, batch_size=16)
            except ImportError:
                print("lm-eval: not installed (pip install lm-eval); skipped")
        elif name == "vllm":
            if not args.vllm_url:
                print("vllm: no --vllm-url; skipped")
            else:
                runners[name] = vllm_contender(args.vllm_url, concurrency=64)
        else:
            raise SystemExit(f"unknown contender {name!r}")

    def tokenize(chunk_rows):
        sources = [r[1] for r in chunk_rows]
        styles = [r[3] for r in chunk_rows]
        prompts = {ctx: lp.prompt_ids(ctx, sources, styles) for ctx in CONTEXTS}
        return prompts, lp.chat.rewrite_ids([r[2] for r in chunk_rows])

    encoded = [tokenize(c) for c in chunks]
    n_rows = sum(len(c) for c in chunks)
    distinct = len({(r[0], r[3]) for c in chunks for r in c})
    print(f"device={device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else f'{torch.get_num_threads()} threads'})"
          f" dtype={args.dtype} shape={args.shape} params={sum(p.numel() for p in model.parameters()) / 1e6:.0f}M"
          f" vocab={model.config.vocab_size} batch_tokens={lp.backend.engine.batch_tokens} torch={torch.__version__}")
    print(f"workload={args.workload}: {n_rows} rows in {len(chunks)} chunks, {distinct} distinct (source, style)"
          f" prompts per context; contenders: {', '.join(runners)}")

    peak_before = matmul_peak(device, dtype)
    for run in runners.values():  # warm-up
        prompts, targets = encoded[0]
        k = min(2, len(targets))
        run({c: prompts[c][:k] for c in CONTEXTS}, targets[:k])

    times = {name: [] for name in runners}
    scores = {name: [] for name in runners}
    names = list(runners)
    peaks = []  # the matmul peak measured again before every chunk and after the last: the machine's speed drifts
    for k, (prompts, targets) in enumerate(encoded):
        peaks.append(matmul_peak(device, dtype))
        order = names[k % len(names):] + names[: k % len(names)]  # rotate: A B, B A, ...
        for name in order:
            sync(device)
            t = time.perf_counter()
            out = runners[name](prompts, targets)
            sync(device)
            times[name].append(time.perf_counter() - t)
            scores[name].append(out)
    peaks.append(matmul_peak(device, dtype))
    peak = max(peak_before, *peaks)

    def flat(name):
        return [s for chunk_scores in scores[name] for s in chunk_scores]

    print(f"{'contender':<10} {'samples/s':>10} {'engine is x faster: median (min-max) over chunks':>50}  max|diff|")
    for name in names:
        total = sum(times[name])
        ratios = [a / b for a, b in zip(times[name], times["engine"], strict=True)]
        diffs = [max(abs(a[0] - b[0]), abs(a[1] - b[1])) for a, b in zip(flat(name), flat("engine"), strict=True)
                 if math.isfinite(a[0]) and math.isfinite(b[0])]
        rel = "" if name == "engine" else (f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
        print(f"{name:<10} {n_rows / total:>10.3f} {rel:>50}  {max(diffs) if diffs else float('nan'):.1e}")
    pairs = [([p[c][i] for i in range(len(t)) for c in CONTEXTS], [t[i] for i in range(len(t)) for _ in CONTEXTS])
             for p, t in encoded]
    system = min(global_prefix(ps) for ps, _ in pairs)
    needs = [plan_flops(model.config, ps, ts, done=system) for ps, ts in pairs]  # the system turn: once, below
    need = sum(needs) + flops(model.config, [(0, system)], 0)
    achieved = need / sum(times["engine"])
    print(f"matmul peak ({args.dtype}): {peak / 1e12:.3f} TFLOP/s; the engine achieves {achieved / 1e12:.3f} TFLOP/s on "
          f"the FLOPs its plan needs ({need / n_rows / 1e9:.1f} GFLOP/sample) = {100 * achieved / peak:.0f}% of peak")
    around = [(a + b) / 2 for a, b in itertools.pairwise(peaks)]
    per_chunk = [f / t / pk for f, t, pk in zip(needs, times["engine"], around, strict=True)]
    print(f"per chunk, against the mean of the peaks measured just before and after it ({min(peaks) / 1e12:.3f}-"
          f"{max(peaks) / 1e12:.3f} TFLOP/s): median {100 * statistics.median(per_chunk):.0f}% ({100 * min(per_chunk):.0f}-"
          f"{100 * max(per_chunk):.0f}%)")
    if "naive" in times:
        ratios = [a / b for a, b in zip(times["naive"], times["engine"], strict=True)]
        print(f"speedup: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
