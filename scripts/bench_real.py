#!/usr/bin/env python
"""LogProb on real weights: the engine against what CPU users run, on the same rows, the same GGUF, in one run.

Every contender scores the same test-set rows (``style_gap_testset``, whole sources, in file order) from the same
GGUF file (default the ``smollm2-135m`` preset, SmolLM2-135M-Instruct Q4_1) with the same chat format and token ids,
each in a process of its own (so that its peak RSS is its own), all driven chunk by chunk from this one, the order
rotating from chunk to chunk (A B C, B C A, ...) so that a noisy machine slows every contender alike:

- ``engine``: :class:`styleeval.LogProb` in float32 (the GGUF de-quantized once by transformers' loader);
- ``engine-bf16``: the same with ``dtype="bfloat16"`` (its own signature);
- ``authors``: the authors' loop (their LogProp.py way): for each row and each of the three instructions, one
  batch-1 forward pass over prompt + rewrite in float32, softmax over the whole vocabulary, the rewrite tokens'
  probabilities read off;
- ``lm-eval``: lm-evaluation-harness's ``HFLM._loglikelihood_tokens`` on the float32 model (``pip install lm-eval``;
  skipped without it; it returns sums, so it is timed, not compared);
- ``vllm``: a vLLM server's ``prompt_logprobs`` through styleeval's ``openai`` backend (``--vllm-url``; the server must
  serve the converted float32 folder: ``--print-folder`` prints its path);
- ``llamacpp-naive``: llama.cpp (llama-cpp-python, in process) on the GGUF as shipped, each of a row's three
  sequences evaluated alone from an empty KV cache with ``logits_all`` (how lm-evaluation-harness's ``gguf`` model
  and a first script use it);
- ``llamacpp``: styleeval's llama.cpp backend (``backend="llamacpp"``) on the GGUF as shipped: prompts' KV states
  reused, logits only where scored.

Reported, per contender: rows/s and tokens/s over the timed chunks (tokens: prompt + scored tokens of the three
sequences of every row, counted alike for all), the per-chunk ratio of its time to the float32 engine's (median,
min-max), peak RSS of its process and its load time; against the float32 engine, max and mean |diff| of content
and of style; the Spearman of its content with the human content rating and of its style with the human style
rating (on the timed rows). Also the CPU, its flags, torch's threads and the load average, and, with ``--json``,
every number.

    . .venv/bin/activate; export STYLEEVAL_DATA_DIR=../shared/data
    python scripts/bench_real.py --quick                          # < 2 minutes: 24 rows, no vLLM, no authors' loop
    python scripts/bench_real.py --json results/bench_real.json   # the 500 rows of docs/benchmarks.md
    python scripts/bench_real.py --rows 60 --contenders engine,engine-bf16,llamacpp

A contender whose package is not installed (llama-cpp-python, lm-eval) or that needs what was not given (``vllm``
without ``--vllm-url``) is named and skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

CONTENDERS = ("engine", "engine-bf16", "authors", "lm-eval", "vllm", "llamacpp-naive", "llamacpp")
QUICK = ("engine", "engine-bf16", "llamacpp")
Rows = dict[str, list]


# -- the rows ------------------------------------------------------------------------------------------------------
def load_rows(data_dir: str | None, n: int | None) -> Rows:
    """The test set's first ``n`` rows (all when ``None``) column by column; the human means as floats."""
    from styleeval.corpora import load_corpus

    data = load_corpus("style_gap_testset", data_dir)
    if n is not None:
        data = data.select(range(min(n, len(data))))
    return {col: list(data[col]) for col in ("source_id", "source", "rewrite", "target_style", "content_mean",
                                              "style_mean")}


def chunk_slices(source_ids: Sequence[str], size: int) -> list[slice]:
    """Consecutive slices of about ``size`` rows that never split a source's rows."""
    out, start = [], 0
    for i in range(1, len(source_ids) + 1):
        if i == len(source_ids) or (i - start >= size and source_ids[i] != source_ids[i - 1]):
            out.append(slice(start, i))
            start = i
    return [s for s in out if s.stop > s.start]


def part(rows: Rows, where: slice) -> Rows:
    return {k: v[where] for k, v in rows.items()}


# -- the contenders: each, in its own process, builds a function rows -> [(content, style)] ---------------------
def token_ids(lp: Any, rows: Rows) -> tuple[dict[str, list[list[int]]], list[list[int]]]:
    """(prompt ids per context, scored ids per row), by the engine's own chat format: what every contender scores."""
    from styleeval.logprob.prompts import CONTEXTS

    prompts = {ctx: lp.prompt_ids(ctx, rows["source"], rows["target_style"]) for ctx in CONTEXTS}
    return prompts, lp.chat.rewrite_ids(rows["rewrite"])


