"""Style classifiers as metrics: ``clf_accuracy`` and ``clf_confidence`` (any Hugging Face text-classification model).

The field's "de facto" style measure (Pauli et al. 2025): a classifier fine-tuned on the style reads the rewrite,
and the row scores

- ``clf_accuracy``: 1.0 when the classifier's most probable label is the target style's label, else 0.0 (a system's
  mean is Mukherjee et al. 2025's *Sentence Accuracy*);
- ``clf_confidence``: the classifier's probability of the target style's label (Mukherjee et al.'s *Classifier
  Confidence*; Lai et al. 2022's C-GYAFC and C-PT16, whose formality classifiers give "the confidence of formal");
  with a fixed ``label=`` it is any label's probability whatever the row's style: fluency as the probability of
  "acceptable" from a CoLA classifier, Pauli et al.'s Table 8 ``clf_cola``).

The probabilities are what ``transformers.pipeline("text-classification", top_k=None)`` gives (its default function:
softmax for a single-label model, sigmoid for a multi-label or one-output model, the raw output of a regressor),
computed in float64 from the model's logits (tested against the pipeline on a random classifier).

Which label means the target style (``label_for``): by default the row's target style itself, matched
case-insensitively with the model's label names (``positive`` -> ``POSITIVE``); ``labels=formal=LABEL_1,
informal=LABEL_0`` maps the styles of a corpus whose labels are named otherwise (a label is a name of the model's
``id2label`` or its index); ``label=LABEL_1`` fixes one label for every row (then the rows' styles are not read). A
style the model has no label for is an error naming the row, the style and the model's labels.

A score is a function of the row and the signature, to the bit: every forward pass has the shape (``batch_size`` rows,
the row's own token count): texts are grouped by their token count (never padded) and a group's last batch is
filled up with copies of its last text, so no row's numbers depend on its batch-mates (torch picks its matrix kernels
by shape; measured on this CPU: a row computed in a batch of 8 equals itself in any other batch of 8, and differs by
~1e-8 from itself alone). ``batch_size`` is in the signature for that reason. Each distinct text is classified once
per process per classifier (sources repeat across systems; the six classifier metrics share the rows).

Options: ``model`` (Hub id or local folder; a model object from Python, with ``tokenizer``), ``label`` / ``labels``,
``device``, ``dtype`` (float32), ``batch_size`` (8). The signature names the weights (``model@revision``: a Hub
commit, ``local-<hash>`` of a local folder's files, ``local`` for a model object), the tokenizer's fingerprint, the
function applied, the label rule, the dtype and the batch shape.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from styleeval._version import __version__
from styleeval.errors import RowError, UserError
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import check_options, register
from styleeval.signature import Signature

DEFAULT_BATCH = 8
"""Rows per forward pass: every pass has this many rows (a group's last batch is filled up with copies)."""
FUNCTIONS = ("softmax", "sigmoid", "none")
CLASSIFIER_OPTIONS = ("model", "tokenizer", "label", "labels", "device", "dtype", "batch_size")


def _function(config: Any) -> str:
    """The function ``pipeline("text-classification")`` applies to the logits by default (its ``postprocess``)."""
    if getattr(config, "problem_type", None) == "regression":
        return "none"
    if getattr(config, "problem_type", None) == "multi_label_classification" or config.num_labels == 1:
        return "sigmoid"
    return "softmax"


class StyleClassifier:
    """A text-classification model and its tokenizer, loaded once (:func:`shared_classifier`): the pipeline's scores
    of every label for any texts, batch-invariant (see the module docstring), each distinct text computed once."""

    def __init__(self, model: Any, tokenizer: Any = None, device: str | None = None, dtype: str = "float32",
                 batch_size: int = DEFAULT_BATCH) -> None:
        import torch  # noqa: PLC0415 - heavy (torch)
        from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

        from styleeval.models import (  # noqa: PLC0415 - heavy (torch, via styleeval.models)
            check_downloadable,
            explain_load_error,
            model_fingerprint,
            resolve_device,
            resolve_dtype,
            tokenizer_fingerprint,
        )

        if int(batch_size) < 1:
            raise UserError(f"batch_size must be a positive number of rows, got {batch_size}")
        self.batch_size = int(batch_size)
        self.device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype)
        self.dtype = str(torch_dtype).removeprefix("torch.")
        fingerprint = None
        if isinstance(model, (str, os.PathLike)):
            name = os.fspath(model)
            if os.path.isdir(name):
                name = os.path.realpath(name)
                fingerprint = model_fingerprint(name)
            else:
                check_downloadable(name, "classifier")
            try:
                if tokenizer is None:
                    tokenizer = AutoTokenizer.from_pretrained(name)
                model = AutoModelForSequenceClassification.from_pretrained(name, dtype=torch_dtype)
            except (OSError, ValueError, ImportError) as err:
                raise explain_load_error(name, err, "classifier") from None
        elif isinstance(model, torch.nn.Module):
            name = getattr(model, "name_or_path", "") or getattr(model.config, "_name_or_path", "") or "model-object"
            if tokenizer is None:
                raise UserError("tokenizer: a classifier object was given without its tokenizer; pass tokenizer=...")
            model = model.to(torch_dtype)
        else:
            raise UserError(f"model: expected a Hub id, a folder or a model object, got {type(model).__name__}")
        if isinstance(tokenizer, (str, os.PathLike)):
            tokenizer = AutoTokenizer.from_pretrained(os.fspath(tokenizer))
        if not hasattr(model.config, "id2label") or not getattr(model.config, "num_labels", 0):
            raise UserError(f"model: {name!r} is not a text-classification model (no labels in its config)")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.name = str(name)
        self.revision = fingerprint or getattr(model.config, "_commit_hash", None) or "local"
        self.tokenizer_hash = tokenizer_fingerprint(tokenizer)
        self.labels = [str(model.config.id2label[i]) for i in range(model.config.num_labels)]
        self.function = _function(model.config)
        self.max_length = self._max_length()
        self._known: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()  # one forward pass at a time (a CPU pass uses every core)

    def _max_length(self) -> int:
        limit = getattr(self.tokenizer, "model_max_length", None)
        if not limit or limit > 1_000_000:  # transformers' "no limit" placeholder
            limit = getattr(self.model.config, "max_position_embeddings", None) or 512
        return int(limit)

    @property
    def model_field(self) -> str:
        """``name@revision``: the signature's ``model`` field."""
        return f"{self.name}@{self.revision}"

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """(n, labels) float64: the pipeline's score of every label for each text, in input order. A text longer
        than the model takes is a :class:`~styleeval.errors.RowError` naming its row."""
        wanted = list(dict.fromkeys(t for t in texts if t not in self._known))
        if wanted:
            encodings = self._encode(wanted, list(texts))
            self._compute(wanted, encodings)
        if not len(texts):
            return np.zeros((0, len(self.labels)))
        return np.stack([self._known[t] for t in texts])

    def _encode(self, wanted: list[str], texts: list[str]) -> list[dict[str, list[int]]]:
        encoded = self.tokenizer(wanted, truncation=False)
        out = [{key: list(encoded[key][i]) for key in encoded.keys()} for i in range(len(wanted))]
        for text, enc in zip(wanted, out, strict=True):
            if len(enc["input_ids"]) > self.max_length:
                raise RowError(texts.index(text), f"{len(enc['input_ids'])} tokens, more than the classifier "
                                                  f"{self.name!r} takes ({self.max_length}); shorten the text")
        return out

    def _compute(self, wanted: list[str], encodings: list[dict[str, list[int]]]) -> None:
        import torch  # noqa: PLC0415 - heavy (torch)

        groups: dict[int, list[int]] = {}
        for i, enc in enumerate(encodings):
            groups.setdefault(len(enc["input_ids"]), []).append(i)
        with self._lock, torch.inference_mode():
            for length in sorted(groups):
                rows = groups[length]
                for start in range(0, len(rows), self.batch_size):
                    part = rows[start:start + self.batch_size]
                    tile = part + [part[-1]] * (self.batch_size - len(part))  # every pass: (batch_size, length)
                    batch = {key: torch.tensor([encodings[i][key] for i in tile], device=self.device)
                             for key in encodings[part[0]]}
                    logits = self.model(**batch).logits.double()
                    values = self._apply(logits).cpu().numpy()
                    for k, i in enumerate(part):
                        self._known[wanted[i]] = values[k]

    def _apply(self, logits: Any) -> Any:
        import torch  # noqa: PLC0415 - heavy (torch)

        if self.function == "softmax":
            return torch.softmax(logits, dim=-1)
        if self.function == "sigmoid":
            return torch.sigmoid(logits)
        return logits

    def label_index(self, label: str) -> int | None:
        """The index of ``label``: a label name (case-insensitive when only one label matches so) or an index."""
        if label in self.labels:
            return self.labels.index(label)
        folded = [i for i, name in enumerate(self.labels) if name.casefold() == label.casefold()]
        if len(folded) == 1:
            return folded[0]
        if label.strip().isdigit() and int(label) < len(self.labels):
            return int(label)
        return None


