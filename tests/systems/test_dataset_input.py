"""`styleeval evaluate --dataset NAME` (a rated corpus as the systems input), `--limit N` (the first N sources) and
the texts in rows.jsonl (issue 47, item 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import sacrebleu

from styleeval.cli import main
from styleeval.corpora import SPECS, load_corpus, systems_corpora
from styleeval.errors import UserError
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.dataset import dataset_rows

DOC = (Path(__file__).resolve().parents[2] / "docs" / "evaluate.md").read_text(encoding="utf-8")  # its worked example
FAST = {"settings": TestSettings(trials=200, n_boot=50)}


def _hand_made_rows(data_dir) -> list[dict]:
    """Lai et al.'s rows as the README built them by hand before --dataset (and the fluency ratings beside)."""
    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "reference": r["reference"], "human_content": r["content_mean"],
             "human_style": r["style_mean"], "human_fluency": r["fluency_mean"]}
            for r in load_corpus("lai_formality", data_dir=data_dir)]


def _csv(rows: list[dict], path: Path) -> str:
    """The hand-made CSV: references as a JSON list in a cell, empty for the human references."""
    frame = pd.DataFrame([{**r, "reference": json.dumps(r["reference"]) if r["reference"] else ""} for r in rows])
    frame.to_csv(path, index=False)
    return str(path)


def test_the_corpora_with_systems_are_declared_and_have_several_systems_per_source(data_dir):
    assert systems_corpora() == ("lai_formality", "mir_yelp", "ziegenbein_appropriateness")
    for name in ("lai_formality", "mir_yelp"):  # the ratings of ziegenbein_appropriateness are not in the mirror
        rows = pd.DataFrame(dataset_rows(name, data_dir))
        per_source = rows.groupby("source_id")["system"].nunique()
        assert per_source.min() == per_source.max() == rows["system"].nunique() > 1, name
    lai = dataset_rows("lai_formality", data_dir)
    assert len(lai) == 720 and lai[0]["_where"] == "lai_formality, row 0 (lai_formality/BART/0)"
    # the human references are a system, never their own reference; every other row has the rating file's reference
    assert {r["references"] is None for r in lai if r["system"] == "reference"} == {True}
    assert [r["references"] for r in lai if r["system"] == "BART"][0] == ["It all depends on when you are ready."]
    assert not any(SPECS[n].compares_systems for n in ("asset", "style_gap_testset", "stel"))


def test_dataset_gives_the_numbers_of_the_hand_made_csv_side_by_side(data_dir, tmp_path, capsys):
    """The README's Lai example as it was (a CSV built from load_corpus by hand) and `--dataset lai_formality`: the
    same systems.csv, pairs.csv and agreement, number for number; the README's table is the report's."""
    table = _csv(_hand_made_rows(data_dir), tmp_path / "lai.csv")
    common = ["--metrics", "s_bleu,s_chrf,r_chrf", "--sort-by", "human_content", "--no-plots", "-q"]
    assert main(["evaluate", table, "--out", str(tmp_path / "csv"), *common]) == 0
    assert main(["evaluate", "--dataset", "lai_formality", "--data-dir", str(data_dir),
                 "--out", str(tmp_path / "dataset"), *common]) == 0
    capsys.readouterr()
    for name in ("systems.csv", "pairs.csv"):
        by_hand, by_name = (pd.read_csv(tmp_path / folder / name) for folder in ("csv", "dataset"))
        pd.testing.assert_frame_equal(by_hand, by_name)
    reports = [json.loads((tmp_path / folder / "report.json").read_text(encoding="utf-8"))
               for folder in ("csv", "dataset")]
    assert reports[0]["agreement"] == reports[1]["agreement"] and reports[1]["subset"] == ""
    systems = pd.read_csv(tmp_path / "dataset" / "systems.csv").set_index(["metric", "system"])
    assert round(systems.loc[("s_bleu", "HIGH"), "score"], 2) == 60.24 and systems.loc[("r_chrf", "reference"), "n"] == 0
    # docs/evaluate.md's worked example (the README's until issue 60): report.md's systems table (less its n row)
    report_md = (tmp_path / "dataset" / "report.md").read_text(encoding="utf-8")
    ours = [line for line in report_md.split("## Significant")[0].splitlines() if line.startswith("| ")][:-1]
    worked = DOC[DOC.index("## Worked example: Lai"):]
    readme_table = re.findall(r"^\| .*\|$", worked[:worked.index("S-BLEU, S-chrF and R-chrF are")], re.M)
    assert readme_table == ours and len(ours) == 11  # header, rule, 9 systems, (copy source)


