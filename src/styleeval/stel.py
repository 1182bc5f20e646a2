"""STEL (Wegmann & Nguyen, 2021): can a similarity measure tell style apart while content is held fixed?

A *quadruple* task gives two anchors A1, A2 (one content, two styles) and two sentences S1, S2 (another content, the
same two styles); a method orders S1, S2 to match the anchors' styles. With a similarity ``sim`` it decides S1-S2
(answer 1) when (the paper's equation 1)

    (1 - sim(A1, S1))^2 + (1 - sim(A2, S2))^2  <  (1 - sim(A1, S2))^2 + (1 - sim(A2, S1))^2

S2-S1 (answer 2) for ``>``, and is *undecided* (answer 0) on equality. The *triple* task (STEL-or-content) replaces
the sentence in A2's style by A2 itself: the method must prefer the sentence in A1's style over A1's own content in
the other style (higher ``sim(A1, .)`` wins; equal: undecided). Accuracy counts an undecided task as 0.5 (the
expectation of the paper's random tie-break).

Methods: the paper's simple measures, each a few lines (:data:`METHODS`: ``char3gram``, ``word_length``,
``punctuation``, ``share_cased``, ``edit_distance``), sentence-embedding cosine (``embedding``; a
sentence-transformers model) and any Hugging Face encoder's mean-pooled last layer (``encoder``; the paper's
BERT/RoBERTa rows), or any callable ``sim(a, b) -> float``.

    >>> from styleeval import stel
    >>> preds = stel.evaluate("share_cased", component="contraction")      # {task id: 1, 2 or 0}
    >>> len(preds), sorted(set(preds.values()))
    (100, [1, 2])
    >>> stel.summarize({"share_cased": preds})[0]                            # accuracy, undecided share per component
    {'method': 'share_cased', 'component': 'contraction', 'accuracy': 1.0, 'undecided': 0.0, 'n': 100}
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from styleeval.errors import UserError
from styleeval.progress import bar, enabled, stage

Similarity = Callable[[str, str], float]
"""A style similarity of two texts: higher = more similar (1 = same)."""
BatchSimilarity = Callable[[Sequence[str], Sequence[str]], list[float]]
"""Similarities of many pairs at once (what :func:`evaluate` calls)."""

PUNCTUATION = ("'", ":", ",", "_", "!", "?", ";", ".", '"', "(", ")", "-")
"""The punctuation marks of the paper's punctuation similarity (after Sari et al., 2018)."""


# -- the paper's simple measures ------------------------------------------------------------------------------------
def cosine(u: Sequence[float], v: Sequence[float]) -> float:
    """Cosine similarity; 0 when exactly one vector is zero, 1 when both are (two empty feature sets match)."""
    uu = sum(x * x for x in u)
    vv = sum(x * x for x in v)
    if uu > 0 and vv > 0:
        return sum(x * y for x, y in zip(u, v, strict=True)) / math.sqrt(uu * vv)
    return 0.0 if uu > 0 or vv > 0 else 1.0


def _counts_cosine(a: Counter, b: Counter) -> float:
    keys = sorted(set(a) | set(b))
    return cosine([a[k] for k in keys], [b[k] for k in keys])


def char3grams(text: str) -> Counter:
    """Character 3-gram counts, lowercased, runs of two or more whitespace characters collapsed to one space."""
    text = re.sub(r"\s\s+", " ", text.lower())
    return Counter(text[i : i + 3] for i in range(len(text) - 2))


def char3gram_similarity(a: str, b: str) -> float:
    """Cosine of the character 3-gram count vectors (1 when neither text has a 3-gram)."""
    return _counts_cosine(char3grams(a), char3grams(b))


def average_word_length(text: str) -> float:
    """Mean length of the words of ``text`` split on single spaces."""
    words = text.split(" ")
    return sum(len(w) for w in words) / len(words)


