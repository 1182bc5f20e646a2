"""Baseline metrics for style transfer, one module each, behind a name registry.

Source-based metrics (``s_``) compare the rewrite with its source, reference-based ones (``r_``) with the
reference rewrite(s). Every metric maps (sources, rewrites, references, styles) to one float per row and has
a sacrebleu-like ``signature``.

=================  =======================================================================
``s_bleu/r_bleu``  sacrebleu sentence BLEU (default settings)
``s_chrf/r_chrf``  sacrebleu sentence chrF
``s_ter/r_ter``    sacrebleu sentence TER (lower = better; negated in correlations)
``s_pinc``         PINC (Chen & Dolan 2011), n-grams of the rewrite absent from the source
``s_paper_bleu``   the paper's NLTK BLEU (characters, source as hypothesis, method1 smoothing)
``s_cosine``       cosine of sentence embeddings (``model=...``; LaBSE by default)
``s_meteor``       NLTK's METEOR as the paper's ``evaluate`` module called it (WordNet 3.0; ``tok=nltk3.9``)
``s_evaluate``     any ``evaluate`` module (``module=bertscore``...); aliases s_bertscore, s_bleurt...
``logprob_*``      LogProb content / style (``model=1b`` ...)
``autorater_*``    LLM-as-autorater meaning / style / fluency (``model=3b:mode=paper``, ``prompt=mukherjee``)
``clf_*``          a text classifier's accuracy / confidence for the target style (``model=...``, ``labels=...``)
``s_clf_*``        EMD / KL / JS / cosine of its label distributions, source vs rewrite (``r_``: vs reference)
=================  =======================================================================
"""

from __future__ import annotations

from styleeval.metrics.base import Metric, check_references
from styleeval.metrics.registry import DEFAULT_METRICS, REGISTRY, available_metrics, get_metric, parse_spec

__all__ = [
    "DEFAULT_METRICS",
    "REGISTRY",
    "Metric",
    "available_metrics",
    "check_references",
    "get_metric",
    "parse_spec",
]