def make_logprob(model: str, threads: int, **options: Any) -> Callable[[Rows], list[tuple[float, float]]]:
    from styleeval import LogProb

    lp = LogProb(model, progress=False, **options)

    def run(rows: Rows) -> list[tuple[float, float]]:
        scores = lp.score(rows["source"], rows["rewrite"], rows["target_style"])
        return list(zip(scores.content, scores.style_strength, strict=True))

    run.lp = lp  # type: ignore[attr-defined]
    return run


def make_authors(model: str, threads: int) -> Callable[[Rows], list[tuple[float, float]]]:
    """The authors' loop on the float32 model: one batch-1 pass per (row, instruction), softmax over the vocabulary."""
    import torch

    from styleeval import LogProb
    from styleeval.logprob import logprob_equations
    from styleeval.logprob.prompts import CONTEXTS

    lp = LogProb(model, progress=False)
    net = lp.backend.model

    def run(rows: Rows) -> list[tuple[float, float]]:
        prompts, targets = token_ids(lp, rows)
        out = []
        with torch.inference_mode():
            for i, target in enumerate(targets):
                per_ctx = []
                for ctx in CONTEXTS:
                    ids = torch.tensor([prompts[ctx][i] + target])
                    probs = torch.softmax(net(ids).logits[0].float(), dim=-1)
                    start = len(prompts[ctx][i]) - 1
                    per_ctx.append(torch.stack([probs[start + j, tok] for j, tok in enumerate(target)]).log())
                out.append(logprob_equations(*per_ctx))
        return out

    return run


def make_lm_eval(model: str, threads: int) -> Callable[[Rows], list[tuple[float, float]]]:
    from lm_eval.models.huggingface import HFLM

    from styleeval import LogProb
    from styleeval.logprob.prompts import CONTEXTS

    lp = LogProb(model, progress=False)
    hflm = HFLM(pretrained=lp.backend.model, tokenizer=lp.backend.tokenizer, batch_size=16, max_length=8192)

    def run(rows: Rows) -> list[tuple[float, float]]:
        prompts, targets = token_ids(lp, rows)
        reqs = [(("", ""), prompts[ctx][i], t) for i, t in enumerate(targets) for ctx in CONTEXTS]
        hflm._loglikelihood_tokens(reqs, disable_tqdm=True)  # sums per request: timed, not compared
        return [(math.nan, math.nan)] * len(targets)

    return run


def make_vllm(model: str, threads: int, url: str) -> Callable[[Rows], list[tuple[float, float]]]:
    from styleeval.gguf_files import resolve
    from styleeval.models import gguf_folder

    folder = str(gguf_folder(resolve(model)))
    return make_logprob(None, threads, base_url=url, tokenizer=folder)  # type: ignore[arg-type]


def make_llamacpp_naive(model: str, threads: int) -> Callable[[Rows], list[tuple[float, float]]]:
    """llama.cpp on the GGUF as shipped, each sequence alone from an empty KV cache with every position's logits."""
    import llama_cpp
    import numpy as np
    import torch
    from scipy.special import logsumexp

    from styleeval import LogProb
    from styleeval.gguf_files import resolve
    from styleeval.logprob import logprob_equations
    from styleeval.logprob.prompts import CONTEXTS

    lp = LogProb(model, progress=False)  # its chat format gives the token ids; its weights are not used
    llm = llama_cpp.Llama(model_path=str(resolve(model).path), logits_all=True, n_ctx=2048, n_batch=2048,
                          n_ubatch=2048, n_threads=threads, n_threads_batch=threads, verbose=False)

    def one(prompt: list[int], target: list[int]) -> torch.Tensor:
        llm.reset()
        llm.eval(prompt + target)
        logits = np.asarray(llm.scores[len(prompt) - 1 : len(prompt) - 1 + len(target)], dtype=np.float64)
        logp = logits - logsumexp(logits, axis=1, keepdims=True)
        return torch.from_numpy(logp[np.arange(len(target)), target])

    def run(rows: Rows) -> list[tuple[float, float]]:
        prompts, targets = token_ids(lp, rows)
        return [logprob_equations(*(one(prompts[ctx][i], t) for ctx in CONTEXTS)) for i, t in enumerate(targets)]

    return run


def make_contender(name: str, model: str, threads: int, vllm_url: str | None) -> Callable[[Rows], list]:
    if name == "engine":
        return make_logprob(model, threads)
    if name == "engine-bf16":
        return make_logprob(model, threads, dtype="bfloat16")
    if name == "authors":
        return make_authors(model, threads)
    if name == "lm-eval":
        return make_lm_eval(model, threads)
    if name == "vllm":
        if not vllm_url:
            raise LookupError("no --vllm-url")
        return make_vllm(model, threads, vllm_url)
    if name == "llamacpp-naive":
        return make_llamacpp_naive(model, threads)
    if name == "llamacpp":
        return make_logprob(model, threads, backend="llamacpp", n_threads=threads)
    raise ValueError(f"unknown contender {name!r} (one of {', '.join(CONTENDERS)})")


