"""The LogProb prompts and how they become token ids (Pauli et al. 2025, Table 2 and appendix D.1).

The token sets are pinned so that scores are reproducible across implementations:

- prompt ids: ``apply_chat_template([system, user], add_generation_prompt=True)`` rendered as *text*, then
  tokenized with ``add_special_tokens=False``;
- scored ids: ``tokenizer(rewrite, add_special_tokens=False)`` followed by the template's end-of-turn token
  (``<|eot_id|>`` for Llama 3), unless ``end_of_turn=False``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

SYSTEM_PROMPT = (
    "You can repeat sentences, paraphrase sentences or rewrite sentences to change the style or certain "
    "attribute of the text while preserving non-related content and context. Your answers contain just the "
    "rewrite."
)
"""The system prompt of appendix D.1."""

INSTRUCTIONS: dict[str, str] = {
    "style": "Rewrite the following sentence to be {style}: {source}",
    "paraphrase": "Paraphrase the following sentence: {source}",
    "repeat": "Repeat the following sentence: {source}",
}
"""The three user instructions t_s, t_pa, t_r of Table 2, in the order the equations use them."""

CONTEXTS: tuple[str, ...] = tuple(INSTRUCTIONS)

TEMPLATE_KWARGS: dict[str, str] = {"date_string": "26 Jul 2024"}
"""Extra template variables. The Llama 3.x templates print today's date unless ``date_string`` is set; we pin
it to the templates' own fallback so that a score does not change with the calendar."""

_MARKER = "\u2063styleeval-end-of-turn-probe\u2063"


def user_message(context: str, source: str, style: str) -> str:
    """The user instruction of one context (``style``, ``paraphrase`` or ``repeat``)."""
    return INSTRUCTIONS[context].format(style=style, source=source)


class ChatFormat:
    """Renders LogProb prompts with a tokenizer's chat template and tokenizes prompts and rewrites.

    Args:
        tokenizer: a Hugging Face tokenizer.
        chat_template: a Jinja chat template to use instead of the tokenizer's own (required when the
            tokenizer has none).
        end_of_turn: append the template's end-of-turn token to every scored rewrite.
    """

    def __init__(self, tokenizer, chat_template: str | None = None, end_of_turn: bool = True) -> None:
        self.tokenizer = tokenizer
        template = chat_template if chat_template is not None else getattr(tokenizer, "chat_template", None)
        if isinstance(template, dict):  # tokenizers with several named templates
            template = template.get("default")
        if not template:
            name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
            raise ValueError(
                f"model: the tokenizer of {name!r} has no chat template; LogProb needs a chat model. "
                "Pass chat_template=... (a Jinja string) to use one anyway."
            )
        self.template: str = template
        self.end_of_turn = end_of_turn
        self.end_of_turn_id: int | None = self._find_end_of_turn() if end_of_turn else None

    @property
    def template_hash(self) -> str:
        """First 10 hex digits of the SHA-256 of the chat template."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:10]

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        """The chat template applied to ``messages``, as text."""
        return self.tokenizer.apply_chat_template(
            messages,
            chat_template=self.template,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            **TEMPLATE_KWARGS,
        )

    def prompt_text(self, user: str, system: str = SYSTEM_PROMPT) -> str:
        """System turn + user turn + the assistant header, as text."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self.render(messages, add_generation_prompt=True)

    def _find_end_of_turn(self) -> int:
        messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _MARKER}]
        rendered = self.render(messages, add_generation_prompt=False)
        if _MARKER not in rendered:
            raise ValueError("chat_template: the template does not render the assistant message")
        tail = rendered.split(_MARKER, 1)[1].lstrip()
        ids = self.tokenizer(tail, add_special_tokens=False)["input_ids"] if tail else []
        if not ids:
            raise ValueError(
                "chat_template: the template adds no end-of-turn token after an assistant message; "
                "pass end_of_turn=False"
            )
        return int(ids[0])

    def conversation_ids(self, conversations: Sequence[list[dict[str, str]]]) -> list[list[int]]:
        """Token ids of each conversation rendered with the generation prompt (one tokenizer call)."""
        texts = [self.render(list(messages), add_generation_prompt=True) for messages in conversations]
        if not texts:
            return []
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def prompt_ids(self, users: Sequence[str], system: str = SYSTEM_PROMPT) -> list[list[int]]:
        """Token ids of the prompts for many user messages (one tokenizer call)."""
        texts = [self.prompt_text(u, system) for u in users]
        return [list(ids) for ids in self.tokenizer(texts, add_special_tokens=False)["input_ids"]]

    def rewrite_ids(self, rewrites: Sequence[str]) -> list[list[int]]:
        """Token ids that are scored for each rewrite: its tokens, then the end-of-turn token if enabled."""
        if not rewrites:
            return []
        encoded = self.tokenizer(list(rewrites), add_special_tokens=False)["input_ids"]
        tail = [self.end_of_turn_id] if self.end_of_turn_id is not None else []
        return [list(ids) + tail for ids in encoded]
