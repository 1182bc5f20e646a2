"""Carried columns (the input's columns beyond source, rewrite and style) are part of the input's identity (issue 44,
items 5 and 7): a resume or ``merge --input`` whose input carries other values, or other columns, than the finished
records is refused naming the row and the column; CSV shards merged into JSONL with ``--input`` carry the input's
types (numbers, booleans, nulls, lists), as one unsharded JSONL run writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.files import LOGPROB_RECORDS, FileJob, read_scores, run_file
from styleeval.files.resume import index_path


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(system: str = "A", n: int = 6, **more) -> list[dict]:
    return [{"source": f"Send me report {i}.", "rewrite": f"Could you send report {i}?", "style": "polite",
             "system": system, **more} for i in range(n)]


def _score(capsys, model: Path, inp: Path, out: Path, *extra: str) -> tuple[int, str]:
    code = main(["score", str(inp), "--out", str(out), "--model", str(model), "--device", "cpu", "-q", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_resume_whose_input_carries_other_values_is_refused(tmp_path, tiny_model_dir, capsys, suffix):
    """Every ``system`` changed from A to B between the runs: before, rows 0-2 kept A and rows 3-5 got B, exit 0."""
    inp, out = _jsonl(tmp_path / "in.jsonl", _rows("A")), tmp_path / f"out.{suffix}"
    assert _score(capsys, tiny_model_dir, inp, out, "--max-rows", "3")[0] == 0
    before = out.read_bytes()
    _jsonl(inp, _rows("B"))
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2, err
    assert f"row 0 has column 'system' 'A' in out.{suffix} but 'B' in the input" in err, err
    assert out.read_bytes() == before
    _jsonl(inp, _rows("A"))  # the input as it was: the resume goes on
    assert _score(capsys, tiny_model_dir, inp, out)[0] == 0
    assert [r["system"] for r in read_scores(out)] == ["A"] * 6


@pytest.mark.parametrize("change", ["renamed", "added"])
def test_a_resume_whose_input_has_other_columns_is_refused(tmp_path, tiny_model_dir, capsys, change):
    """A JSONL input that renames or adds a carried column between runs: before, one file held records with
    different fields (rows 0-2 ``system``, rows 3-5 ``team``)."""
    inp, out = _jsonl(tmp_path / "in.jsonl", _rows("A")), tmp_path / "out.jsonl"
    assert _score(capsys, tiny_model_dir, inp, out, "--max-rows", "3")[0] == 0
    rows = _rows("A", team=None) if change == "added" else [
        {("team" if k == "system" else k): v for k, v in r.items()} for r in _rows("A")]
    _jsonl(inp, rows)
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2 and "was written for a different input: row 0 carries the column(s) ['system'] in out.jsonl " \
        f"but the input's are {['system', 'team'] if change == 'added' else ['team']}" in err, err
    assert {tuple(r) for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())} == \
        {("row", "system", "source", "rewrite", "style", "content", "style_strength", "signature")}


def test_a_value_changed_in_type_only_is_refused(tmp_path, tiny_model_dir, capsys):
    """``qid: 0`` became ``"0"``: a JSONL record would differ from the one a single run writes."""
    inp, out = _jsonl(tmp_path / "in.jsonl", _rows("A", qid=0)), tmp_path / "out.jsonl"
    assert _score(capsys, tiny_model_dir, inp, out, "--max-rows", "3")[0] == 0
    _jsonl(inp, _rows("A", qid="0"))
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2 and "row 0 has column 'qid' 0 in out.jsonl but '0' in the input" in err, err


def test_the_resume_index_agrees_with_the_full_check(tmp_path, tiny_model_dir, capsys):
    """A resume from the index (the finished rows' input bytes unchanged) refuses a column that the rows after them
    add, naming OUT's columns, as the full check does; a changed value in a finished row invalidates the index."""
    inp, out = _jsonl(tmp_path / "in.jsonl", _rows("A")), tmp_path / "out.jsonl"
    assert _score(capsys, tiny_model_dir, inp, out, "--max-rows", "3")[0] == 0
    assert index_path(out).exists()
    rows = _rows("A")
    rows[4]["team"] = "x"  # after the index's row: the finished rows' bytes are unchanged
    _jsonl(inp, rows)
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2 and "column(s) 'team'" in err and "out.jsonl" in err and "['system']" in err, err
    index_path(out).unlink()  # the full check says the same of the file
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2 and "['system']" in err and "['system', 'team']" in err, err
    assert _score(capsys, tiny_model_dir, _jsonl(inp, _rows("A")), out)[0] == 0  # writes the index again
    assert index_path(out).exists()
    _jsonl(inp, _rows("B"))
    code, err = _score(capsys, tiny_model_dir, inp, out)
    assert code == 2 and "row 0 has column 'system' 'A'" in err, err


# -- merge --input ----------------------------------------------------------------------------------------------


class _Lengths:
    signature = "lengths|v:1"


def _job() -> FileJob:
    return FileJob(LOGPROB_RECORDS, _Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3} for r in chunk])


