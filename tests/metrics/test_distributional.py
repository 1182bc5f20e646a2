"""Issue 62: Mukherjee et al.'s distributional measures, each checked against scipy on random distributions, and the
s_clf_* / r_clf_* metrics against those functions on a plain pipeline's probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial.distance import cosine as scipy_cosine
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr
from scipy.stats import wasserstein_distance
from transformers import pipeline

from styleeval.errors import RowError, UserError
from styleeval.metrics import get_metric
from styleeval.metrics.distributional import cosine, emd, js_divergence, kl_divergence


def random_pairs(k: int, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + k)
    p, q = rng.dirichlet(np.full(k, 0.5), n), rng.dirichlet(np.full(k, 0.5), n)
    p[:5, 0], q[5:10, -1] = 0.0, 0.0  # zeros: rel_entr's and jensenshannon's conventions
    return p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)


def transport(p: np.ndarray, q: np.ndarray) -> float:
    """Rubner et al.'s EMD as the transport problem it is: move P's mass onto Q's at cost 1 between different labels,
    solved by scipy's linear programming."""
    k = len(p)
    cost = (1 - np.eye(k)).ravel()
    rows = np.kron(np.eye(k), np.ones(k))  # sum_j x_ij = p_i
    cols = np.kron(np.ones(k), np.eye(k))  # sum_i x_ij = q_j
    done = linprog(cost, A_eq=np.vstack([rows, cols]), b_eq=np.concatenate([p, q]), bounds=(0, None), method="highs")
    assert done.success
    return float(done.fun)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_measures_equal_scipy(k):
    p, q = random_pairs(k)
    for i in range(len(p)):
        expected = wasserstein_distance([0, 1], [0, 1], p[i], q[i]) if k == 2 else transport(p[i], q[i])
        assert emd(p[i], q[i]) == pytest.approx(expected, abs=1e-9), i
        assert kl_divergence(p[i], q[i]) == pytest.approx(float(rel_entr(p[i], q[i]).sum()), rel=1e-12), i
        assert js_divergence(p[i], q[i]) == pytest.approx(float(jensenshannon(p[i], q[i]) ** 2), abs=1e-12), i
        assert cosine(p[i], q[i]) == pytest.approx(1 - scipy_cosine(p[i], q[i]), abs=1e-12), i
    # vectorised over rows: the same numbers
    assert np.allclose(kl_divergence(p, q), [rel_entr(a, b).sum() for a, b in zip(p, q, strict=True)])
    assert np.isinf(kl_divergence(p[5:10], q[5:10])).all()  # q_k = 0 < p_k
    assert np.isfinite(kl_divergence(p[:5], q[:5])).all()  # p_k = 0 adds nothing
    assert (js_divergence(p, q) <= np.log(2) + 1e-12).all()


@pytest.fixture(scope="module")
def probabilities(classifier_dir):
    clf = pipeline("text-classification", model=str(classifier_dir), top_k=None, device="cpu")
    labels = [clf.model.config.id2label[i] for i in range(3)]

    def probs(texts):
        return np.array([[{d["label"]: d["score"] for d in clf([t])[0]}[name] for name in labels] for t in texts])

    return probs


def test_source_metrics_against_the_pipeline(classifier_dir, rows, probabilities):
    sources, rewrites = [r[0] for r in rows[:12]], [r[1] for r in rows[:12]]
    styles = ["positive", "negative", "neutral"] * 4
    p, q = probabilities(sources), probabilities(rewrites)
    got = {m: get_metric(f"s_clf_{m}:model={classifier_dir}").compute(sources, rewrites, styles=styles)
           for m in ("emd", "kl", "js", "cosine")}
    index = {"negative": 0, "neutral": 1, "positive": 2}
    sign = [1.0 if q[i, index[s]] >= p[i, index[s]] else -1.0 for i, s in enumerate(styles)]
    assert 0 < sign.count(-1.0) < len(sign)  # both directions occur
    assert got["emd"] == pytest.approx(list(np.array(sign) * emd(p, q)), abs=1e-6)
    assert got["kl"] == pytest.approx([rel_entr(a, b).sum() for a, b in zip(p, q, strict=True)], rel=1e-4, abs=1e-7)
    assert got["js"] == pytest.approx([jensenshannon(a, b) ** 2 for a, b in zip(p, q, strict=True)], rel=1e-4,
                                      abs=1e-7)
    assert got["cosine"] == pytest.approx([1 - scipy_cosine(a, b) for a, b in zip(p, q, strict=True)], abs=1e-6)
    plain = get_metric(f"s_clf_emd:model={classifier_dir}:direction=no")
    assert not plain.needs_styles and "direction" not in plain.signature.fields
    assert plain.compute(sources, rewrites) == pytest.approx(list(emd(p, q)), abs=1e-6)


def test_reference_metrics_keep_the_closest_reference(classifier_dir, rows, probabilities):
    rewrites = [r[1] for r in rows[:4]]
    references = [[rows[i][0], rows[i + 4][1]] for i in range(4)]
    q = probabilities(rewrites)
    for measure, pick in (("js", min), ("cosine", max)):
        metric = get_metric(f"r_clf_{measure}:model={classifier_dir}")
        assert metric.higher_is_better == (measure == "cosine")
        got = metric.compute(["s"] * 4, rewrites, references)
        for i, refs in enumerate(references):
            values = [jensenshannon(pr, q[i]) ** 2 if measure == "js" else 1 - scipy_cosine(pr, q[i])
                      for pr in probabilities(refs)]
            assert got[i] == pytest.approx(pick(values), rel=1e-4, abs=1e-7), i


def test_options_that_do_not_apply_are_refused(classifier_dir):
    with pytest.raises(UserError, match="unknown options \\['direction'\\]"):
        get_metric(f"s_clf_kl:model={classifier_dir}:direction=yes")
    with pytest.raises(UserError, match="unknown options \\['labels'\\]"):
        get_metric(f"s_clf_js:model={classifier_dir}:labels=a=b")
    with pytest.raises(UserError, match="only s_clf_emd's direction reads"):
        get_metric(f"s_clf_emd:model={classifier_dir}:direction=no:label=0")
    with pytest.raises(RowError, match=r"row 1: its source: \d+ tokens, more than the classifier"):
        get_metric(f"s_clf_kl:model={classifier_dir}").compute(["fine.", "word " * 400], ["a", "b"])
    with pytest.raises(UserError, match="direction must be yes or no"):
        get_metric(f"s_clf_emd:model={classifier_dir}:direction=maybe")
    assert get_metric(f"s_clf_cosine:model={classifier_dir}").higher_is_better is False