def word_length_similarity(a: str, b: str) -> float:
    """1 - |a - b| / max(a, b) of the average word lengths (1 when both are 0)."""
    la, lb = average_word_length(a), average_word_length(b)
    top = max(la, lb)
    return 1.0 if top == 0 else 1 - abs(la - lb) / top


def punctuation_frequencies(text: str) -> list[float]:
    """Frequency of each mark of :data:`PUNCTUATION` relative to the number of characters."""
    counts = Counter(text)
    return [counts[p] / len(text) if text else 0.0 for p in PUNCTUATION]


def punctuation_similarity(a: str, b: str) -> float:
    """Cosine of the punctuation frequency vectors (1 when neither text has punctuation, 0 when one has none)."""
    return cosine(punctuation_frequencies(a), punctuation_frequencies(b))


def share_cased(text: str) -> float:
    """Share of upper-case characters among all characters (0 for an empty text)."""
    return sum(c.isupper() for c in text) / len(text) if text else 0.0


def share_cased_similarity(a: str, b: str) -> float:
    """1 - the difference of the shares of upper-case characters."""
    return 1 - abs(share_cased(a) - share_cased(b))


def levenshtein(a: str, b: str) -> int:
    """Character edit distance (insertions, deletions, substitutions of cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def edit_distance_similarity(a: str, b: str) -> float:
    """1 - edit distance / the longer length (1 for two empty texts)."""
    if not a and not b:
        return 1.0
    return 1 - levenshtein(a, b) / max(len(a), len(b))


def _pairwise(fn: Similarity) -> BatchSimilarity:
    def batch(texts_a: Sequence[str], texts_b: Sequence[str]) -> list[float]:
        return [float(fn(a, b)) for a, b in zip(texts_a, texts_b, strict=True)]

    return batch


# -- model-based measures ------------------------------------------------------------------------------------------
def embedding_similarity(model: str = "minilm-offline", device: str | None = None,
                         progress: bool | None = None) -> BatchSimilarity:
    """Cosine of sentence-transformers embeddings (``minilm-offline``: the bundled all-MiniLM-L6-v2); ``progress``:
    a line while the model loads and a bar over the texts embedded (``None``: where stderr is a terminal)."""
    from styleeval.metrics.cosine import cosine_similarities, load_encoder  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    with stage(f"loading sentence-transformers model {model}", progress):
        encoder = load_encoder(model, device)
    return lambda texts_a, texts_b: cosine_similarities(encoder, texts_a, texts_b, progress=enabled(progress))


def encoder_similarity(model: str, device: str | None = None, batch_size: int = 32,
                       progress: bool | None = None) -> BatchSimilarity:
    """Cosine of a Hugging Face encoder's last hidden layer, mean-pooled over the tokens (the paper's BERT/RoBERTa
    rows: ``bert-base-cased``, ``roberta-base``...); ``progress`` as in :func:`embedding_similarity`."""
    with stage(f"loading encoder {model}", progress):
        import torch  # noqa: PLC0415 - heavy (torch)
        from transformers import AutoModel, AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

        from styleeval.metrics.cosine import resolve_model  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

        name = resolve_model(model)
        tokenizer = AutoTokenizer.from_pretrained(name)
        net = AutoModel.from_pretrained(name).to(device or "cpu").eval()

    @torch.inference_mode()
    def embed(texts: list[str]) -> torch.Tensor:
        out = []
        for start in bar(range(0, len(texts), batch_size), desc="embedding", unit="batch", progress=progress):
            enc = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, return_tensors="pt")
            enc = {k: v.to(net.device) for k, v in enc.items()}
            hidden = net(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            out.append(((hidden * mask).sum(1) / mask.sum(1)).float().cpu())
        return torch.cat(out)

    def batch(texts_a: Sequence[str], texts_b: Sequence[str]) -> list[float]:
        unique = list(dict.fromkeys([*texts_a, *texts_b]))
        emb = torch.nn.functional.normalize(embed(unique), dim=-1)
        index = {t: i for i, t in enumerate(unique)}
        a = emb[[index[t] for t in texts_a]]
        b = emb[[index[t] for t in texts_b]]
        return (a * b).sum(-1).tolist()

    return batch


METHODS: dict[str, Similarity] = {
    "char3gram": char3gram_similarity,
    "word_length": word_length_similarity,
    "punctuation": punctuation_similarity,
    "share_cased": share_cased_similarity,
    "edit_distance": edit_distance_similarity,
}
"""The paper's deterministic measures by name (``embedding`` and ``encoder`` load models: see :func:`get_method`)."""

