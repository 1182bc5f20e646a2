"""The files of `styleeval evaluate` never lose a previous result and never carry a forged row (issue 27, items 3-4):
outputs are renamed into place, a full disk or a read-only OUT is one line naming the path, a rerun removes the
files it did not make, names are escaped in Markdown and neutralised in CSV."""

from __future__ import annotations

import errno
import json
import re

import pandas as pd

from styleeval.cli import main

SOURCES = [f"the cat number {i} sat on the mat today" for i in range(6)]


def _write(path, systems: dict[str, list[str]], human: bool = False) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for name, rewrites in systems.items():
            for i, (s, r) in enumerate(zip(SOURCES, rewrites, strict=True)):
                row = {"system": name, "source_id": i, "source": s, "rewrite": r, "style": "formal"}
                if human:
                    row.update(human_content=float(i % 3), human_style=float((i + len(name)) % 4))
                fh.write(json.dumps(row) + "\n")
    return str(path)


def _evaluate(table, out, *extra) -> int:
    return main(["evaluate", table, "--metrics", "s_bleu:agg=mean", "--out", str(out), "--no-progress", *extra])


def test_a_full_disk_keeps_the_previous_run_whole(tmp_path, monkeypatch, capsys):
    table = _write(tmp_path / "in.jsonl", {"A": SOURCES, "B": [s.upper() for s in SOURCES]})
    out = tmp_path / "report"
    assert _evaluate(table, out) == 0
    before = {name: (out / name).read_bytes() for name in ("rows.jsonl", "systems.csv", "report.md")}
    import styleeval.atomic as atomic

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    capsys.readouterr()
    assert _evaluate(table, out) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot write" in err and "rows.jsonl: the disk is full" in err, err
    assert {name: (out / name).read_bytes() for name in before} == before  # nothing truncated
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_read_only_out_is_one_line_for_evaluate_and_score(tmp_path, monkeypatch, capsys, tiny_model_dir):
    table = _write(tmp_path / "in.jsonl", {"A": SOURCES, "B": SOURCES})
    import styleeval.atomic as atomic

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(atomic, "_create_beside", denied)  # the temporary file cannot be made
    assert _evaluate(table, tmp_path / "report") == 2
    assert "cannot write" in capsys.readouterr().err
    from filelock import FileLock

    monkeypatch.setattr(FileLock, "acquire", denied)
    assert main(["score", table, "--out", str(tmp_path / "scored.jsonl"), "--model", str(tiny_model_dir),
                 "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("styleeval score: error: cannot write") and "scored.jsonl.lock: permission denied" in err


def test_a_rerun_removes_the_files_it_did_not_make(tmp_path):
    out = tmp_path / "report"
    with_humans = _write(tmp_path / "h.jsonl", {"A": SOURCES, "B": [s.upper() for s in SOURCES]}, human=True)
    assert _evaluate(with_humans, out) == 0 and (out / "tradeoff.png").is_file()
    without = _write(tmp_path / "n.jsonl", {"C": SOURCES, "D": SOURCES})
    assert _evaluate(without, out) == 0
    assert not (out / "tradeoff.png").exists()  # it plotted A and B, not this run's systems


def test_names_cannot_forge_markdown_rows_or_spreadsheet_formulas(tmp_path):
    forged = "A | 99.9 [99, 100] (1) |"
    table = _write(tmp_path / "in.jsonl", {forged: SOURCES, "=HYPERLINK(\"http://x\")": SOURCES,
                                           "line\nbreak": SOURCES, "@sum": [s.upper() for s in SOURCES]})
    out = tmp_path / "report"
    assert _evaluate(table, out) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    table_lines = [line for line in report.split("## Significant")[0].splitlines() if line.startswith("|")]
    assert len(table_lines) == 2 + 4 + 1 + 1  # header, rule, 4 systems, (copy source), n: no forged row or line
    cells = [len(re.findall(r"(?<!\\)\|", line)) for line in table_lines]  # unescaped pipes: the columns
    assert cells == [cells[0]] * len(cells) and "A \\| 99.9 [99, 100] (1) \\|" in report
    systems = pd.read_csv(out / "systems.csv")
    assert set(systems["system"]) == {forged, "'=HYPERLINK(\"http://x\")", "line\nbreak", "'@sum", "(copy source)"}
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["system"] for r in rows} == {forged, "=HYPERLINK(\"http://x\")", "line\nbreak", "@sum", "(copy source)"}


def test_a_system_named_0_keeps_its_name_in_the_space(tmp_path, tiny_model_dir):
    from styleeval.demo import Demo

    table = tmp_path / "batch.jsonl"
    table.write_text("".join(json.dumps({"system": sys_, "source_id": i, "source": s, "rewrite": s, "style": "x"})
                             + "\n" for sys_ in (0, 1) for i, s in enumerate(SOURCES[:3])), encoding="utf-8")
    rows, report = Demo(model=str(tiny_model_dir), autorater=False).batch(str(table))
    assert {r["system"] for r in rows} == {"0", "1"} and set(report.systems["system"]) == {"0", "1"}


def test_a_tokenizer_path_is_loaded_and_signed(tiny_model_dir, tmp_path):
    """``tokenizer=PATH`` loads the tokenizer at PATH (it was passed on as a string), and the tokenizer's identity
    is part of the signature: another tokenizer with the same chat template signs differently."""
    from styleeval import LogProb
    from styleeval.random_weights import build_tokenizer

    other = tmp_path / "other-tokenizer"
    build_tokenizer(["another corpus entirely, with other merges", "zebra quartz"] * 20,
                    vocab_size=300).save_pretrained(other)
    own = LogProb(str(tiny_model_dir), tokenizer=str(tiny_model_dir), progress=False)
    assert not isinstance(own.tokenizer, str)
    assert own.signature.fields["tok"] == LogProb(str(tiny_model_dir), progress=False).signature.fields["tok"]
    swapped = LogProb(str(tiny_model_dir), tokenizer=str(other), progress=False)
    assert swapped.signature.fields["tmpl"] == own.signature.fields["tmpl"]
    assert swapped.signature.fields["tok"] != own.signature.fields["tok"]
    assert swapped.score(["a b"], ["a c"], "polite").content[0] <= 0


def test_evaluate_prints_the_systems_table_or_json(tmp_path, capsys):
    table = _write(tmp_path / "in.jsonl", {"A": SOURCES, "B": [s.upper() for s in SOURCES]})
    capsys.readouterr()
    assert _evaluate(table, tmp_path / "report") == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[0].split() == ["system", "S-BLEU", "↑"] and set(lines[1]) <= {"-", " "}
    shown = lines[2:lines.index("")]  # then the baselines' legend
    assert [line.split()[0] for line in shown] == ["A", "B", "(copy"] and "[" in lines[2] and "(1)" in lines[2]
    assert "2 systems, 12 rows, 1 metric," in captured.err
    assert _evaluate(table, tmp_path / "report", "--format", "json") == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["system"] for r in out["systems"]} == {"A", "B"} and out["aggregates"] == {"s_bleu": "mean"}
    assert out["baselines"]["names"] == ["(copy source)"] and not out["baselines"]["tested"]