def test_the_python_api_takes_a_dataset_and_refuses_two_inputs_or_none(data_dir):
    by_name = evaluate_systems(dataset="lai_formality", metrics=["s_chrf"], data_dir=data_dir, **FAST)
    by_hand = evaluate_systems(_hand_made_rows(data_dir), ["s_chrf"], **FAST)
    pd.testing.assert_frame_equal(by_name.systems, by_hand.systems)
    with pytest.raises(UserError, match=r"give rows or dataset='lai_formality', not both"):
        evaluate_systems(_hand_made_rows(data_dir), ["s_chrf"], dataset="lai_formality")
    with pytest.raises(UserError, match=r"give the rows to evaluate, or dataset=NAME"):
        evaluate_systems(metrics=["s_chrf"])
    with pytest.raises(UserError, match=r"style='formal' with dataset='lai_formality': the corpus gives each row"):
        evaluate_systems(dataset="lai_formality", metrics=["s_chrf"], style="formal")


def test_a_corpus_without_systems_or_an_unknown_name_is_one_line_naming_those_that_work(tmp_path, capsys):
    works = "choose from lai_formality, mir_yelp, ziegenbein_appropriateness"
    for argv, message in [
        (["--dataset", "asset"], f"corpus 'asset' has no systems to compare (it is not several systems' rewrites "
                                 f"of each source); {works}, or give a file of system outputs"),
        (["--dataset", "lai_formalty"],
         "unknown corpus 'lai_formalty'; did you mean 'lai_formality'? (styleeval list corpora)"),
        (["x.csv", "--dataset", "mir_yelp"], "give IN files or --dataset mir_yelp, not both (x.csv)"),
        ([], "give the files of system outputs (IN ...) or --dataset NAME (a rated corpus's systems)"),
        (["--dataset", "mir_yelp", "--style", "positive"],
         "--style with --dataset: the corpus names each row's system and target style; leave --style out"),
        (["--dataset", "mir_yelp", "--system-from-filename"], "--system-from-filename with --dataset: the corpus"),
    ]:
        assert main(["evaluate", *argv, "--metrics", "s_bleu", "--out", str(tmp_path / "r"), "-q"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith(f"styleeval evaluate: error: {message}"), err
    assert not (tmp_path / "r").exists()


def test_limit_keeps_the_first_sources_and_says_so(data_dir, tmp_path, capsys):
    """--limit 5 on Lai: the 9 systems' rows of sources 0-4 (45 rows), each system scored on n = 5 (sacrebleu's
    corpus chrF of those 5 rewrites, by hand), said on stderr, in report.md and report.json."""
    out = tmp_path / "limited"
    assert main(["evaluate", "--dataset", "lai_formality", "--data-dir", str(data_dir), "--metrics", "s_chrf",
                 "--limit", "5", "--out", str(out), "--no-plots", "-q"]) == 0
    err = capsys.readouterr().err
    assert "9 systems, 45 rows: the first 5 of 80 sources (--limit 5); 1 metric" in err
    assert "note: evaluated on the first 5 of 80 sources (--limit 5): every system's rows of them, 45 rows" in err
    table = pd.read_csv(out / "systems.csv")
    assert (table["n"] == 5).all() and len(table) == 9 * 4 + 1  # s_chrf and the 3 human ratings; (copy source)
    systems = table[table["metric"] == "s_chrf"].set_index("system")
    high = [r for r in dataset_rows("lai_formality", data_dir) if r["system"] == "HIGH"][:5]
    assert systems.loc["HIGH", "score"] == sacrebleu.corpus_chrf([r["rewrite"] for r in high],
                                                                 [[r["source"] for r in high]]).score
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 45 + 5 and {r["source_id"] for r in rows} == {"0", "1", "2", "3", "4"}  # + the copies
    assert "9 systems, 45 rows: the first 5 of 80 sources (--limit 5). Each cell" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["subset"] == "the first 5 of 80 sources (--limit 5)"


def test_limit_in_python_counts_sources_in_the_order_the_rows_first_give_them():
    rows = [{"system": s, "source": src, "rewrite": src.upper(), "style": "formal"}
            for s in ("A", "B") for src in ("zz top", "aa bottom", "mm middle")]
    report = evaluate_systems(rows, ["s_chrf:agg=mean"], limit=2, **FAST)
    assert sorted(set(report.scores["source_id"])) == ["aa bottom", "zz top"]  # not the first two in sorted order
    given = report.scores[report.scores["system"] != "(copy source)"]  # the copy baseline's rows come last
    assert given["row"].tolist() == [0, 1, 3, 4] and report.subset == "the first 2 of 3 sources (limit=2)"
    assert evaluate_systems(rows, ["s_chrf:agg=mean"], limit=3, **FAST).subset == ""  # all of them: nothing said
    for bad in (0, -1, True, 2.5):
        with pytest.raises(UserError, match=r"limit must be a positive integer \(the number of sources"):
            evaluate_systems(rows, ["s_chrf:agg=mean"], limit=bad)


def test_rows_jsonl_has_the_texts_beside_the_scores(data_dir, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["evaluate", "--dataset", "lai_formality", "--data-dir", str(data_dir), "--metrics", "s_bleu,r_chrf",
                 "--limit", "2", "--out", str(out), "--no-plots", "-q"]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    corpus = load_corpus("lai_formality", data_dir=data_dir)
    first = corpus[0]
    assert list(rows[0])[:7] == ["row", "system", "source_id", "source", "rewrite", "style", "references"]
    assert rows[0]["source"] == first["source"] == "it all depends on when ur ready."
    assert rows[0]["rewrite"] == first["rewrite"] == "It depends on when you are ready."
    assert rows[0]["style"] == "formal" and rows[0]["references"] == ["It all depends on when you are ready."]
    assert rows[0]["s_bleu"] == pytest.approx(sacrebleu.sentence_bleu(first["rewrite"], [first["source"]]).score)
    assert rows[0]["human_content"] == 69.85 and set(rows[0]["signatures"]) == {"s_bleu", "r_chrf"}
    reference = next(r for r in rows if r["system"] == "reference")  # no reference of its own: no R-chrF score
    assert reference["references"] is None and reference["r_chrf"] is None


def test_sharded_runs_with_limit_put_together_what_one_run_with_limit_reports(data_dir, tmp_path, tiny_model_dir,
                                                                              capsys):
    metrics = f"logprob_content:model={tiny_model_dir}:device=cpu,s_chrf"
    args = lambda out: ["evaluate", "--dataset", "lai_formality", "--data-dir", str(data_dir), "--limit", "3",  # noqa: E731
                        "--metrics", metrics, "--out", str(tmp_path / out), "--no-plots", "-q", "--format", "json"]
    assert main(args("whole")) == 0
    whole = json.loads(capsys.readouterr().out)
    for k in (0, 1):
        assert main([*args("sharded"), "--shard", f"{k}/2"]) == 0
    assert "shard 1/2: rows scored: logprob_content 10 " in capsys.readouterr().err  # source 1: 9 systems, copy
    assert main(args("sharded")) == 0
    sharded = json.loads(capsys.readouterr().out)
    assert sharded["systems"] == whole["systems"] and {r["n"] for r in whole["systems"]} == {3}


def test_a_reader_that_goes_away_ends_evaluate_quietly(tmp_path, data_dir):
    """Issue 47 review: `styleeval evaluate ... | head -2` ended in a BrokenPipeError traceback (exit 1). Run as
    `python -m styleeval` (the review found no __main__), its standard output a pipe closed before it prints."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the table is printed
    try:
        proc = subprocess.run([sys.executable, "-m", "styleeval", "evaluate", "--dataset", "mir_yelp", "--metrics",
                               "s_chrf", "--limit", "3", "--out", str(tmp_path / "out"), "--data-dir", str(data_dir),
                               "--no-plots", "-q"], stdout=write, stderr=subprocess.PIPE, text=True, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")})
    finally:
        os.close(write)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert (tmp_path / "out" / "report.md").is_file()  # the report was written before the table was printed


def test_one_rule_chooses_the_input_phrased_for_each_interface():
    """The command and the Python API refuse the same choices (issue 48: one check_input_choice), each in its words."""
    from styleeval.errors import advising
    from styleeval.systems.dataset import check_input_choice

    cases = [((False, None), "give the files of system outputs (IN ...) or --dataset NAME (a rated corpus's systems)",
              "give the rows to evaluate, or dataset=NAME for a rated corpus's systems"),
             ((True, "mir_yelp"), "give IN files or --dataset mir_yelp, not both (a.csv b.csv)",
              "give rows or dataset='mir_yelp', not both"),
             ((False, "mir_yelp", "formal"),
              "--style with --dataset: the corpus names each row's system and target style; leave --style out",
              "style='formal' with dataset='mir_yelp': the corpus gives each row its target style; leave style out")]
    for arguments, cli, python in cases:
        with pytest.raises(UserError) as caught, advising("cli"):
            check_input_choice(*arguments, files=["a.csv", "b.csv"])
        assert str(caught.value) == cli
        with pytest.raises(UserError) as caught:
            check_input_choice(*arguments)
        assert str(caught.value) == python
    check_input_choice(True, None, "formal")  # rows with one style for all: fine
    check_input_choice(False, "mir_yelp")