TYPED = [{"source": f"source {i}", "rewrite": f"rewrite {i}", "style": "formal", "qid": i, "gold": i % 2 == 0,
          "note": None if i % 3 else f"note {i}", "tags": ["a", i], "weight": i / 4, "meta": {"k": [i, None]}}
         for i in range(7)]


def _shards(inp: Path, folder: Path, fmt: str, count: int = 2) -> list[Path]:
    return [run_file(_job(), inp, folder / f"s{k}.{fmt}", shard=f"{k}/{count}", progress=False).output
            for k in range(count)]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_merge_input_with_other_carried_values_is_refused(tmp_path, capsys, fmt):
    shards = _shards(_jsonl(tmp_path / "a.jsonl", TYPED), tmp_path, fmt)
    changed = [dict(r) for r in TYPED]
    changed[3]["gold"] = True
    other = _jsonl(tmp_path / "b.jsonl", changed)
    code = main(["merge", *map(str, shards), "--out", str(tmp_path / "m.jsonl"), "--input", str(other)])
    err = capsys.readouterr().err
    shown = "False" if fmt == "jsonl" else "'false'"  # as the shard holds it
    assert code == 2 and f"row 3 has column 'gold' {shown} in s1.{fmt} but True in the input" in err, err
    assert not (tmp_path / "m.jsonl").exists()
    renamed = _jsonl(tmp_path / "c.jsonl", [{("label" if k == "note" else k): v for k, v in r.items()}
                                            for r in TYPED])
    code = main(["merge", *map(str, shards), "--out", str(tmp_path / "m.jsonl"), "--input", str(renamed)])
    err = capsys.readouterr().err
    assert code == 2 and f"row 0 carries the column(s) {list(TYPED[0])[3:]} in s0.{fmt} but the input's are" in err \
        and "'label'" in err, err


def test_csv_shards_merged_into_jsonl_carry_the_inputs_types(tmp_path):
    """Before: ``qid: 0`` came back ``"0"``, ``true`` ``"true"``, ``null`` ``""``, lists as strings."""
    from styleeval.files.shards import merge_shards

    inp = _jsonl(tmp_path / "in.jsonl", TYPED)
    whole = run_file(_job(), inp, tmp_path / "whole.jsonl", progress=False).output
    merged = merge_shards(_shards(inp, tmp_path, "csv"), tmp_path / "merged.jsonl", input=inp).output
    assert merged.read_bytes() == whole.read_bytes()
    first = json.loads(merged.read_text(encoding="utf-8").splitlines()[1])
    assert (first["qid"], first["gold"], first["note"], first["tags"], first["meta"]) == \
        (1, False, None, ["a", 1], {"k": [1, None]})


def test_csv_shards_merged_into_jsonl_without_input_carry_text(tmp_path):
    """Without ``--input`` a CSV cell does not say its type: carried columns come back as the CSV's text (as the
    docstring says), the known fields with their types."""
    from styleeval.files.shards import merge_shards

    inp = _jsonl(tmp_path / "in.jsonl", TYPED)
    merged = merge_shards(_shards(inp, tmp_path, "csv"), tmp_path / "merged.jsonl").output
    first = json.loads(merged.read_text(encoding="utf-8").splitlines()[1])
    assert (first["row"], first["qid"], first["gold"], first["note"], first["tags"]) == (1, "1", "false", "", '["a", 1]')
    assert "carried columns" in merge_shards.__doc__ and "as text" in merge_shards.__doc__


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_non_finite_numbers_inside_a_carried_value_are_written_as_null(tmp_path, tiny_model_dir, capsys, suffix):
    """``NaN`` inside a carried list or object (JSONL input): before, a ValueError traceback when the chunk was
    written ('Out of range float values are not JSON compliant')."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"source": "a b.", "rewrite": "A b.", "style": "polite", "x": [NaN, {"y": Infinity}, 1.5]}\n',
                   encoding="utf-8")
    out = tmp_path / f"out.{suffix}"
    assert _score(capsys, tiny_model_dir, inp, out)[0] == 0
    written = [None, {"y": None}, 1.5]  # a CSV cell holds the value's JSON (carried columns read back as text)
    assert read_scores(out)[0]["x"] == (written if suffix == "jsonl" else json.dumps(written))
    assert _score(capsys, tiny_model_dir, inp, out)[0] == 0  # and it resumes: the same input, as written
