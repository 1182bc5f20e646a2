"""Reading an OpenAI-compatible server's answers: every answer is parsed whole and checked before one of its numbers
is used, so that a cut, reordered or foreign answer is an error, never a score.

- :func:`read`: the answer decoded against :class:`Answer` (msgspec: the JSON must be complete and every field read
  of its type; fields not read are skipped as they are parsed), then its choices in ``index`` order, after checking
  that it comes from the served model (another model's answer, e.g. a proxy's fallback, is refused) with exactly one
  choice per prompt sent, indexed ``0..n-1`` (the OpenAI API lets a server list them in any order).
- :func:`prompt_logprobs`: a choice's ``prompt_logprobs`` checked against the prompt sent (one entry per token, each
  naming the token sent at its position, ``prompt_token_ids`` where echoed equal to the prompt) and its values read,
  each a log-probability float32 can hold: from float32's lowest finite value to 0 (:func:`checked`).
- :func:`decoded_tokens`: the text a server names each prompt token by (vLLM's ``decoded_token``), to compare with
  the client tokenizer's.
- :func:`size_limit`: the most bytes an answer to a request may decode to (the transport refuses a larger one, a gzip
  bomb among them, before holding more).
- :func:`loads` / :func:`dumps`: other JSON (msgspec too), as strict as orjson was (:func:`dumps` refuses what
  orjson refused and msgspec would write: keys that are not strings, integers beyond 64 bits, bytes, sets, nesting
  deeper than 254).

msgspec rather than a generic parser: it validates the schema in C, and its structs are not tracked by Python's
garbage collector, so that reading ~500 log-probability entries a row does not set off full collections of the
process's objects (with orjson's dicts, measured before orjson was dropped: 2x the allocations and 5x the time in
full collections; docs/benchmarks.md).
An answer with ``NaN`` or ``Infinity`` (not JSON, but Python's json writes them) is read by the standard library so
that the value check names the value. A problem raises :class:`AnswerError` saying what the server did; the client
adds its URL and the row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

import msgspec

LOWEST_LOGPROB = -3.4028234663852886e38
"""float32's lowest finite value (``numpy.finfo(numpy.float32).min``): scores are float32 tensors, where a lower number
(finite in float64, as JSON reads it) would become ``-inf``."""


ANSWER_BASE_BYTES = 8 << 20
"""What an answer may take besides its tokens' entries: the JSON around them, a reply's text, a server's message."""
ENTRY_BYTES = 1 << 10
"""What one token's entry may take: vLLM writes ``"<id>":{"logprob":<17 digits>,"rank":<n>,"decoded_token":"..."}``,
60-100 bytes (a decoded token of 128 bytes written as ``\\u`` escapes: about 800)."""
PROMPT_EXTRA_TOKENS = 64
"""Tokens a prompt may gain on the server (a BOS token; a chat template's control tokens, per message)."""
UNSAID_MAX_TOKENS = 1 << 15
"""The tokens a reply may take when the request sets no ``max_tokens``."""


class AnswerError(ValueError):
    """An answer that is not what was asked for: the server's fault, not the input's."""


class Logprob(msgspec.Struct, gc=False):
    """One token's entry at a prompt position (vLLM: ``{"logprob": ..., "rank": ..., "decoded_token": ...}``)."""

    logprob: float


class Message(msgspec.Struct, gc=False):
    content: str | None = None


class TokenLogprobs(msgspec.Struct, gc=False):
    """A completion's ``logprobs``: the generated tokens' top tokens."""

    top_logprobs: list[dict[str, float] | None] | None = None


class Choice(msgspec.Struct, gc=False):
    """What styleeval reads of a choice (``/completions`` or ``/chat/completions``)."""

    index: int
    text: str | None = None
    message: Message | None = None
    logprobs: TokenLogprobs | None = None
    prompt_logprobs: list[dict[int, Logprob] | None] | None = None
    """Per prompt position, entries by token id (vLLM writes the ids as JSON strings: read as ints)."""
    prompt_token_ids: list[int] | None = None


class Answer(msgspec.Struct, gc=False):
    model: str | None = None
    choices: list[Choice] | None = None


_DECODER = msgspec.json.Decoder(Answer)


class NamedToken(msgspec.Struct, gc=False):
    """A prompt position's entry as far as it names its token (vLLM: ``decoded_token``)."""

    decoded_token: str | None = None


class NamedChoice(msgspec.Struct, gc=False):
    prompt_logprobs: list[dict[int, NamedToken] | None] | None = None


class NamedAnswer(msgspec.Struct, gc=False):
    choices: list[NamedChoice]


_NAMES_DECODER = msgspec.json.Decoder(NamedAnswer)


