"""What a metric reads from a set of rows, in column form: :class:`ScoringInputs`, with the fingerprint the scores
cache keys on. The meta-evaluation's :class:`~styleeval.metaeval.data.RatedData` and the system comparison both
hand the scoring layer one of these."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class ScoringInputs:
    """Rows to score, in order: ``name`` (a label for progress bars and the cache), ``ids`` (what precomputed metrics
    look scores up by), ``sources``, ``rewrites``, ``references`` (a list per row, or ``None``), ``styles`` and
    ``source_ids`` (a source's rows are scored together: one prompt, one tree)."""

    name: str
    ids: Sequence[str]
    sources: Sequence[str]
    rewrites: Sequence[str]
    references: Sequence[Sequence[str] | None]
    styles: Sequence[str]
    source_ids: Sequence[str]

    def __len__(self) -> int:
        return len(self.rewrites)

    @property
    def fingerprint(self) -> str:
        """SHA-256 (first 20 hex digits) of what metrics read: source, rewrite, references, style, in order."""
        h = hashlib.sha256()
        for row in zip(self.sources, self.rewrites, self.references, self.styles):
            h.update(json.dumps([row[0], row[1], None if row[2] is None else list(row[2]), row[3]],
                                ensure_ascii=False).encode("utf-8"))
            h.update(b"\n")
        return h.hexdigest()[:20]

    @property
    def has_references(self) -> np.ndarray:
        """Boolean mask of rows that have at least one reference."""
        return np.array([r is not None for r in self.references], dtype=bool)
