"""The real-weights benchmark runs end to end (``--quick``), and its agreement numbers mean what they say.
No timing is asserted: speed is the benchmark's business (docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_real.py"


def test_quick_run_reports_every_contender(real_backend, data_dir, tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--rows", "4", "--chunk", "2",
                           "--contenders", "engine,authors,llamacpp", "--data-dir", str(data_dir), "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    results = {r["contender"]: r for r in report["results"]}
    assert "engine" in results and "authors" in results
    engine, authors = results["engine"], results["authors"]
    assert engine["content_abs_diff_max"] == 0.0 and engine["time_vs_engine_median"] == 1.0
    # the authors' loop is the definition computed another way: float32 rounding apart, the same numbers
    assert authors["content_abs_diff_max"] < 1e-3 and authors["style_abs_diff_max"] < 1e-3
    assert len({r["rows"] for r in results.values()}) == 1 and all(r["peak_rss_mb"] > 100 for r in results.values())
    if "llamacpp" in results:  # installed: quantization apart, the same scores
        assert results["llamacpp"]["content_abs_diff_max"] < 0.2
    else:
        assert "llamacpp: skipped" in proc.stdout
    assert "rows/s" in proc.stdout and "peak RSS" in proc.stdout