def peak_rss_mb() -> float:
    """This process's peak resident set size (MB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(name: str, model: str, threads: int, vllm_url: str | None, conn: Any) -> None:
    """Build contender ``name``, answer chunks of rows with (scores, seconds) until ``None``, then its peak RSS."""
    import torch

    from styleeval.errors import UserError

    torch.set_num_threads(threads)
    start = time.perf_counter()
    try:
        run = make_contender(name, model, threads, vllm_url)
    except (ImportError, LookupError, UserError) as err:  # not installed, not given, not registered
        conn.send(("skip", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", time.perf_counter() - start, peak_rss_mb()))
    while (message := conn.recv()) is not None:
        if message[0] == "tokens":
            conn.send(count_tokens(run.lp, message[1]))  # type: ignore[attr-defined]
            continue
        start = time.perf_counter()
        scores = run(message[1])
        conn.send((scores, time.perf_counter() - start))
    conn.send(peak_rss_mb())


def count_tokens(lp: Any, rows: Rows) -> list[int]:
    """Per row: prompt + scored tokens of its three sequences."""
    from styleeval.logprob.prompts import CONTEXTS

    prompts, targets = token_ids(lp, rows)
    return [sum(len(prompts[ctx][i]) for ctx in CONTEXTS) + 3 * len(t) for i, t in enumerate(targets)]


# -- the run -------------------------------------------------------------------------------------------------------
class Contender:
    """One contender's process and what it measured."""

    def __init__(self, name: str, args: argparse.Namespace, ctx: Any) -> None:
        self.name = name
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(name, args.model, args.threads, args.vllm_url, child),
                                daemon=True)
        self.proc.start()
        self.times: list[float] = []
        self.scores: list[tuple[float, float]] = []
        self.load_s = self.rss_mb = math.nan
        self.skipped = ""

    def wait_ready(self) -> bool:
        message = self.conn.recv()
        if message[0] == "skip":
            self.skipped = message[1]
            self.proc.join()
            return False
        self.load_s = message[1]
        return True

    def tokens(self, rows: Rows) -> list[int]:
        self.conn.send(("tokens", rows))
        return self.conn.recv()

    def score(self, rows: Rows) -> None:
        self.conn.send(("score", rows))
        scores, seconds = self.conn.recv()
        self.scores += scores
        self.times.append(seconds)

    def close(self) -> None:
        self.conn.send(None)
        self.rss_mb = self.conn.recv()
        self.proc.join()


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    pairs = [(x, y) for x, y in zip(a, b, strict=True) if math.isfinite(x) and y is not None and math.isfinite(y)]
    if len(pairs) < 3:
        return math.nan
    return float(spearmanr([p[0] for p in pairs], [p[1] for p in pairs]).statistic)


def summarize(contenders: list[Contender], rows: Rows, tokens: list[int], warm: int) -> list[dict[str, Any]]:
    """Per contender: speed over the timed chunks, memory, agreement with the float32 engine and with humans."""
    base = next(c for c in contenders if c.name == "engine")
    n_rows, n_tokens = len(rows["source"]) - warm, sum(tokens[warm:])
    out = []
    for c in contenders:
        total = sum(c.times[1:])
        ratios = [a / b for a, b in zip(c.times[1:], base.times[1:], strict=True)]
        content = [s[0] for s in c.scores]
        style = [s[1] for s in c.scores]
        record: dict[str, Any] = {
            "contender": c.name, "rows": n_rows, "seconds": total, "rows_per_s": n_rows / total,
            "tokens_per_s": n_tokens / total, "time_vs_engine_median": statistics.median(ratios),
            "time_vs_engine_min": min(ratios), "time_vs_engine_max": max(ratios), "peak_rss_mb": c.rss_mb,
            "load_s": c.load_s,
            "spearman_content_human": spearman(content[warm:], rows["content_mean"][warm:]),
            "spearman_style_human": spearman(style[warm:], rows["style_mean"][warm:]),
        }
        for key, mine, theirs in (("content", content, [s[0] for s in base.scores]),
                                  ("style", style, [s[1] for s in base.scores])):
            diffs = [abs(a - b) for a, b in zip(mine, theirs, strict=True) if math.isfinite(a)]
            record[f"{key}_abs_diff_max"] = max(diffs) if diffs else math.nan
            record[f"{key}_abs_diff_mean"] = statistics.fmean(diffs) if diffs else math.nan
        out.append(record)
    return out


