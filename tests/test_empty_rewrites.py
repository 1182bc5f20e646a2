"""Missing and empty rewrites, one rule on every interface (issue 47, item 3): a missing rewrite (None, JSON's null,
a NaN) is refused naming the row and the fix; an empty one ("", an empty CSV cell) is scored as given and warned
about with its count and rows; the text "NaN" is text."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from styleeval import LogProb
from styleeval.cli import main
from styleeval.metrics import get_metric
from styleeval.systems import evaluate_systems
from styleeval.validation import EmptyRewritesWarning

CSV = ("system,source,rewrite,style\n"
       "A,NaN values here,,formal\n"             # an empty cell: an empty rewrite
       "A,thx a lot,Thank you very much.,formal\n"
       "B,NaN values here,NaN,formal\n"           # the text NaN
       "B,thx a lot,thx a lot,formal\n")


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [w.message for w in caught if isinstance(w.message, EmptyRewritesWarning)]


def test_the_cli_scores_an_empty_cell_with_a_warning_and_the_text_nan_as_text(tmp_path, capsys):
    path = tmp_path / "in.csv"
    path.write_text(CSV, encoding="utf-8")
    assert main(["evaluate", str(path), "--metrics", "s_chrf:agg=mean", "--out", str(tmp_path / "out"), "-q"]) == 0
    err = capsys.readouterr().err
    assert f"styleeval evaluate: warning: 1 of 4 rewrites is empty ({path}, line 2): scored as given" in err
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert any(n.startswith("1 of 4 rewrites is empty") for n in report["notes"])  # in the report's notes too
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert [r["s_chrf"] for r in rows][0] == 0.0  # the empty rewrite: scored, chrF 0
    # "NaN" scored as the text NaN, not as a missing value
    want = sacrebleu.sentence_chrf("NaN", ["NaN values here"]).score
    assert rows[2]["s_chrf"] == pytest.approx(want) and round(want, 2) == 19.55


def test_pandas_nan_is_refused_with_the_fix_and_keep_default_na_reads_as_the_cli(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text(CSV, encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 0: 'rewrite' is nan \(missing\); give every row its text .*"
                                         r"keep_default_na=False"):
        evaluate_systems(pd.read_csv(path), ["s_chrf:agg=mean"])
    report, told = _caught(lambda: evaluate_systems(pd.read_csv(path, keep_default_na=False), ["s_chrf:agg=mean"]))
    cli = tmp_path / "out"
    assert main(["evaluate", str(path), "--metrics", "s_chrf:agg=mean", "--out", str(cli), "-q"]) == 0
    rows = [json.loads(line)["s_chrf"] for line in (cli / "rows.jsonl").read_text().splitlines()]
    assert report.scores["s_chrf"].tolist() == rows
    assert [w.rows for w in told] == [[0]] and str(told[0]).startswith("1 of 4 rewrites is empty (row 0)")


def test_jsonl_null_is_refused_and_an_empty_string_warned(tmp_path, capsys):
    records = [{"system": s, "source": src, "rewrite": rw, "style": "formal"}
               for s, src, rw in [("A", "a", None), ("A", "b", "B."), ("B", "a", "A."), ("B", "b", "b")]]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["evaluate", str(path), "--metrics", "s_chrf", "--out", str(tmp_path / "out"), "-q"]) == 2
    assert (f"styleeval evaluate: error: {path}, line 1: 'rewrite' is None (missing); give every row its text (a "
            'rewrite that is really empty is "": scored, with a warning)') in capsys.readouterr().err
    records[0]["rewrite"] = ""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["evaluate", str(path), "--metrics", "s_chrf", "--out", str(tmp_path / "out"), "-q"]) == 0
    assert f"warning: 1 of 4 rewrites is empty ({path}, line 1)" in capsys.readouterr().err


def test_python_none_nan_refused_empty_warned_once(tiny_model, tiny_tokenizer):
    lp = LogProb(tiny_model, tokenizer=tiny_tokenizer, device="cpu", progress=False)
    sources = ["Give me the report.", "Send it now.", "Thanks."]
    with pytest.raises(ValueError, match=r"rewrites\[1\] is None \(missing\)"):
        lp.score(sources, ["a", None, "c"], "formal")
    with pytest.raises(ValueError, match=r"rewrites\[2\] is nan \(missing\).*keep_default_na=False"):
        lp.score(sources, pd.Series(["a", "b", np.nan]), "formal")
    scores, told = _caught(lambda: lp.score(sources, ["Please.", "", "Thank you."], "formal"))
    assert [w.rows for w in told] == [[1]] and str(told[0]).startswith("1 of 3 rewrites is empty (row 1)")
    assert math.isfinite(scores[1]["content"])  # scored: the end-of-turn token alone
    # a metric says it once, not again from the scorer inside it
    values, told = _caught(lambda: get_metric("logprob_content:model=tiny-random").compute(
        sources, ["", "", "Thank you."], styles="formal"))
    assert [w.rows for w in told] == [[0, 1]] and len(values) == 3
    values, told = _caught(lambda: get_metric("s_chrf").compute(sources, ["", "Send it now.", ""]))
    assert [w.rows for w in told] == [[0, 2]] and values[0] == 0.0 and values[1] == 100.0


def test_score_files_follow_the_same_rule(tmp_path, tiny_model_dir, capsys):
    rows = [{"source": "Give me the report.", "rewrite": rw, "style": "formal"} for rw in ["Please.", "", "NaN"]]
    inp = tmp_path / "in.csv"
    inp.write_text("source,rewrite,style\n" + "".join(f"{r['source']},{r['rewrite']},formal\n" for r in rows))
    out = tmp_path / "out.jsonl"
    assert main(["score", str(inp), "--model", str(tiny_model_dir), "--out", str(out), "--device", "cpu"]) == 0
    assert "styleeval score: warning: 1 of 3 rewrites is empty (row 1)" in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rewrite"] for r in records] == ["Please.", "", "NaN"] and math.isfinite(records[1]["content"])
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("".join(json.dumps({**r, "rewrite": None if k == 1 else r["rewrite"]}) + "\n"
                             for k, r in enumerate(rows)))
    assert main(["score", str(jsonl), "--model", str(tiny_model_dir), "--out", str(tmp_path / "o2.jsonl"),
                 "--device", "cpu"]) == 2
    assert f"{jsonl}, row 1 (line 2): 'rewrite' is None (missing)" in capsys.readouterr().err
