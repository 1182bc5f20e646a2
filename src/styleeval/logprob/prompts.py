"""LogProb's prompt sets: the text of its three contexts (Pauli et al. 2025, Table 2 and appendix D.1), verbatim.

A :class:`PromptSet` is a system prompt, the three user instructions (``style``, ``paraphrase``, ``repeat``, in the
order the equations use them: :data:`CONTEXTS`) and, for the authors' procedure, their hand-written prompt template.
Its text is signed: :attr:`PromptSet.signed` is ``name@<8 hex>``, the first 8 hex digits of the SHA-256 of every
text of the set, and it is LogProb's signature field ``prompt`` (:attr:`styleeval.logprob.LogProb.signature`), so
an edited instruction changes the signature and no cached score or resumed file outlives it.

- ``paper``: the paper's system prompt and instructions, rendered with the model's chat template (``variant="default"``).
- ``authors``: the same text in the authors' hand-written Llama 3 prompt of their ``LogProp.py``
  (``variant="authors"``): no blank line after a header, no date lines.

>>> PROMPT_SETS["paper"].user_message("paraphrase", "hi there.", "formal")
'Paraphrase the following sentence: hi there.'
>>> PROMPT_SETS["paper"].signed == "paper@" + PROMPT_SETS["paper"].digest, len(PROMPT_SETS["paper"].digest)
(True, 8)
>>> edited = PromptSet("paper", SYSTEM_PROMPT, {**INSTRUCTIONS, "repeat": "Repeat this sentence: {source}"})
>>> edited.digest != PROMPT_SETS["paper"].digest
True

A prompt set of your own: :func:`register_prompt_set` (``LogProb(prompt="name")``, ``styleeval score --prompt
name``, ``logprob_content:prompt=name``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from styleeval.errors import UserError
from styleeval.registry import Registry

__all__ = ["AUTHORS_END_OF_TURN", "AUTHORS_TEMPLATE", "CONTEXTS", "INSTRUCTIONS", "PROMPT_CONTEXTS", "PROMPT_SETS",
           "SYSTEM_PROMPT",
           "PromptSet", "get_prompt_set", "register_prompt_set", "unregister_prompt_set", "user_message"]

SYSTEM_PROMPT = (
    "You can repeat sentences, paraphrase sentences or rewrite sentences to change the style or certain "
    "attribute of the text while preserving non-related content and context. Your answers contain just the "
    "rewrite."
)
"""The system prompt of appendix D.1."""

INSTRUCTIONS: Mapping[str, str] = MappingProxyType({
    "style": "Rewrite the following sentence to be {style}: {source}",
    "paraphrase": "Paraphrase the following sentence: {source}",
    "repeat": "Repeat the following sentence: {source}",
})
"""The three user instructions t_s, t_pa, t_r of Table 2, in the order the equations use them."""

CONTEXTS: tuple[str, ...] = ("style", "paraphrase", "repeat")
"""The three contexts, in the order of the equations (and of a row's per-token ``tokens``)."""

PROMPT_CONTEXTS: tuple[str, ...] = ("echo", "unsourced")
"""The two contexts of the prompt guard (``LogProb(guard="prompt")``, docs/training.md "The hole, measured, and the prompt guard"): readings of
a rewrite as the *prompt's* text rather than the source's. ``echo``: the repeat instruction applied to the style
instruction (the rewrite read as a copy of the prompt); ``unsourced``: the style instruction with no source (the
rewrite read as what the instruction alone calls for). Built from a set's own instructions
(:meth:`PromptSet.user_message`), so they are signed with them."""

AUTHORS_TEMPLATE = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>{system}<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>{user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
)
"""The authors' hand-written Llama 3 prompt (``LogProp.py``): no blank line after a header, no date lines."""

AUTHORS_END_OF_TURN = "<|eot_id|>"
"""The end-of-turn token the authors append to every rewrite."""

_FIELDS = re.compile(r"\{(\w*)\}")


@dataclass(frozen=True)
class PromptSet:
    """A named prompt set: ``system`` (the system prompt), ``instructions`` (each context of :data:`CONTEXTS` -> its
    user instruction, with ``{source}``, and ``{style}`` in the style instruction), and ``template``: ``None`` to
    render with the model's chat template (``variant="default"``), or a hand-written prompt with ``{system}`` and
    ``{user}`` whose rewrites end with the token ``end_of_turn`` (``variant="authors"``)."""

    name: str
    system: str
    instructions: Mapping[str, str]
    template: str | None = None
    end_of_turn: str | None = None
    digest: str = field(init=False, repr=False, compare=False)
    """First 8 hex digits of the SHA-256 of the set's text (system prompt, instructions by context, template, end of
    turn): what the signature carries next to the name."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", self.name or ""):
            raise UserError(f"a LogProb prompt set's name is letters, digits, '_', '-' or '.', got {self.name!r}")
        if tuple(self.instructions) != CONTEXTS:
            raise UserError(f"prompt set {self.name!r}: instructions for {', '.join(CONTEXTS)} (in that order), got "
                            f"{', '.join(self.instructions) or 'none'}")
        for context, text in self.instructions.items():
            allowed = {"source", "style"} if context == "style" else {"source"}
            names = set(_FIELDS.findall(text))
            if "source" not in names or names - allowed:
                raise UserError(f"prompt set {self.name!r}: the {context} instruction takes "
                                f"{' and '.join('{' + n + '}' for n in sorted(allowed))} (with {{source}}), got "
                                f"{text!r}")
        if (self.template is None) != (self.end_of_turn is None):
            raise UserError(f"prompt set {self.name!r}: a hand-written template and its end_of_turn token come "
                            "together")
        if self.template is not None and _FIELDS.findall(self.template) != ["system", "user"]:
            raise UserError(f"prompt set {self.name!r}: a hand-written template holds {{system}}, then {{user}}, "
                            f"once each; got {self.template!r}")
        object.__setattr__(self, "instructions", MappingProxyType(dict(self.instructions)))
        text = json.dumps({"system": self.system, "instructions": [[c, self.instructions[c]] for c in CONTEXTS],
                           "template": self.template, "end_of_turn": self.end_of_turn}, ensure_ascii=False)
        object.__setattr__(self, "digest", hashlib.sha256(text.encode("utf-8")).hexdigest()[:8])

    @property
    def signed(self) -> str:
        """``name@digest``: the ``prompt`` field of LogProb's signature."""
        return f"{self.name}@{self.digest}"

    def user_message(self, context: str, source: str, style: str) -> str:
        """The user instruction of one context for one row: ``style``, ``paraphrase`` or ``repeat``, or a context of
        the prompt guard (:data:`PROMPT_CONTEXTS`), built from this set's own instructions:

        >>> PROMPT_SETS["paper"].user_message("echo", "gimme that.", "formal")
        'Repeat the following sentence: Rewrite the following sentence to be formal: gimme that.'
        >>> PROMPT_SETS["paper"].user_message("unsourced", "gimme that.", "formal")
        'Rewrite the following sentence to be formal:'
        """
        if context == "echo":
            return self.user_message("repeat", self.user_message("style", source, style), style)
        if context == "unsourced":
            return self.user_message("style", "", style).rstrip()
        return self.instructions[context].format(style=style, source=source)


def _is_prompt_set(name: str, obj: object) -> None:
    if not isinstance(obj, PromptSet) or obj.name != name:
        raise ValueError(f"LogProb prompt set {name!r}: register a PromptSet named {name!r}, got {obj!r}")


PROMPT_SETS: Registry[PromptSet] = Registry("LogProb prompt set", check=_is_prompt_set)
"""The named prompt sets (``LogProb(prompt=...)``; default: ``paper``, or ``authors`` with ``variant="authors"``)."""


def register_prompt_set(prompt_set: PromptSet) -> PromptSet:
    """Add a prompt set under its name (another set under a taken name is a ``ValueError``); returns it."""
    PROMPT_SETS.add(prompt_set.name, prompt_set, lazy=False)
    return prompt_set


def unregister_prompt_set(name: str) -> None:
    """Remove a prompt set (nothing when it is not registered)."""
    PROMPT_SETS.unregister(name)


def get_prompt_set(name: str) -> PromptSet:
    """The prompt set called ``name``; a :class:`~styleeval.errors.UserError` lists the known names otherwise."""
    found = PROMPT_SETS.get(name) if isinstance(name, str) else None
    if found is None:
        raise UserError(f"prompt: unknown LogProb prompt set {name!r}; choose one of {', '.join(PROMPT_SETS)}")
    return found


register_prompt_set(PromptSet("paper", SYSTEM_PROMPT, INSTRUCTIONS))
register_prompt_set(PromptSet("authors", SYSTEM_PROMPT, INSTRUCTIONS, template=AUTHORS_TEMPLATE,
                              end_of_turn=AUTHORS_END_OF_TURN))


def user_message(context: str, source: str, style: str) -> str:
    """The paper's user instruction of one context (``PROMPT_SETS["paper"].user_message``)."""
    return PROMPT_SETS["paper"].user_message(context, source, style)
