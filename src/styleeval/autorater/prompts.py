"""The judge prompts and decoding settings of Pauli et al. (2025), appendix D.2, character for character.

The typos ("helpfull", "the the", the space before a comma) are the authors' and are kept on purpose: changing
them changes the judge's replies.

- ``paper-small``: the authors' script for the 1B/3B/8B Llama 3.x Instruct judges (system message, "Return only
  JSON format"), greedy decoding, 20 new tokens.
- ``paper-70b``: the prompt printed in D.2 for the 70B judge (no system message), sampled with
  ``temperature=0.5, top_p=0.9`` (Replicate's settings, "else default"; Replicate's default output length is
  512 tokens) and a seed so that runs repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from styleeval.backends.base import Decoding
from styleeval.errors import UserError

_PREAMBLE = (
    "Evaluate the following completion of a task where a 'source sentence' has been rewritten to be more {style} "
    "in the style, denoted 'target sentence', Ideally the context and content in the sentence which does not "
    "relate to the style should be preserved. Please evaluate on a Likert scale from 1-5 with 5 being the best: "
)


@dataclass(frozen=True)
class JudgePrompt:
    """A named judge prompt: optional system message, user template and paper-mode decoding."""

    name: str
    system: str | None
    user: str
    decoding: Decoding

    def messages(self, source: str, rewrite: str, style: str) -> list[dict[str, str]]:
        """The chat messages of one row."""
        user = self.user.format(style=style, source=source, rewrite=rewrite)
        if self.system is None:
            return [{"role": "user", "content": user}]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


PROMPTS: dict[str, JudgePrompt] = {
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
}
"""The named prompts (``Autorater(prompt=...)``)."""


def get_prompt(name: str) -> JudgePrompt:
    """The :class:`JudgePrompt` called ``name``; a ``ValueError`` lists the known names otherwise."""
    if name not in PROMPTS:
        raise UserError(f"prompt: unknown judge prompt {name!r}; choose one of {', '.join(PROMPTS)}")
    return PROMPTS[name]
