"""`styleeval reproduce-paper` (styleeval.metaeval.paper): what --write keeps, and a row whose data cannot be had
(METEOR's WordNet)."""

from __future__ import annotations

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
    assert real.startswith("\n# STEL") and "# Lai et al. (2022)" in real


def test_a_row_whose_data_cannot_be_had_says_so_in_its_cells(tmp_path, data_dir):
    why = "needs data (METEOR needs WordNet 3.0, ...: apt-get install wordnet-base wordnet-sense-index ...)"
    args = paper.Options(no_cache=True, data_dir=str(data_dir), no_progress=True, unavailable={"s_meteor": why})
    values, failures = paper.run_table({"S-Meteor": "s_meteor"}, ["S-Meteor"], "content", ["style_gap_testset"], args)
    assert values == {} and failures == {"S-Meteor": why}
    text, counts = paper.render("Table 4", [("ALL", "style_gap_testset", "all")], {"S-Meteor": "-0.05*"}, values,
                                failures)
    assert f"| S-Meteor | -0.05* / – | {why} |" in text and counts["not computed"] == 1
