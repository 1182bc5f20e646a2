"""`styleeval score --metric SPEC`: any declared LLM scorer by its metric spec (LogProb the default); the file is
byte for byte the one its own command writes, and a spec or a flag that does not apply is refused with the fix."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from styleeval.cli import main

ROWS = [("hey, wanna grab lunch?", "Would you care to join me for lunch?", "formal"),
        ("thx for the help", "Thank you for the help.", "formal"),
        ("That was a GREAT film!!", "The film was excellent.", "formal")]


@pytest.fixture
def rows_csv(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "rewrite", "style"])
        writer.writerows(ROWS)
    return path


def _run(*argv: str) -> int:
    return main([*argv, "-q"])


@pytest.mark.parametrize(("command", "spec"), [
    (["score"], "logprob_style:model={model}"),
    (["score"], "logprob:model={model}:variant=authors"),
    (["autorate"], "autorater:model={model}"),
    (["autorate", "--mode", "paper"], "autorater_meaning:model={model}:mode=paper"),
    (["autorate", "--mode", "paper", "--parser", "authors"], "autorater"),  # its own flags, beside --metric
])
def test_a_spec_writes_the_bytes_its_own_command_writes(tmp_path, rows_csv, tiny_model_dir, command, spec):
    own = [*command, str(rows_csv), "--model", str(tiny_model_dir), "--out", str(tmp_path / "own.jsonl")]
    if "variant=authors" in spec:
        own += ["--variant", "authors"]
    assert _run(*own) == 0
    flags = [] if "{model}" in spec else ["--model", str(tiny_model_dir), *command[1:]]
    assert _run("score", str(rows_csv), "--metric", spec.format(model=tiny_model_dir), *flags,
                "--out", str(tmp_path / "spec.jsonl")) == 0
    written = (tmp_path / "own.jsonl").read_bytes()
    assert written.count(b"\n") == len(ROWS)
    assert (tmp_path / "spec.jsonl").read_bytes() == written


def test_a_flag_of_the_chosen_scorer_joins_its_spec_and_a_file_resumes_across_the_two_commands(
        tmp_path, rows_csv, tiny_model_dir):
    out = tmp_path / "ratings.jsonl"
    assert _run("autorate", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(out), "--max-rows", "1") == 0
    assert _run("score", str(rows_csv), "--metric", "autorater", "--model", str(tiny_model_dir),
                "--out", str(out)) == 0
    assert _run("autorate", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(tmp_path / "whole.jsonl")) == 0
    assert out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()


@pytest.mark.parametrize(("argv", "message"), [
    (["--metric", "s_chrf"], "--metric s_chrf: score writes an LLM scorer's records (logprob, autorater); per-row "
                             "scores of any metric are in the rows.jsonl of `styleeval evaluate IN --metrics s_chrf"),
    (["--metric", "autorter"], "--metric autorter: not an LLM scorer (did you mean 'autorater'?)"),
    (["--metric", ":model=x"], "--metric needs a scorer's name before its options: logprob or autorater"),
    (["--metric", "lai:comet"], "--metric lai:comet: score writes an LLM scorer's records (logprob, autorater); "
                                "per-row scores of any metric are in the rows.jsonl of `styleeval evaluate"),
    (["--metric", "autorater:variant=authors"], "--metric autorater:variant=authors: unknown options ['variant']"),
    (["--metric", "autorater", "--variant", "authors"],
     "--variant is not an option of autorater (it is logprob's: --metric logprob); autorater takes: model, backend, "
     "mode, prompt"),
    (["--mode", "paper"], "--mode is not an option of logprob (it is autorater's: --metric autorater)"),
    (["--mod", "paper"], "unrecognized arguments: --mod paper"),  # no abbreviation: --mode is not --model
    (["--metric", "autorater:model=tiny-random", "--model", "other"],
     "model is given twice, as --model other and in --metric autorater:model=tiny-random: give it once"),
    (["--metric", "autorater_fluency"], "--metric autorater_fluency: autorater's records hold meaning, style_rating, "
                                        "not fluency (a metric only: per-row fluency is in the rows.jsonl of"),
    (["--metric", "autorater_meaning:as=judge"], "as= applies to a metric in `styleeval evaluate` / `metaeval`"),
    (["--metric", "autorater", "--prompt", "paper"],
     "--prompt: prompt must be one of paper-small, paper-70b, mukherjee, mukherjee-binary, got 'paper' "
     "(autorater's option)"),
    (["--metric", "logprob:prompt"], "option 'prompt' is not key=value"),
    (["--metric", "autorater_fluency:prompt=mukherjee"],
     "--metric autorater_fluency: autorater's records hold meaning, style_rating, not fluency (a metric only: per-row "
     "fluency is in the rows.jsonl of `styleeval evaluate IN --metrics autorater_fluency:... --out DIR`)"),
    (["--metric", "autorater", "--no-end-of-turn"], "--no-end-of-turn is not an option of autorater"),
    (["--metric", "autorater", "--on-overflow", "skip"], "max_retries, api_key, n_threads, n_ctx\n"),  # no extra_body
    (["--metric", "logprob:end_of_turn=yes", "--no-end-of-turn"],
     "end_of_turn is given twice, as --no-end-of-turn and in --metric logprob:end_of_turn=yes: give it once"),
])
def test_a_spec_or_flag_that_does_not_apply_is_refused_before_anything_is_written(tmp_path, rows_csv, capsys, argv,
                                                                                   message):
    out = tmp_path / "out.jsonl"
    try:
        status = main(["score", str(rows_csv), "--out", str(out), *argv])
    except SystemExit as err:  # argparse's own refusals
        status = err.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_out_of_the_other_scorer_names_the_command_that_resumes_it(tmp_path, rows_csv, tiny_model_dir, capsys):
    """`score --metric autorater` resumed with `score` alone (--metric forgotten): the error says whose records OUT
    holds and which commands write them (it said only 'missing content, style_strength')."""
    out = tmp_path / "ratings.jsonl"
    assert _run("score", str(rows_csv), "--metric", f"autorater:model={tiny_model_dir}", "--out", str(out),
                "--max-rows", "1") == 0
    before = out.read_bytes()
    assert main(["score", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(out)]) == 2
    assert ("not a styleeval score record (line 1): missing content, style_strength (its records are autorate "
            "records: those of styleeval autorate, or styleeval score --metric autorater)") in capsys.readouterr().err
    assert out.read_bytes() == before
    scores = tmp_path / "scores.jsonl"
    assert _run("score", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(scores), "--max-rows", "1") == 0
    assert main(["autorate", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(scores)]) == 2
    assert ("missing meaning, style_rating, parsed, reply, meaning_probs, style_probs (its records are score "
            "records: those of styleeval score, or styleeval score --metric logprob)") in capsys.readouterr().err
    ratings_csv = tmp_path / "ratings.csv"  # a CSV OUT: its header tells
    assert _run("autorate", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(ratings_csv),
                "--max-rows", "1") == 0
    assert main(["score", str(rows_csv), "--model", str(tiny_model_dir), "--out", str(ratings_csv)]) == 2
    assert ("(use another --out, or --overwrite; its records are autorate records: those of styleeval autorate, or "
            "styleeval score --metric autorater)") in capsys.readouterr().err


def test_the_help_says_what_the_other_scorer_writes_and_takes(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = capsys.readouterr().out
    assert "autorater's own options (with --metric autorater):" in text and "--mode {expected,paper}" in text
    assert "OUT gets autorater's records instead, as `styleeval autorate` writes them" in " ".join(text.split())
