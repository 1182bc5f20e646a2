"""sacrebleu's own options in metric specs (issue 47, item 5): the scores are sacrebleu's metric built with the same
arguments, sentence and corpus level; the signature is sacrebleu's own; a bad option or value is one line naming the
metric, the option and what it takes; the scores cache keeps configurations apart."""

from __future__ import annotations

import importlib.util
import inspect

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from styleeval.errors import UserError
from styleeval.labels import metric_label
from styleeval.metrics import get_metric
from styleeval.metrics.bleu import SourceBLEU, sentence_bleu
from styleeval.metrics.chrf import SourceChrF, sentence_chrf
from styleeval.metrics.registry import metric_options
from styleeval.metrics.ter import sentence_ter
from styleeval.scoring import ScoresCache, ScoringInputs, score_dataset
from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems

SOURCES = ["The cat sat on the mat.", "I HATE this place—never again!", "see u tmrw at the café"]
REWRITES = ["the cat is on the mat!", "I love this place—come again!", "See you tomorrow at the Café."]
REFERENCES = [["A cat is on the mat.", "the cat is on a mat"], ["I love this place!"], ["See you tomorrow, café."]]

CASES = [
    ("bleu", "tokenize=intl", BLEU, {"tokenize": "intl"}),
    ("bleu", "lowercase=true", BLEU, {"lowercase": True}),
    ("bleu", "tokenize=char:lowercase=yes", BLEU, {"tokenize": "char", "lowercase": True}),
    ("bleu", "smooth_method=floor:smooth_value=0.2", BLEU, {"smooth_method": "floor", "smooth_value": 0.2}),
    ("chrf", "word_order=2", CHRF, {"word_order": 2}),
    ("chrf", "char_order=4:beta=1", CHRF, {"char_order": 4, "beta": 1}),
    ("chrf", "lowercase=yes:whitespace=yes:eps_smoothing=yes", CHRF,
     {"lowercase": True, "whitespace": True, "eps_smoothing": True}),
    ("ter", "case_sensitive=yes", TER, {"case_sensitive": True}),
    ("ter", "normalized=yes:no_punct=yes", TER, {"normalized": True, "no_punct": True}),
]


def _sentence(make, kwargs, references):
    scorer = make(**({"effective_order": True} if make is BLEU else {}), **kwargs)  # sacrebleu.sentence_bleu's
    return [scorer.sentence_score(h, refs).score for h, refs in zip(REWRITES, references, strict=True)]


@pytest.mark.parametrize(("kind", "options", "make", "kwargs"), CASES)
def test_sentence_scores_are_sacrebleus_with_the_same_arguments(kind, options, make, kwargs):
    s = get_metric(f"s_{kind}:{options}")(SOURCES, REWRITES)
    r = get_metric(f"r_{kind}:{options}")(SOURCES, REWRITES, REFERENCES)
    assert s == _sentence(make, kwargs, [[src] for src in SOURCES])
    assert r == _sentence(make, kwargs, REFERENCES)
    assert s != get_metric(f"s_{kind}")(SOURCES, REWRITES)  # the option changes the numbers
    assert r != s


def test_known_values():
    # chrF++ (sacrebleu's chrF2++) of the rewrite "the cat sat" against its source "the cat sat down"
    assert get_metric("s_chrf:word_order=2")(["the cat sat down"], ["the cat sat"]) == [pytest.approx(68.3557292119746)]
    assert get_metric("s_chrf")(["the cat sat down"], ["the cat sat"]) == [pytest.approx(66.01764142221674)]
    # BLEU lowercased: "The Cat" and "the cat" are the same words
    assert get_metric("s_bleu:lowercase=yes")(["the cat sat down"], ["The Cat sat down"]) == [pytest.approx(100.0)]
    assert get_metric("s_bleu")(["the cat sat down"], ["The Cat sat down"]) == [pytest.approx(31.947155212313625)]
    # TER is case-insensitive in sacrebleu unless case_sensitive: 0 edits, then 1 edit in 2 words
    assert get_metric("s_ter")(["a b"], ["A b"]) == [0.0]
    assert get_metric("s_ter:case_sensitive=yes")(["a b"], ["A b"]) == [50.0]