_SHARED: dict[tuple, StyleClassifier] = {}
_SHARED_LOCK = threading.Lock()


def shared_classifier(model: Any, tokenizer: Any = None, device: str | None = None, dtype: str = "float32",
                      batch_size: int = DEFAULT_BATCH) -> StyleClassifier:
    """A :class:`StyleClassifier` loaded once per process per (model, tokenizer, device, dtype, batch size); a local
    folder whose files changed (its fingerprint) is loaded again."""
    from styleeval.models import model_fingerprint  # noqa: PLC0415 - heavy (torch, via styleeval.models)

    named = isinstance(model, (str, os.PathLike))
    fingerprint = model_fingerprint(model) if named and os.path.isdir(model) else None
    key = (os.fspath(model) if named else id(model), fingerprint,
           tokenizer if tokenizer is None or isinstance(tokenizer, (str, os.PathLike)) else id(tokenizer),
           device, dtype, int(batch_size))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = StyleClassifier(model, tokenizer, device, dtype, batch_size)
        return _SHARED[key]


@dataclass(frozen=True)
class LabelRule:
    """Which label of the classifier means a row's target style: ``fixed`` (one label for every row), ``mapping``
    (style -> label) or, with neither, the style's own name."""

    fixed: str | None = None
    mapping: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, label: str | None, labels: str | dict[str, str] | None) -> LabelRule:
        """From the spec's ``label=NAME`` or ``labels=style=LABEL,style=LABEL`` (a dict from Python)."""
        if label is not None and labels is not None:
            raise UserError("give label= (one label for every row) or labels= (a label per style), not both")
        if label is not None:
            if not str(label).strip():
                raise UserError("label= needs a label name or index")
            return cls(fixed=str(label).strip())
        if labels is None:
            return cls()
        if isinstance(labels, str):
            pairs = []
            for part in labels.split(","):
                style, sep, name = part.partition("=")
                if not sep or not style.strip() or not name.strip():
                    raise UserError(f"labels={labels!r}: write style=LABEL pairs separated by commas "
                                    "(e.g. labels=formal=LABEL_1,informal=LABEL_0)")
                pairs.append((style.strip(), name.strip()))
        else:
            pairs = [(str(k).strip(), str(v).strip()) for k, v in dict(labels).items()]
        styles = [s for s, _ in pairs]
        if len(set(styles)) != len(styles):
            raise UserError(f"labels: a style is mapped twice in {labels!r}")
        return cls(mapping=tuple(pairs))

    @property
    def needs_styles(self) -> bool:
        return self.fixed is None

    @property
    def field(self) -> str:
        """The rule as the signature writes it: ``LABEL``, ``style=LABEL,...`` or ``style`` (the style's own name)."""
        if self.fixed is not None:
            return self.fixed
        if self.mapping:
            return ",".join(f"{s}={n}" for s, n in self.mapping)
        return "style"

    def indices(self, classifier: StyleClassifier, styles: Sequence[str] | None, n: int) -> list[int]:
        """The label index of every row (a style the model has no label for: a ``RowError`` naming the row)."""
        wanted = [self.fixed] * n if self.fixed is not None else list(styles or [])
        mapping = dict(self.mapping)
        out, known = [], {}
        for row, style in enumerate(wanted):
            if style not in known:
                name = mapping.get(style, style) if self.fixed is None else style
                if self.mapping and style not in mapping:
                    raise RowError(row, f"target style {style!r} is not in labels= ({self.field}); add it")
                known[style] = classifier.label_index(name)
                if known[style] is None:
                    what = f"label {name!r}" if self.fixed is not None or self.mapping else f"target style {style!r}"
                    raise RowError(row, f"{what} is not a label of the classifier {classifier.name!r} (its labels: "
                                        f"{', '.join(classifier.labels)}); map the corpus's styles with "
                                        "labels=style=LABEL,... or fix one with label=LABEL")
            out.append(known[style])
        return out


