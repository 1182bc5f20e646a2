#!/usr/bin/env python
"""An independent check of styleeval's scoring engine: llama.cpp on the same GGUF file (issue 43, item 5).

Scores rows of the test set (``style_gap_testset``) twice:

- ``styleeval``: :class:`styleeval.LogProb` on the model (default the real-weights preset ``smollm2-135m``,
  SmolLM2-135M-Instruct Q4_1): transformers' GGUF loader de-quantizes the weights to float32 and styleeval's
  engine computes every log-probability (prompt packing, shared KV cache);
- ``llama.cpp``: ``llama_cpp.Llama`` (llama-cpp-python, in process, ``logits_all=True``) on the *same* GGUF file,
  fed the *same* token ids (the three prompts of :mod:`styleeval.chat` -- rewrite to style S / paraphrase /
  repeat -- tokenized by the engine's own chat format, then the rewrite's ids and the end-of-turn id). Each
  (prompt, rewrite) sequence is evaluated alone from an empty KV cache; the logits of every position are
  log-softmaxed here in float64; content and style follow from the same :func:`styleeval.logprob.logprob_equations`.

A control separates the quantized kernels from everything else: llama.cpp on a float32 copy of the same file
(every tensor de-quantized with the ``gguf`` package, as transformers' loader does; written to a temporary
folder) with a float32 KV cache (llama.cpp's default is float16), on the first ``--control-rows`` rows. Both
programs then do float32 arithmetic on identical weights, so they must agree to float32 rounding (~3e-5 per token
on this model); the gap of the main comparison is then the cost of llama.cpp's Q4_1 x Q8_1 dot products and its
float16 KV cache, not a difference of model, prompt or tokens.

Reported (and written with ``--json``): per-token log-probability |diff| over every scored token of every context
(max, mean, 99th percentile), content and style |diff| per row (max, mean, and the mean signed difference
llama.cpp - styleeval), the Spearman correlation between the two on content and on style, the Spearman of each
one's content with the human content rating (``content_mean``), and the wall time and tokens per second of each
(tokens: prompt + scored tokens of the three sequences of every row, counted alike for both; model loading is
timed apart), the machine's load average at the end, and the control's per-token, content and style |diff|.

    . .venv/bin/activate
    export STYLEEVAL_CACHE=/tmp/secache STYLEEVAL_DATA_DIR=/work/shared/data
    python scripts/compare_llamacpp.py --rows 30
    python scripts/compare_llamacpp.py --json /tmp/llamacpp.json          # all 500 rows: 10-35 minutes on 2 cores

Needs ``llama-cpp-python`` (see docs/real-weights.md for a build that runs on CPUs reporting AMX).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import gguf
import llama_cpp
import numpy as np
import torch
from gguf.quants import dequantize
from scipy.special import logsumexp
from scipy.stats import spearmanr

from styleeval import LogProb
from styleeval.corpora import load_corpus
from styleeval.gguf_files import REAL_WEIGHTS, is_gguf_name, resolve
from styleeval.logprob import logprob_equations
from styleeval.logprob.prompts import CONTEXTS

CORPUS = "style_gap_testset"
F16, F32 = 1, 0  # ggml type ids of a KV cache


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help="score the first N rows of the test set (default: all)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of both (torch and llama.cpp)")
    parser.add_argument("--model", default=REAL_WEIGHTS, help="a GGUF preset or .gguf path (default: %(default)s)")
    parser.add_argument("--control-rows", type=int, default=50,
                        help="rows of the float32 control (llama.cpp on the de-quantized file; 0: none; "
                             "default %(default)s)")
    parser.add_argument("--json", metavar="OUT", help="write the numbers to this JSON file")
    return parser.parse_args(argv)


def load_rows(n: int | None) -> dict[str, list]:
    """The test set's first ``n`` rows (all when ``None``), column by column."""
    data = load_corpus(CORPUS)
    if n is not None:
        data = data.select(range(min(n, len(data))))
    return {col: list(data[col]) for col in ("source", "rewrite", "target_style", "content_mean", "task")}


def token_ids(lp: LogProb, rows: dict[str, list]) -> tuple[dict[str, list[list[int]]], list[list[int]]]:
    """(prompt ids per context, scored ids per row): exactly what the engine scores (its own chat format)."""
    prompts = {ctx: lp.prompt_ids(ctx, rows["source"], rows["target_style"]) for ctx in CONTEXTS}
    return prompts, lp.chat.rewrite_ids(rows["rewrite"])


def score_styleeval(lp: LogProb, rows: dict[str, list]) -> tuple[list[dict[str, Any]], float]:
    """The engine's per-row results (with per-token log-probs) and its wall time."""
    start = time.perf_counter()
    scores = lp.score(rows["source"], rows["rewrite"], rows["target_style"], return_tokens=True)
    return list(scores), time.perf_counter() - start