PAPER_NAMES = {
    "char3gram": "CharacterThreeGramSimilarity",
    "word_length": "WordLengthSimilarity",
    "punctuation": "PunctuationSimilarity",
    "share_cased": "UppercaseSimilarity",
    "edit_distance": "LevenshteinSimilarity",
}
"""Our method names -> the columns of the authors' per-task predictions file."""


def check_method(method: str) -> None:
    """A method name is known and what it needs is installed (``embedding``: sentence-transformers), checked before
    any task is loaded or model read; a ``ValueError`` says what is wrong."""
    name, _, arg = str(method).partition(":")
    if name == "embedding":
        from styleeval.metrics.cosine import require_encoder  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

        require_encoder("STEL's embedding method", arg or "minilm-offline")
    elif name == "encoder" and not arg:
        raise UserError("method 'encoder' needs a model: encoder:<Hugging Face id or path>")
    elif name not in METHODS and name != "encoder":
        raise UserError(f"unknown STEL method {method!r}; choose from "
                        f"{', '.join([*METHODS, 'embedding', 'encoder:<id>'])}")


def get_method(method: str | Similarity | BatchSimilarity, **options: Any) -> BatchSimilarity:
    """A batched similarity from a name (:data:`METHODS`, ``embedding[:model]``, ``encoder:<hf id>``) or a callable
    ``sim(a, b) -> float``."""
    if callable(method):
        return _pairwise(method)  # type: ignore[arg-type]
    name, _, arg = str(method).partition(":")
    arg = arg or options.get("model", "")
    check_method(f"{name}:{arg}" if arg else name)
    if name in METHODS:
        return _pairwise(METHODS[name])
    if name == "embedding":
        return embedding_similarity(arg or "minilm-offline", options.get("device"), options.get("progress"))
    return encoder_similarity(arg, options.get("device"), progress=options.get("progress"))


# -- the decision rule ---------------------------------------------------------------------------------------------
TIE_TOLERANCE = 1e-9
"""Distances (or similarities) closer than this, relative to their size, are equal: the paper's '=' case. Without it,
mathematically equal distances computed from different vectors are 'decided' by the last bits of floating-point
rounding (see docs/reproduction.md, STEL)."""


def _equal(a: float, b: float) -> bool:
    return abs(a - b) <= TIE_TOLERANCE * max(1.0, abs(a), abs(b))


def decide_quadruple(sim_a1_s1: float, sim_a1_s2: float, sim_a2_s1: float, sim_a2_s2: float) -> int:
    """The paper's equation 1: 1 (order S1-S2), 2 (S2-S1) or 0 (equal distances: undecided)."""
    keep = math.sqrt((1 - sim_a1_s1) ** 2 + (1 - sim_a2_s2) ** 2)
    swap = math.sqrt((1 - sim_a1_s2) ** 2 + (1 - sim_a2_s1) ** 2)
    if _equal(keep, swap):
        return 0
    return 1 if keep < swap else 2


def decide_triple(sim_a1_s1: float, sim_a1_s2: float) -> int:
    """The triple task: the sentence more similar to A1 (1 or 2), 0 when equally similar."""
    if _equal(sim_a1_s1, sim_a1_s2):
        return 0
    return 1 if sim_a1_s1 > sim_a1_s2 else 2


