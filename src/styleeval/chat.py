"""The LogProb prompts and how they become token ids (Pauli et al. 2025, Table 2 and appendix D.1).

The token sets are pinned so that scores are reproducible across implementations:

- prompt ids: ``apply_chat_template([system, user], add_generation_prompt=True)`` rendered as *text*, then
  tokenized with ``add_special_tokens=False``;
- scored ids: ``tokenizer(rewrite, add_special_tokens=False)`` followed by the template's end-of-turn token
  (``<|eot_id|>`` for Llama 3), unless ``end_of_turn=False``.

Text is text: a source, rewrite or style that contains the *string* of a control token (``<|eot_id|>``,
``<|start_header_id|>``...) is tokenized as plain text, so no row can inject a fake turn or a second end of turn.
Only the template's own control tokens become control-token ids (:class:`TextEncoder`). Rows without such
strings get exactly the ids of the plain tokenization above.

:class:`AuthorsFormat` is the hand-written Llama 3 prompt of the authors' ``LogProp.py`` (``variant="authors"``).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Sequence

from styleeval.errors import UserError
from styleeval.templates import ChatTemplateError, render_chat

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
_OPEN, _CLOSE = "\U000f0000", "\U000f0001"  # private-use marks around message contents when locating them

AUTHORS_TEMPLATE = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>{system}<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>{user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
)
"""The authors' hand-written Llama 3 prompt (``LogProp.py``): no blank line after a header, no date lines."""

AUTHORS_END_OF_TURN = "<|eot_id|>"


