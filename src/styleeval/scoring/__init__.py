"""The scoring layer below the meta-evaluation and the system comparison: the rows a metric reads
(:class:`ScoringInputs`), one metric's score of every row (:func:`score_dataset`, resumable chunk by chunk), and the
on-disk :class:`ScoresCache` keyed by the metric's signature and the inputs' fingerprint.

>>> from styleeval.scoring import ScoresCache, ScoringInputs, score_dataset
"""

from __future__ import annotations

from styleeval.scoring.cache import ScoresCache, default_cache_dir
from styleeval.scoring.inputs import ScoringInputs
from styleeval.scoring.score import score_dataset

__all__ = ["ScoresCache", "ScoringInputs", "default_cache_dir", "score_dataset"]
