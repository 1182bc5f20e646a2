#!/usr/bin/env python
"""Time tie calibration (acc_eq with the exact epsilon search) on N ungrouped rows: 1-5 human ratings (many ties) and
a noisy metric; prints the seconds of each repeat and their median.

    python scripts/bench_pairwise.py --rows 10000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from styleeval.stats.pairwise import tie_calibrated_accuracy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, size=args.rows).astype(float)
    metric = human + rng.normal(size=args.rows)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        acc, eps = tie_calibrated_accuracy(human, metric)
        times.append(time.perf_counter() - start)
        print(f"{args.rows} rows ({args.rows * (args.rows - 1) // 2} pairs): acc_eq {acc:.4f}, epsilon {eps:.4f}, "
              f"{times[-1]:.2f} s", flush=True)
    print(f"median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
