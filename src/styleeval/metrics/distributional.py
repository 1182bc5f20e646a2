"""Mukherjee et al. (2025)'s distributional style measures: how far a style classifier's distribution over the
styles moved from the source to the rewrite (``s_clf_emd``, ``s_clf_kl``, ``s_clf_js``, ``s_clf_cosine``), or how
close it came to the reference's (``r_clf_*``, their Table 8).

What the distributions are. The paper says only that EMD, KL divergence, cosine similarity and Jensen-Shannon
divergence "quantify the distributional shift between source and generated text" (Section 3) and lists EMD among the
style measures "previously used" (their released repository holds no code: ``souro/tst_evaluation`` has a README
only). We read them as Mir et al. (2019)'s style transfer intensity does, the EMD the paper's "previously used" row
comes from: the distributions are **a style classifier's probabilities over its labels**, one for the source and one
for the rewrite, compared **per row**. Why: (1) the four measures sit in the paper's style table (Table 1) beside
*Classifier Confidence* and feed the hybrid learned from row-level features (Table 6, with Sentence Accuracy); (2)
their signs fit it: the divergences correlate positively with style ratings, the cosine negatively (a rewrite whose
style distribution stays like its source's has not changed style), and in the reference-based Table 8 the signs flip
(closeness to the reference's distribution); (3) a word-distribution reading would measure lexical change, a content
property. Row-level, so a system's score is the mean of its rows (their correlations are with per-output ratings).

The measures, for the classifier's distributions P (source, or reference) and Q (rewrite), in nats:

- ``emd``: the earth mover's distance with a ground distance of 1 between any two different labels (labels are
  nominal), as Mir et al.'s ``pyemd.emd(P, Q, np.ones((N, N)))`` computes it (pyemd moves the mass that stays in a
  bin for free): half the L1 distance, ``sum_k max(P_k - Q_k, 0)``. For two labels it equals
  ``scipy.stats.wasserstein_distance([0, 1], [0, 1], P, Q)``; for more, the transport problem with cost 1 between
  different labels solved by ``scipy.optimize.linprog``, both tested. ``s_clf_emd`` is Mir et al.'s
  *direction-corrected* EMD by default (``direction=yes``: negative when the rewrite's probability of the target
  style is lower than the source's; it reads the rows' target styles); ``direction=no`` is the plain distance.
- ``kl``: KL(P || Q) = ``sum(scipy.special.rel_entr(P, Q))``, the source (or reference) distribution first, as the
  paper names them ("between source and generated text"); infinite only where the rewrite's probability of a label
  is exactly 0 and the source's is not (a float64 softmax of float32 logits underflows only past a logit gap of
  about 745).
- ``js``: the Jensen-Shannon divergence, ``scipy.spatial.distance.jensenshannon(P, Q) ** 2`` (scipy returns its
  square root, the JS distance), at most ln 2.
- ``cosine``: the cosine similarity of P and Q, ``1 - scipy.spatial.distance.cosine(P, Q)``.

``r_clf_*`` compare with each reference of the row and keep the closest (the lowest distance, the highest cosine), as
``r_cosine`` does. Options: the classifier's (:mod:`styleeval.metrics.classifier`: ``model``, ``labels`` ...); a
single-label classifier with at least two labels is required (its softmax is a distribution).
"""

from __future__ import annotations

import numpy as np

from styleeval.errors import RowError, UserError
from styleeval.metrics.base import targets
from styleeval.metrics.classifier import CLASSIFIER_OPTIONS, ClassifierMetric
from styleeval.metrics.registry import check_options, register

MEASURES = ("emd", "kl", "js", "cosine")
CLOSER = {"emd": min, "kl": min, "js": min, "cosine": max}
"""With several references: the closest one's value."""