def test_python_functions_and_classes_take_the_same_options():
    refs = [[s] for s in SOURCES]
    assert sentence_bleu(REWRITES, refs, tokenize="intl") == _sentence(BLEU, {"tokenize": "intl"}, refs)
    assert sentence_chrf(REWRITES, refs, word_order=2) == [sacrebleu.sentence_chrf(h, r, word_order=2).score
                                                          for h, r in zip(REWRITES, refs, strict=True)]
    assert sentence_ter(REWRITES, refs, case_sensitive=True) == _sentence(TER, {"case_sensitive": True}, refs)
    assert SourceChrF(word_order=2)(SOURCES, REWRITES) == get_metric("s_chrf:word_order=2")(SOURCES, REWRITES)
    assert SourceBLEU(lowercase=True).signature == get_metric("s_bleu:lowercase=true").signature
    with pytest.raises(ValueError, match=r"^unknown option 'word_order'; sacrebleu's BLEU takes tokenize, "):
        sentence_bleu(REWRITES, refs, word_order=2)


def test_signatures_are_sacrebleus_own():
    version = sacrebleu.__version__
    assert get_metric("s_bleu:tokenize=intl:lowercase=true").signature == (
        f"s_bleu|nrefs:1|case:lc|eff:yes|tok:intl|smooth:exp|version:{version}")
    assert get_metric("r_bleu:lowercase=yes").signature == (
        f"r_bleu|nrefs:var|case:lc|eff:yes|tok:13a|smooth:exp|version:{version}")
    assert get_metric("s_chrf:word_order=2").signature == (
        f"s_chrf|nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|version:{version}")
    assert get_metric("s_ter:case_sensitive=yes:normalized=yes").signature == (
        f"s_ter|nrefs:1|case:mixed|tok:tercom|norm:yes|punct:yes|asian:no|version:{version}")
    # chrF's beta is in sacrebleu's score name (chrF1), not in its signature: styleeval adds beta:1
    assert get_metric("s_chrf:beta=1").signature == (
        f"s_chrf|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|beta:1|version:{version}")
    # the system score's: sacrebleu's corpus signature, under sacrebleu's name of the score
    scorer = CHRF(word_order=2)
    name = scorer.corpus_score(["a b"], [["a b"]]).name
    corpus = get_metric("s_chrf:word_order=2").system_signature.fields["corpus"]
    assert (name, corpus) == ("chrF2++", f"chrF2++|{scorer.get_signature()}")
    bleu = BLEU(tokenize="intl", lowercase=True)
    bleu.corpus_score(["a b"], [["a b"]])
    assert get_metric("s_bleu:tokenize=intl:lowercase=1").system_signature.fields["corpus"] == \
        f"BLEU|{bleu.get_signature()}"
    # a masked metric passes them to its inner metric
    inner = get_metric("s_masked_bleu:tokenize=char").signature.fields["inner"]
    assert inner == get_metric("s_bleu:tokenize=char").signature and "tok:char" in inner
    # every configuration its own signature; one configuration written two ways, one signature
    specs = ["s_bleu", "s_bleu:tokenize=intl", "s_bleu:lowercase=yes", "s_chrf", "s_chrf:word_order=2",
             "s_chrf:beta=1", "s_ter", "s_ter:case_sensitive=yes"]
    assert len({str(get_metric(s).signature) for s in specs}) == len(specs)
    assert get_metric("s_bleu:lowercase=true").signature == get_metric("s_bleu:lowercase=yes").signature


def test_chrf_variants_are_labelled_as_sacrebleu_names_them():
    assert get_metric("s_chrf:word_order=2").label == "s_chrf++"
    assert get_metric("r_chrf:word_order=2:beta=1").label == "r_chrf1++"
    assert get_metric("s_chrf:word_order=2:as=CHRFPP").label == "CHRFPP"
    assert get_metric("s_chrf:beta=2:word_order=0").label == "s_chrf"
    assert [metric_label(n) for n in ("s_chrf++", "r_chrf1++", "s_chrf")] == ["S-chrF++", "R-chrF1++", "S-chrF"]


