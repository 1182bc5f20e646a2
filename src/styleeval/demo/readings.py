"""What a visitor types and what one score means: the limits and checks of the text fields (:func:`check_text`, the
page's :data:`EXAMPLES`) and the one-line readings of LogProb's content and style scores (:func:`reading_content`,
calibrated per model by :data:`READING_CALIBRATION`; :func:`reading_style`)."""

from __future__ import annotations

import math
from typing import Any

from styleeval.errors import UserError
from styleeval.gguf_files import REAL_WEIGHTS

MAX_CHARS = 1000
"""Longest source / rewrite / style the demo scores (characters)."""
UNEXPLAINED_BELOW = 0.05
"""A token whose best probability under the three instructions is below this is shown as unexplained."""

EXAMPLES = [  # the paper's Figure 1 pair and test-set-like pairs: one faithful rewrite, one with a content error
    ("Send me the report now.", "Could you please send me the report when you have a moment?",
     "Could you please send me the invoice when you have a moment?", "polite"),
    ("ur ready 4 the party tonight??", "Are you ready for the party tonight?",
     "Are you ready for the meeting tomorrow?", "formal"),
    ("The food was cold and the staff were rude.", "The food was warm and the staff were lovely.",
     "The food was warm and the staff were lovely, and parking was free.", "positive"),
]


def check_text(name: str, value: Any, allow_empty: bool = False) -> str:
    """``value`` as text, or ``ValueError`` saying what is wrong with the field ``name``."""
    if value is None or (isinstance(value, str) and not value.strip() and not allow_empty):
        raise UserError(f"Please fill in the {name}.")
    if not isinstance(value, str):
        raise UserError(f"The {name} must be text.")
    if len(value) > MAX_CHARS:
        raise UserError(f"The {name} is {len(value)} characters long; the demo takes at most {MAX_CHARS}.")
    return value


CONTENT_ERROR_AT = 0.5
"""Where no calibration is known for the model (:data:`READING_CALIBRATION`): the mean token probability exp(content)
at or below which the content reading says to look for swapped, invented or dropped content."""
READING_CALIBRATION: dict[str, tuple[float, str]] = {
    REAL_WEIGHTS: (0.11, "at SmolLM2-135M this reading hardly tells them apart: it fires on 45% of the paper's "
                         "test-set rewrites that keep the content and on 52% of those with a swapped, invented or "
                         "dropped part, at its best threshold (0.11; at 0.5 it fired on 99.6% of both); read the "
                         "highlighted tokens"),
}
"""Per preset: the threshold of the content reading (exp(content) at or below it: "look for swapped, invented or
dropped content") that best separates, on the paper's 500-row test set, the rewrites that keep the content (250)
from those with a content error made on purpose (250: substitution, insertion, deletion; Youden's J), and how
reliable the reading is there, said with either reading (measured with ``scripts/calibrate_reading.py``, 2026-11-28:
SmolLM2-135M Q4_1, float32 engine; docs/benchmarks.md, "The Space's content reading")."""
UNCALIBRATED = "a threshold not calibrated for this model"
"""What the content reading says of its reliability for a model without a calibration."""


def reading_content(value: float, preset: str | None = None) -> str:
    """One line on what a LogProb content score means, by the threshold of the model's ``preset``
    (:data:`READING_CALIBRATION`, whose reliability it says either way; other models: :data:`CONTENT_ERROR_AT`, said
    to be uncalibrated where it says to look for content errors)."""
    if not math.isfinite(value):
        return "no token could be scored"
    threshold, reliability = READING_CALIBRATION.get(preset or "", (CONTENT_ERROR_AT, UNCALIBRATED))
    p = math.exp(value)
    said = f" ({reliability})" if preset in READING_CALIBRATION else ""  # a measured model: said either way
    return (f"on average each token has probability {p:.2f} under its best instruction; "
            + (f"close to a faithful rewrite{said}" if p > threshold else "some tokens are explained by no "
               f"instruction: look for swapped, invented or dropped content in the highlighted tokens ({reliability})"))


def reading_style(value: float) -> str:
    """One line on what a LogProb style score means."""
    if not math.isfinite(value):
        return "no token could be scored"
    if value > 0.01:
        return "the style instruction explains the rewrite better than paraphrasing or repeating"
    if value < -0.01:
        return "paraphrasing or repeating explains the rewrite better than the style instruction"
    return "about neutral: the style change is small (typical values are close to 0)"
