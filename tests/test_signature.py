"""Signature: one value with its fields, written and parsed back, renamed for metric wrappers."""

from __future__ import annotations

import pickle

import pytest

from styleeval.signature import Signature, format_signature, parse_signature


def test_build_parse_rename_round_trip():
    sig = Signature.build("logprob", {"model": "m@local-abc", "eot": True, "first": False, "url": "http://h:1/v1"})
    assert sig == "logprob|model:m@local-abc|eot:yes|first:no|url:http://h:1/v1"
    back = Signature.parse(str(sig))
    assert back == sig and back.name == "logprob" and back.fields["url"] == "http://h:1/v1"
    renamed = sig.renamed("logprob_style")
    assert renamed.name == "logprob_style" and renamed.fields == sig.fields and renamed != sig
    assert pickle.loads(pickle.dumps(sig)) == sig and isinstance(pickle.loads(pickle.dumps(sig)), Signature)
    assert format_signature("x", {"a": 1}) == "x|a:1" and parse_signature("x|a:1") == ("x", {"a": "1"})


def test_every_field_counts_in_equality():
    a = Signature.build("autorater", {"model": "m@r", "mode": "paper", "fill": "mean"})
    b = Signature.build("autorater", {"model": "m@r", "mode": "paper", "fill": "none"})
    assert a != b and {a: 1}.get(b) is None


@pytest.mark.parametrize("name, fields", [("", {}), ("a|b", {}), ("x", {"k|": 1}), ("x", {"k:": 1}),
                                          ("x", {"k": "a|b"})])
def test_malformed_signatures_are_errors(name, fields):
    with pytest.raises(ValueError):
        Signature.build(name, fields)


def test_parse_rejects_text_that_is_not_a_signature():
    with pytest.raises(ValueError, match="has no ':'"):
        Signature.parse("logprob|model")
