"""The options of LogProb and the autorater, declared once: the scorers' own options here, every backend's on its
class (``Backend.options``, merged by :func:`styleeval.backends.backend_options`). Each :class:`Option` has one
name, a type, choices and its help, and an :class:`Options` set generates from them the command-line arguments
(``styleeval score`` / ``autorate``), the keyword arguments the ``evaluate`` modules accept (with their aliases, e.g.
``model_id``), and the parser of metric-spec options (``logprob_style:model=3b:batch_tokens=1024``). A backend
registered later adds its options to both sets.

``None`` means "not given" everywhere: the scorer's or the backend's own default applies, and an option the chosen
backend does not declare is an error raised when it is opened.
"""

from __future__ import annotations

from styleeval.autorater.parsing import PARSERS
from styleeval.autorater.prompts import PROMPTS
from styleeval.autorater.rater import MODES
from styleeval.backends import backend_options
from styleeval.logprob import VARIANTS
from styleeval.optiontypes import Option, Options

__all__ = ["AUTORATER_OPTIONS", "LOGPROB_OPTIONS", "Option", "Options"]

_MODEL = [
    Option("model", str, "preset (1b, 3b, 8b: the paper's; smollm2-135m: a real 135M chat model fetched on first "
           "use, no Hub account; tiny-random: random weights), Hub id, local path or .gguf file; on a server the "
           "served model name (default: 1b locally, the server's only model on a server)", short="-m",
           aliases=("model_id",)),
    Option("backend", str, "what computes the log-probabilities: a registered backend (built in: local, openai, "
           "llamacpp; default: openai when --base-url is given, else local)"),
]
_SYSTEM_PROMPT = Option("system_prompt", str, "auto (default): a system turn where the chat template has one, else "
                        "folded into the user turn (Gemma); system or fold to force either",
                        choices=("auto", "system", "fold"))

LOGPROB_OPTIONS = Options("LogProb", [
    *_MODEL,
    Option("variant", str, "default, or authors: the authors' LogProp.py procedure (their hand-written Llama 3 "
           "prompt, first rewrite token not scored)", choices=VARIANTS),
    Option("prompt", str, "the prompt set: its system prompt and three instructions (default: paper; authors with "
           "--variant authors; one of styleeval.logprob.prompts.PROMPT_SETS, a registered one included)"),
    Option("end_of_turn", bool, "do not score the end-of-turn token after each rewrite", flag="--no-end-of-turn"),
    Option("on_overflow", str, "a row longer than the model's context: stop with an error (default), or skip it "
           "(NaN scores)", choices=("error", "skip")),
    _SYSTEM_PROMPT,
], more=backend_options)
"""The options of :class:`styleeval.LogProb` and of every registered backend: what the CLI, the evaluate module and
the metric specs take."""

AUTORATER_OPTIONS = Options("the autorater", [
    *_MODEL,
    Option("mode", str, "expected: rating distributions read from the model (never breaks format; default); paper: "
           "the authors' generated JSON reply", choices=tuple(sorted(MODES))),
    Option("prompt", str, "the judge prompt (default: paper-small, the authors' 1B/3B/8B prompt)",
           choices=tuple(PROMPTS)),
    Option("parser", str, "paper mode's reply parser (default: robust)", choices=tuple(PARSERS)),
    _SYSTEM_PROMPT,
    Option("seed", int, "sampling seed of paper-70b (each row samples with its own seed derived from it)"),
], more=backend_options)
"""The options of :class:`styleeval.Autorater` and of every registered backend: what the CLI, the evaluate module and
the metric specs take."""