@pytest.fixture(scope="module")
def lai(data_dir) -> list[dict]:
    from styleeval.corpora import load_corpus

    ds = load_corpus("lai_formality", data_dir=data_dir, references=4)
    return [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "references": r["reference"]} for r in ds if r["system"] in ("HIGH", "NIU", "ZHOU")]


def test_corpus_scores_are_sacrebleus_with_the_same_arguments(lai):
    specs = ["s_chrf:word_order=2", "r_bleu:tokenize=intl:lowercase=yes", "s_ter:case_sensitive=yes:no_punct=yes",
             "s_chrf"]
    report = evaluate_systems(lai, specs, settings=TestSettings(trials=20, n_boot=20), progress=False)
    table = report.systems.set_index(["metric", "system"])
    assert set(table.index.get_level_values("metric")) == {"s_chrf++", "r_bleu", "s_ter", "s_chrf"}
    for system in ("HIGH", "NIU", "ZHOU"):
        mine = [r for r in lai if r["system"] == system]
        hyps = [r["rewrite"] for r in mine]
        sources = [[r["source"] for r in mine]]
        width = max(len(r["references"]) for r in mine)
        streams = [[r["references"][j] if j < len(r["references"]) else None for r in mine] for j in range(width)]
        chrfpp = CHRF(word_order=2).corpus_score(hyps, sources).score
        assert table.loc[("s_chrf++", system), "score"] == pytest.approx(chrfpp, abs=1e-9)
        assert table.loc[("s_chrf++", system), "score"] != pytest.approx(table.loc[("s_chrf", system), "score"])
        bleu = BLEU(tokenize="intl", lowercase=True).corpus_score(hyps, streams).score
        assert table.loc[("r_bleu", system), "score"] == pytest.approx(bleu, abs=1e-9)
        ter = TER(case_sensitive=True, no_punct=True).corpus_score(hyps, sources).score
        assert table.loc[("s_ter", system), "score"] == pytest.approx(ter, abs=1e-9)
        low, high = table.loc[("s_chrf++", system), ["ci_low", "ci_high"]]
        assert low <= chrfpp <= high
    assert "S-chrF++" in report.to_markdown()
    assert "corpus:[chrF2++|nrefs:1|case:mixed|eff:yes|nc:6|nw:2" in report.signatures["s_chrf++"]


def test_the_cache_keeps_configurations_apart(tmp_path):
    data = ScoringInputs("toy", ids=["0", "1", "2"], sources=SOURCES, rewrites=REWRITES, references=[None] * 3,
                         styles=["formal"] * 3, source_ids=["0", "1", "2"])
    cache = ScoresCache(tmp_path)
    plain = score_dataset(get_metric("s_bleu"), data, cache)
    lower = score_dataset(get_metric("s_bleu:lowercase=yes"), data, cache)
    assert list(lower) == _sentence(BLEU, {"lowercase": True}, [[s] for s in SOURCES]) != list(plain)
    assert cache.hits == 0 and len(list(tmp_path.rglob("*.json"))) == 2
    again = ScoresCache(tmp_path)
    assert list(score_dataset(get_metric("s_bleu:lowercase=true"), data, again)) == list(lower)
    assert again.hits == 1