def size_limit(request: dict[str, Any]) -> int:
    """The most bytes an answer to ``request`` (a ``/completions`` or ``/chat/completions`` body) may decode to,
    generously: :data:`ANSWER_BASE_BYTES` plus :data:`ENTRY_BYTES` for every entry it may list: each prompt token's
    (with ``prompt_logprobs`` top tokens; a prompt's UTF-8 bytes bound its tokens) and each generated token's (with
    ``logprobs`` / ``top_logprobs`` top tokens), for ``n`` replies to each prompt."""
    prompts = _prompt_sizes(request.get("prompt"), request.get("messages"))
    per_prompt_token = 1 + _count(request.get("prompt_logprobs"))
    per_generated = 1 + max(_count(request.get("logprobs")), _count(request.get("top_logprobs")))
    generated = _count(request.get("max_tokens")) or UNSAID_MAX_TOKENS
    replies = max(1, _count(request.get("n")))
    entries = sum(prompts) * per_prompt_token + len(prompts) * replies * generated * per_generated
    return ANSWER_BASE_BYTES + ENTRY_BYTES * entries


def _count(value: Any) -> int:
    """A request's count field as an int (``True``: 1; absent or not a count: 0)."""
    return int(value) if isinstance(value, (int, float)) and value > 0 else 0


def _prompt_sizes(prompt: Any, messages: Any) -> list[int]:
    """The most tokens each prompt of a request may hold on the server (token ids, texts' UTF-8 bytes, a
    conversation's messages), :data:`PROMPT_EXTRA_TOKENS` added to each."""
    if messages is not None:
        return [sum(len(str(m.get("content", "") if isinstance(m, dict) else m).encode()) + PROMPT_EXTRA_TOKENS
                    for m in messages)]
    if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and isinstance(prompt[0], int)):
        prompt = [prompt]
    if not isinstance(prompt, list):
        return [PROMPT_EXTRA_TOKENS]
    return [(len(p.encode()) if isinstance(p, str) else len(p)) + PROMPT_EXTRA_TOKENS for p in prompt]


JSON_INTS = (-(1 << 63), (1 << 64) - 1)
"""The integers :func:`dumps` writes: a signed or unsigned 64-bit integer (what orjson wrote; a server reads no
more)."""
JSON_DEPTH = 254
"""The most lists and objects inside one another :func:`dumps` writes (orjson's limit)."""


def _plain(value: Any) -> Any:
    """A ``str`` subclass (``numpy.str_``: orjson wrote it) as the ``str`` msgspec writes, an ``int`` subclass as its
    ``int`` (within :data:`JSON_INTS`, checked before); anything else msgspec cannot write is refused as orjson
    refused it."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__module__}.{type(value).__qualname__}")


_UNREADABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What msgspec raises for bytes that are no JSON: malformed or cut (``DecodeError``), not UTF-8, nested deeper than
Python's recursion limit."""
_ENCODER = msgspec.json.Encoder(enc_hook=_plain)
_ANY_DECODER = msgspec.json.Decoder()


