"""The options of LogProb and the autorater, declared once: the scorers' own options in their declarations
(:data:`styleeval.logprob.declaration.LOGPROB`, :data:`styleeval.autorater.declaration.AUTORATER`), every backend's
on its class (``Backend.options``, merged by :func:`styleeval.backends.backend_options`). Each :class:`Option` has
one name, a type, choices and its help, and an :class:`Options` set generates from them the command-line arguments
(``styleeval score`` / ``autorate``), the keyword arguments the ``evaluate`` modules accept (with their aliases, e.g.
``model_id``), and the parser of metric-spec options (``logprob_style:model=3b:batch_tokens=1024``). A backend
registered later adds its options to both sets.

``None`` means "not given" everywhere: the scorer's or the backend's own default applies, and an option the chosen
backend does not declare is an error raised when it is opened.

>>> [scorer.name for scorer in LLM_SCORERS]
['logprob', 'autorater']
"""

from __future__ import annotations

from styleeval.autorater.declaration import AUTORATER, AUTORATER_OPTIONS
from styleeval.llm_scorer import LLMScorer
from styleeval.logprob.declaration import LOGPROB, LOGPROB_OPTIONS
from styleeval.optiontypes import Option, Options

__all__ = ["AUTORATER", "AUTORATER_OPTIONS", "LLM_SCORERS", "LOGPROB", "LOGPROB_OPTIONS", "Option", "Options"]

LLM_SCORERS: tuple[LLMScorer, ...] = (LOGPROB, AUTORATER)
"""Every LLM scorer's declaration: each gets its metrics (one per dimension) and its file command."""
