"""The columns of a rating corpus that the meta-evaluation needs, plus its fingerprint and subsets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from styleeval.corpora import SPECS
from styleeval.errors import UserError
from styleeval.scoring.inputs import ScoringInputs

DIMENSIONS = ("content", "style", "fluency")
#: Datasets built to stress-test metrics (the paper's constructed test set): grouped apart, per task.
TESTSET_DATASETS = frozenset({"style_gap_testset"})
REQUIRED = ("source", "rewrite", "target_style", "task", "system", "is_reference_rewrite")
STYLE_WORDS = ("corpus", "authors")

ANY_CORPUS_STYLE_WORDS = {"layman": "understandable for layman", "expert": "addressed to an expert",
                          "simplicity": "simplified"}


def authors_style_words(corpus: str) -> dict[str, str]:
    """``style_words="authors"``: the target-style words of the authors' run scripts where the corpus's differ: its
    spec's ``authors_style_words`` over :data:`ANY_CORPUS_STYLE_WORDS` (words of any corpus). ASSET is "simplified" (their ScialomD21 loader), Ziegenbein et al. "appropriated" (their
ZeigenB11 loader), Cao et al.'s expertise styles "understandable for layman" / "addressed to an expert" (their
``run_logprob_on_data.py``). The test set, Lai et al. (formal/informal) and Mir et al. (positive/negative) keep
their words."""
    spec = SPECS.get(corpus)
    return {**ANY_CORPUS_STYLE_WORDS, **(dict(spec.authors_style_words) if spec is not None else {})}


def with_style_words(data: RatedData, style_words: str) -> tuple[RatedData, int]:
    """``data`` with its target styles worded as ``style_words`` says (``corpus``: unchanged; ``authors``:
    :func:`authors_style_words`), and the number of rows changed. The fingerprint follows the words, so cached
    scores of one wording are never served for the other."""
    if style_words not in STYLE_WORDS:
        raise UserError(f"style_words must be one of {', '.join(STYLE_WORDS)}, got {style_words!r}")
    if style_words == "corpus":
        return data, 0
    mapping = authors_style_words(data.name)
    styles = [mapping.get(s, s) for s in data.styles]
    changed = sum(a != b for a, b in zip(styles, data.styles, strict=True))
    return (replace(data, styles=styles) if changed else data), changed


@dataclass
class RatedData(ScoringInputs):
    """One rating corpus in column form (rows in corpus order): what metrics read (:class:`ScoringInputs`), and the
    tasks, systems, reference flags and human ratings the meta-evaluation correlates with."""

    tasks: list[str] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    is_reference: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    human: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Any, name: str | None = None) -> RatedData:
        """Build from a ``datasets.Dataset``, a pandas DataFrame or a list of dicts in the common long schema.

        Raises ``ValueError`` naming the row and the field when a required field is missing or malformed.
        """
        if hasattr(rows, "to_dict") and hasattr(rows, "columns") and not hasattr(rows, "features"):
            records: list[Mapping[str, Any]] = rows.to_dict("records")  # pandas
        elif hasattr(rows, "features"):  # datasets.Dataset: column access is much faster than row access
            wanted = {*REQUIRED, "id", "source_id", "reference", *(f"{d}_mean" for d in DIMENSIONS)}
            cols = {c: rows[c] for c in rows.column_names if c in wanted}
            records = [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
        else:
            records = list(rows)
        if not records:
            raise UserError(f"dataset {name or '?'} has no rows")
        name = name or str(records[0].get("dataset") or "dataset")
        for i, r in enumerate(records):
            for key in REQUIRED:
                if key not in r:
                    raise UserError(f"{name} row {i}: field {key!r} is missing")
            for key in ("source", "rewrite", "target_style"):
                if not isinstance(r[key], str):
                    raise UserError(f"{name} row {i} ({r.get('id', i)}): {key} is {type(r[key]).__name__}, not str")
        refs: list[list[str] | None] = []
        for i, r in enumerate(records):
            ref = r.get("reference")
            if ref is None or (isinstance(ref, float) and np.isnan(ref)):
                refs.append(None)
            elif isinstance(ref, str):
                refs.append([ref])
            else:
                ref = [x for x in list(ref) if x is not None]
                if not all(isinstance(x, str) for x in ref):
                    raise UserError(f"{name} row {i} ({r.get('id', i)}): reference must be a list of strings")
                refs.append(ref or None)
        human = {}
        for dim in DIMENSIONS:
            col = f"{dim}_mean"
            human[dim] = np.array(
                [np.nan if r.get(col) is None else float(r[col]) for r in records], dtype=float
            )
        return cls(
            name=name,
            ids=[str(r.get("id", f"{name}/{i}")) for i, r in enumerate(records)],
            sources=[r["source"] for r in records],
            rewrites=[r["rewrite"] for r in records],
            references=refs,
            styles=[r["target_style"] for r in records],
            tasks=[str(r["task"]) for r in records],
            systems=[str(r["system"]) for r in records],
            source_ids=[str(r.get("source_id", i)) for i, r in enumerate(records)],
            is_reference=np.array([bool(r["is_reference_rewrite"]) for r in records]),
            human=human,
        )

    @property
    def kind(self) -> str:
        """``testset``, ``system`` (only system outputs), ``reference`` (only references) or ``mixed``."""
        if self.name in TESTSET_DATASETS:
            return "testset"
        if self.is_reference.all():
            return "reference"
        return "mixed" if self.is_reference.any() else "system"

    def subsets(self, dimension: str) -> dict[str, np.ndarray]:
        """Row indices of each subset that has ratings in ``dimension``.

        ``all`` always; ``system`` and ``reference`` when the corpus has both system outputs and rated human
        references; one subset per task when it has several tasks (the test set).
        """
        if dimension not in DIMENSIONS:
            raise UserError(f"dimension must be one of {DIMENSIONS}, got {dimension!r}")
        rated = np.isfinite(self.human[dimension])
        out = {"all": np.flatnonzero(rated)}
        if self.kind == "mixed":
            out["system"] = np.flatnonzero(rated & ~self.is_reference)
            out["reference"] = np.flatnonzero(rated & self.is_reference)
        tasks = np.array(self.tasks)
        unique_tasks: Iterable[str] = list(dict.fromkeys(self.tasks))
        if len(unique_tasks) > 1:  # type: ignore[arg-type]
            for t in unique_tasks:
                out[t] = np.flatnonzero(rated & (tasks == t))
        return {k: v for k, v in out.items() if len(v)}
