"""The judge prompts: Pauli et al. (2025), appendix D.2, and Mukherjee et al. (2025), appendix D, character for
character.

Pauli et al.'s typos ("helpfull", "the the", the space before a comma) are the authors' and are kept on purpose:
changing them changes the judge's replies.

- ``paper-small``: the authors' script for the 1B/3B/8B Llama 3.x Instruct judges (system message, "Return only
  JSON format"), greedy decoding, 20 new tokens.
- ``paper-70b``: the prompt printed in D.2 for the 70B judge (no system message), sampled with
  ``temperature=0.5, top_p=0.9`` (Replicate's settings, "else default"; Replicate's default output length is
  512 tokens) and a seed so that runs repeat.

Mukherjee et al.'s prompts (:class:`DimensionPrompt`) ask for one rating per prompt, one prompt per dimension, each
a task definition, an instruction and the input (their Tables 10-13), and end on "... rating (on a scale of 1 to 5)
=", so the reply is the rating:

- ``mukherjee``: Likert 1-5 ratings of style transfer accuracy (Table 10, the ``style`` dimension), content
  preservation (Table 12, ``meaning``) and fluency (Table 13, ``fluency``: the rewrite alone);
- ``mukherjee-binary``: the binary style transfer accuracy (Table 11, ``style`` only): 1 if the target style was
  transferred, else 0. In expected mode its rating is the probability of "1" (renormalised over "0" and "1": the
  expected 0/1 verdict, comparable with a classifier's confidence); in paper mode the 0 or 1 the judge wrote.

The paper prints them for sentiment transfer in English; a row whose target style is ``positive`` or ``negative``
gets exactly that text (the direction from the target: ``negative to positive`` for ``positive``). Other target
styles get the same text with the task's words replaced (our generalisation, the paper prints none): "Sentiment
transfer task: transfer the sentiment of a sentence (from positive to negative or negative to positive)" becomes
"Style transfer task: transfer the style of a sentence (to a more {style} style)", "sentiment" becomes "style" and
the direction is the target style (``the formal style transfer task``). The paper's paragraphs (task definition,
instruction, input, the closing line) are separated by blank lines and S1 and S2 are on lines of their own. Paper
mode decodes greedily (the paper does not say how), 16 new tokens, and reads the first number of the reply
(:func:`styleeval.autorater.parsing.parse_number`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from styleeval.backends.base import Decoding
from styleeval.errors import UserError

_PREAMBLE = (
    "Evaluate the following completion of a task where a 'source sentence' has been rewritten to be more {style} "
    "in the style, denoted 'target sentence', Ideally the context and content in the sentence which does not "
    "relate to the style should be preserved. Please evaluate on a Likert scale from 1-5 with 5 being the best: "
)


LIKERT = ("1", "2", "3", "4", "5")


@dataclass(frozen=True)
class JudgePrompt:
    """A named judge prompt whose one reply rates meaning and style (a JSON object): optional system message, user
    template and paper-mode decoding."""

    name: str
    system: str | None
    user: str
    decoding: Decoding
    dimensions: tuple[str, ...] = ("meaning", "style")
    """What one reply rates."""
    ratings: tuple[str, ...] = LIKERT
    per_dimension = False
    """One prompt (and reply) per dimension: :class:`DimensionPrompt`."""

    def messages(self, source: str, rewrite: str, style: str) -> list[dict[str, str]]:
        """The chat messages of one row."""
        user = self.user.format(style=style, source=source, rewrite=rewrite)
        if self.system is None:
            return [{"role": "user", "content": user}]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


SENTIMENT = {"positive": "negative to positive", "negative": "positive to negative"}
"""The target styles the paper's sentiment prompts are printed for, and the direction each names."""


def task_words(style: str) -> dict[str, str]:
    """The words of Mukherjee et al.'s prompts for a row's target style: the paper's for sentiment (``positive``,
    ``negative``), their generalisation for any other style (see the module docstring)."""
    key = style.strip().lower()
    if key in SENTIMENT:
        return {"noun": "sentiment", "Noun": "Sentiment", "direction": SENTIMENT[key],
                "change": "from positive to negative or negative to positive"}
    return {"noun": "style", "Noun": "Style", "direction": style.strip(), "change": f"to a more {style.strip()} style"}


@dataclass(frozen=True)
class DimensionPrompt:
    """A named prompt set that rates each dimension with a prompt of its own (Mukherjee et al.): ``templates`` maps a
    dimension (``style``, ``meaning``, ``fluency``) to its user template (``{source}``, ``{rewrite}`` and the task
    words of :func:`task_words`), ``ratings`` are the answers it asks for, in order of the value they stand for."""

    name: str
    templates: Mapping[str, str]
    decoding: Decoding
    ratings: tuple[str, ...] = LIKERT
    system: str | None = None
    per_dimension = True

    @property
    def dimensions(self) -> tuple[str, ...]:
        return tuple(self.templates)

    def messages(self, source: str, rewrite: str, style: str, dimension: str) -> list[dict[str, str]]:
        """The chat messages that rate ``dimension`` of one row."""
        if dimension not in self.templates:
            raise UserError(f"prompt {self.name} rates {', '.join(self.dimensions)}, not {dimension}")
        user = self.templates[dimension].format(source=source, rewrite=rewrite, **task_words(style))
        if self.system is None:
            return [{"role": "user", "content": user}]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


