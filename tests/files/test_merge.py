"""``styleeval merge`` (issue 38, item 4): shards are checked against the input they claim (not only its row count)
and against the options they record, the merged file never lands on an input or a shard (under any name), and
shards written as CSV merge into JSONL with the types a JSONL run writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.files import AUTORATER_RECORDS, LOGPROB_RECORDS, FileJob, run_file
from styleeval.files.shards import merge_shards


class _Lengths:
    signature = "lengths|v:1"


def _job() -> FileJob:
    return FileJob(LOGPROB_RECORDS, _Lengths, lambda _s, chunk: [
        {"content": -len(r.rewrite) / 7, "style_strength": len(r.source) % 5 / 3} for r in chunk])


def _input(path: Path, n: int = 9, styles: bool = True, changed: int | None = None) -> Path:
    rows = [{"source": f"source {i}", "rewrite": "CHANGED" if i == changed else f"rewrite {i}",
             **({"style": "formal"} if styles else {}), "id": f"q{i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _shards(inp: Path, folder: Path, count: int = 3, fmt: str = "jsonl", **options) -> list[Path]:
    return [run_file(_job(), inp, folder / f"s{k}.{fmt}", shard=f"{k}/{count}", progress=False,
                     **options).output for k in range(count)]


def _merge(capsys, shards: list[Path], out: Path, *extra: str) -> tuple[int, str]:
    code = main(["merge", *map(str, shards), "--out", str(out), *extra])
    return code, capsys.readouterr().err


def test_shards_of_another_input_of_the_same_length_are_refused(tmp_path, capsys):
    shards = _shards(_input(tmp_path / "a.jsonl"), tmp_path)
    other = _input(tmp_path / "b.jsonl", changed=4)  # same length, row 4 another rewrite
    code, err = _merge(capsys, shards, tmp_path / "m.jsonl", "--input", str(other))
    assert code == 2 and "row 4 has rewrite 'rewrite 4' in s1.jsonl but 'CHANGED' in the input" in err
    assert not (tmp_path / "m.jsonl").exists()
    assert _merge(capsys, shards, tmp_path / "m.jsonl", "--input", str(tmp_path / "a.jsonl"))[0] == 0


def test_shards_of_runs_with_another_style_are_refused(tmp_path, capsys):
    plain = _input(tmp_path / "plain.jsonl", styles=False)  # no style column: each run gave --style
    shards = [run_file(_job(), plain, tmp_path / f"s{k}.jsonl", shard=f"{k}/2", style=style, progress=False).output
              for k, style in enumerate(["formal", "polite"])]
    code, err = _merge(capsys, shards, tmp_path / "m.jsonl", "--input", str(plain))
    assert code == 2 and "s1.jsonl, row 1: style 'polite', but" in err and "different --style" in err
    code, err = _merge(capsys, shards, tmp_path / "m.jsonl", "--style", "formal")
    assert code == 2 and "s1.jsonl, row 1: style 'polite', not 'formal'" in err
    assert not (tmp_path / "m.jsonl").exists()
    # an input with a style column, scored with --style (it overrides the column): merge is told so
    styled = _input(tmp_path / "styled.jsonl")
    (tmp_path / "x").mkdir()
    shards = _shards(styled, tmp_path / "x", count=2, style="polite")
    code, err = _merge(capsys, shards, tmp_path / "m.jsonl", "--input", str(styled))
    assert code == 2 and "row 0 has style 'polite' in s0.jsonl but 'formal' in the input" in err
    assert _merge(capsys, shards, tmp_path / "m.jsonl", "--input", str(styled), "--style", "polite")[0] == 0


@pytest.mark.parametrize("link", [False, True], ids=["path", "symlink"])
def test_the_merged_file_is_never_an_input_or_a_shard(tmp_path, capsys, link):
    inp = tmp_path / "in.csv"
    inp.write_text("source,rewrite,style\n" + "".join(f"s{i},r{i},formal\n" for i in range(6)), encoding="utf-8")
    shards = _shards(inp, tmp_path, count=2)
    before = inp.read_bytes(), shards[0].read_bytes()
    for target in (inp, shards[0]):
        out = target
        if link:
            out = tmp_path / f"link-{target.name}"
            out.symlink_to(target.name)
        code, err = _merge(capsys, shards, out, "--input", str(inp))
        assert code == 2 and "the merged file must not be" in err, err
    assert (inp.read_bytes(), shards[0].read_bytes()) == before


def _ratings(_scorer, chunk):
    """Expected-mode records (distributions, no reply) on even rows, paper-mode ones (a reply, maybe empty or
    unparsed) on odd rows."""
    out = []
    for r in chunk:
        if r.row % 2 == 0:
            out.append({"meaning": 3.5, "style_rating": 2.25, "parsed": True, "reply": None,
                        "meaning_probs": [0.1, 0.2, 0.3, 0.2, 0.2], "style_probs": [0.5, 0.5, 0.0, 0.0, 0.0]})
        else:
            parsed = r.row % 3 != 0
            out.append({"meaning": 4.0 if parsed else float("nan"), "style_rating": 2.0 if parsed else float("nan"),
                        "parsed": parsed, "reply": "" if r.row == 3 else f'{{"meaning": 4}} [{r.row}]',
                        "meaning_probs": None, "style_probs": None})
    return out


class _Judge:
    signature = "judge|v:1"


def test_autorate_shards_written_as_csv_merge_into_the_jsonl_of_one_run(tmp_path):
    """``parsed`` comes back a boolean (``"false"`` is true in Python), probabilities lists or null (not ``""``), an
    expected-mode record's reply null and a paper-mode empty reply empty: the JSONL one unsharded run writes."""
    inp = _input(tmp_path / "in.jsonl", n=10)
    job = FileJob(AUTORATER_RECORDS, _Judge, _ratings)
    whole = run_file(job, inp, tmp_path / "whole.jsonl", progress=False).output
    shards = [run_file(FileJob(AUTORATER_RECORDS, _Judge, _ratings), inp, tmp_path / f"s{k}.csv", shard=f"{k}/2",
                       progress=False).output for k in range(2)]
    merged = merge_shards(shards, tmp_path / "merged.jsonl").output
    records = [json.loads(line) for line in merged.read_text(encoding="utf-8").splitlines()]
    assert records == [json.loads(line) for line in whole.read_text(encoding="utf-8").splitlines()]
    assert records[3]["parsed"] is False and records[3]["reply"] == "" and records[3]["meaning_probs"] is None
    assert records[0]["reply"] is None and records[0]["style_probs"] == [0.5, 0.5, 0.0, 0.0, 0.0]
