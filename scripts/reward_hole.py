#!/usr/bin/env python
"""The hole in LogProb as a reward, measured (issue 63): degenerate outputs against the rated rewrites of the test set.

For every row of ``style_gap_testset`` (500 rated rewrites of 249 sources) the rewrite is scored, and for every
(source, target style) these degenerate outputs:

- ``copy``: the source unchanged;
- ``echo``: the style instruction echoed with its source, ``Rewrite the following sentence to be {style}: {source}``;
- ``echo line``: the instruction alone, ``Rewrite the following sentence to be {style}:`` (issue 49's run 1);
- ``suffix``: the source and a fixed tail, ``{source} Rewritten sentence in a {style} style.`` (issue 49's run 2);
- ``self repeat``: the source, then itself again after a label, ``{source}\n\nRewrite: {source}`` (issue 63's run 3);
- ``style word``: the target style five times (``formal formal formal formal formal``);
- ``empty``: the empty string (LogProb scores its end-of-turn token; the reward gives it the floor).

One pass of ``LogProb(guard="prompt+repeat", return_tokens=True)`` per model gives the three readings of every
output: plain LogProb (equations 1 and 2 on the three contexts' token log-probabilities,
:func:`styleeval.logprob.logprob_equations`; the same bits as ``LogProb.score``: a row's scores never depend on its
batch), the prompt guard alone (:func:`styleeval.logprob.guarded_equations`: floored where ``P >= C``) and with the
repeat guard (:func:`styleeval.logprob.metric.self_repeat`). Reported per output kind: mean content and style (plain),
the mean of the prompt guard's margin ``P - C``, the rows each guard floors, the mean reward (``content + 24 * style``,
the reward's defaults; the floor -34 for the empty output), and the share of rows where the output's reward beats the
rated rewrite's, plain, with the prompt guard and with both guards, over all 500 rows and over the 257 rewrites people
rated >= 4 on both content and style; then the Spearman of content and style with people's ratings on the 500
rewrites, under each reading.

Resumable and cheap to re-read: every source's outputs are written to ``--out`` (JSON lines) as they are scored; a
second run skips what is there (and refuses a file whose lines another scorer wrote: another model or version) and
``--report`` only prints the tables of what is there (``--rows N``: the first N sources, taken in turns over the six
tasks).

    export STYLEEVAL_DATA_DIR=../shared/data
    python scripts/reward_hole.py --out runs/hole-135m.jsonl                                  # smollm2-135m, 500 rows
    python scripts/reward_hole.py --model qwen2.5-coder-0.5b --rows 30 --out runs/hole-05b.jsonl
    python scripts/reward_hole.py --out runs/hole-135m.jsonl --report
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

KINDS = {
    "copy": "{source}",
    "echo": "Rewrite the following sentence to be {style}: {source}",
    "echo line": "Rewrite the following sentence to be {style}:",
    "suffix": "{source} Rewritten sentence in a {style} style.",
    "self repeat": "{source}\n\nRewrite: {source}",
    "style word": "{style} {style} {style} {style} {style}",
    "empty": "",
}
"""The degenerate outputs, by kind."""

STYLE_WEIGHT, FLOOR = 24.0, -34.0  # the reward's defaults (styleeval.rewards)


def degenerate(kind: str, source: str, style: str) -> str:
    return KINDS[kind].format(source=source, style=style)


def interleaved(keys: list, tasks: list[str]) -> list:
    """``keys`` in turns over their tasks (the first of each task, then the second...), so that the first N sources
    (``--rows``, or a run stopped early) hold every task."""
    seen: dict[str, int] = defaultdict(int)
    turn = []
    for task in tasks:
        turn.append(seen[task])
        seen[task] += 1
    return [key for _, _, key in sorted(zip(turn, tasks, keys, strict=True), key=lambda x: (x[0], x[1]))]


def score(args: argparse.Namespace) -> None:
    import torch  # noqa: PLC0415 - heavy (torch)

    from styleeval import LogProb  # noqa: PLC0415 - heavy (torch)
    from styleeval.corpora import load_corpus  # noqa: PLC0415 - heavy (datasets)
    from styleeval.logprob import logprob_equations  # noqa: PLC0415 - heavy (torch)

    torch.set_num_threads(args.threads)
    data = load_corpus("style_gap_testset")
    done, signatures = set(), set()
    if args.out.exists():
        for line in args.out.open(encoding="utf-8"):
            record = json.loads(line)
            done.add(record["source_id"])
            signatures.add(record["signature"])
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (source, style) in enumerate(zip(data["source"], data["target_style"], strict=True)):
        groups[(source, style)].append(i)
    keys = interleaved(list(groups), [data[groups[key][0]]["task"] for key in groups])
    keys = keys[: args.rows] if args.rows else keys
    todo = [key for key in keys if f"{data[groups[key][0]]['source_id']}|{key[1]}" not in done]
    print(f"{len(keys) - len(todo)} sources done, {len(todo)} to score with {args.model}", file=sys.stderr)
    if not todo:
        return
    scorer = LogProb(model=args.model, guard="prompt+repeat", progress=False)
    other = sorted(signatures - {str(scorer.signature)})
    if other:  # lines of another scorer (another model, an older guard: no self repeat) would mix in the tables
        raise SystemExit(f"reward_hole.py: error: {args.out} holds lines scored by {other[0]}, not by this run's "
                         f"{scorer.signature}: give another --out (or the same --model and version)")
    start = time.monotonic()
    with args.out.open("a", encoding="utf-8") as out:
        for n, (source, style) in enumerate(todo, 1):
            rows = groups[(source, style)]
            outputs = [("rewrite", data[i]["rewrite"], data[i]["id"]) for i in rows]
            outputs += [(kind, degenerate(kind, source, style), None) for kind in KINDS]
            scored = scorer.score([source] * len(outputs), [text for _, text, _ in outputs], style, return_tokens=True)
            records = []
            for (kind, text, row_id), row in zip(outputs, scored, strict=True):
                logps = [torch.tensor([t[c] for t in row["tokens"]]) for c in ("style", "paraphrase", "repeat")]
                content, strength = logprob_equations(*logps)
                records.append({"kind": kind, "id": row_id, "text": text, "content": content, "style": strength,
                                "guarded_content": row["content"], "guarded_style": row["style_strength"],
                                "prompt": row["prompt_reading"], "self_repeat": row["self_repeat"],
                                **({"tokens": row["tokens"]} if args.tokens else {})})
            line = {"source_id": f"{data[rows[0]]['source_id']}|{style}", "model": args.model,
                    "signature": str(scored.signature), "outputs": records}
            out.write(json.dumps(line) + "\n")
            out.flush()
            if n % 10 == 0 or n == len(todo):
                rate = n / (time.monotonic() - start)
                print(f"{n} of {len(todo)} sources, {rate:.3f} sources/s", file=sys.stderr)


def reward(content: float, style: float, kind: str) -> float:
    value = content + STYLE_WEIGHT * style
    return FLOOR if kind == "empty" or not math.isfinite(value) else value


READINGS = ("plain", "prompt guard", "prompt+repeat guards")
"""The three readings of a record, by :func:`reading`."""


def reading(record: dict, name: str) -> tuple[float, float]:
    """(content, style) of a record under a reading: plain LogProb, the prompt guard alone (floored where the prompt's
    reading P is at least the content, as :func:`styleeval.logprob.guarded_equations` floors), or both guards (what
    the scorer returned)."""
    if name == "plain":
        return record["content"], record["style"]
    if name == "prompt guard":
        return (record["content"], record["style"]) if record["prompt"] < record["content"] else (-math.inf, -1.0)
    return record["guarded_content"], record["guarded_style"]


def report(args: argparse.Namespace) -> None:
    from scipy.stats import spearmanr  # noqa: PLC0415 - heavy (scipy)

    from styleeval.corpora import load_corpus  # noqa: PLC0415 - heavy (datasets)

    data = load_corpus("style_gap_testset")
    human = {row["id"]: row for row in data}
    lines = [json.loads(line) for line in args.out.open(encoding="utf-8")]
    if args.rows:
        lines = lines[: args.rows]
    pairs = []  # (rewrite record, {kind: record}) per rated rewrite
    for line in lines:
        by_kind = {o["kind"]: o for o in line["outputs"] if o["kind"] != "rewrite"}
        pairs += [(o, by_kind) for o in line["outputs"] if o["kind"] == "rewrite"]
    good = [(r, k) for r, k in pairs if human[r["id"]]["content_mean"] >= 4 and human[r["id"]]["style_mean"] >= 4]
    print(f"{lines[0]['model']}: {len(lines)} sources, {len(pairs)} rated rewrites ({len(good)} rated >= 4 on both)")
    print(f"signature: {lines[0]['signature']}\n")
    print("| output | content | style | reward | P - C | floored: prompt guard | repeat guard "
          "| beats the rewrite: plain | prompt guard | both guards "
          "| beats a rewrite rated >= 4: plain | prompt guard | both guards |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in ["rewrite", *KINDS]:
        records = [r for r, _ in pairs] if kind == "rewrite" else [k[kind] for _, k in pairs]
        content = sum(r["content"] for r in records) / len(records)
        style = sum(r["style"] for r in records) / len(records)
        mean_reward = sum(reward(r["content"], r["style"], kind) for r in records) / len(records)
        margin = sum(r["prompt"] - r["content"] for r in records) / len(records)
        by_prompt = sum(reading(r, "prompt guard")[0] == -math.inf for r in records)
        by_repeat = sum(r["self_repeat"] for r in records)
        cells = [f"{kind}", f"{content:.2f}", f"{style:+.3f}", f"{mean_reward:.2f}", f"{margin:+.2f}",
                 f"{by_prompt} of {len(records)}", f"{by_repeat} of {len(records)}"]
        for rows in (pairs, good):
            if kind == "rewrite":
                cells += [""] * len(READINGS)
                continue
            for name in READINGS:
                wins = sum(reward(*reading(k[kind], name), kind) > reward(*reading(r, name), "rewrite")
                           for r, k in rows)
                cells.append(f"{wins / len(rows):.0%}")
        print("| " + " | ".join(cells) + " |")
    print("\n| Spearman with people, the rated rewrites | " + " | ".join(READINGS) + " |\n|---|---|---|---|")
    for name, index, rating in (("content", 0, "content_mean"), ("style", 1, "style_mean")):
        ratings = [human[r["id"]][rating] for r, _ in pairs]
        cells = [f"{spearmanr([reading(r, how)[index] for r, _ in pairs], ratings)[0]:.4f}" for how in READINGS]
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="a LogProb model (preset, GGUF file...)")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one per source (appended, resumable)")
    parser.add_argument("--rows", type=int, default=0, help="the first N sources (default: all 249)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared machine)")
    parser.add_argument("--tokens", action="store_true", help="also keep every output's per-token log-probabilities "
                        "under the five contexts (to try a guard's equations on them without scoring again)")
    parser.add_argument("--report", action="store_true", help="only print the tables of what --out holds")
    args = parser.parse_args()
    if not args.report:
        score(args)
    report(args)


if __name__ == "__main__":
    main()
