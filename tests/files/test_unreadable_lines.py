"""JSONL lines that Python's json module cannot turn into values (issue 44, item 13): an array nested 200,000 deep
(a RecursionError) or an integer of 5,000 digits (Python's limit on integer digits) is one line naming the file and
the line, never a traceback; the depth of what is read is bounded, so that whatever is read can be written."""

from __future__ import annotations

import json

import pytest

from styleeval.cli import main
from styleeval.files import read_rows
from styleeval.files.records import MAX_NESTING

GOOD = json.dumps({"source": "a b", "rewrite": "a c", "style": "polite"})


def _bad_lines():
    deep = "[" * 200_000 + "]" * 200_000
    return {
        "deep": ('{"source": "a", "rewrite": "b", "style": "polite", "x": ' + deep + "}",
                 f"nested more than {MAX_NESTING} levels deep"),
        "just_too_deep": ('{"source": "a", "rewrite": "b", "style": "polite", "x": ' + "[" * MAX_NESTING
                          + "]" * MAX_NESTING + "}", f"nested more than {MAX_NESTING} levels deep"),
        "long_int": ('{"source": "a", "rewrite": "b", "style": "polite", "x": ' + "7" * 5000 + "}",
                     "a number of 5000 digits"),
    }


@pytest.mark.parametrize("case", ["deep", "just_too_deep", "long_int"])
def test_an_unreadable_jsonl_line_is_one_line(tmp_path, capsys, case):
    line, reason = _bad_lines()[case]
    inp = tmp_path / "in.jsonl"
    inp.write_text(GOOD + "\n" + line + "\n", encoding="utf-8")
    assert main(["score", str(inp), "--out", str(tmp_path / "out.jsonl"), "--model", "no/such-model", "-q"]) == 2
    err = capsys.readouterr().err
    assert "in.jsonl, line 2: " in err and reason in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_the_deepest_value_allowed_is_read(tmp_path):
    inp = tmp_path / "in.jsonl"
    value = json.loads("[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1))  # the record itself is one level
    inp.write_text(json.dumps({"source": "a", "rewrite": "b", "style": "polite", "x": value}) + "\n",
                   encoding="utf-8")
    assert read_rows(inp)[0].extra["x"] == value