EIGHT = ("s_bleu", "s_chrf", "s_ter", "s_pinc", "s_paper_bleu", "r_chrf")
"""With two human columns, 8 columns: the stdout table was over 200 characters wide and wrapped."""


def _parse_blocks(text: str) -> dict[tuple[str, str], str]:
    """(row key, column header) -> cell of every table in ``text`` (tables start at a line followed by a dash rule;
    columns are separated by two or more spaces, cells never hold two)."""
    lines = text.splitlines()
    cells: dict[tuple[str, str], str] = {}
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1] and set(lines[i + 1]) <= {"-", " "}:
            header = re.split(r" {2,}", line)
            for row in lines[i + 2:]:
                if not row:
                    break
                key, *values = re.split(r" {2,}", row)
                assert len(values) == len(header) - 1, row
                cells.update({(key, h): v for h, v in zip(header[1:], values, strict=True)})
    return cells


def test_the_terminal_table_fits_the_width_and_keeps_every_number():
    """8 metric columns at width 80 and 200 (issue 40, item 4): no line longer than the width, every cell of the
    systems table and of the agreement tables whole on one line and under its system and metric (parsed back);
    columns that do not fit go into tables stacked below, and with few systems, systems become the columns."""
    from styleeval.stats import TestSettings
    from styleeval.systems.evaluation import evaluate_systems
    from styleeval.systems.report import _agreement_tables, _cells

    rewrites = {"BART-large": [s.replace("cat", "dog") for s in SOURCES], "copy": SOURCES,
                "UPPER": [s.upper() for s in SOURCES], "DualRL": [s.replace("mat", "rug") for s in SOURCES],
                **{name: [s.replace(word, name) for s in SOURCES] for name, word in
                   (("NIU", "sat"), ("HIGH", "on"), ("LUO", "today"), ("ZHOU", "the"))}}
    rows = [{"system": name, "source_id": i, "source": s, "rewrite": r, "style": "formal",
             "reference": None if name == "DualRL" else s.replace("cat", "cow"),  # no R-chrF for DualRL
             "human_content": float((i + k) % 4), "human_style": float((i * k) % 3)}
            for k, (name, texts) in enumerate(rewrites.items()) for i, (s, r) in enumerate(zip(SOURCES, texts, strict=True))]
    for systems in (rewrites, list(rewrites)[:4], ["copy", "UPPER"]):
        report = evaluate_systems([r for r in rows if r["system"] in systems], list(EIGHT),  # the layout: no baselines
                                  settings=TestSettings(trials=50, n_boot=20), baselines=False)
        header, body = _cells(report)
        assert len(header) == 9 and len(" | ".join(header + body[0])) > 200  # as wide as it was
        expected = {(r[0], h): c for r in body for h, c in zip(header[1:], r[1:], strict=True)}
        for width in (80, 200):
            text = report.to_text(width=width)
            assert max(map(len, text.splitlines())) <= width, width
            shown = _parse_blocks(text)
            lines = text.splitlines()
            rules = sum(set(line) <= {"-", " "} for line in text[:text.index("Agreement")].splitlines() if line)
            # systems as rows, metrics as columns stacked in as many tables as needed (8 systems); metrics as rows
            # where that makes fewer tables (4 systems: 2 tables instead of 4 at 80 columns, 1 instead of 2 at 200)
            key, tables = {(8, 80): ("system", 4), (8, 200): ("system", 2), (4, 80): ("metric", 2),
                           (4, 200): ("metric", 1), (2, 80): ("metric", 1), (2, 200): ("metric", 1)}[len(systems), width]
            assert lines[0].split()[0] == key and rules == tables, (len(systems), width)
            # each cell under its system and metric, whichever are the columns
            assert {k: shown.get(k, shown.get(k[::-1])) for k in expected} == expected, width
            agreement = _agreement_tables(report)
            starts = [text.index(title.split(":")[0] + ":") for title, _, _ in agreement] + [len(text)]
            assert len(agreement) == 2 and ("own systems" in agreement[0][1]) == (len(systems) > 2)
            for (title, agreement_header, agreement_rows), start, end in zip(agreement, starts[:-1], starts[1:], strict=True):
                assert " ".join(title.split()) in " ".join(text[start:end].split())  # the title, wrapped
                split = width == 80 and len(systems) > 2  # the own-systems columns below the others
                assert sum(set(line) <= {"-", " "} for line in text[start:end].splitlines() if line) == 1 + split
                cells = _parse_blocks(text[start:end])
                assert cells == {(r[0], h): c for r in agreement_rows for h, c in zip(agreement_header[1:], r[1:], strict=True)}