def refuse_unwritable(value: Any, depth: int = 0) -> None:
    """Raise ``TypeError`` (orjson's words) for what orjson refused to write and msgspec would write: a dict key
    that is not a string, an integer beyond 64 bits, bytes, a set, nesting deeper than :data:`JSON_DEPTH`."""
    if depth >= JSON_DEPTH and isinstance(value, (dict, list, tuple)):
        raise TypeError("Recursion limit reached")
    if isinstance(value, dict):
        if not all(type(key) is str for key in value):  # a str subclass key too, as orjson
            raise TypeError("Dict key must be str")
        for item in value.values():
            refuse_unwritable(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        kinds = set(map(type, value))  # a prompt's token ids, a batch's texts: checked at C speed
        if kinds == {int}:
            _refuse_large(min(value))
            _refuse_large(max(value))
        elif not kinds <= _LEAVES:
            for item in value:
                refuse_unwritable(item, depth + 1)
    elif isinstance(value, int) and type(value) is not bool:  # an int subclass too (IntEnum), as orjson
        _refuse_large(value)
    elif isinstance(value, (bytes, bytearray, memoryview, set, frozenset)):
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


_LEAVES = {str, float, bool, type(None)}
"""What needs no check: nothing in it can be refused."""


def _refuse_large(number: int) -> None:
    if not JSON_INTS[0] <= number <= JSON_INTS[1]:
        raise TypeError("Integer exceeds 64-bit range")


def dumps(value: Any) -> bytes:
    """``value`` as compact JSON bytes (NaN and infinities as ``null``); ``TypeError`` for a value orjson refused
    (:func:`refuse_unwritable`) or msgspec cannot write."""
    refuse_unwritable(value)
    return _ENCODER.encode(value)


def loads(data: bytes | str) -> Any:
    """JSON as Python values (integers of any size exact); anything that is not one complete JSON value (``NaN``,
    ``Infinity``, a number beyond float64, a byte-order mark, bytes that are not UTF-8, a lone surrogate, nesting
    deeper than Python's recursion limit) raises :class:`AnswerError`. A key given twice keeps its last value."""
    try:
        return _ANY_DECODER.decode(data)
    except _UNREADABLE as err:
        raise AnswerError(f"sent an answer that could not be read (not complete JSON: {err})") from None


def read(data: bytes, count: int, model: str, aliases: Callable[[], Collection[str]] = frozenset) -> list[Choice]:
    """The ``count`` choices of the answer ``data`` in ``index`` order, checked: complete JSON of :class:`Answer`'s
    shape, whose ``model`` is ``model`` (or one of ``aliases()``, asked only for another name), whose ``choices``
    are ``count`` objects indexed ``0..count-1``."""
    try:
        answer = _DECODER.decode(data)
    except msgspec.ValidationError as err:
        raise AnswerError(f"sent an answer of another shape than an OpenAI completion ({err})") from None
    except _UNREADABLE as err:
        try:  # NaN or Infinity: read by the standard library, so that checked() names the value
            answer = msgspec.convert(json.loads(data), Answer, str_keys=True)
        except (ValueError, msgspec.ValidationError, RecursionError):
            raise AnswerError(f"sent an answer that could not be read (not complete JSON: {err})") from None
    named = answer.model
    if named != model and named not in aliases():
        raise AnswerError(f"answered as model {named!r}, not {model!r}: another model's answer (a fallback behind a "
                          "proxy or a load balancer?) is refused")
    listed = answer.choices
    if listed is None:
        raise AnswerError("answered without a list of choices")
    if len(listed) != count:
        raise AnswerError(f"answered {len(listed)} of {count} prompts")
    ordered: list[Choice | None] = [None] * count
    for choice in listed:
        if 0 <= choice.index < count and ordered[choice.index] is None:
            ordered[choice.index] = choice
        else:
            raise AnswerError(f"answered choices indexed {[c.index for c in listed]}, not 0..{count - 1} once each")
    return ordered  # type: ignore[return-value]


def checked(value: Any, token: Any) -> float:
    """``value`` as a float if it is a log-probability float32 holds: a number from :data:`LOWEST_LOGPROB` to 0 (not
    NaN, not infinite, never above 0: a probability above 1, whatever its size). ``-0.0`` (log 1) is read as ``0.0``,
    so that a score is written alike whichever zero a server sends."""
    if type(value) is not float and type(value) is not int:
        raise AnswerError(f"returned {value!r} as the log-probability of token {token}: not a number")
    if not LOWEST_LOGPROB <= value <= 0:  # False for NaN too
        raise AnswerError(f"returned the log-probability {value!r} for token {token}: not a log-probability (it "
                          f"must be a number from {LOWEST_LOGPROB:.2g} to 0); the server is faulty")
    return float(value) + 0.0  # -0.0 + 0.0 == 0.0


def prompt_logprobs(choice: Choice, prompt: Sequence[int], tail: int | None = None) -> list[float]:
    """The log-probabilities of ``prompt``'s tokens after the first (its last ``tail`` tokens only, when given) from
    ``choice``'s ``prompt_logprobs``, after checking the entries against every token sent."""
    entries = choice.prompt_logprobs
    if entries is None:
        raise AnswerError("returned no prompt_logprobs: this needs a server that scores prompt tokens (vLLM's "
                          "OpenAI server does; hosted APIs usually do not)")
    if len(entries) != len(prompt):
        raise AnswerError(f"returned {len(entries)} prompt log-probabilities for a prompt of {len(prompt)} tokens")
    if choice.prompt_token_ids is not None and choice.prompt_token_ids != list(prompt):
        raise AnswerError("echoed other prompt tokens than those sent")
    try:
        named = all(map(dict.__contains__, entries[1:], prompt[1:]))
    except TypeError:  # a position without entries (null)
        named = False
    if not named:
        position = next(i for i in range(1, len(prompt)) if entries[i] is None or prompt[i] not in entries[i])
        raise AnswerError(f"returned no log-probability for prompt token {prompt[position]} (position {position}): "
                          "the answer does not score the tokens sent")
    start = 1 if tail is None else max(1, len(prompt) - tail)
    return [checked(entries[i][prompt[i]].logprob, prompt[i]) for i in range(start, len(prompt))]


def decoded_tokens(data: bytes, prompt: Sequence[int]) -> list[str | None]:
    """The text the one-prompt answer ``data`` (already checked by :func:`read` and :func:`prompt_logprobs`) names
    each token of ``prompt`` after the first by (vLLM's ``decoded_token``); ``None`` where it names none (a server
    that does not say)."""
    try:
        entries = _NAMES_DECODER.decode(data).choices[0].prompt_logprobs or []
    except _UNREADABLE as err:  # ValidationError included: a decoded_token that is not a string
        raise AnswerError(f"sent an answer of another shape than an OpenAI completion ({err})") from None
    return [entries[i][token].decoded_token if entries[i] else None  # type: ignore[index]
            for i, token in enumerate(prompt) if i and i < len(entries)]


def top_token(position: dict[int, Logprob] | dict[str, float]) -> str:
    """The most likely token at one position (the key whose log-probability is the highest, as text): what batch
    noise does not move, unlike the log-probability itself."""
    def value(token: Any) -> float:
        item = position[token]
        return checked(item.logprob if isinstance(item, Logprob) else item, token)

    return str(max(position, key=value))
