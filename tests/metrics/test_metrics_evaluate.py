"""The `evaluate` wrapper with local module scripts (no network): per-row keys, corpus-level fallback, max over refs."""

from __future__ import annotations

import textwrap

import pytest

from styleeval.metrics import get_metric

MODULE = '''
import datasets
import evaluate


class {name}(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="test", citation="", inputs_description="",
            features=datasets.Features({{"predictions": datasets.Value("string"),
                                         "references": datasets.Value("string")}}),
        )

    def _compute(self, predictions, references):
        diffs = [float(len(set(p.split()) & set(r.split()))) for p, r in zip(predictions, references, strict=True)]
        return {body}
'''


@pytest.fixture()
def modules(tmp_path):
    paths = {}
    for name, body in (("overlap", '{"scores": diffs}'), ("corpus_overlap", '{"score": sum(diffs)}')):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.py").write_text(textwrap.dedent(MODULE.format(name=name.title().replace("_", ""),
                                                                          body=body)))
        paths[name] = folder / f"{name}.py"
    return paths


def test_evaluate_module_per_row_and_corpus_fallback(modules):
    sources = ["a b c", "x y"]
    rewrites = ["a b d", "x q"]
    per_row = get_metric(f"s_evaluate:module={modules['overlap']}")
    assert per_row.name == "s_overlap"
    assert per_row(sources, rewrites) == [2.0, 1.0]
    corpus = get_metric(f"s_evaluate:module={modules['corpus_overlap']}")
    assert corpus(sources, rewrites) == [2.0, 1.0]  # called once per row
    assert "evaluate:" in per_row.signature and per_row.signature != corpus.signature


def test_evaluate_reference_based_takes_max(modules):
    r = get_metric(f"r_evaluate:module={modules['overlap']}")
    assert r(["s"], ["a b c"], [["a", "a b", "z"]]) == [2.0]


def test_missing_evaluate_module_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot load evaluate module"):
        get_metric("s_evaluate:module=/nonexistent/module.py")(["a"], ["b"])