@dataclass(frozen=True)
class Task:
    """One STEL task: anchors, sentences, the correct answer, its component and id."""

    id: str
    component: str
    anchor_1: str
    anchor_2: str
    sentence_1: str
    sentence_2: str
    correct: int

    def as_triple(self) -> Task:
        """The STEL-or-content triple: the sentence in A2's style is replaced by A2 (same content as A1)."""
        if self.correct == 1:
            return Task(self.id, self.component, self.anchor_1, self.anchor_2, self.sentence_1, self.anchor_2, 1)
        return Task(self.id, self.component, self.anchor_1, self.anchor_2, self.anchor_2, self.sentence_2, 2)


def load_tasks(component: str | Sequence[str] | None = None, data_dir: str | None = None,
               include_dimensions: bool = False) -> list[Task]:
    """STEL tasks from :func:`styleeval.corpora.load_corpus` (``component``: a style type such as ``contraction``,
    ``nbr_substitution``, ``formality``; several; or ``None`` for all loaded). Task ids are STEL's ``ID``."""
    from styleeval.corpora import load_corpus  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    ds = load_corpus("stel", data_dir, include_dimensions=include_dimensions)
    wanted = None if component is None else ({component} if isinstance(component, str) else set(component))
    known = set(ds["component"])
    if wanted is not None and wanted - known:
        hint = "" if include_dimensions else " (formality/simplicity need include_dimensions=True: local use only)"
        raise UserError(f"unknown STEL component(s) {sorted(wanted - known)}; available: {sorted(known)}{hint}")
    return [Task(r["id"].rsplit("/", 1)[-1], r["component"], r["anchor_1"], r["anchor_2"], r["sentence_1"],
                 r["sentence_2"], int(r["correct_alternative"]))
            for r in ds if wanted is None or r["component"] in wanted]


def evaluate(method: str | Similarity | BatchSimilarity, component: str | Sequence[str] | None = None,
             task: str = "quadruple", tasks: Iterable[Task] | None = None, data_dir: str | None = None,
             include_dimensions: bool = False, progress: bool | None = None, **options: Any) -> dict[str, int]:
    """Run ``method`` on STEL tasks; returns {task id: 1, 2, or 0 for undecided}, in task order.

    Args:
        method: a name of :data:`METHODS`, ``embedding`` / ``embedding:<model>``, ``encoder:<hf id>``, or a callable
            ``sim(a, b) -> float``.
        component: the style type(s) to run (``contraction``, ``nbr_substitution``, ``emotives``,
            ``em-subj-pronoun``; ``formality``, ``simplicity`` with ``include_dimensions``); ``None``: all loaded.
        task: ``quadruple`` (equation 1) or ``triple`` (STEL-or-content).
        tasks: tasks to use instead of loading them.
        progress: a line while a model-based method loads its model and a bar over the texts it embeds (``None``:
            where stderr is a terminal).
    """
    if task not in ("quadruple", "triple"):
        raise UserError(f"task must be 'quadruple' or 'triple', got {task!r}")
    items = list(tasks) if tasks is not None else load_tasks(component, data_dir, include_dimensions)
    if task == "triple":
        items = [t.as_triple() for t in items]
    sim = get_method(method, progress=progress, **options)
    left, right = [], []
    for t in items:
        left += [t.anchor_1, t.anchor_1] + ([t.anchor_2, t.anchor_2] if task == "quadruple" else [])
        right += [t.sentence_1, t.sentence_2] + ([t.sentence_1, t.sentence_2] if task == "quadruple" else [])
    sims = sim(left, right)
    step = 4 if task == "quadruple" else 2
    out = {}
    for k, t in enumerate(items):
        s = sims[k * step : (k + 1) * step]
        out[t.id] = decide_quadruple(*s) if task == "quadruple" else decide_triple(*s)
    return out