class ClassifierMetric(Metric):
    """The options and signature shared by every metric that reads a style classifier (this module's and
    :mod:`styleeval.metrics.distributional`'s)."""

    inputs = "source"
    incremental = True

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return CLASSIFIER_OPTIONS

    def __init__(self, model: Any, tokenizer: Any = None, label: str | None = None,
                 labels: str | dict[str, str] | None = None, device: str | None = None, dtype: str = "float32",
                 batch_size: int | str = DEFAULT_BATCH) -> None:
        if model is None or (isinstance(model, str) and not model.strip()):
            raise UserError(f"{self.name} needs model=<a text-classification model: Hub id or folder> (e.g. "
                            "model=textattack/roberta-base-CoLA:label=LABEL_1)")
        try:
            rows = int(batch_size)
        except (TypeError, ValueError):
            raise UserError(f"batch_size must be a number of rows, got {batch_size!r}") from None
        self.model, self.tokenizer, self.device, self.dtype, self.batch_size = model, tokenizer, device, dtype, rows
        self.rule = LabelRule.from_options(label, labels)

    @classmethod
    def from_spec(cls, **opts: str) -> ClassifierMetric:
        """From a spec's options (``model``, ``label`` or ``labels``, ``device``, ``dtype``, ``batch_size``)."""
        check_options(opts, CLASSIFIER_OPTIONS)
        return cls(**opts)

    @property
    def needs_styles(self) -> bool:  # type: ignore[override]
        return self.rule.needs_styles

    def classifier(self) -> StyleClassifier:
        """The shared classifier (loaded on first use)."""
        return shared_classifier(self.model, self.tokenizer, self.device, self.dtype, self.batch_size)

    def signature_fields(self) -> dict[str, object]:
        clf = self.classifier()
        return {"model": clf.model_field, "tok": clf.tokenizer_hash, "fn": clf.function, "label": self.rule.field,
                "dtype": clf.dtype, "batch": clf.batch_size, "version": __version__}

    @property
    def signature(self) -> Signature:
        return Signature.build(self.name, self.signature_fields())

    def target_probabilities(self, texts: list[str], styles: list[str] | None) -> tuple[np.ndarray, list[int]]:
        """Every text's label scores and its target label's index."""
        clf = self.classifier()
        indices = self.rule.indices(clf, styles, len(texts))
        return clf.scores(texts), indices


