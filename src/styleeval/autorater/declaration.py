"""The autorater declared once (:class:`~styleeval.llm_scorer.LLMScorer`): its options, its dimensions (meaning,
style, and fluency with Mukherjee et al.'s prompt), its records, its command and the authors' mean fill; the metrics
``autorater_<dimension>``, ``autorate_file``, ``styleeval autorate``, the ``llm_autorater`` evaluate module and its
app are derived from :data:`AUTORATER`.

>>> AUTORATER.metric_names
('autorater_meaning', 'autorater_style', 'autorater_fluency')
>>> AUTORATER.check("fluency", {"prompt": "paper-small"})
Traceback (most recent call last):
styleeval.errors.UserError: prompt paper-small rates meaning and style, not fluency; choose prompt=mukherjee
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from styleeval.autorater.parsing import PARSERS
from styleeval.autorater.prompts import PROMPTS, get_prompt
from styleeval.autorater.rater import MODES, Autorater, fill_unparsed_with_mean, shared_autorater
from styleeval.backends import backend_options
from styleeval.errors import UserError
from styleeval.llm_scorer import MODEL_OPTIONS, SYSTEM_PROMPT, Command, Dimension, LLMScorer, MeanFill
from styleeval.optiontypes import Option, Options

AUTORATER_OPTIONS = Options("the autorater", [
    *MODEL_OPTIONS,
    Option("mode", str, "expected: rating distributions read from the model (never breaks format; default); paper: "
           "the authors' generated JSON reply", choices=tuple(sorted(MODES))),
    Option("prompt", str, "the judge prompt (default: paper-small, the authors' 1B/3B/8B prompt)",
           choices=tuple(PROMPTS)),
    Option("parser", str, "paper mode's reply parser (default: robust)", choices=tuple(PARSERS)),
    SYSTEM_PROMPT,
    Option("seed", int, "sampling seed of paper-70b (each row samples with its own seed derived from it)"),
], more=backend_options)
"""The options of :class:`styleeval.Autorater` and of every registered backend: what the CLI, the evaluate module and
the metric specs take."""


def _rate(judge: Any, sources: list[str], rewrites: list[str], styles: Any) -> Any:
    return judge.rate(sources, rewrites, styles)


def _rated(dimension: str, options: Mapping[str, Any]) -> None:
    """A dimension the options' prompt does not rate is refused, naming the prompts that do."""
    rates = get_prompt(str(options.get("prompt", "paper-small"))).dimensions
    if dimension not in rates:
        rating = [p for p, prompt in PROMPTS.items() if dimension in prompt.dimensions]
        raise UserError(f"prompt {options.get('prompt', 'paper-small')} rates {' and '.join(rates)}, not "
                        f"{dimension}; choose prompt={' or prompt='.join(rating)}")


def _compliance(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"parsed": [bool(r["parsed"]) for r in rows], "compliance_rate": rows.compliance_rate}  # type: ignore[attr-defined]


def _authors(dimension: str) -> str:
    return f"LLM-as-autorater 1-5 rating of {dimension} with the authors' prompts."


AUTORATER = LLMScorer(
    name="autorater",
    label="autorater",
    loading="the autorater",
    options=AUTORATER_OPTIONS,
    dimensions=(Dimension("meaning", "meaning", "meaning", _authors("meaning")),
                Dimension("style", "style", "style_rating", _authors("style")),
                Dimension("fluency", "fluency", None, "LLM-as-autorater 1-5 rating of fluency (prompt=mukherjee: "
                          "Mukherjee et al.'s fluency prompt).")),
    make=Autorater,
    shared=shared_autorater,
    rows=_rate,
    command=Command(
        name="autorate",
        summary="LLM-as-autorater 1-5 ratings of meaning and style for a CSV/JSONL file (resumable)",
        description="Rate each rewrite's meaning preservation and style on a 1-5 scale with an instruct LLM.",
        epilog="""\
IN has the columns source, rewrite and style (or give one style for all rows with --style). OUT gets one
record per input row: row, source, rewrite, style, meaning, style_rating, parsed, reply (paper mode),
meaning_probs / style_probs (expected mode), signature. A rating paper mode could not read is left empty (null);
the summary reports the compliance rate. Rows already in OUT are skipped, so an interrupted run is resumed by
running the same command again.
""",
        done="rated",
        chunk_size=64,
        shown="{:.4f}".format,
        left_out="unreadable: null ratings",
        compliance="parsed",
    ),
    extras=("parsed", "reply", "meaning_probs", "style_probs"),
    texts=("reply",),
    evaluate_extras=_compliance,
    check=_rated,
    fill=MeanFill(lambda judge: judge.mode == "paper", fill_unparsed_with_mean),
    app_fields=("meaning", "style", "parsed", "reply", "meaning_probs", "style_probs"),
    app_signed=False,
)
"""The autorater, declared once."""
