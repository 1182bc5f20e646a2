"""Everything the two LLM scorers write, on the tiny-random preset, into one folder: run it before and after a change
to their plumbing and compare the folders byte for byte (``diff -r BEFORE AFTER``; issue 60, item 2).

    PYTHONPATH=src STYLEEVAL_DATA_DIR=../shared/data python scripts/compare_llm_scorers.py OUT

Written: ``styleeval score`` and ``styleeval autorate`` (both modes) on a small file, as JSONL and CSV, with their
stdout and stderr; ``styleeval evaluate --dataset lai_formality`` with the LogProb and autorater metrics; the
metrics' scores and signatures (``styleeval list metrics`` and the specs' options); the two ``evaluate`` modules'
``_compute`` results; the CLI's help of both commands; the messages of refused options.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

ROWS = [("the food was cold.", "The food was warm.", "positive"),
        ("give me the report now.", "Could you send me the report?", "polite"),
        ("the meeting is on Tuesday.", "The meeting is on Monday.", "formal"),
        ("this is bad.", "This is not ideal.", "polite")]
MODEL = "tiny-random"


def _cli(out: Path, name: str, argv: list[str]) -> None:
    from styleeval.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
    (out / f"{name}.txt").write_text(f"status {status}\n--- stdout\n{stdout.getvalue()}--- stderr\n"
                                     f"{stderr.getvalue()}", encoding="utf-8")


def _json(value):
    return json.dumps(value, indent=1, sort_keys=False, default=str)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    table = out / "rows.csv"
    table.write_text("source,rewrite,style\n" + "".join(f'"{s}","{r}",{st}\n' for s, r, st in ROWS),
                     encoding="utf-8")
    for fmt in ("jsonl", "csv"):
        _cli(out, f"score_{fmt}", ["score", str(table), "--out", str(out / f"score.{fmt}"), "--model", MODEL,
                                   "--device", "cpu", "--quiet"])
        for mode in ("expected", "paper"):
            _cli(out, f"autorate_{mode}_{fmt}", ["autorate", str(table), "--out", str(out / f"autorate_{mode}.{fmt}"),
                                                 "--model", MODEL, "--mode", mode, "--device", "cpu", "--quiet"])
    _cli(out, "score_again", ["score", str(table), "--out", str(out / "score.jsonl"), "--model", MODEL,
                              "--device", "cpu", "--quiet"])
    _cli(out, "score_bad_option", ["score", str(table), "--out", str(out / "bad.jsonl"), "--model", MODEL,
                                   "--variant", "nope"])
    _cli(out, "autorate_bad_prompt", ["autorate", str(table), "--out", str(out / "bad.jsonl"), "--prompt", "nope"])
    _cli(out, "score_help", ["score", "--help"])
    _cli(out, "autorate_help", ["autorate", "--help"])
    _cli(out, "list_metrics", ["list", "metrics"])
    _cli(out, "evaluate", ["evaluate", "--dataset", "lai_formality", "--limit", "3", "--out", str(out / "evaluate"),
                           "--metrics", f"logprob_content:model={MODEL},logprob_style:model={MODEL},"
                           f"autorater_meaning:model={MODEL},autorater_style:model={MODEL}:mode=paper",
                           "--no-plots", "--no-progress", "--test", "bootstrap"])

    from styleeval.metrics import get_metric
    from styleeval.metrics.registry import metric_options, metric_summary

    sources, rewrites, styles = map(list, zip(*ROWS, strict=True))
    metrics = {}
    for spec in ("logprob_content", "logprob_style", "autorater_meaning", "autorater_style", "autorater_fluency"):
        metrics[spec] = {"options": list(metric_options(spec)), "summary": metric_summary(spec)}
    for spec in (f"logprob_content:model={MODEL}", f"logprob_style:model={MODEL}:variant=default",
                 f"autorater_meaning:model={MODEL}", f"autorater_style:model={MODEL}:mode=paper",
                 f"autorater_style:model={MODEL}:mode=paper:fill=none",
                 f"autorater_fluency:model={MODEL}:prompt=mukherjee"):
        metric = get_metric(spec)
        scores = metric.finalize(metric.compute(sources, rewrites, styles=styles))
        metrics[spec] = {"name": metric.name, "signature": str(metric.signature), "scores": scores}
    for spec in (f"autorater_fluency:model={MODEL}", "autorater_meaning:fill=some", "logprob_content:variant=x"):
        try:
            get_metric(spec).signature  # noqa: B018 - what it raises
        except Exception as err:  # noqa: BLE001 - the message is the output
            metrics[spec] = f"{type(err).__name__}: {err}"
    (out / "metrics.json").write_text(_json(metrics), encoding="utf-8")

    import evaluate

    root = Path(__file__).resolve().parents[1] / "metrics"
    results = {}
    for module, extra in (("logprob_style", {}), ("llm_autorater", {}), ("llm_autorater", {"mode": "paper"}),
                          ("llm_autorater", {"mode": "paper", "fill": "none"})):
        loaded = evaluate.load(str(root / module))
        got = loaded.compute(predictions=rewrites, sources=sources, styles=styles, model=MODEL, device="cpu", **extra)
        results[f"{module} {extra}"] = {"type": type(got).__name__, "result": got,
                                        "features": str(loaded.features)}
    for module, extra in (("logprob_style", {"modle": MODEL}), ("llm_autorater", {"fill": "x", "model": MODEL})):
        try:
            evaluate.load(str(root / module)).compute(predictions=rewrites, sources=sources, styles=styles, **extra)
        except Exception as err:  # noqa: BLE001 - the message is the output
            results[f"{module} {extra}"] = f"{type(err).__name__}: {err}"
    (out / "evaluate_modules.json").write_text(_json(results), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