def emd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Earth mover's distance between the rows of ``p`` and ``q`` (..., labels) with a ground distance of 1 between
    different labels: ``sum_k max(p_k - q_k, 0)`` (half the L1 distance of two distributions)."""
    return np.maximum(np.asarray(p, float) - np.asarray(q, float), 0.0).sum(axis=-1)


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(P || Q) in nats of the rows of ``p`` and ``q`` (..., labels): ``sum_k p_k log(p_k / q_k)``, with
    ``scipy.special.rel_entr``'s conventions (a label with ``p_k = 0`` adds 0, one with ``q_k = 0 < p_k`` infinity)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, np.where(q > 0, p * np.log(np.where(p > 0, p, 1.0) / np.where(q > 0, q, 1.0)),
                                         np.inf), 0.0)
    return terms.sum(axis=-1)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The Jensen-Shannon divergence in nats, ``(KL(P || M) + KL(Q || M)) / 2`` with ``M = (P + Q) / 2`` (the square
    of ``scipy.spatial.distance.jensenshannon``)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    m = (p + q) / 2

    def part(a: np.ndarray) -> np.ndarray:
        return np.where(a > 0, a * (np.log(np.where(a > 0, a, 1.0)) - np.log(np.where(m > 0, m, 1.0))), 0.0).sum(-1)

    return np.maximum((part(p) + part(q)) / 2, 0.0)


def cosine(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The cosine similarity of the rows of ``p`` and ``q``."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    return (p * q).sum(-1) / (np.linalg.norm(p, axis=-1) * np.linalg.norm(q, axis=-1))


@register("r_clf_cosine", measure="cosine", inputs="reference")
@register("r_clf_js", measure="js", inputs="reference")
@register("r_clf_kl", measure="kl", inputs="reference")
@register("r_clf_emd", measure="emd", inputs="reference")
@register("s_clf_cosine", measure="cosine", inputs="source")
@register("s_clf_js", measure="js", inputs="source")
@register("s_clf_kl", measure="kl", inputs="source")
@register("s_clf_emd", measure="emd", inputs="source")
class DistributionalMetric(ClassifierMetric):
    """How far a style classifier's label distribution moved from the source (``s_``) or the reference (``r_``) to the
    rewrite: EMD, KL, JS divergence or cosine (Mukherjee et al. 2025)."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        if fixed == {"measure": "emd", "inputs": "source"}:  # the direction reads the target style's label
            return (*CLASSIFIER_OPTIONS, "direction")
        return tuple(o for o in CLASSIFIER_OPTIONS if o not in ("label", "labels"))

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        what = {"emd": "earth mover's distance (direction-corrected: direction=yes)" if fixed["inputs"] == "source"
                else "earth mover's distance", "kl": "KL divergence", "js": "Jensen-Shannon divergence",
                "cosine": "cosine similarity"}[str(fixed["measure"])]
        return (f"{what} between a style classifier's label distributions of the {fixed['inputs']} and the rewrite "
                "(model=...; Mukherjee et al.).")

    def __init__(self, measure: str, inputs: str = "source", model: object = None, direction: bool | str | None = None,
                 **options: object) -> None:
        if measure not in MEASURES:
            raise UserError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        self.measure = measure
        self.inputs = inputs  # type: ignore[assignment]
        self.name = f"{inputs[0]}_clf_{measure}"
        self.higher_is_better = measure != "cosine" if inputs == "source" else measure == "cosine"
        corrected = measure == "emd" and inputs == "source"
        if direction is not None and not corrected:
            raise UserError(f"direction= applies to s_clf_emd only (Mir et al.'s direction-corrected EMD), not "
                            f"{self.name}")
        flag = str(direction).strip().lower() if direction is not None else "yes"
        if flag not in ("yes", "no", "true", "false"):
            raise UserError(f"direction must be yes or no, got {direction!r}")
        self.direction = corrected and flag in ("yes", "true")
        if not self.direction and ({"label", "labels"} & {k for k, v in options.items() if v is not None}):
            raise UserError(f"label= and labels= choose the target style's label, which only s_clf_emd's direction "
                            f"reads; {self.name} compares whole distributions: leave them out")
        super().__init__(model, **options)  # type: ignore[arg-type]

    @classmethod
    def from_spec(cls, measure: str, inputs: str, **opts: str) -> DistributionalMetric:  # type: ignore[override]
        """From a spec's options: the classifier's, and ``direction`` (``s_clf_emd``)."""
        check_options(opts, cls.spec_options(measure=measure, inputs=inputs))
        return cls(measure, inputs, **opts)

    @property
    def needs_styles(self) -> bool:  # type: ignore[override]
        return self.direction

    def signature_fields(self) -> dict[str, object]:
        fields = super().signature_fields()
        if self.direction:  # the target style's label decides the sign
            fields["direction"] = True
        else:  # the whole distributions are compared: no label is read
            del fields["label"]
        return fields

    def _score(self, sources, rewrites, references, styles):
        clf = self.classifier()
        if clf.function != "softmax" or len(clf.labels) < 2:
            raise UserError(f"{self.name} needs a single-label classifier with two labels or more (a distribution); "
                            f"{clf.name!r} gives {clf.function} scores of {len(clf.labels)} label(s)")
        q = clf.scores(rewrites)
        groups = targets(self, sources, references)
        flat = [t for refs in groups for t in refs]
        owners = [row for row, refs in enumerate(groups) for _ in refs]
        try:
            p_flat = clf.scores(flat)
        except RowError as err:  # a source's or a reference's row: the caller's
            raise RowError(owners[err.row], f"its {self.inputs}: {err.reason}") from err
        q_flat = np.repeat(q, [len(refs) for refs in groups], axis=0)
        values = self._measure(p_flat, q_flat)
        out, k = [], 0
        for refs in groups:
            out.append(float(CLOSER[self.measure](values[k:k + len(refs)])))
            k += len(refs)
        if self.direction:
            indices = self.rule.indices(clf, styles, len(rewrites))
            p = clf.scores(sources)
            out = [v if q[i, t] >= p[i, t] else -v for i, (v, t) in enumerate(zip(out, indices, strict=True))]
        return out

    def _measure(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        if self.measure == "emd":
            return emd(p, q)
        if self.measure == "kl":
            return kl_divergence(p, q)
        if self.measure == "js":
            return js_divergence(p, q)
        return cosine(p, q)
