"""What a metric reads from a set of rows, in column form: :class:`ScoringInputs`, with the fingerprint the scores
cache keys on. The meta-evaluation's :class:`~styleeval.metaeval.data.RatedData` and the system comparison both
hand the scoring layer one of these."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from styleeval.errors import UserError


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

    def check_columns(self) -> None:
        """Raise :class:`~styleeval.errors.UserError` unless the columns metrics read (sources, references, styles)
        hold one entry per rewrite: a shorter column would leave rows without their text."""
        n = len(self.rewrites)
        for column in ("sources", "references", "styles"):
            got = len(getattr(self, column))
            if got != n:
                raise UserError(f"scoring inputs {self.name!r}: {n} rewrites but {got} {column}; row {min(n, got)} "
                                f"has no {'rewrite' if got > n else column.removesuffix('s')}. Give every column one "
                                "entry per row (references: a list per row, or None)")

    @property
    def fingerprint(self) -> str:
        """SHA-256 (first 20 hex digits) of what metrics read: source, rewrite, references, style, in order."""
        self.check_columns()
        h = hashlib.sha256()
        for row in zip(self.sources, self.rewrites, self.references, self.styles, strict=True):
            h.update(json.dumps([row[0], row[1], None if row[2] is None else list(row[2]), row[3]],
                                ensure_ascii=False).encode("utf-8"))
            h.update(b"\n")
        return h.hexdigest()[:20]

    @property
    def has_references(self) -> np.ndarray:
        """Boolean mask of rows that have at least one reference."""
        return np.array([r is not None for r in self.references], dtype=bool)
