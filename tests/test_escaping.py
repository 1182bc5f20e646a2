"""Untrusted text in outputs (issue 38, item 6): one escaping rule per kind of output (styleeval.escaping), and each
injection tried in each writer of that kind: Markdown (newlines, pipes, raw HTML, backticks), the terminal (ANSI
escape sequences, bidirectional overrides, BEL), CSV (spreadsheet formulas)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval.cli import main
from styleeval.escaping import csv_text, csv_untext, md_cell, md_code, terminal_text

MD_NAMES = ["A | 99.9 |", "line\nbreak", "<img src=x onerror=alert(1)>", "tick`s & <b>bold</b>",
            "[x](javascript:alert(1))"]
TERMINAL_NAMES = ["\x1b[31mred\x1b[0m", "\u202eevil", "bell\x07"]
FORMULAS = ['=HYPERLINK("http://x","click")', "@SUM(A1:A2)", "+1+2", "-2+3*4", "\t=1", "'quoted"]


def test_the_rules():
    assert md_cell("A | 99 |\n<b>x</b> & `y`") == "A \\| 99 \\| &lt;b>x&lt;/b> &amp; \\`y\\`"
    assert md_cell("informal->formal") == "informal->formal" and md_cell(" > x") == " \\> x"  # > only where markup
    assert md_code("a|b`c") == "``a|b`c``" and md_code("`x") == "`` `x ``"
    assert terminal_text("\x1b[2Jx\u202e\ty") == "\\x1b[2Jx\\u202e\\ty"
    assert terminal_text("x\ny\tz\x9b", lines=True) == "x\ny\tz\\x9b"
    for text in [*FORMULAS, "-1.5", "+2e3", "plain", "", "''", "'"]:
        assert csv_untext(csv_text(text)) == text
    assert [csv_text(t) for t in ("=1", "-1.5", "-1+2", "'a", "a", 3.5, None)] == \
        ["'=1", "-1.5", "'-1+2", "''a", "a", 3.5, None]


def _markdown_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))


def _assert_safe_markdown(text: str, names: list[str]) -> None:
    """No raw HTML tag, no inline link, every table row as many columns as its header, each name's line break
    gone."""
    assert "<img" not in text and "<b>" not in text and "](javascript" not in text
    tables = re.split(r"\n(?!\|)", text)
    for table in tables:
        rows = _markdown_rows(table)
        if rows:
            assert {_unescaped_pipes(r) for r in rows} == {_unescaped_pipes(rows[0])}, rows
    for name in names:
        assert md_cell(name) in text


# -- Markdown -------------------------------------------------------------------------------------------------------
def _systems_report(names: list[str], signature: str = "m|v:1"):
    from styleeval.stats import TestSettings
    from styleeval.systems.comparison import compare_systems

    rng = np.random.default_rng(0)
    scores = pd.DataFrame([{"row": k * 8 + i, "system": name, "source_id": f"s{i}", "m": float(rng.normal(k, 1))}
                           for k, name in enumerate(names) for i in range(8)])
    return compare_systems(scores, {"m": signature}, settings=TestSettings(n_boot=20, trials=20))


def test_systems_report_md(tmp_path):
    report = _systems_report(MD_NAMES, signature="m|model:a`b")
    text = report.to_markdown()
    _assert_safe_markdown(text, MD_NAMES)
    assert "- m: ``m|model:a`b``" in text  # the signature as a code span, verbatim


def test_metaeval_report_md(tmp_path):
    from styleeval.metaeval import run_metaeval, write_report
    from styleeval.metrics.precomputed import from_file

    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal",
             "source_id": str(i), "source": f"s {i}", "rewrite": f"r {i}", "reference": None, "system": f"sys{i % 3}",
             "is_reference_rewrite": False, "content_mean": float(i % 5), "style_mean": 1.0, "fluency_mean": None}
            for i in range(30)]
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps({"id": f"toy/{i}", "a": np.sin(i), "b": np.cos(i), "c": i % 7, "d": -i,
                                        "e": np.sin(2 * i)})
                            + "\n" for i in range(30)), encoding="utf-8")
    metrics = []
    for column, name in zip("abcde", MD_NAMES, strict=True):
        metric = from_file(str(path), column)
        metric.alias = name
        metrics.append(metric)
    result = run_metaeval(["toy"], metrics, dimension="content", loader=lambda name: rows, n_boot=0)
    result.notes.append(f"a note about {MD_NAMES[2]}")
    text = write_report(result, tmp_path / "out", plots=False)["report"].read_text(encoding="utf-8")
    _assert_safe_markdown(text, MD_NAMES)
    from styleeval.metaeval.leaderboard import build_leaderboard, leaderboard_markdown, write_leaderboard

    board = build_leaderboard([result], trials=5, n_boot=0)
    _assert_safe_markdown(leaderboard_markdown(board), MD_NAMES)
    paths = write_leaderboard(board, tmp_path / "lb", plots=False)
    assert set(pd.read_csv(paths["csv"])["metric"]) == set(MD_NAMES)  # no formula among these: as given
    correlations = pd.read_csv(tmp_path / "out" / "correlations.csv")
    assert set(correlations["metric"]) == set(MD_NAMES)


def test_lai_md():
    from styleeval.metaeval.lai import LAI_COLUMNS, comparison_markdown

    result = pd.DataFrame([[1, name, "style", "all", "system", "pearson", 10, 0.5, 0.01] for name in MD_NAMES],
                          columns=LAI_COLUMNS)
    _assert_safe_markdown(comparison_markdown(result), MD_NAMES)


# -- terminal ---------------------------------------------------------------------------------------------------------
def test_evaluate_terminal_table_and_notes(tmp_path, capsys):
    table = tmp_path / "in.jsonl"
    names = TERMINAL_NAMES + ["only\x1b]0;title\x07"]
    table.write_text("".join(json.dumps({"system": name, "source_id": i, "source": f"the cat {i} sat",
                                         "rewrite": f"the cat {i} sat {name[-1]}", "style": "formal"}) + "\n"
                             for name in names for i in range(4)), encoding="utf-8")
    assert main(["evaluate", str(table), "--metrics", "s_bleu:agg=mean", "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 0
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", stream), stream
    for name in names:
        assert terminal_text(name) in captured.out
    single = tmp_path / "one.jsonl"
    single.write_text(json.dumps({"system": "\x1b[2Jwiped", "source": "a b", "rewrite": "a b", "style": "x"}) + "\n",
                      encoding="utf-8")
    assert main(["evaluate", str(single), "--metrics", "s_bleu:agg=mean", "--out", str(tmp_path / "s"),
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "only one system (\\x1b[2Jwiped)" in err and "\x1b" not in err  # a note naming the system


def test_error_lines(tmp_path, capsys, tiny_model_dir):
    missing = tmp_path / "in\x1b[31m.csv"
    assert main(["score", str(missing), "--out", str(tmp_path / "o.jsonl"), "--model", str(tiny_model_dir), "-q"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "in\\x1b[31m.csv: no such file" in err


# -- CSV ------------------------------------------------------------------------------------------------------------
def _cells(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


def _assert_no_formula(cells: list[list[str]]) -> None:
    """No cell a spreadsheet would run: none starts with = + - @ tab or CR, except a plain number."""
    for row in cells:
        for cell in row:
            number = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", cell)
            assert number or not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell


class _Lengths:
    signature = "lengths|v:1"


def test_score_out_csv_and_merged_csv(tmp_path):
    from styleeval.files import LOGPROB_RECORDS, FileJob, read_scores, run_file
    from styleeval.files.shards import merge_shards

    job = FileJob(LOGPROB_RECORDS, _Lengths, lambda _s, chunk: [{"content": -1.5, "style_strength": 0.5}
                                                                 for _ in chunk])
    inp = tmp_path / "in.jsonl"
    rows = [{"source": text, "rewrite": text[::-1], "style": "formal", "note": text} for text in FORMULAS]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.csv"
    run_file(job, inp, out, max_rows=3, progress=False)
    result = run_file(job, inp, out, progress=False)  # resumes: the escaped texts read back as the input's
    assert result.skipped == 3 and result.complete
    cells = _cells(out)
    _assert_no_formula(cells)
    assert cells[1][1] == "'" + FORMULAS[0] and cells[1][2] == "'" + FORMULAS[0]
    assert [(r["source"], r["note"]) for r in read_scores(out)] == [(t, t) for t in FORMULAS]
    shards = [run_file(job, inp, tmp_path / f"s{k}.jsonl", shard=f"{k}/2", progress=False).output for k in range(2)]
    merged = merge_shards(shards, tmp_path / "merged.csv", input=inp).output
    assert merged.read_bytes() == out.read_bytes()


def test_report_csvs(tmp_path):
    from styleeval.systems.report import write_outputs

    paths = write_outputs(_systems_report(FORMULAS), tmp_path / "r", plots=False)
    for name in ("systems", "pairs"):
        _assert_no_formula(_cells(paths[name]))
    assert set(pd.read_csv(paths["systems"])["system"]) == {csv_text(f) for f in FORMULAS}


def test_space_scored_csv(tmp_path, tiny_model_dir):
    from styleeval.demo import Demo, write_scored_csv

    table = tmp_path / "batch.csv"
    with open(table, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["system", "source", "rewrite", "style"])
        for k, text in enumerate(FORMULAS[:4]):
            writer.writerow([text, f"source {k}", text, "formal"])
    rows, _ = Demo(model=str(tiny_model_dir), autorater=False).batch(str(table))
    cells = _cells(Path(write_scored_csv(rows, str(tmp_path / "scored.csv"))))
    _assert_no_formula(cells)
    assert [row[cells[0].index("rewrite")] for row in cells[1:]] == [csv_text(t) for t in FORMULAS[:4]]
