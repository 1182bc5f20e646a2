#!/usr/bin/env python
"""How reliable the Space's content reading is for a model: how often "look for swapped, invented or dropped
content" fires on the paper's test set's faithful rewrites and on its rewrites with a content error.

The paper's 500-row test set (``style_gap_testset``) holds, per source, a rewrite that keeps the content (system
``style``: the test set's good rewrites, content expected preserved) and rewrites with one content error made on
purpose (``substitution``: content swapped, ``insertion``: invented, ``deletion``: dropped). The Space's reading
(:func:`styleeval.demo.reading_content`) says "look for swapped, invented or dropped content" where the mean
per-token probability exp(content) is at or below a threshold (0.5 before issue 61). This script scores every row
with LogProb on ``--model`` and reports, at the old threshold and at the one that best separates the two kinds
(Youden's J on this set, as :data:`styleeval.demo.READING_CALIBRATION` takes it), the share of each kind on which the
warning fires, also for the good rewrites the raters scored content 4 or more (of 5).

    export STYLEEVAL_DATA_DIR=../shared/data
    python scripts/calibrate_reading.py --model smollm2-135m --json results/calibrate_reading.json
    python scripts/calibrate_reading.py --model tiny-random --rows 20     # the pipeline, in seconds
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ERRORS = ("substitution", "insertion", "deletion")
"""The test set's rewrites with a content error made on purpose (its ``system`` column)."""
OLD_THRESHOLD = 0.5


def fire_rates(probabilities: list[float], kinds: list[str], threshold: float) -> dict[str, float]:
    """The share of each kind of rewrite (and of all erroneous ones) whose exp(content) is at or below
    ``threshold``: where the reading says "look for swapped, invented or dropped content"."""
    out = {}
    for kind in ("style", "style_rated_4+", *ERRORS, "any_error"):
        chosen = [p for p, k in zip(probabilities, kinds, strict=True)
                  if k == kind or (kind == "any_error" and k in ERRORS) or (kind == "style_rated_4+" and k == kind)]
        out[kind] = sum(p <= threshold for p in chosen) / len(chosen) if chosen else math.nan
    return out


def best_threshold(probabilities: list[float], errors: list[bool]) -> float:
    """The threshold on exp(content) that maximizes Youden's J (share of errors flagged minus share of good
    rewrites flagged), rounded to 2 decimals."""
    good = [p for p, e in zip(probabilities, errors, strict=True) if not e]
    bad = [p for p, e in zip(probabilities, errors, strict=True) if e]
    best, best_j = OLD_THRESHOLD, -1.0
    for step in range(1, 100):
        t = step / 100
        j = sum(p <= t for p in bad) / len(bad) - sum(p <= t for p in good) / len(good)
        if j > best_j:
            best, best_j = t, j
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--rows", type=int, default=None, help="the first N rows only (default: all 500)")
    parser.add_argument("--json", default=None, help="write every number here")
    args = parser.parse_args(argv)

    from styleeval import LogProb
    from styleeval.corpora import load_corpus

    data = load_corpus("style_gap_testset", args.data_dir)
    rows = list(data)[: args.rows] if args.rows else list(data)
    start = time.perf_counter()
    scores = LogProb(args.model, progress=False).score([r["source"] for r in rows], [r["rewrite"] for r in rows],
                                                       [r["target_style"] for r in rows])
    seconds = time.perf_counter() - start
    probabilities = [math.exp(c) if math.isfinite(c) else 0.0 for c in scores.content]
    kinds = []
    for r in rows:
        rated = r["system"] == "style" and r["content_mean"] is not None and r["content_mean"] >= 4
        kinds.append("style_rated_4+" if rated else r["system"])
    # "style" counts every good rewrite: the rated-4+ ones are a subset of it
    kinds_all = ["style" if k == "style_rated_4+" else k for k in kinds]
    errors = [k in ERRORS for k in kinds_all]
    threshold = best_threshold(probabilities, errors)
    result = {"model": args.model, "signature": scores.signature, "rows": len(rows), "seconds": round(seconds, 1),
              "counts": {k: kinds_all.count(k) for k in ("style", *ERRORS)} | {"style_rated_4+": kinds.count(
                  "style_rated_4+")},
              "thresholds": {}}
    for t in (OLD_THRESHOLD, threshold):
        rates = fire_rates(probabilities, kinds_all, t)
        rates["style_rated_4+"] = fire_rates(probabilities, kinds, t)["style_rated_4+"]
        result["thresholds"][f"{t:.2f}"] = rates
    result["best_threshold"] = threshold
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