def test_systems_csv_writes_clusters_as_integers(tmp_path):
    """``cluster`` was written ``2.0``: integers, empty where a system has no score (B has no reference: no R-chrF)."""
    table = tmp_path / "in.jsonl"
    table.write_text("".join(json.dumps({"system": name, "source_id": i, "source": s, "rewrite": r, "style": "formal",
                                         "reference": s.replace("cat", "dog") if name != "B" else None}) + "\n"
                             for name, f in (("A", str), ("B", str.upper), ("C", str.title))
                             for i, (s, r) in enumerate((s, f(s)) for s in SOURCES)), encoding="utf-8")
    out = tmp_path / "report"
    assert main(["evaluate", str(table), "--metrics", "s_bleu,r_chrf", "--out", str(out), "--no-progress"]) == 0
    clusters = pd.read_csv(out / "systems.csv", dtype=str, keep_default_na=False).set_index(["system", "metric"])
    assert clusters["cluster"].to_dict() == {("A", "s_bleu"): "1", ("B", "s_bleu"): "1", ("C", "s_bleu"): "1",
                                             ("A", "r_chrf"): "1", ("C", "r_chrf"): "2", ("B", "r_chrf"): "",
                                             **{(b, m): "" for b in ("(copy source)", "(human reference)")
                                                for m in ("s_bleu", "r_chrf")}}  # baselines: in no cluster


