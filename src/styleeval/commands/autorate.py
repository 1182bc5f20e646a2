"""``styleeval autorate``: LLM-as-autorater ratings for every row of a CSV / JSONL file, resumable.

    styleeval autorate rewrites.csv --model 3b --out ratings.jsonl [--mode paper] [--base-url URL]

The command is derived from the autorater's declaration (:data:`styleeval.autorater.declaration.AUTORATER`); the
loop is :func:`styleeval.files.runner.scorer_file` of it (the library's :func:`~styleeval.files.runner.autorate_file`;
the same loop as ``styleeval score``'s).
"""

from __future__ import annotations

from styleeval.autorater.declaration import AUTORATER
from styleeval.commands._llm import llm_command

SUMMARY, register, run = llm_command(AUTORATER)