def machine() -> dict[str, Any]:
    import torch

    flags: list[str] = []
    model_name = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name") and not flags:
                    model_name = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = sorted({f for f in line.split(":", 1)[1].split() if f.startswith(("avx512_bf16", "amx",
                                                                                               "avx512f", "avx2"))})
                    break
    except OSError:
        pass
    return {"cpu": model_name, "flags": flags, "cores": os.cpu_count(), "torch": torch.__version__,
            "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def print_table(results: list[dict[str, Any]], info: dict[str, Any], threads: int) -> None:
    print(f"{info['cpu']} ({', '.join(info['flags'])}), {threads} threads, torch {info['torch']}, "
          f"load average {', '.join(f'{x:.1f}' for x in info['load_average'])}, {info['date']}")
    head = (f"{'contender':<15} {'rows/s':>7} {'tokens/s':>9} {'time/engine':>18} {'peak RSS':>9} {'load':>6} "
            f"{'content |diff| max/mean':>24} {'style |diff| max/mean':>22} {'rho content':>11} {'rho style':>9}")
    print(head)
    for r in results:
        ratio = (f"{r['time_vs_engine_median']:.2f} ({r['time_vs_engine_min']:.2f}-{r['time_vs_engine_max']:.2f})")
        print(f"{r['contender']:<15} {r['rows_per_s']:>7.2f} {r['tokens_per_s']:>9.0f} {ratio:>18} "
              f"{r['peak_rss_mb']:>7.0f}MB {r['load_s']:>5.1f}s "
              f"{r['content_abs_diff_max']:>11.4f} / {r['content_abs_diff_mean']:<10.4f} "
              f"{r['style_abs_diff_max']:>9.4f} / {r['style_abs_diff_mean']:<10.4f} "
              f"{r['spearman_content_human']:>11.3f} {r['spearman_style_human']:>9.3f}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="a GGUF preset or .gguf file (default %(default)s)")
    parser.add_argument("--rows", type=int, default=None, help="the test set's first N rows (default: all 500)")
    parser.add_argument("--chunk", type=int, default=32, help="rows per interleaved chunk (default %(default)s)")
    parser.add_argument("--contenders", default=None,
                        help=f"comma-separated, engine always included (default: all: {','.join(CONTENDERS)})")
    parser.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 2))
    parser.add_argument("--vllm-url", default=None, help="a vLLM server serving the converted folder")
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR"))
    parser.add_argument("--quick", action="store_true",
                        help=f"24 rows in chunks of 8, contenders {','.join(QUICK)}: under 2 minutes (the CI smoke test)")
    parser.add_argument("--json", metavar="OUT", help="write every number to this JSON file")
    parser.add_argument("--print-folder", action="store_true",
                        help="print the converted float32 folder of --model (what a vLLM server serves) and exit")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.chunk = args.rows or 24, min(args.chunk, 8)
        args.contenders = args.contenders or ",".join(QUICK)
    names = (args.contenders or ",".join(CONTENDERS)).split(",")
    unknown = [n for n in names if n not in CONTENDERS]
    if unknown:
        parser.error(f"unknown contender(s) {', '.join(unknown)} (one of {', '.join(CONTENDERS)})")
    args.names = ["engine"] + [n for n in names if n != "engine"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.print_folder:
        from styleeval.gguf_files import resolve
        from styleeval.models import gguf_folder

        print(gguf_folder(resolve(args.model)))
        return 0
    rows = load_rows(args.data_dir, args.rows)
    slices = chunk_slices(rows["source_id"], args.chunk)
    ctx = multiprocessing.get_context("spawn")
    contenders = []
    for name in args.names:  # one at a time: a model load does not slow another's
        c = Contender(name, args, ctx)
        if c.wait_ready():
            contenders.append(c)
        else:
            print(f"{name}: skipped ({c.skipped})")
    tokens = contenders[0].tokens(rows)
    for k, where in enumerate(slices):  # the first chunk warms every contender up and is not timed
        for c in contenders[k % len(contenders):] + contenders[: k % len(contenders)]:
            c.score(part(rows, where))
    for c in contenders:
        c.close()
    warm = slices[0].stop
    if len(slices) < 2:
        raise SystemExit("one chunk only: nothing timed after the warm-up; give more --rows or a smaller --chunk")
    info = machine()
    results = summarize(contenders, rows, tokens, warm)
    print(f"{len(rows['source']) - warm} rows timed ({warm} warm-up rows first), chunks of ~{args.chunk} rows, "
          f"model {args.model}")
    print_table(results, info, args.threads)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"machine": info, "args": {k: v for k, v in vars(args).items()},
                                               "results": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
