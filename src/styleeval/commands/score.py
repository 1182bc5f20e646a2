"""``styleeval score``: an LLM scorer's scores for every row of a CSV / JSONL file, written chunk by chunk, resumable.

    styleeval score rewrites.csv --model 1b --out scores.jsonl [--style polite] [--chunk-size 256]
    styleeval score rewrites.csv --base-url http://127.0.0.1:8000/v1 --out scores.jsonl   # on a vLLM server
    styleeval score rewrites.csv --metric autorater:model=3b:mode=paper --out ratings.jsonl  # as styleeval autorate

The command is derived from LogProb's declaration (:data:`styleeval.logprob.declaration.LOGPROB`, the default) and
takes any declared LLM scorer by its metric spec (:data:`styleeval.options.LLM_SCORERS`); the loop is the library's
:func:`styleeval.files.runner.scorer_file` of it (what :func:`~styleeval.files.runner.score_file` is).
"""

from __future__ import annotations

from styleeval.commands._llm import llm_command
from styleeval.options import LLM_SCORERS, LOGPROB

SUMMARY, register, run = llm_command(LOGPROB, choose=LLM_SCORERS)
