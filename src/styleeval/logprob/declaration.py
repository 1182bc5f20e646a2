"""LogProb declared once (:class:`~styleeval.llm_scorer.LLMScorer`): its options, its two dimensions, its records
and its command; the metrics ``logprob_content`` / ``logprob_style``, ``score_file``, ``styleeval score``, the
``logprob_style`` evaluate module and its app are derived from :data:`LOGPROB`.

>>> LOGPROB.metric_names, LOGPROB.command.name
(('logprob_content', 'logprob_style'), 'score')
>>> LOGPROB.record({"content": -2, "style_strength": 0.25})
{'content': -2.0, 'style_strength': 0.25}
"""

from __future__ import annotations

from typing import Any

from styleeval.backends import backend_options
from styleeval.llm_scorer import MODEL_OPTIONS, SYSTEM_PROMPT, Command, Dimension, LLMScorer
from styleeval.logprob.metric import VARIANTS, LogProb, shared_logprob
from styleeval.optiontypes import Option, Options

LOGPROB_OPTIONS = Options("LogProb", [
    *MODEL_OPTIONS,
    Option("variant", str, "default, or authors: the authors' LogProp.py procedure (their hand-written Llama 3 "
           "prompt, first rewrite token not scored)", choices=VARIANTS),
    Option("prompt", str, "the prompt set: its system prompt and three instructions (default: paper; authors with "
           "--variant authors; one of styleeval.logprob.prompts.PROMPT_SETS, a registered one included)"),
    Option("end_of_turn", bool, "do not score the end-of-turn token after each rewrite", flag="--no-end-of-turn"),
    Option("on_overflow", str, "a row longer than the model's context: stop with an error (default), or skip it "
           "(NaN scores)", choices=("error", "skip")),
    SYSTEM_PROMPT,
], more=backend_options)
"""The options of :class:`styleeval.LogProb` and of every registered backend: what the CLI, the evaluate module and
the metric specs take."""


def _number(value: float) -> str:
    """Four significant digits, never ``-0.0000``.

    >>> _number(-0.00001), _number(-2.05123)
    ('-1e-05', '-2.051')
    """
    text = f"{value:.4g}"
    return "0" if text in ("-0", "0") else text


def _score(scorer: Any, sources: list[str], rewrites: list[str], styles: Any) -> Any:
    return scorer.score(sources, rewrites, styles)


_WHAT = "(Pauli et al. 2025), from an LLM's log-probabilities of the source and the rewrite."

LOGPROB = LLMScorer(
    name="logprob",
    label="LogProb",
    loading="LogProb model",
    options=LOGPROB_OPTIONS,
    dimensions=(Dimension("content", "content", "content", f"content preservation {_WHAT}"),
                Dimension("style", "style_strength", "style_strength", f"style strength {_WHAT}")),
    make=LogProb,
    shared=shared_logprob,
    rows=_score,
    command=Command(
        name="score",
        summary="LogProb scores for a CSV/JSONL file of rewrites (resumable)",
        description="Score each rewrite for content preservation and style strength with LogProb.",
        epilog="""\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row (0-based index in IN), source, rewrite, style, content, style_strength, signature.
Rows already in OUT are skipped, so an interrupted run is resumed by running the same command again.
""",
        done="scored",
        chunk_size=256,
        shown=_number,
        left_out="skipped: NaN scores",
    ),
    renamed={"content_preservation": "content", "content_preservation_mean": "content_mean"},  # earlier names
    app_fields=("content", "style_strength"),
)
"""LogProb, declared once."""