def _layout(text: str) -> list[tuple[str, list[str], list[str]]]:
    """The systems table's blocks in a terminal output (before the agreement tables): each block's key column, its
    other columns and its row keys."""
    lines = text[:text.index("Agreement")].splitlines()
    blocks = []
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1] and set(lines[i + 1]) <= {"-", " "}:
            key, *columns = re.split(r" {2,}", line)
            body = []
            for row in lines[i + 2:]:
                if not row:
                    break
                body.append(re.split(r" {2,}", row)[0])
            blocks.append((key, columns, body))
    return blocks


def test_two_systems_that_do_not_fit_side_by_side_are_compared_in_every_table(tmp_path, monkeypatch, capsys):
    """Issue 47, item 7: with 2 systems on a terminal too narrow for both as columns, the terminal printed one table
    per system (metrics as rows: ``copy``'s table, then ``UPPER``'s), nothing compared; now systems are the rows, as
    with 3 systems at that width, every table showing both. 1 and 3 systems, and 2 where both fit, are unchanged."""
    from styleeval.stats import TestSettings
    from styleeval.systems.evaluation import evaluate_systems

    rewrites = {"copy": SOURCES, "UPPER": [s.upper() for s in SOURCES], "dog": [s.replace("cat", "dog") for s in SOURCES]}
    rows = [{"system": name, "source_id": i, "source": s, "rewrite": r, "style": "formal",
             "human_content": float((i + k) % 4)}
            for k, (name, texts) in enumerate(rewrites.items()) for i, (s, r) in enumerate(zip(SOURCES, texts, strict=True))]
    metrics = ["S-BLEU ↑", "S-chrF ↑", "S-TER ↓", "human_content ↑"]
    layouts = {}
    for systems in (["copy"], ["copy", "UPPER"], ["copy", "UPPER", "dog"]):
        report = evaluate_systems([r for r in rows if r["system"] in systems], ["s_bleu", "s_chrf", "s_ter"],
                                  settings=TestSettings(trials=50, n_boot=20), baselines=False)  # the layout
        for width in (60, 100):
            text = report.to_text(width=width)
            assert max(map(len, text.splitlines())) <= width
            layouts[len(systems), width] = _layout(text)
    ranked = ["copy", "dog", "UPPER"]  # by S-BLEU: 100, 75.06, 1.244
    assert layouts[2, 60] == [("system", ["S-BLEU ↑"], ["copy", "UPPER"]),
                              ("system", ["S-chrF ↑", "S-TER ↓"], ["copy", "UPPER"]),
                              ("system", ["human_content ↑"], ["copy", "UPPER"])]  # was 2 tables: copy, UPPER
    assert layouts[2, 100] == [("metric", ["copy", "UPPER"], metrics)]
    assert layouts[1, 60] == [("metric", ["copy"], metrics)] and layouts[1, 100] == [("system", metrics, ["copy"])]
    assert layouts[3, 60] == [("system", ["S-BLEU ↑"], ranked), ("system", ["S-chrF ↑"], ranked),
                              ("system", ["S-TER ↓", "human_content ↑"], ranked)]
    assert layouts[3, 100] == [("metric", ranked, metrics)]
    # the command itself, on a 60-column terminal
    table = tmp_path / "in.jsonl"
    table.write_text("".join(json.dumps(r) + "\n" for r in rows if r["system"] != "dog"), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "60")
    capsys.readouterr()
    assert main(["evaluate", str(table), "--metrics", "s_bleu,s_chrf,s_ter", "--out", str(tmp_path / "out"),
                 "--no-progress", "--no-baselines"]) == 0
    shown = _layout(capsys.readouterr().out)
    assert len(shown) > 1 and {(key, tuple(body)) for key, _, body in shown} == {("system", ("copy", "UPPER"))}
    assert [column for _, columns, _ in shown for column in columns] == metrics
