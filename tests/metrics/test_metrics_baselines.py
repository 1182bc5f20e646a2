"""Baseline metrics: sacrebleu parity, PINC and the paper's BLEU by hand, registry, input errors."""

from __future__ import annotations

import math

import pytest
import sacrebleu

from styleeval.metrics import available_metrics, get_metric, parse_spec
from styleeval.metrics.paper_bleu import nltk_sentence_bleu, paper_bleu
from styleeval.metrics.pinc import pinc

SOURCES = ["the cat sat on the mat", "I hate this place , never again", "see u tmrw"]
REWRITES = ["the cat is on the mat", "I love this place , come again", "See you tomorrow."]
REFERENCES = [["a cat is on the mat", "the cat is on a mat"], ["I love this place"], ["See you tomorrow!"]]


@pytest.mark.parametrize(
    ("name", "fn"),
    [("bleu", sacrebleu.sentence_bleu), ("chrf", sacrebleu.sentence_chrf), ("ter", sacrebleu.sentence_ter)],
)
def test_sacrebleu_metrics_equal_sacrebleu_sentence_functions(name, fn):
    s = get_metric(f"s_{name}")(SOURCES, REWRITES)
    r = get_metric(f"r_{name}")(SOURCES, REWRITES, REFERENCES)
    assert s == pytest.approx([fn(h, [src]).score for h, src in zip(REWRITES, SOURCES, strict=True)])
    assert r == pytest.approx([fn(h, refs).score for h, refs in zip(REWRITES, REFERENCES, strict=True)])
    assert s != r  # source and references really are different targets


def test_sacrebleu_known_values_and_direction():
    assert get_metric("s_bleu")(["a b c d e"], ["a b c d e"]) == [pytest.approx(100.0)]
    assert get_metric("s_ter")(["a b c d"], ["a b x d"]) == [pytest.approx(25.0)]  # 1 edit / 4 words
    assert get_metric("s_ter").higher_is_better is False
    assert get_metric("s_bleu").higher_is_better is True


def test_signatures_name_settings_and_versions():
    sigs = {n: get_metric(n).signature for n in ("s_bleu", "r_bleu", "s_chrf", "s_ter", "s_pinc", "s_paper_bleu")}
    assert sigs["s_bleu"] == f"s_bleu|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert sigs["r_bleu"].startswith("r_bleu|nrefs:var|")
    assert "nc:6" in sigs["s_chrf"] and "tok:tercom" in sigs["s_ter"]
    assert "tok:char" in sigs["s_paper_bleu"] and "smooth:method1-0.1" in sigs["s_paper_bleu"]
    assert len(set(sigs.values())) == len(sigs)


def test_pinc_hand_computed():
    # 1-grams: 4 of 5 shared -> 0.2; 2-grams: 3 of 5 -> 0.4; 3-grams: 1 of 4 -> 0.75; 4-grams: 0 of 3 -> 1.0
    assert pinc("the cat sat on the mat", "the cat is on the mat") == pytest.approx((0.2 + 0.4 + 0.75 + 1.0) / 4)
    assert pinc("the cat", "the cat") == 0.0  # only orders 1-2 exist in the rewrite: both fully shared
    assert pinc("the cat", "a dog") == 1.0
    assert pinc("x", "") == 0.0
    assert pinc("The Cat", "the cat", lowercase=True) == 0.0
    assert get_metric("s_pinc")(["the cat sat on the mat"], ["the cat is on the mat"]) == [pytest.approx(0.5875)]
    assert get_metric("s_pinc:n=2")(["the cat sat on the mat"], ["the cat is on the mat"]) == [pytest.approx(0.3)]


def test_paper_bleu_hand_computed():
    # hypothesis = source "abcd", reference = rewrite "abce" (characters):
    # p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0/1 -> method1: 0.1/1; BP = 1 (equal lengths)
    assert paper_bleu("abcd", "abce") == pytest.approx((0.75 * (2 / 3) * 0.5 * 0.1) ** 0.25, abs=1e-12)
    # short hypothesis "ab" vs "abcd": p1 = p2 = 1, p3 = p4 = 0/1 -> 0.1; BP = exp(1 - 4/2)
    assert paper_bleu("ab", "abcd") == pytest.approx(math.exp(-1) * (0.1 * 0.1) ** 0.25, abs=1e-12)
    # epsilon is divided by the *unreduced* denominator: "aaaaa" vs "aaab": p4 = 0/2 -> 0.05
    p = [min(5, 3) / 5, 2 / 4, 1 / 3, 0.1 / 2]
    assert paper_bleu("aaaaa", "aaab") == pytest.approx(math.prod(p) ** 0.25, abs=1e-12)
    assert paper_bleu("xyz", "abc") == 0.0  # no unigram match
    assert paper_bleu("", "abc") == 0.0
    assert get_metric("s_paper_bleu")(["abcd"], ["abce"]) == [pytest.approx(0.025**0.25)]


def test_paper_bleu_closest_reference_length_tie_takes_shorter():
    # hyp length 4; references of length 2 and 6 are equally close -> 2 is used -> BP = 1 (4 > 2)
    with_tie = nltk_sentence_bleu(["ab", "abcdef"], "abcd")
    only_long = nltk_sentence_bleu(["abcdef"], "abcd")
    assert with_tie == pytest.approx(1.0)  # all n-grams of "abcd" are in "abcdef", BP 1
    assert only_long == pytest.approx(math.exp(1 - 6 / 4))


def test_reference_paper_bleu_takes_max_over_references():
    m = get_metric("r_paper_bleu")
    assert m(["src"], ["abcd"], [["zzzz", "abcd"]]) == [pytest.approx(1.0)]


def test_bad_input_names_argument_and_row():
    with pytest.raises(ValueError, match=r"rewrites\[1\] is None"):
        get_metric("s_bleu")(["a", "b"], ["a", None])
    with pytest.raises(ValueError, match=r"sources has 1 rows but 2"):
        get_metric("s_chrf")(["a"], ["a", "b"])
    with pytest.raises(ValueError, match=r"references\[1\] is None"):
        get_metric("r_bleu")(["a", "b"], ["a", "b"], [["a"], None])
    with pytest.raises(ValueError, match="references are required"):
        get_metric("r_ter")(["a"], ["a"])


def test_registry_specs_and_errors():
    names = available_metrics()
    for n in ("s_bleu", "r_bleu", "s_chrf", "r_chrf", "s_ter", "r_ter", "s_pinc", "s_paper_bleu", "s_cosine",
              "r_cosine", "s_evaluate", "logprob_content", "logprob_style"):
        assert n in names
    assert parse_spec("logprob_content:model=3b:dtype=bfloat16") == (
        "logprob_content", {"model": "3b", "dtype": "bfloat16"})
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        get_metric("bleu")
    with pytest.raises(ValueError, match="not key=value"):
        get_metric("s_pinc:4")
    with pytest.raises(ValueError, match=r"unknown option 'max_ngram_order'; s_bleu takes agg, tokenize, "):
        get_metric("s_bleu:max_ngram_order=2")  # sacrebleu's signature does not show it
    with pytest.raises(ValueError, match="takes no options"):
        get_metric("s_paper_bleu:tokenize=intl")
    with pytest.raises(ValueError, match="agg must be one of corpus, mean"):
        get_metric("s_bleu:agg=median")
    with pytest.raises(ValueError, match="module=NAME"):
        get_metric("s_evaluate")
    assert get_metric("s_evaluate:module=bertscore").name == "s_bertscore"
