"""How the report writes a correlation: the paper's markers."""

from __future__ import annotations

from styleeval.metaeval.report import format_correlation, significance_marker


def test_significance_markers_follow_the_paper():
    assert significance_marker(0.049) == ""
    assert significance_marker(0.05) == "*"  # not significant: cannot reject at the 0.05 level
    assert significance_marker(float("nan")) == "*"
    assert format_correlation(-0.1424, 0.157) == "-0.14*"
    assert format_correlation(-0.7855, 1.4e-11) == "-0.79"
    assert format_correlation(float("nan"), 0.0) == "–"


def test_report_md_names_the_rows_of_every_number(cut_result, whole_result, tmp_path):
    """report.md's tables keep each metric on its own rows (the paper's), and say where a metric saw fewer rows than
    its column's n; the figures' like-rows numbers are in report.md too, under column names that say which rows
    (before: "ALL (Test set)" gave S-BLEU on its 24 rows while tasks.png's "ALL (n = 8)" gave it on sentiment's 8
    rows with a reference, and report.md had no such number)."""
    from styleeval.metaeval import write_report

    write_report(cut_result, tmp_path / "cut", plots=False)
    report = (tmp_path / "cut" / "report.md").read_text(encoding="utf-8")
    assert "R-BLEU 8 of 24 in ALL (Test set)" in report and "R-BLEU 16 of 24 in toy" in report
    same = report[report.index("## Every metric on the same rows (the figures' numbers)"):].split("\n\n")[2]
    header, _, *rows = same.splitlines()
    assert header == ("| metric | ALL (Test set): sentiment: rows with a reference, n = 8 of 24 | "
                      "toy: rows with a reference, n = 16 of 24 |")
    like = cut_result.shared_correlations.set_index(["dataset", "subset", "metric"])
    s_bleu = [r for r in rows if r.startswith("| S-BLEU |")][0]
    assert s_bleu == (f"| S-BLEU | {like.loc[('style_gap_testset', 'all', 's_bleu'), 'spearman']:.2f}* | "
                      f"{like.loc[('toy', 'all', 's_bleu'), 'spearman']:.2f}* |")
    assert rows[-1] == "| n | 8 | 16 |"
    write_report(whole_result, tmp_path / "whole", plots=False)
    whole = (tmp_path / "whole" / "report.md").read_text(encoding="utf-8")
    assert "Every metric on the same rows (the figures' numbers)" not in whole and " of 24 in " not in whole


def test_lai_md_writes_a_direction_the_same_way_in_both_tables():
    """``formal->informal`` as written in lai.md's first table and its "All numbers" table (before: the second
    table had ``formal-&gt;informal``); a ``<`` (HTML) is still escaped everywhere."""
    import pandas as pd

    from styleeval.escaping import md_cell
    from styleeval.metaeval.lai import LAI_COLUMNS, comparison_markdown

    rows = pd.DataFrame([[5, "lai:ppl", "fluency", d, "system", "pearson", 80, 0.5, 0.01]
                         for d in ("informal->formal", "formal->informal")]
                        + [[2, "<b>x</b>", "style", "all", "system", "pearson", 80, 0.5, 0.01]], columns=LAI_COLUMNS)
    text = comparison_markdown(rows)
    first, second = text.split("## All numbers")
    assert "| formal->informal |" in first and "| formal->informal |" in second and "&gt;" not in text
    assert "<b>" not in text and md_cell("<b>x</b>") == "&lt;b>x&lt;/b>"
    assert md_cell("> quoted") == "\\> quoted"  # not a blockquote where md_cell writes a list item