def open_llama(path: str, n_ctx: int, threads: int, kv_type: int = F16) -> llama_cpp.Llama:
    """llama.cpp on the GGUF file, keeping the logits of every position (a sequence is one batch)."""
    return llama_cpp.Llama(model_path=path, logits_all=True, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx,
                           n_threads=threads, n_threads_batch=threads, type_k=kv_type, type_v=kv_type,
                           verbose=False)


def write_float32_copy(path: str, out: str) -> None:
    """``path`` with every tensor de-quantized to float32 (metadata unchanged but the file type)."""
    reader = gguf.GGUFReader(path)
    writer = gguf.GGUFWriter(out, reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by the writer itself
        kind = field.types[0]
        value = gguf.LlamaFileType.ALL_F32 if field.name == gguf.Keys.General.FILE_TYPE else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=field.types[-1] if kind == gguf.GGUFValueType.ARRAY
                             else None)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, dequantize(tensor.data, tensor.tensor_type).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def llama_logprobs(llm: llama_cpp.Llama, prompt: list[int], target: list[int]) -> np.ndarray:
    """log p of each target token after ``prompt`` and the preceding target tokens, from an empty KV cache
    (float64 log-softmax of llama.cpp's float32 logits)."""
    llm.reset()
    llm.eval(prompt + target)
    start = len(prompt) - 1
    logits = np.asarray(llm.scores[start : start + len(target)], dtype=np.float64)
    logprobs = logits - logsumexp(logits, axis=1, keepdims=True)
    return logprobs[np.arange(len(target)), target]


def score_llama(llm: llama_cpp.Llama, prompts: dict[str, list[list[int]]], targets: list[list[int]]
                ) -> tuple[list[dict[str, Any]], float]:
    """Per row: content, style and the per-token log-probs of each context, computed by llama.cpp; wall time."""
    rows = []
    start = time.perf_counter()
    for j, target in enumerate(targets):
        per_ctx = {ctx: llama_logprobs(llm, prompts[ctx][j], target) for ctx in CONTEXTS}
        content, style = logprob_equations(*(torch.from_numpy(per_ctx[ctx]) for ctx in CONTEXTS))
        rows.append({"content": content, "style": style, "logprobs": per_ctx})
    return rows, time.perf_counter() - start


def token_diffs(engine: list[dict[str, Any]], llama: list[dict[str, Any]], targets: list[list[int]]) -> np.ndarray:
    """|llama.cpp - styleeval| of every scored token under every context, all pooled."""
    diffs = []
    for mine, theirs, target in zip(engine, llama, targets, strict=True):
        if len(mine["tokens"]) != len(target):
            raise SystemExit(f"the engine scored {len(mine['tokens'])} tokens where the chat format gives {len(target)}")
        for ctx in CONTEXTS:
            ours = np.array([tok[ctx] for tok in mine["tokens"]], dtype=np.float64)
            diffs.append(np.abs(theirs["logprobs"][ctx] - ours))
    return np.concatenate(diffs)


def control(path: str, engine: list[dict[str, Any]], prompts: dict[str, list[list[int]]],
            targets: list[list[int]], n_ctx: int, threads: int) -> dict[str, Any]:
    """llama.cpp on a float32 copy of the file with a float32 KV cache vs the engine, on the given rows."""
    with tempfile.TemporaryDirectory(prefix="compare-llamacpp-") as folder:
        copy = os.path.join(folder, "float32.gguf")
        write_float32_copy(path, copy)
        llm = open_llama(copy, n_ctx, threads, kv_type=F32)
        rows, seconds = score_llama(llm, prompts, targets)
        del llm
    tok = token_diffs(engine, rows, targets)
    out: dict[str, Any] = {"rows": len(targets), "score_s": seconds, "token_abs_diff": {
        "max": float(tok.max()), "mean": float(tok.mean()), "p99": float(np.percentile(tok, 99))}}
    for key in ("content", "style"):
        out[f"{key}_abs_diff_max"] = max(abs(a[key] - b[key]) for a, b in zip(engine, rows, strict=True))
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    return float(spearmanr(a, b).statistic)


def compare(engine: list[dict[str, Any]], llama: list[dict[str, Any]], targets: list[list[int]],
            human: list[float]) -> dict[str, Any]:
    """The agreement numbers of the two sets of scores."""
    tok = token_diffs(engine, llama, targets)
    out: dict[str, Any] = {"tokens_scored": int(tok.size), "token_abs_diff": {
        "max": float(tok.max()), "mean": float(tok.mean()), "p99": float(np.percentile(tok, 99))}}
    for key in ("content", "style"):
        ours = np.array([r[key] for r in engine])
        theirs = np.array([r[key] for r in llama])
        diff = theirs - ours
        out[f"{key}_abs_diff"] = {"max": float(np.abs(diff).max()), "mean": float(np.abs(diff).mean()),
                                  "mean_signed": float(diff.mean())}
        out[f"spearman_{key}_between"] = spearman(ours, theirs)
    out["spearman_content_vs_human"] = {"styleeval": spearman([r["content"] for r in engine], human),
                                        "llama_cpp": spearman([r["content"] for r in llama], human)}
    return out


