"""Corpus tests of ``styleeval evaluate`` against sacrebleu's CLI on Lai et al.'s 9 formality systems (issue 36).

    python scripts/bench_corpus_tests.py                       # 3 alternated runs of each command
    python scripts/bench_corpus_tests.py --repeats 5 --also OLD_SRC   # and another source tree (e.g. an older
                                                                      # checkout's src/) in the same run

The example: 9 systems (8 systems + the human references as ``reference``), 80 sources, each system's rewrites
against the sources. Commands, each a fresh process (start-up and imports included), alternated, ``--repeats`` times:

- sacrebleu: ``sacrebleu SRC -i SYS1..SYS9 -m bleu chrf ter --paired-ar``: 24 tests (the first system as the
  baseline against the 8 others, 3 metrics), 10,000 trials each;
- styleeval: ``styleeval evaluate lai.csv --metrics s_bleu,s_chrf,s_ter --out OUT --no-plots`` (fresh OUT: every
  row scored, nothing cached): every pair of the 9 systems (108 paired tests of 10,000 trials, 27 system CIs and
  108 difference CIs of 1000 resamples), Holm, clusters and the report files.

Prints the median wall and CPU (user + system) time of each and the time per paired test, and how many of sacrebleu's
24 p-values ``styleeval evaluate`` (default seed, sacrebleu's) prints equal (the others differ by shuffles that tie).
``--json`` writes the measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = {"BLEU": "s_bleu", "chrF2": "s_chrf", "TER": "s_ter"}


def lai_files(folder: Path, data_dir: str | None) -> list[str]:
    """Writes ``lai.csv`` (styleeval's input), ``src.txt`` and one ``<system>.txt`` per system (sacrebleu's);
    returns the systems in order."""
    import csv

    from styleeval.corpora import load_corpus

    rows = sorted(load_corpus("lai_formality", data_dir=data_dir), key=lambda r: (r["system"], r["source_id"]))
    systems = sorted({r["system"] for r in rows})
    with open(folder / "lai.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", "source_id", "source", "rewrite", "style"])
        for r in rows:
            writer.writerow([r["system"], r["source_id"], r["source"], r["rewrite"], r["target_style"]])
    (folder / "src.txt").write_text("".join(r["source"] + "\n" for r in rows if r["system"] == systems[0]),
                                    encoding="utf-8")
    for s in systems:
        (folder / f"{s}.txt").write_text("".join(r["rewrite"] + "\n" for r in rows if r["system"] == s),
                                         encoding="utf-8")
    return systems


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU (user + system) seconds of one subprocess, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("STYLEEVAL_DATA_DIR"))
    parser.add_argument("--also", metavar="SRC", help="time `styleeval evaluate` from this source tree as well")
    parser.add_argument("--json", metavar="FILE", help="write the measurements")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    systems = lai_files(folder, args.data_dir)
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"styleeval": os.environ.get("PYTHONPATH", here).split(os.pathsep)[0] or here}
    if args.also:
        trees["styleeval (--also)"] = args.also
    sacrebleu = [sys.executable, "-m", "sacrebleu", str(folder / "src.txt"), "-i",
                 *(str(folder / f"{s}.txt") for s in systems), "-m", "bleu", "chrf", "ter", "--paired-ar",
                 "--format", "json"]
    runs: dict[str, list[tuple[float, float]]] = {"sacrebleu": [], **{name: [] for name in trees}}
    outputs: dict[str, str] = {}
    for k in range(args.repeats):
        wall, cpu, outputs["sacrebleu"] = timed(sacrebleu, dict(os.environ))
        runs["sacrebleu"].append((wall, cpu))
        for t, (name, src) in enumerate(trees.items()):
            out = folder / f"out-{k}-{t}"
            command = [sys.executable, "-m", "styleeval.cli", "evaluate", str(folder / "lai.csv"), "--metrics",
                       ",".join(METRICS.values()), "--out", str(out), "--no-progress", "--no-plots"]
            wall, cpu, _ = timed(command, {**os.environ, "PYTHONPATH": src})
            runs[name].append((wall, cpu))
            outputs[name] = str(out)
        print(f"run {k + 1}: " + ", ".join(f"{name} {runs[name][-1][0]:.2f} s" for name in runs), file=sys.stderr)

    tests = {"sacrebleu": 3 * (len(systems) - 1), **{name: 3 * len(systems) * (len(systems) - 1) // 2
                                                      for name in trees}}
    table = []
    for name, measured in runs.items():
        wall = statistics.median(w for w, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        table.append({"command": name, "tests": tests[name], "wall_s": wall, "cpu_s": cpu,
                      "ms_per_test": 1000 * wall / tests[name], "runs": measured})
    print(f"\nLai et al.'s {len(systems)} systems x 3 metrics, median of {args.repeats} alternated runs:\n")
    print("| command | paired tests | wall (median) | CPU (median) | wall per test |\n|---|---|---|---|---|")
    for row in table:
        print(f"| {row['command']} | {row['tests']} | {row['wall_s']:.2f} s | {row['cpu_s']:.2f} s | "
              f"{row['ms_per_test']:.1f} ms |")

    import pandas as pd

    theirs = json.loads(outputs["sacrebleu"])
    pairs = pd.read_csv(Path(outputs["styleeval"]) / "pairs.csv").set_index(["metric", "system_a", "system_b"])
    base, same, differ = systems[0], 0, []
    for entry in theirs[1:]:
        other = Path(entry["system"]).stem
        for name, label in METRICS.items():
            mine = pairs.loc[(label, *sorted((base, other))), "p"]
            if mine == entry[name]["p_value"]:
                same += 1
            else:
                differ.append(f"{label} {base}-{other}: {mine:.4g} vs {entry[name]['p_value']:.4g}")
    print(f"\np-values equal to sacrebleu's CLI: {same} of {len(theirs[1:]) * 3}"
          + (f"; differ (shuffles that tie the observed difference): {'; '.join(differ)}" if differ else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"table": table, "equal_p": same, "differ": differ}, indent=1))


if __name__ == "__main__":
    main()
