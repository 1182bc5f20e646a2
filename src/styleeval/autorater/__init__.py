"""LLM-as-autorater (Pauli et al. 2025, appendix D.2): 1-5 ratings of meaning preservation and style.

- :class:`Autorater` -- the judge, ``mode="expected"`` (never breaks format) or ``mode="paper"`` (the authors'),
  on a local model or an OpenAI-compatible server (``base_url=``);
- :mod:`~styleeval.autorater.prompts` -- the authors' prompts, verbatim;
- :mod:`~styleeval.autorater.parsing` -- the ``robust`` and ``authors`` reply parsers.
"""

from styleeval.autorater.parsing import PARSERS, parse_authors, parse_robust
from styleeval.autorater.prompts import PROMPTS, JudgePrompt
from styleeval.autorater.rater import Autorater, AutoraterResults

__all__ = ["PARSERS", "PROMPTS", "Autorater", "AutoraterResults", "JudgePrompt", "parse_authors", "parse_robust"]
