"""styleeval: evaluate text style transfer and meta-evaluate its metrics against human ratings.

Public entry points (imported lazily so that ``import styleeval`` stays fast):

- :class:`styleeval.LogProb` -- the LogProb content-preservation / style-strength metric (Pauli et al. 2025).
- :class:`styleeval.Autorater` -- an instruct LLM as a 1-5 judge of meaning and style (paper mode / expected mode).
- :func:`styleeval.load_corpus` -- the human-rated corpora as ``datasets.Dataset`` objects.
- :func:`styleeval.evaluate_module` -- the folder of an ``evaluate`` module (``evaluate.load`` takes it), from a
  checkout or an installed wheel.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from styleeval._version import __version__

__all__ = ["Autorater", "AutoraterResults", "LogProb", "LogProbScores", "evaluate_module", "load_corpus",
           "__version__"]

_LAZY = {
    "Autorater": ("styleeval.autorater", "Autorater"),
    "AutoraterResults": ("styleeval.autorater", "AutoraterResults"),
    "LogProb": ("styleeval.logprob", "LogProb"),
    "LogProbScores": ("styleeval.logprob", "LogProbScores"),
    "evaluate_module": ("styleeval.bundled", "evaluate_module"),
    "load_corpus": ("styleeval.corpora", "load_corpus"),
}

if TYPE_CHECKING:  # pragma: no cover
    from styleeval.autorater import Autorater, AutoraterResults
    from styleeval.bundled import evaluate_module
    from styleeval.corpora import load_corpus
    from styleeval.logprob import LogProb, LogProbScores


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'styleeval' has no attribute {name!r}")