def accuracy(predictions: Mapping[str, int], correct: Mapping[str, int]) -> tuple[float, float, int]:
    """(accuracy with undecided tasks counted as 0.5, share undecided, number of tasks)."""
    n = len(predictions)
    if n == 0:
        return math.nan, math.nan, 0
    right = sum(1.0 if p == correct[i] else 0.5 if p == 0 else 0.0 for i, p in predictions.items())
    undecided = sum(p == 0 for p in predictions.values())
    return right / n, undecided / n, n


def summarize(results: Mapping[str, Mapping[str, int]], tasks: Sequence[Task] | None = None,
              data_dir: str | None = None, include_dimensions: bool = False) -> list[dict[str, Any]]:
    """Per method and component (and ``all``): accuracy, share undecided, number of tasks."""
    tasks = list(tasks) if tasks is not None else load_tasks(None, data_dir, include_dimensions)
    by_id = {t.id: t for t in tasks}
    rows = []
    for name, preds in results.items():
        components = list(dict.fromkeys(by_id[i].component for i in preds))
        for comp in [*components, "all"]:
            subset = {i: p for i, p in preds.items() if comp == "all" or by_id[i].component == comp}
            acc, und, n = accuracy(subset, {i: by_id[i].correct for i in subset})
            rows.append({"method": name, "component": comp, "accuracy": acc, "undecided": und, "n": n})
    return rows


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The :func:`summarize` rows as a Markdown table: one line per method, accuracy (undecided share) per
    component."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    components = list(dict.fromkeys(r["component"] for r in rows))
    cell = {(r["method"], r["component"]): r for r in rows}
    lines = ["| method | " + " | ".join(components) + " |", "|---|" + "---|" * len(components)]
    for m in methods:
        vals = []
        for c in components:
            r = cell.get((m, c))
            vals.append("–" if r is None else f"{r['accuracy']:.2f} ({r['undecided']:.2f})")
        lines.append(f"| {m} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n\nCells: accuracy (undecided tasks count 0.5), in brackets the share undecided."


# -- the authors' published results --------------------------------------------------------------------------------
PREDICTIONS_FILE = "Data/Experiment-Results/models/STEL_single-preds_all-models.tsv"

_COMPONENTS = ("nbr_substitution", "contraction")
PAPER_TABLE3: dict[str, dict[str, float]] = {  # accuracy (Table 3, columns nb3r and c'tion)
    m: dict(zip(_COMPONENTS, v, strict=True)) for m, v in {
        "char3gram": (0.50, 0.64), "word_length": (0.50, 0.94), "punctuation": (0.50, 0.92),
        "share_cased": (0.50, 1.0), "edit_distance": (0.50, 0.39)}.items()
}
PAPER_TABLE7: dict[str, dict[str, float]] = {  # share of undecided tasks (Table 7, columns nb3r and c'tion)
    m: dict(zip(_COMPONENTS, v, strict=True)) for m, v in {
        "char3gram": (0.57, 0.02), "word_length": (0.91, 0.0), "punctuation": (0.97, 0.06),
        "share_cased": (0.91, 0.0), "edit_distance": (0.52, 0.33)}.items()
}


def published_predictions(data_dir: str | None = None) -> dict[str, dict[str, int]]:
    """The authors' per-task predictions (``STEL_single-preds_all-models.tsv``): {method column: {task ID: 1, 2 or
    0}}, plus ``"Correct Alternative"``. Read from the local mirror (``data_dir`` / ``$STYLEEVAL_DATA_DIR``) or
    downloaded from the pinned STEL commit."""
    from styleeval.corpora._files import resolve  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)
    from styleeval.corpora.stel import SOURCE  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    path = resolve(SOURCE, PREDICTIONS_FILE, data_dir)
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    columns = [c for c in rows[0] if c not in ("", "ID", "style type")]
    return {c: {r["ID"]: int(r[c]) for r in rows} for c in columns}
