"""LogProb (Pauli et al. 2025): the scorer in :mod:`.metric` (:class:`LogProb`, :func:`logprob_equations`,
:func:`shared_logprob`), its prompt sets in :mod:`.prompts`.

The scorer's names are exported lazily (module ``__getattr__``), so that ``styleeval.logprob.prompts`` (the prompt
text: what the CLI's options and the explanations read) is imported without the scorer and its backends.
``from styleeval.logprob import LogProb`` works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["VARIANTS", "VARIANT_PROMPTS", "LogProb", "LogProbScores", "NotFiniteWarning", "logprob_equations",
           "shared_logprob"]

_METRIC = ("LogProb", "LogProbScores", "NotFiniteWarning", "logprob_equations", "shared_logprob", "logprob_row",
           "VARIANTS", "VARIANT_PROMPTS", "PIPELINE_ROWS", "RENAMED", "_SHARED", "_pieces")
"""The names of :mod:`.metric` read through this package."""

if TYPE_CHECKING:  # pragma: no cover
    from styleeval.logprob.metric import (
        VARIANT_PROMPTS,
        VARIANTS,
        LogProb,
        LogProbScores,
        NotFiniteWarning,
        logprob_equations,
        shared_logprob,
    )


def __getattr__(name: str) -> Any:
    if name in _METRIC:
        return getattr(importlib.import_module("styleeval.logprob.metric"), name)
    raise AttributeError(f"module 'styleeval.logprob' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_METRIC})