_DEFINITION = ("{Noun} transfer task: transfer the {noun} of a sentence ({change}) while keeping the rest of the "
               "{noun}-independent content unchanged.")
_CONTENT_DEFINITION = ("{Noun} transfer task: transfer the {noun} of a sentence ({change}) while keeping the rest of "
                       "the content unchanged.")
_PAIR = "S1: {source}\nS2: {rewrite}"
MUKHERJEE_STYLE = (
    _DEFINITION + "\n\nPlease rate the {noun} transfer accuracy of the {direction} {noun} transfer task between the "
    "following English source sentence S1 and the {noun}-transferred sentence S2. Use a scale of 1 to 5, where 1 "
    "indicates that the {noun} in S1 is completely identical to the {noun} in S2, and 5 indicates that the {noun} has "
    "been completely transferred to the target {noun} in S2.\n\n" + _PAIR
    + "\n\n{Noun} transfer accuracy rating (on a scale of 1 to 5) =")
"""Table 10."""
MUKHERJEE_BINARY = (
    _DEFINITION + "\n\nPlease act as a binary classifier to evaluate the {noun} transfer accuracy of the {direction} "
    "{noun} transfer task in English. Determine whether the target {noun} has been successfully transferred to the "
    "generated sentence (S2) from the source sentence (S1). If the target {noun} has been successfully transferred to "
    "S2, output '1'. If the target {noun} has not been successfully transferred to S2, output '0'.\n\n" + _PAIR
    + "\n\n{Noun} transfer accuracy classification (0 or 1) =")
"""Table 11."""
MUKHERJEE_CONTENT = (
    _CONTENT_DEFINITION + "\n\nPlease rate the content preservation between the following English source sentence "
    "S1 and the {noun}-transferred sentence S2 for the {direction} {noun} transfer task on a scale of 1 to 5, where 1 "
    "indicates very low content preservation and 5 indicates very high content preservation. To determine the content "
    "preservation between these two sentences, consider only the information conveyed by the sentences and ignore any "
    "differences in {noun} due to the {direction} {noun} transfer.\n\n" + _PAIR
    + "\n\nContent Preservation rating (on a scale of 1 to 5) =")
"""Table 12."""
MUKHERJEE_FLUENCY = (
    "Please rate the fluency of the following English sentence S on a scale of 1 to 5, where 1 represents poor "
    "fluency, and 5 represents excellent fluency.\n\nS: {rewrite}\n\nFluency rating (on a scale of 1 to 5) =")
"""Table 13."""
_ONE_NUMBER = Decoding(do_sample=False, max_new_tokens=16)


PROMPTS: dict[str, JudgePrompt | DimensionPrompt] = {
    "paper-small": JudgePrompt(
        name="paper-small",
        system="You are a helpfull assistant",
        user=_PREAMBLE + "1) how well the meaning is preserved and 2) how well the the style is changed. Return only "
        "JSON format with the keys 'meaning' , 'style'. Given the 'source sentence': {source} 'target sentence': "
        "{rewrite}",
        decoding=Decoding(do_sample=False, max_new_tokens=20),
    ),
    "paper-70b": JudgePrompt(
        name="paper-70b",
        system=None,
        user=_PREAMBLE + "1) how well the meaning is preserved and 2) how well the style is changed. Return in JSON "
        "format with the keys 'meaning', 'style'. Given the 'source sentence': {source} 'target sentence': {rewrite}",
        decoding=Decoding(do_sample=True, max_new_tokens=512, temperature=0.5, top_p=0.9),
    ),
    "mukherjee": DimensionPrompt(
        name="mukherjee",
        templates={"style": MUKHERJEE_STYLE, "meaning": MUKHERJEE_CONTENT, "fluency": MUKHERJEE_FLUENCY},
        decoding=_ONE_NUMBER,
    ),
    "mukherjee-binary": DimensionPrompt(
        name="mukherjee-binary", templates={"style": MUKHERJEE_BINARY}, decoding=_ONE_NUMBER, ratings=("0", "1"),
    ),
}
"""The named prompts (``Autorater(prompt=...)``)."""


def get_prompt(name: str) -> JudgePrompt | DimensionPrompt:
    """The :class:`JudgePrompt` called ``name``; a ``ValueError`` lists the known names otherwise."""
    if name not in PROMPTS:
        raise UserError(f"prompt: unknown judge prompt {name!r}; choose one of {', '.join(PROMPTS)}")
    return PROMPTS[name]