class TextEncoder:
    """Tokenizes rendered prompts so that only the template's own control tokens become control tokens.

    A rendered prompt comes with the character spans of its *text* (message contents). When no span contains the
    string of an added token (``<|eot_id|>``...), the prompt is tokenized as one string, as usual. Otherwise the
    prompt is cut at the control tokens that lie outside the spans (the template's own: where a tokenizer cuts
    anyway), those become their ids, and each piece between them is tokenized with control-token strings kept as
    text (``split_special_tokens``).

    No call changes a tokenizer's settings, so that one tokenizer serves any number of threads: a ``transformers``
    fast tokenizer writes ``split_special_tokens`` into its shared Rust tokenizer on every call that asks for the
    other setting, and a concurrent call then encodes with the setting of the last writer (template control tokens
    split into bytes, or a rewrite's ``<|eot_id|>`` read as the end of turn). Template text goes through the tokenizer
    as it is configured (:attr:`controls`; a copy where its default splits control tokens), and text holding a
    control-token string through a private copy configured once to keep them as text (made when first needed). Text
    without such a string has the same ids either way.
    """

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        added = sorted(tokenizer.get_added_vocab(), key=len, reverse=True)
        self.pattern = re.compile("|".join(re.escape(t) for t in added)) if added else None
        self.controls = _configured(tokenizer, split_special_tokens=False)
        self._as_text = None  # _configured(tokenizer, split_special_tokens=True), made on first use

    def has_control(self, text: str) -> bool:
        """Whether ``text`` contains the string of an added (control) token."""
        return self.pattern is not None and self.pattern.search(text) is not None

    def plain(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text with every control-token string kept as text (one tokenizer call per kind)."""
        texts = list(texts)
        out: list[list[int]] = [[] for _ in texts]
        guarded = [i for i, text in enumerate(texts) if self.has_control(text)]
        if guarded and self._as_text is None:  # two threads may both make it: equal copies, one kept
            self._as_text = _configured(self.tokenizer, split_special_tokens=True)
        unguarded = sorted(set(range(len(texts))).difference(guarded))
        for tokenizer, rows in ((self.controls, unguarded), (self._as_text, guarded)):
            if rows:
                encoded = tokenizer([texts[i] for i in rows], add_special_tokens=False)["input_ids"]
                for i, ids in zip(rows, encoded, strict=True):
                    out[i] = list(ids)
        return out

    def encode(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]] | None]) -> list[list[int]]:
        """Token ids of rendered prompts; ``spans[i]`` lists the (start, end) character spans of text in ``texts[i]``
        (``None``: no span holds a control-token string, tokenize normally)."""
        out: list[list[int] | None] = [None] * len(texts)
        normal = [i for i, sp in enumerate(spans) if sp is None]
        if normal:
            encoded = self.controls([texts[i] for i in normal], add_special_tokens=False)["input_ids"]
            for i, ids in zip(normal, encoded, strict=True):
                out[i] = list(ids)
        for i, sp in enumerate(spans):
            if sp is not None:
                out[i] = self._encode_guarded(texts[i], sp)
        return out  # type: ignore[return-value]

    def _encode_guarded(self, text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
        vocab = self.tokenizer.get_added_vocab()
        pieces: list[str | int] = []  # text pieces and control-token ids
        pos = 0
        for start, end in [*sorted(spans), (len(text), len(text))]:
            template = text[pos:start]  # template text: its control-token strings are control tokens
            last = 0
            for m in self.pattern.finditer(template) if self.pattern is not None else ():
                pieces.append(template[last : m.start()])
                pieces.append(vocab[m.group()])
                last = m.end()
            pieces.append(template[last:])
            pieces.append(text[start:end])  # message text: stays text
            pos = end
        merged: list[str | int] = []
        for piece in pieces:
            if isinstance(piece, str) and merged and isinstance(merged[-1], str):
                merged[-1] += piece
            elif piece != "":
                merged.append(piece)
        strings = [p for p in merged if isinstance(p, str) and p]
        encoded = iter(self.plain(strings))
        ids: list[int] = []
        for piece in merged:
            if isinstance(piece, int):
                ids.append(piece)
            elif piece:
                ids.extend(next(encoded))
        return ids


def _configured(tokenizer, split_special_tokens: bool):
    """``tokenizer`` when its calls already keep (``split_special_tokens=True``) or cut out control-token strings as
    asked, else a private copy configured once to: calls on it never write a setting."""
    if bool(getattr(tokenizer, "split_special_tokens", False)) == split_special_tokens:
        return tokenizer

    configured = copy.deepcopy(tokenizer)
    configured.split_special_tokens = split_special_tokens
    backend = getattr(configured, "backend_tokenizer", None)  # fast tokenizers: the Rust tokenizer's own setting
    if backend is not None:
        backend.encode_special_tokens = split_special_tokens
    return configured


def user_message(context: str, source: str, style: str) -> str:
    """The user instruction of one context (``style``, ``paraphrase`` or ``repeat``)."""
    return INSTRUCTIONS[context].format(style=style, source=source)


PROMPT_CONTEXTS: tuple[str, ...] = ("echo", "unsourced")
"""The two contexts of the prompt guard (``LogProb(guard="prompt")``, docs/training.md "The prompt guard"): readings of
a rewrite as the *prompt's* text rather than the source's. ``echo``: the repeat instruction applied to the style
instruction (the rewrite read as a copy of the prompt); ``unsourced``: the style instruction with no source (the
rewrite read as what the instruction alone calls for)."""


def guard_message(context: str, source: str, style: str) -> str:
    """The user instruction of one prompt-guard context (:data:`PROMPT_CONTEXTS`), built from the paper's instructions:

    >>> guard_message("echo", "gimme that.", "formal")
    'Repeat the following sentence: Rewrite the following sentence to be formal: gimme that.'
    >>> guard_message("unsourced", "gimme that.", "formal")
    'Rewrite the following sentence to be formal:'
    """
    if context == "echo":
        return user_message("repeat", user_message("style", source, style), style)
    if context == "unsourced":
        return user_message("style", "", style).rstrip()
    raise ValueError(f"no prompt-guard context {context!r}: one of {', '.join(PROMPT_CONTEXTS)}")


SYSTEM_PROMPT_MODES = ("auto", "system", "fold")
"""How the system prompt is given to a chat template (see :class:`ChatFormat`)."""


class ChatFormat:
    """Renders LogProb prompts with a tokenizer's chat template and tokenizes prompts and rewrites.

    Args:
        tokenizer: a Hugging Face tokenizer.
        chat_template: a Jinja chat template to use instead of the tokenizer's own (required when the
            tokenizer has none).
        end_of_turn: append the template's end-of-turn token to every scored rewrite.
        system_prompt: ``"auto"`` (default): a system turn where the template accepts one, else the system prompt
            folded into the user turn as ``system + "\n\n" + user`` (Gemma's templates reject a system role; Google
            documents this practice); ``"system"``: always a system turn (an error where the template rejects it);
            ``"fold"``: always folded. :attr:`folds` says which applies.
    """

    def __init__(self, tokenizer, chat_template: str | None = None, end_of_turn: bool = True,
                 system_prompt: str = "auto") -> None:
        self.tokenizer = tokenizer
        template = chat_template if chat_template is not None else getattr(tokenizer, "chat_template", None)
        if isinstance(template, dict):  # tokenizers with several named templates
            template = template.get("default")
        if not template:
            name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
            raise UserError(
                f"model: the tokenizer of {name!r} has no chat template; LogProb needs a chat model. "
                "Pass chat_template=... (a Jinja string) to use one anyway."
            )
        self.template: str = template
        self._source = None if chat_template is None else "given as chat_template="  # None: the tokenizer's
        if system_prompt not in SYSTEM_PROMPT_MODES:
            raise UserError(f"system_prompt must be one of {', '.join(SYSTEM_PROMPT_MODES)}, got {system_prompt!r}")
        accepts = system_prompt == "fold" or self._accepts_system()
        if system_prompt == "system" and not accepts:
            raise UserError("system_prompt='system': this chat template rejects a system turn (System role not "
                            "supported); use system_prompt='auto' or 'fold' to fold it into the user turn")
        self.folds = system_prompt == "fold" or not accepts
        self.encoder = TextEncoder(tokenizer)
        self._frames: dict[str, tuple[str, str, bool] | None] = {}
        self._heads: dict[str, tuple[int, list[int]] | None] = {}
        self.end_of_turn = end_of_turn
        self.end_of_turn_id: int | None = self._find_end_of_turn() if end_of_turn else None

    @property
    def template_hash(self) -> str:
        """First 10 hex digits of the SHA-256 of the chat template."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:10]

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        """The chat template applied to ``messages``, as text: what ``tokenizer.apply_chat_template(...,
        tokenize=False)`` gives, rendered within bounds (:func:`styleeval.templates.render_chat`: a model's template
        is untrusted input); a template that fails is one :class:`~styleeval.templates.ChatTemplateError`."""
        return render_chat(self.tokenizer, self.template, messages, add_generation_prompt, source=self._source,
                           **TEMPLATE_KWARGS)

    def _accepts_system(self) -> bool:
        """Whether the template renders a system turn (Gemma's raise "System role not supported"); any other failure
        of the template is its :class:`~styleeval.templates.ChatTemplateError`."""
        try:
            self.render([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                        add_generation_prompt=True)
        except ChatTemplateError as err:  # the template's own raise_exception about a system turn: Gemma's
            if err.raised and "system" in err.reason.lower():
                return False
            raise
        return True

    def messages(self, user: str, system: str | None = SYSTEM_PROMPT) -> list[dict[str, str]]:
        """The chat messages of one prompt: a system turn and the user turn, or the system prompt folded into the
        user turn (:attr:`folds`)."""
        if system is None:
            return [{"role": "user", "content": user}]
        if self.folds:
            return [{"role": "user", "content": f"{system}\n\n{user}"}]
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def fold(self, conversation: Sequence[dict[str, str]]) -> list[dict[str, str]]:
        """A conversation as this template takes it: a leading system message folded into the first user message
        where :attr:`folds`."""
        conversation = list(conversation)
        if self.folds and len(conversation) > 1 and conversation[0]["role"] == "system" \
                and conversation[1]["role"] == "user":
            return self.messages(conversation[1]["content"], conversation[0]["content"]) + conversation[2:]
        return conversation

    def prompt_text(self, user: str, system: str = SYSTEM_PROMPT) -> str:
        """System turn (or the folded system prompt) + user turn + the assistant header, as text."""
        return self.render(self.messages(user, system), add_generation_prompt=True)

    def _find_end_of_turn(self) -> int:
        messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": _MARKER}]
        rendered = self.render(messages, add_generation_prompt=False)
        if _MARKER not in rendered:
            raise UserError("chat_template: the template does not render the assistant message")
        tail = rendered.split(_MARKER, 1)[1].lstrip()
        ids = self.encoder.encode([tail], [None])[0] if tail else []
        if not ids:
            raise UserError(
                "chat_template: the template adds no end-of-turn token after an assistant message; "
                "pass end_of_turn=False"
            )
        return int(ids[0])

    def render_spans(
        self, messages: list[dict[str, str]], add_generation_prompt: bool
    ) -> tuple[str, list[tuple[int, int]]]:
        """The rendered text and the character span of every message's content in it.

        Each content is rendered between two private-use marks (outside its leading and trailing whitespace, so a
        template that trims still trims); the marks are then removed. Raises ``ValueError`` when the template
        changes a content in a way that hides where it is.
        """
        marked = []
        for message in messages:
            content = message["content"]
            if _OPEN in content or _CLOSE in content:
                raise UserError("text contains the private-use characters U+F0000/U+F0001, which styleeval reserves")
            core = content.strip()
            lead = content[: len(content) - len(content.lstrip())]
            trail = content[len(content.rstrip()) :] if core else ""
            marked.append({**message, "content": f"{lead}{_OPEN}{core}{_CLOSE}{trail}"})
        text = self.render(marked, add_generation_prompt)
        spans, out, pos = [], [], 0
        for part in re.split(f"([{_OPEN}{_CLOSE}])", text):
            if part == _OPEN:
                spans.append([pos, pos])
            elif part == _CLOSE:
                spans[-1][1] = pos
            else:
                out.append(part)
                pos += len(part)
        plain = "".join(out)
        if plain != self.render(messages, add_generation_prompt) or len(spans) != len(messages):
            raise UserError("the chat template transforms message contents; text with control-token strings "
                            "cannot be kept as plain text with it")
        return plain, [(a, b) for a, b in spans]

    def conversation_ids(self, conversations: Sequence[list[dict[str, str]]]) -> list[list[int]]:
        """Token ids of each conversation rendered with the generation prompt (one tokenizer call); message
        contents are text even where they hold control-token strings."""
        texts: list[str] = []
        spans: list[list[tuple[int, int]] | None] = []
        for messages in conversations:
            messages = self.fold(messages)
            if any(self.encoder.has_control(m["content"]) for m in messages):
                text, sp = self.render_spans(messages, add_generation_prompt=True)
                texts.append(text)
                spans.append(sp)
            else:
                texts.append(self.render(messages, add_generation_prompt=True))
                spans.append(None)
        return self.encoder.encode(texts, spans)

    def _frame(self, system: str) -> tuple[str, str, bool] | None:
        """(text before the user message, text after it, whether the template trims it), found by rendering the
        template once with a probe; ``None`` when the template does not render a user message verbatim or trimmed."""
        if system not in self._frames:
            probe = "\u2063styleeval-user-probe\u2063"
            padded = f" \n{probe}\n "
            text = self.prompt_text(padded, system)
            frame = None
            for needle, trims in ((padded, False), (probe, True)):
                if text.count(needle) == 1 and (not trims or padded not in text):
                    head, tail = text.split(needle)
                    frame = (head, tail, trims)
                    break
            self._frames[system] = frame
        return self._frames[system]

    def prompt_texts(self, users: Sequence[str], system: str = SYSTEM_PROMPT) -> list[str]:
        """The rendered prompt of each user message: the template is rendered once per system prompt and each
        user message filled in (checked against a full rendering of the first one; else every one is rendered)."""
        frame = self._frame(system)
        if frame is not None and users:
            head, tail, trims = frame
            texts = [head + (u.strip() if trims else u) + tail for u in users]
            if texts[0] == self.prompt_text(users[0], system):
                return texts
        return [self.prompt_text(u, system) for u in users]

    def prompt_ids(self, users: Sequence[str], system: str = SYSTEM_PROMPT) -> list[list[int]]:
        """Token ids of the prompts for many user messages: each distinct message once, the template rendered once,
        the template's head (system turn) tokenized once (:meth:`_head_cut`), the rest in one tokenizer call."""
        users = list(users)
        distinct = list(dict.fromkeys(users))
        if self.encoder.has_control(system):
            guarded = list(range(len(distinct)))
        else:
            guarded = [i for i, u in enumerate(distinct) if self.encoder.has_control(u)]
        guarded_set = set(guarded)
        plain = [i for i in range(len(distinct)) if i not in guarded_set]
        texts: list[str] = [""] * len(distinct)
        spans: list[list[tuple[int, int]] | None] = [None] * len(distinct)
        for i, text in zip(plain, self.prompt_texts([distinct[i] for i in plain], system), strict=True):
            texts[i] = text
        for i in guarded:
            texts[i], spans[i] = self.render_spans(self.messages(distinct[i], system), add_generation_prompt=True)
        ids: list[list[int] | None] = [None] * len(distinct)
        cut = self._head_cut(system) if plain else None
        if cut is not None:  # every plain text starts with the head: tokenize it once
            n_chars, head_ids = cut
            tails = self.encoder.encode([texts[i][n_chars:] for i in plain], [None] * len(plain))
            for i, tail in zip(plain, tails, strict=True):
                ids[i] = head_ids + tail
            if ids[plain[0]] != self.encoder.encode([texts[plain[0]]], [None])[0]:  # checked on every call
                cut = None
        if cut is None:
            for i, row_ids in zip(plain, self.encoder.encode([texts[i] for i in plain], [None] * len(plain)),
                                  strict=True):
                ids[i] = row_ids
        for i, row_ids in zip(guarded, self.encoder.encode([texts[i] for i in guarded], [spans[i] for i in guarded]),
                              strict=True):
            ids[i] = row_ids
        index = {u: i for i, u in enumerate(distinct)}
        return [list(ids[index[u]]) for u in users]  # type: ignore[arg-type]

    def _head_cut(self, system: str) -> tuple[int, list[int]] | None:
        """(characters, token ids) of the template's head up to and including its last control token, when the head
        has one: a tokenizer always splits at a control token, so ids(head + rest) = ids(head) + ids(rest) there.
        ``None`` without a frame or a control token in the head."""
        frame = self._frame(system)
        if frame is None or self.encoder.pattern is None:
            return None
        if system not in self._heads:
            matches = list(self.encoder.pattern.finditer(frame[0]))
            head = frame[0][: matches[-1].end()] if matches else ""
            self._heads[system] = (len(head), self.encoder.encode([head], [None])[0]) if head else None
        return self._heads[system]

    def rewrite_ids(self, rewrites: Sequence[str]) -> list[list[int]]:
        """Token ids that are scored for each rewrite: its tokens (control-token strings as text), then the
        end-of-turn token if enabled."""
        tail = [self.end_of_turn_id] if self.end_of_turn_id is not None else []
        return [ids + tail for ids in self.encoder.plain(rewrites)]


class AuthorsFormat:
    """The authors' prompt format (``LogProp.py``): :data:`AUTHORS_TEMPLATE` filled with the system prompt and the
    instruction and tokenized as one string; the rewrite tokenized as ``rewrite + "<|eot_id|>"``.

    Needs a Llama 3 tokenizer (the template's control tokens must be tokens of its vocabulary). Text is text here
    too: control-token strings in the instruction or the rewrite stay plain text.
    """

    end_of_turn = True

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.encoder = TextEncoder(tokenizer)
        added = tokenizer.get_added_vocab()
        missing = [t for t in re.findall(r"<\|[a-z_]+\|>", AUTHORS_TEMPLATE) if t not in added]
        if missing:
            name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
            raise UserError(f"variant='authors' writes the Llama 3 prompt by hand and needs a Llama 3 tokenizer; "
                            f"{name!r} has no token {missing[0]}")
        self.template = AUTHORS_TEMPLATE
        self.end_of_turn_id: int = added[AUTHORS_END_OF_TURN]

    @property
    def template_hash(self) -> str:
        """First 10 hex digits of the SHA-256 of the hand-written template."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:10]

    def prompt_ids(self, users: Sequence[str], system: str = SYSTEM_PROMPT) -> list[list[int]]:
        """Token ids of the authors' prompt for each user instruction."""
        head, middle, tail = re.split(r"\{system\}|\{user\}", self.template)
        texts, spans = [], []
        for user in users:
            texts.append(head + system + middle + user + tail)
            guarded = self.encoder.has_control(system) or self.encoder.has_control(user)
            a = len(head)
            b = a + len(system) + len(middle)
            spans.append([(a, a + len(system)), (b, b + len(user))] if guarded else None)
        return self.encoder.encode(texts, spans)

    def rewrite_ids(self, rewrites: Sequence[str]) -> list[list[int]]:
        """Token ids of ``rewrite + "<|eot_id|>"`` for each rewrite (the first one is context, the rest scored)."""
        return [ids + [self.end_of_turn_id] for ids in self.encoder.plain(rewrites)]
