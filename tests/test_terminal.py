"""Tables fitted to the terminal's width (issue 40, item 4): as few stacked tables as fit, each repeating the key
column, cells whole and escaped; the width from $COLUMNS, the terminal, or 100 columns for a file or a pipe."""

from __future__ import annotations

import os
import re

from styleeval.terminal import DEFAULT_WIDTH, table_blocks, terminal_width, text_table, wrap_text


def test_columns_that_do_not_fit_go_into_even_tables_below_each_with_the_key_column():
    header = ["system", *(f"metric {k}" for k in range(7))]
    rows = [["A\x1b[31m", *(f"{k}.5 [1, 2]" for k in range(7))], ["B\nC", *("–" for _ in range(7))]]
    blocks = table_blocks(header, rows, width=81)  # the key column (9) and 6 of 12: 6 + 1, evened to 4 + 3
    assert [len(re.split(" {2,}", b[0])) - 1 for b in blocks] == [4, 3]
    assert [len(re.split(" {2,}", b[0])) - 1 for b in table_blocks(header, rows, width=40)] == [2, 2, 2, 1]
    for block in blocks:
        assert block[0].startswith("system") and block[2].startswith("A\\x1b[31m") and block[3].startswith("B C")
        assert all(len(line) <= 81 for line in block)
    one = table_blocks(header, rows, width=200)
    assert len(one) == 1 and one[0][2].split("  ")[1:] == [f"{k}.5 [1, 2]" for k in range(7)]
    # a column wider than the width is not cut: its own table, wider than asked
    wide = table_blocks(["k", "a", "b"], [["x", "y" * 50, "z"]], width=20)
    assert [b[2] for b in wide] == ["x  " + "y" * 50, "x  z"]
    assert text_table(["k", "a", "b"], [["x", "1", "2"]], width=6) == ["k  a", "-  -", "x  1", "", "k  b", "-  -",
                                                                       "x  2"]


def test_prose_wraps_and_the_width_comes_from_columns_the_terminal_or_100(monkeypatch):
    assert wrap_text("Agreement with human_content: 8 systems (left out: reference)", 30) == [
        "Agreement with human_content:", "8 systems (left out:", "reference)"]
    monkeypatch.setenv("COLUMNS", "77")
    assert terminal_width() == 77

    def no_terminal(*args):
        raise OSError("not a terminal")

    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)  # stdout is a file or a pipe
    assert terminal_width() == DEFAULT_WIDTH == 100