@pytest.mark.parametrize(("spec", "message"), [
    ("s_bleu:tokenizer=intl", r"^metric 's_bleu:tokenizer=intl': unknown option 'tokenizer' \(did you mean "
     r"'tokenize'\?\); s_bleu takes agg, tokenize, lowercase, smooth_method, smooth_value, effective_order$"),
    ("r_chrf:nw=2", r"^metric 'r_chrf:nw=2': unknown option 'nw'; r_chrf takes agg, char_order, word_order, beta, "
     r"lowercase, whitespace, eps_smoothing$"),
    ("s_ter:lowercase=yes", r"unknown option 'lowercase' \(sacrebleu's TER ignores case unless "
     r"case_sensitive=yes\); s_ter takes agg, case_sensitive, normalized, no_punct, asian_support$"),
    ("s_bleu:tokenize=moses", r"^metric 's_bleu:tokenize=moses': tokenize must be one of none, zh, 13a, intl, char, "),
    ("s_chrf:word_order=two", r"^metric 's_chrf:word_order=two': word_order must be an int, got 'two'$"),
    ("s_bleu:lowercase=maybe", r"lowercase must be yes or no, got 'maybe'$"),
    ("s_chrf:word_order=-1", r"word_order must be >= 0, got -1$"),
    ("s_chrf:char_order=0", r"char_order and word_order are both 0"),
    ("s_bleu:smooth_value=0.5", r"smooth_value applies to smooth_method floor or add-k, not exp \(the default\)"),
    ("s_bleu:smooth_method=floor:smooth_value=0", r"smooth_value must be > 0, got 0.0$"),
    ("s_bleu:smooth_method=laplace", r"smooth_method must be one of none, floor, add-k, exp, got 'laplace'$"),
])
def test_a_bad_option_names_the_metric_the_option_and_what_it_takes(spec, message):
    with pytest.raises(ValueError, match=message):
        get_metric(spec)


@pytest.mark.skipif(importlib.util.find_spec("MeCab") is not None, reason="sacrebleu's ja extra is installed")
def test_a_tokenizer_whose_package_is_missing_is_one_line():
    with pytest.raises(ValueError, match=r"^metric 's_bleu:tokenize=ja-mecab': sacrebleu cannot build bleu with "
                                         r"tokenize=ja-mecab: Japanese tokenization requires extra dependencies"):
        get_metric("s_bleu:tokenize=ja-mecab")


def test_the_options_are_sacrebleus_constructor_arguments():
    left_out = {"references", "max_ngram_order", "trg_lang", "force"}  # not in sacrebleu's signature
    for kind, make in (("bleu", BLEU), ("chrf", CHRF), ("ter", TER)):
        arguments = set(inspect.signature(make).parameters) - left_out
        for name in (f"s_{kind}", f"r_{kind}"):
            assert set(metric_options(name)) == {"agg", *arguments}


def test_an_option_given_twice_and_specs_shown_alike_are_refused_naming_them():
    """Issue 47 review: `s_ter:case_sensitive=yes:case_sensitive=no` signed the last; `s_bleu,s_bleu:tokenize=intl`
    said "s_bleu given twice"; `s_chrf,s_chrf:word_order=2:as=S-chrF` printed two columns headed S-chrF."""
    from styleeval.metrics import get_metric
    from styleeval.systems import evaluate_systems

    with pytest.raises(UserError, match="option 'case_sensitive' given twice; give it once"):
        get_metric("s_ter:case_sensitive=yes:case_sensitive=no")
    rows = [{"system": s, "source": "the cat sat", "rewrite": f"the cat sat {s}", "style": "formal"} for s in "AB"]
    for metrics, message in [
        (["s_bleu", "s_bleu:tokenize=intl"], "s_bleu and s_bleu:tokenize=intl would both be shown as S-BLEU; give "
                                             "each configuration its own name with as=NAME "
                                             "(e.g. s_bleu:tokenize=intl:as=S-BLEU-2)"),
        (["s_chrf", "s_chrf:word_order=2:as=S-chrF"], "s_chrf and s_chrf:word_order=2:as=S-chrF would both be shown "
                                                      "as S-chrF"),
    ]:
        with pytest.raises(UserError) as err:
            evaluate_systems(rows, metrics, settings=TestSettings(trials=10, n_boot=0))
        assert str(err.value).startswith(message), str(err.value)
    report = evaluate_systems(rows, ["s_bleu", "s_bleu:tokenize=intl:as=S-BLEU-intl"],
                              settings=TestSettings(trials=10, n_boot=0))
    assert sorted(set(report.systems["metric"])) == ["S-BLEU-intl", "s_bleu"]
