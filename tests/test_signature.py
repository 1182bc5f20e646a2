"""Signature: one value with its fields, written and parsed back, renamed for metric wrappers."""

from __future__ import annotations

import pickle

import pytest

from styleeval.signature import Signature


def test_build_parse_rename_round_trip():
    sig = Signature.build("logprob", {"model": "m@local-abc", "eot": True, "first": False, "url": "http://h:1/v1"})
    assert sig == "logprob|model:m@local-abc|eot:yes|first:no|url:http://h:1/v1"
    back = Signature.parse(str(sig))
    assert back == sig and back.name == "logprob" and back.fields["url"] == "http://h:1/v1"
    renamed = sig.renamed("logprob_style")
    assert renamed.name == "logprob_style" and renamed.fields == sig.fields and renamed != sig
    assert pickle.loads(pickle.dumps(sig)) == sig and isinstance(pickle.loads(pickle.dumps(sig)), Signature)


def test_a_nested_signature_is_written_in_brackets_and_parses_back():
    inner = Signature.build("s_bleu", {"nrefs": 1, "tok": "13a"})
    outer = Signature.build("s_masked_bleu", {"mask": "vader-3.3.2:words:min0", "inner": inner, "v": "1"})
    assert outer == "s_masked_bleu|mask:vader-3.3.2:words:min0|inner:[s_bleu|nrefs:1|tok:13a]|v:1"
    back = Signature.parse(str(outer))
    assert back == outer and isinstance(back.fields["inner"], Signature)
    assert back.fields["inner"].fields == {"nrefs": "1", "tok": "13a"} and back.fields["v"] == "1"
    twice = Signature.build("x", {"a": outer})  # nests to any depth
    assert Signature.parse(twice).fields["a"].fields["inner"].name == "s_bleu"
    assert outer.renamed("y") == "y|mask:vader-3.3.2:words:min0|inner:[s_bleu|nrefs:1|tok:13a]|v:1"


def test_every_field_counts_in_equality():
    a = Signature.build("autorater", {"model": "m@r", "mode": "paper", "fill": "mean"})
    b = Signature.build("autorater", {"model": "m@r", "mode": "paper", "fill": "none"})
    assert a != b and {a: 1}.get(b) is None


@pytest.mark.parametrize("name, fields", [("", {}), ("a|b", {}), ("x", {"k|": 1}), ("x", {"k:": 1}),
                                          ("x", {"k": "a|b"}), ("x", {"k": "[a]"}), ("x[", {}),
                                          ("x", {"k": "a[b"}), ("x", {"k": "a]b["})])
def test_malformed_signatures_are_errors(name, fields):
    with pytest.raises(ValueError):
        Signature.build(name, fields)


@pytest.mark.parametrize("text, message", [("logprob|model", "has no ':'"), ("x|a:[b|c:1", "unbalanced"),
                                           ("x|a:b]", "unbalanced"), ("x|a:[b]c", "bracket outside"),
                                           ("x|a:b]c[", "unbalanced")])
def test_parse_rejects_text_that_is_not_a_signature(text, message):
    with pytest.raises(ValueError, match=message):
        Signature.parse(text)


def test_a_plain_value_with_brackets_after_its_first_character_is_sacrebleus_own():
    """sacrebleu writes BLEU's floor smoothing ``smooth:floor[0.10]``: a plain value (a nested signature starts with
    ``[``); ``s_bleu:smooth_method=floor`` failed in evaluate_systems on its own signature before."""
    sig = Signature.build("s_bleu", {"smooth": "floor[0.10]", "version": "2.6.0"})
    assert sig == "s_bleu|smooth:floor[0.10]|version:2.6.0" and Signature.parse(sig).fields["smooth"] == "floor[0.10]"
    from styleeval.metrics import get_metric
    from styleeval.systems import evaluate_systems

    metric = get_metric("s_bleu:smooth_method=floor")
    assert metric.signature.fields["smooth"] == "floor[0.10]"
    rows = [{"system": s, "source": a, "rewrite": b, "style": "formal"}
            for s, a, b in [("A", "gimme that", "give me that"), ("A", "thx a lot", "thanks a lot")]]
    report = evaluate_systems(rows, ["s_bleu:smooth_method=floor"])
    import sacrebleu

    expected = sacrebleu.BLEU(smooth_method="floor").corpus_score(["give me that", "thanks a lot"],
                                                                  [["gimme that", "thx a lot"]]).score
    assert report.systems["score"].tolist() == [expected]
