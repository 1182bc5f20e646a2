"""The file runner's checks: the whole signature on every resume (complete files too), rows as data, long fields,
non-finite carried values, a full disk and unusable OUT paths -- each a clear error before or without losing work."""

from __future__ import annotations

import errno
import json
import shutil

import pytest

from styleeval.cli import main
from styleeval.files import read_scores, score_file


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


ROWS = [{"source": f"source number {i}.", "rewrite": f"rewrite number {i}!", "style": "polite"} for i in range(5)]


def test_a_complete_file_is_checked_against_the_weights(tmp_path, tiny_model_dir, tiny_tokenizer, capsys):
    """Weights replaced in place, or --model naming another folder: a complete OUT is not accepted as it is."""
    from styleeval.random_weights import build_model

    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    inp, out = _jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    assert main(["score", str(inp), "--out", str(out), "--model", str(model_dir), "-q"]) == 0
    assert main(["score", str(inp), "--out", str(out), "--model", str(model_dir), "-q"]) == 0  # same weights: fine
    other = tmp_path / "other"
    shutil.copytree(tiny_model_dir, other)
    assert main(["score", str(inp), "--out", str(out), "--model", str(other), "-q"]) == 2
    assert "was written with different settings: row 0 has model" in capsys.readouterr().err
    build_model("tiny", vocab_size=len(tiny_tokenizer), seed=7).save_pretrained(model_dir)  # replaced in place
    assert main(["score", str(inp), "--out", str(out), "--model", str(model_dir), "-q"]) == 2
    err = capsys.readouterr().err
    assert "row 0 has model" in err and "@local-" in err and "0 rows scored now" not in err


def test_fields_longer_than_the_csv_default_limit(tmp_path, tiny_model_dir):
    long_text = "word " * 30_000  # 150,000 characters: over csv's default field limit of 131,072
    inp = tmp_path / "in.csv"
    inp.write_text("source,rewrite,style,note\r\nshort,short,polite," + long_text + "\r\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu")
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu")  # resumes its own file
    assert read_scores(out)[0]["note"] == long_text


def test_a_non_finite_number_in_a_carried_column_is_written_as_null(tmp_path, tiny_model_dir):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"source": "a b", "rewrite": "a c", "style": "polite", "weight": NaN}\n'
                   '{"source": "d e", "rewrite": "d f", "style": "polite", "weight": 2.5}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu")
    assert [r["weight"] for r in read_scores(out)] == [None, 2.5]


def test_a_full_disk_says_so_and_keeps_the_written_rows(tmp_path, tiny_model_dir, monkeypatch):
    import styleeval.files.runner as runner

    inp, out = _jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    calls = []
    real_fsync = runner.os.fsync

    def fsync(fd):  # the second chunk does not fit on the disk
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(runner.os, "fsync", fsync)
    with pytest.raises(ValueError, match=r"cannot write \(the disk is full\); the 2 rows written before are safe"):
        score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu", chunk_size=2)
    monkeypatch.undo()
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu", chunk_size=2)  # the rerun completes
    assert sorted(r["row"] for r in read_scores(out)) == list(range(5))


def test_a_full_disk_on_overwrite_says_the_old_out_is_kept(tmp_path, tiny_model_dir, monkeypatch):
    """--overwrite writes a new file and renames it onto OUT once its first chunk is safe: a disk full before then
    leaves the old OUT as it was, and the error says so (before: "the 0 rows written before are safe")."""
    import styleeval.files.runner as runner

    inp, out = _jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu")
    before = out.read_bytes()

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner.os, "fsync", fsync)
    with pytest.raises(ValueError, match=r"cannot write \(the disk is full\); \S*out\.jsonl is kept unchanged") as err:
        score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu", chunk_size=2, overwrite=True)
    assert "rows written before are safe" not in str(err.value)
    assert out.read_bytes() == before and not list(tmp_path.glob("*.partial"))


def test_out_under_a_file_is_an_error_before_any_work(tmp_path, capsys):
    inp = _jsonl(tmp_path / "in.jsonl", ROWS)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    assert main(["score", str(inp), "--out", str(blocker / "out.jsonl"), "--model", "no/such-model", "-q"]) == 2
    assert "file.txt is a file, not a folder" in capsys.readouterr().err
    assert main(["metaeval", "--metrics", "s_bleu", "--datasets", "style_gap_testset", "--out",
                 str(blocker / "report"), "--no-plots", "--no-progress"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_missing_scores_file_is_one_line(tmp_path, capsys):
    assert main(["metaeval", "--scores", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "r"),
                 "--no-plots", "--no-progress"]) == 2
    assert "missing.csv: no such file" in capsys.readouterr().err


def test_no_lock_file_is_left_behind(tmp_path, tiny_model_dir):
    inp, out = _jsonl(tmp_path / "in.jsonl", ROWS), tmp_path / "out.jsonl"
    score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu")
    assert not (tmp_path / "out.jsonl.lock").exists()
    with pytest.raises(ValueError, match="different settings"):  # a run that fails while holding the lock
        score_file(inp, out, str(tiny_model_dir), progress=False, device="cpu", end_of_turn=False)
    assert not (tmp_path / "out.jsonl.lock").exists()
