"""The harness on hand-made corpora: cache resume (counted metric calls), skips, negation of error rates."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from styleeval.metaeval import run_metaeval
from styleeval.metaeval.data import RatedData
from styleeval.metrics import Metric
from styleeval.scoring import ScoresCache, score_dataset

HUMAN = [1.0, 2.0, 4.0, 3.0, 5.0, 2.0]


def _rows(name, n=6, with_refs=False):
    return [
        {"id": f"{name}/{i}", "dataset": name, "task": "formality", "target_style": "formal",
         "source_id": str(i % 3), "source": f"src {i}", "rewrite": f"rw {i} " * (i + 1),
         "reference": [f"ref {i}"] if with_refs and i % 2 == 0 else None, "system": f"sys{i // 3}",
         "is_reference_rewrite": False, "content_mean": HUMAN[i], "style_mean": None, "fluency_mean": None}
        for i in range(n)
    ]


CORPORA = {"toy_a": _rows("toy_a"), "toy_b": _rows("toy_b", with_refs=True),
           "unrated": [dict(r, content_mean=None) for r in _rows("unrated")]}


def loader(name):
    if name not in CORPORA:
        raise FileNotFoundError(f"{name}: ratings file is not available")
    return CORPORA[name]


class CountingLength(Metric):
    """Rewrite length in characters; counts how often it is computed; can fail on purpose."""

    name = "len"
    inputs = "source"

    def __init__(self, interrupt_after=None, version="1"):
        self.calls = []
        self.interrupt_after = interrupt_after
        self.version = version

    @property
    def signature(self):
        return f"len|version:{self.version}"

    def _score(self, sources, rewrites, references, styles):
        if self.interrupt_after is not None and len(self.calls) >= self.interrupt_after:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C during this corpus
        self.calls.append(len(rewrites))
        return [float(len(r)) for r in rewrites]


class LowerIsBetter(CountingLength):
    name = "neg_len"
    higher_is_better = False

    @property
    def signature(self):
        return "neg_len|version:1"


def test_cache_resumes_and_recomputes_nothing(tmp_path):
    cache = ScoresCache(tmp_path / "cache")
    first = CountingLength(interrupt_after=1)
    with pytest.raises(KeyboardInterrupt):  # interrupted while scoring the second corpus
        run_metaeval(["toy_a", "toy_b"], [first], loader=loader, cache=cache, n_boot=0)
    assert first.calls == [6]
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and not list((tmp_path / "cache").rglob(".tmp-*"))
    assert json.loads(files[0].read_text())["dataset"] == "toy_a"

    resumed = CountingLength()
    result = run_metaeval(["toy_a", "toy_b"], [resumed], loader=loader, cache=cache, n_boot=0)
    assert resumed.calls == [6]  # only toy_b was scored
    again = CountingLength()
    result2 = run_metaeval(["toy_a", "toy_b"], [again], loader=loader, cache=cache, n_boot=0)
    assert again.calls == []  # everything from the cache
    assert result2.correlations.equals(result.correlations)
    changed = CountingLength(version="2")  # new signature: cache miss
    run_metaeval(["toy_a"], [changed], loader=loader, cache=cache, n_boot=0)
    assert changed.calls == [6]


def test_harness_correlations_skips_and_negation(tmp_path):
    notes = []
    with pytest.raises(ValueError, match="dataset missing cannot be used: .*ratings file.*--allow-missing"):
        run_metaeval(["toy_a", "missing"], [CountingLength()], loader=loader, n_boot=0)
    result = run_metaeval(["toy_a", "missing", "unrated", "toy_b", "toy_a"], [CountingLength(), LowerIsBetter(),
                          "r_bleu"], loader=loader, cache=None, n_boot=0, log=notes.append, allow_missing=True)
    lengths = [len(f"rw {i} " * (i + 1)) for i in range(6)]
    expected = stats.spearmanr(lengths, HUMAN).statistic
    corr = result.correlations.set_index(["dataset", "subset", "metric"])
    assert corr.loc[("toy_a", "all", "len"), "spearman"] == pytest.approx(expected)
    assert corr.loc[("toy_a", "all", "neg_len"), "spearman"] == pytest.approx(-expected)  # negated
    assert result.negated == ["neg_len"]
    assert ("toy_a", "all", "r_bleu") not in corr.index  # no references: the paper's "-"
    assert corr.loc[("toy_b", "all", "r_bleu"), "n"] == 3  # only rows with a reference
    assert any("skipped dataset missing:" in n and "ratings file" in n for n in notes)
    assert ("missing", "len", "dataset unavailable") in result.missing
    assert result.correlations.groupby(["dataset", "subset", "metric"]).size().max() == 1  # toy_a once
    assert set(result.correlations["signature"]) == {"len|version:1", "neg_len|version:1", result.signatures["r_bleu"]}
    assert any("skipped dataset unrated: it has no content ratings" in n for n in notes)
    assert not result.correlations[["spearman", "pearson", "kendall"]].isna().any().any()


class Constant(CountingLength):
    name = "const"

    @property
    def signature(self):
        return "const|version:1"

    def _score(self, sources, rewrites, references, styles):
        return [1.0] * len(rewrites)


class SometimesNaN(Constant):
    name = "nanny"

    @property
    def signature(self):
        return "nanny|version:1"

    def _score(self, sources, rewrites, references, styles):
        return [float("nan") if i == 2 else float(i) for i in range(len(rewrites))]


def test_constant_and_nan_scores_are_notes_not_nan_rows():
    result = run_metaeval(["toy_a"], [Constant(), SometimesNaN(), CountingLength()], loader=loader, n_boot=0)
    assert set(result.correlations.metric) == {"len"}
    text = "\n".join(result.notes)
    assert "const on toy_a/all (content): all 6 metric scores are equal (1)" in text
    assert "nanny on toy_a/all (content): 1 of 6 metric scores are NaN or infinite (first at row 2)" in text


def test_score_dataset_fills_nan_where_no_reference(tmp_path):
    from styleeval.metrics import get_metric

    data = RatedData.from_rows(CORPORA["toy_b"], "toy_b")
    scores = score_dataset(get_metric("r_chrf"), data, ScoresCache(tmp_path))
    assert np.isnan(scores[1::2]).all() and np.isfinite(scores[::2]).all()
    again = ScoresCache(tmp_path)
    assert np.array_equal(score_dataset(get_metric("r_chrf"), data, again), scores, equal_nan=True)
    assert again.hits == 1


def test_all_datasets_missing_is_an_error():
    with pytest.raises(ValueError, match="no dataset could be used"):
        run_metaeval(["missing"], [CountingLength()], loader=loader, allow_missing=True)
    with pytest.raises(ValueError, match=r"^unknown corpus 'lai_formalty'; did you mean 'lai_formality'\? "
                                         r"\(styleeval.corpora.corpus_names\(\)\)$"):
        run_metaeval(["lai_formalty"], [CountingLength()])
    with pytest.raises(ValueError, match="dimension must be one of"):
        run_metaeval(["toy_a"], [CountingLength()], dimension="humour", loader=loader)


class StyleEcho(Metric):
    """Scores a row by the length of its target style: shows which style words a metric was given."""

    name = "style_len"
    inputs = "source"
    needs_styles = True
    signature = "style_len|version:1"

    def __init__(self):
        self.seen = []

    def _score(self, sources, rewrites, references, styles):
        self.seen.append(list(styles))
        return [float(len(s)) + i for i, s in enumerate(styles)]


def test_style_words_authors_rewords_asset_and_caches_apart(tmp_path):
    rows = [dict(r, dataset="asset", target_style="simple", task="simplification") for r in _rows("asset")]
    laymen = [dict(r, target_style="layman" if i % 2 else "expert") for i, r in enumerate(_rows("cao"))]
    corpora = {"asset": rows, "cao": laymen}
    metric, cache = StyleEcho(), ScoresCache(tmp_path)
    notes = []
    run_metaeval(["asset", "cao"], [metric], loader=corpora.__getitem__, cache=cache, n_boot=0)
    run_metaeval(["asset", "cao"], [metric], loader=corpora.__getitem__, cache=cache, n_boot=0,
                 style_words="authors", log=notes.append)
    assert metric.seen == [["simple"] * 6, ["expert", "layman"] * 3, ["simplified"] * 6,
                           ["addressed to an expert", "understandable for layman"] * 3]
    assert any("asset: target styles of 6 rows worded as in the authors' scripts (simplified)" in n for n in notes)
    run_metaeval(["asset"], [metric], loader=corpora.__getitem__, cache=cache, n_boot=0, style_words="authors")
    assert len(metric.seen) == 4  # served from the cache of its own wording
    with pytest.raises(ValueError, match="style_words must be one of corpus, authors"):
        run_metaeval(["asset"], [metric], loader=corpora.__getitem__, style_words="paper")


def test_a_score_column_named_like_a_spec_is_read_as_that_column(tmp_path):
    """``metaeval --scores``: a column is a name, never a metric spec (issue 38, item 7: a column named
    ``m:column=rand2`` was read as the column ``rand2``)."""
    from styleeval.commands.metaeval import _score_file_metrics
    from styleeval.metrics import get_metric

    path = tmp_path / "scores.csv"
    path.write_text("id,m:column=rand2,rand2,x:as=y\n" + "".join(f"c/{i},{i},{-i},{i * 10}\n" for i in range(3)),
                    encoding="utf-8")
    metrics = [get_metric(m) if isinstance(m, str) else m for m in _score_file_metrics(str(path))]
    assert [m.label for m in metrics] == ["m:column=rand2", "rand2", "x:as=y"]
    assert [m.score_ids(["c/0", "c/1", "c/2"]) for m in metrics] == [[0, 1, 2], [0, -1, -2], [0, 10, 20]]
    bad = tmp_path / "bad.csv"
    bad.write_text("id,a|b\nc/0,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the column 'a\|b' holds '\|', '\[' or '\]'"):
        _score_file_metrics(str(bad))
    named = tmp_path / "named.csv"  # random numbers in a column s_bleu were shown and ranked as "S-BLEU"
    named.write_text("id,s_bleu\nc/0,0.3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"the column 's_bleu' is the name of styleeval's metric s_bleu, so its "
                                         r"scores would be labelled as that metric's; rename the column"):
        _score_file_metrics(str(named))
    named.write_text("id,s_BLEU\nc/0,0.3\n", encoding="utf-8")  # another case, the same label: S-BLEU
    with pytest.raises(ValueError, match=r"the column 's_BLEU' is the name of styleeval's metric s_bleu, .* both are "
                                         r"shown as S-BLEU"):
        _score_file_metrics(str(named))
    with pytest.raises(ValueError, match=r"the name 's_CHRF' is the name of styleeval's metric s_chrf"):
        get_metric(f"precomputed:file={path}:column=rand2:name=s_CHRF")