def environment(threads: int) -> dict[str, Any]:
    """What ran: date, CPU, versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "cpu": cpu,
            "threads": threads, "llama_cpp_python": llama_cpp.__version__, "torch": torch.__version__,
            "python": platform.python_version(), "load_average": os.getloadavg(),
            "command": " ".join(sys.argv)}


def report(numbers: dict[str, Any]) -> str:
    """The numbers as a short text table."""
    t, c, s = numbers["token_abs_diff"], numbers["content_abs_diff"], numbers["style_abs_diff"]
    h, timing = numbers["spearman_content_vs_human"], numbers["timing"]
    lines = [
        f"{numbers['rows']} rows, {numbers['tokens_scored']} scored token log-probs, "
        f"{timing['tokens']} tokens evaluated per engine ({numbers['model']})",
        f"per-token log-prob |diff|: max {t['max']:.4f}  mean {t['mean']:.5f}  p99 {t['p99']:.4f}",
        f"content |diff|: max {c['max']:.4f}  mean {c['mean']:.4f}  (mean llama.cpp - styleeval {c['mean_signed']:+.4f})",
        f"style   |diff|: max {s['max']:.4f}  mean {s['mean']:.4f}  (mean llama.cpp - styleeval {s['mean_signed']:+.4f})",
        f"Spearman styleeval vs llama.cpp: content {numbers['spearman_content_between']:.4f}  "
        f"style {numbers['spearman_style_between']:.4f}",
        f"Spearman content vs human content rating: styleeval {h['styleeval']:.4f}  llama.cpp {h['llama_cpp']:.4f}",
    ]
    for name in ("styleeval", "llama_cpp"):
        run = timing[name]
        lines.append(f"{name}: load {run['load_s']:.1f} s, score {run['score_s']:.1f} s, "
                     f"{run['tokens_per_s']:.0f} tokens/s")
    if "control" in numbers:
        k = numbers["control"]
        kt = k["token_abs_diff"]
        lines.append(f"control (llama.cpp, float32 weights and KV cache, {k['rows']} rows): per-token |diff| max "
                     f"{kt['max']:.2e} mean {kt['mean']:.2e} p99 {kt['p99']:.2e}; content max "
                     f"{k['content_abs_diff_max']:.2e}, style max {k['style_abs_diff_max']:.2e}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if not is_gguf_name(args.model):
        raise SystemExit(f"--model must be a GGUF preset or a .gguf file (llama.cpp reads GGUF), got {args.model!r}")
    torch.set_num_threads(args.threads)
    rows = load_rows(args.rows)
    path = resolve(args.model).path

    start = time.perf_counter()
    lp = LogProb(args.model, progress=False)
    load_engine = time.perf_counter() - start
    prompts, targets = token_ids(lp, rows)
    lengths = [len(prompts[ctx][j]) + len(t) for j, t in enumerate(targets) for ctx in CONTEXTS]
    engine, engine_s = score_styleeval(lp, rows)
    print(f"styleeval: {len(targets)} rows in {engine_s:.1f} s", file=sys.stderr)

    n_ctx = 256 * math.ceil(max(lengths) / 256)
    start = time.perf_counter()
    llm = open_llama(path, n_ctx, args.threads)
    load_llama = time.perf_counter() - start
    llama, llama_s = score_llama(llm, prompts, targets)
    del llm
    print(f"llama.cpp: {len(targets)} rows in {llama_s:.1f} s", file=sys.stderr)
    checked = None
    if args.control_rows > 0:
        k = min(args.control_rows, len(targets))
        checked = control(path, engine[:k], {ctx: ids[:k] for ctx, ids in prompts.items()}, targets[:k], n_ctx,
                          args.threads)
        print(f"control: {k} rows in {checked['score_s']:.1f} s", file=sys.stderr)

    tokens = sum(lengths)
    numbers = {"model": lp.backend.identity.model_field, "gguf": path, "rows": len(targets),
               **compare(engine, llama, targets, rows["content_mean"]),
               "timing": {"tokens": tokens,
                          "styleeval": {"load_s": load_engine, "score_s": engine_s, "tokens_per_s": tokens / engine_s},
                          "llama_cpp": {"load_s": load_llama, "score_s": llama_s, "tokens_per_s": tokens / llama_s}},
               **({"control": checked} if checked else {}),
               "environment": environment(args.threads)}
    print(report(numbers))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(numbers, fh, indent=2)
            fh.write("\n")


if __name__ == "__main__":
    main()
