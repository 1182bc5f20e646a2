"""`styleeval reproduce-paper` (styleeval.metaeval.paper): what --write keeps, and a row whose data cannot be had
(METEOR's WordNet)."""

from __future__ import annotations

import re
from pathlib import Path

from styleeval.metaeval import paper

ROOT = Path(__file__).resolve().parents[2]


def test_write_keeps_the_sections_after_the_generated_tables(tmp_path):
    doc = tmp_path / "reproduction.md"
    assert paper.kept_sections(doc) == ""  # a new file: only the generated part
    doc.write_text("# Reproducing\n\n| row |\n\nPublished cells: 249; reproduced ...: 13. (4.5s)\n\n# STEL\n\nby hand\n",
                   encoding="utf-8")
    assert paper.kept_sections(doc) == "\n# STEL\n\nby hand\n"
    real = paper.kept_sections(ROOT / "docs" / "reproduction.md")
    assert real.startswith("\n## What the measured rows show")  # the commentary on the generated measured rows
    assert "\n# STEL" in real and "# Lai et al. (2022)" in real


def test_a_row_whose_data_cannot_be_had_says_so_in_its_cells(tmp_path, data_dir):
    why = "needs data (METEOR needs WordNet 3.0, ...: apt-get install wordnet-base wordnet-sense-index ...)"
    args = paper.Options(no_cache=True, data_dir=str(data_dir), no_progress=True, unavailable={"s_meteor": why})
    values, failures = paper.run_table({"S-Meteor": "s_meteor"}, ["S-Meteor"], "content", ["style_gap_testset"], args)
    assert values == {} and failures == {"S-Meteor": why}
    text, counts = paper.render("Table 4", [("ALL", "style_gap_testset", "all")], {"S-Meteor": "-0.05*"}, values,
                                failures)
    assert f"| S-Meteor | -0.05* / – | {why} |" in text and counts["not computed"] == 1


def _unreachable(monkeypatch, tmp_path) -> None:
    """No corpus mirror, and every download refused at once: a proxy on a port nothing listens on, no retries (the
    command's three retries with backoff cost seconds per file); a fresh cache, and no corpus loaded before."""
    import socket

    from styleeval.corpora import _files

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    for name in ("STYLEEVAL_DATA_DIR", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_files, "DOWNLOAD_RETRIES", 0)
    monkeypatch.setattr(paper, "_LOADED", {})


def test_without_any_corpus_it_exits_2_with_one_short_line_per_corpus(monkeypatch, tmp_path, capsys):
    """Issue 47: offline without --data-dir, every download fails: one short line per corpus and exit status 2, as
    metaeval's; no table of "not computed" cells each repeating a 3,100-character download error, and --write's
    file left alone."""
    from styleeval.cli import main

    _unreachable(monkeypatch, tmp_path)
    doc = tmp_path / "reproduction.md"
    doc.write_text("# by hand\n", encoding="utf-8")
    assert main(["reproduce-paper", "-q", "--cache-dir", str(tmp_path / "scores"), "--write", str(doc)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    why = r"download failed \(raw\.githubusercontent\.com via the proxy: ProxyError: \[Errno \d+\] Connection refused\)"
    corpora = [("mir_yelp", "sentiment.test.0"), ("lai_formality", "BART.human.txt"),
               ("ziegenbein_appropriateness", "study_pairs.csv"), ("asset", "human_ratings.csv"),
               ("style_gap_testset", "syntest_anno1.csv")]
    assert len(lines) == len(corpora) + 1, lines
    for line, (name, file) in zip(lines[:-1], corpora, strict=True):
        assert re.fullmatch(rf"styleeval reproduce-paper: corpus {name} not loaded: {re.escape(file)}: {why}", line), line
    assert lines[-1].startswith("styleeval reproduce-paper: error: no corpus could be loaded") and \
        "--data-dir (or STYLEEVAL_DATA_DIR)" in lines[-1] and "network access" in lines[-1]
    assert out == "" and doc.read_text(encoding="utf-8") == "# by hand\n"


def test_a_corpus_that_cannot_be_loaded_is_said_once_and_its_cells_say_not_computed():
    """A corpus missing from the tables' run (Ziegenbein's ratings, absent from the mirror): its cells say "not
    computed (corpus not loaded)", never the load error, which the report says once below the tables."""
    columns = [("Mir", "mir_yelp", "all"), ("Ze.", "ziegenbein_appropriateness", "system")]
    text, counts = paper.render("Table 3", columns, {"S-Bleu": "0.51 0.63"}, {("S-Bleu", "mir_yelp", "all"): (0.51, 0.0)},
                                {}, {"ziegenbein_appropriateness": "study_abs_results.csv: missing from the mirror"})
    assert "| S-Bleu | 0.51 / 0.51 | 0.63 / – | ok: Mir; not computed (corpus not loaded): Ze. |" in text
    assert "missing from the mirror" not in text and counts == {"ok": 1, "close": 0, "differs": 0, "not computed": 1}
    args = paper.Options(unloaded={"ziegenbein_appropriateness": "why"}, no_cache=True, no_progress=True)
    values, failures = paper.run_table({"S-Bleu": "s_paper_bleu"}, ["S-Bleu"], "content", ["ziegenbein_appropriateness"],
                                       args)  # no corpus left: no load attempted, the row says why in a few words
    assert values == {} and failures == {"S-Bleu": paper.NOT_LOADED}


def test_progress_only_where_stderr_is_a_terminal_unless_quiet(monkeypatch, data_dir):
    """Issue 47: reproduce-paper passed progress=True (bars into files and pipes): ``None`` lets a terminal decide."""
    import styleeval.metaeval as metaeval

    seen = []

    def fake(*args, progress=True, **kwargs):
        seen.append(progress)
        raise ValueError("stop")

    monkeypatch.setattr(metaeval, "run_metaeval", fake)
    for quiet in (False, True):
        args = paper.Options(no_cache=True, data_dir=str(data_dir), no_progress=quiet)
        paper.run_table({"S-Bleu": "s_paper_bleu"}, ["S-Bleu"], "content", ["style_gap_testset"], args)
    assert seen == [None, False]


def test_table_headers_are_capitalized_as_the_others():
    """Issue 47: Table 4's last column was headed "formal" beside "Polite", "Persuasive"."""
    assert [name for name, _ in paper.TABLE4_COLUMNS][-1] == "Formal"
    assert all(name[0].isupper() for name, *_ in [*paper.TABLE3_COLUMNS, *paper.TABLE4_COLUMNS,
                                                   *paper.TABLE5_COLUMNS])