@register("clf_confidence", kind="confidence")
@register("clf_accuracy", kind="accuracy")
class ClassifierScore(ClassifierMetric):
    """A style classifier's verdict on each rewrite: accuracy (its top label is the target's) or confidence."""

    @classmethod
    def spec_options(cls, **fixed: object) -> tuple[str, ...]:
        return CLASSIFIER_OPTIONS

    @classmethod
    def spec_summary(cls, **fixed: object) -> str:
        if fixed["kind"] == "accuracy":
            return ("1 if a text classifier's top label for the rewrite is the target style's, else 0 (model=HUB-ID "
                    "or folder; labels=style=LABEL,...; Sentence Accuracy).")
        return ("a text classifier's probability of the target style's label for the rewrite (model=...; label=LABEL "
                "for one label, e.g. CoLA's acceptable: fluency).")

    def __init__(self, kind: str, model: Any = None, **options: Any) -> None:
        if kind not in ("accuracy", "confidence"):
            raise UserError(f"kind must be 'accuracy' or 'confidence', got {kind!r}")
        self.kind = kind
        self.name = f"clf_{kind}"
        super().__init__(model, **options)

    @classmethod
    def from_spec(cls, kind: str, **opts: str) -> ClassifierScore:  # type: ignore[override]
        """From a spec's options (``model``, ``label`` or ``labels``, ``device``, ``dtype``, ``batch_size``)."""
        check_options(opts, CLASSIFIER_OPTIONS)
        return cls(kind, **opts)

    def _score(self, sources, rewrites, references, styles):
        scores, indices = self.target_probabilities(rewrites, styles)
        if self.kind == "confidence":
            return [float(scores[i, k]) for i, k in enumerate(indices)]
        clf = self.classifier()
        if clf.function != "softmax" or len(clf.labels) < 2:
            raise UserError(f"clf_accuracy needs a single-label classifier with two labels or more; {clf.name!r} "
                            f"gives {clf.function} scores of {len(clf.labels)} label(s): use clf_confidence")
        return [1.0 if int(np.argmax(scores[i])) == k else 0.0 for i, k in enumerate(indices)]
