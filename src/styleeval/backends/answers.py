"""Reading an OpenAI-compatible server's answers: every answer is parsed whole and checked before one of its numbers
is used, so that a cut, reordered or foreign answer is an error, never a score.

- :func:`read`: the answer decoded against :class:`Answer` (msgspec: the JSON must be complete and every field read
  of its type; fields not read are skipped as they are parsed), then its choices in ``index`` order, after checking
  that it comes from the served model (another model's answer, e.g. a proxy's fallback, is refused) with exactly one
  choice per prompt sent, indexed ``0..n-1`` (the OpenAI API lets a server list them in any order).
- :func:`prompt_logprobs`: a choice's ``prompt_logprobs`` checked against the prompt sent (one entry per token, each
  naming the token sent at its position, ``prompt_token_ids`` where echoed equal to the prompt) and its values read,
  each a finite number <= 0 (:func:`checked`).
- :func:`loads` / :func:`dumps`: other JSON (orjson).

msgspec rather than a generic parser: it validates the schema in C, and its structs are not tracked by Python's
garbage collector, so that reading ~500 log-probability entries a row does not set off full collections of the
process's objects (with orjson's dicts: 2x the allocations and 5x the time in full collections; docs/benchmarks.md).
An answer with ``NaN`` or ``Infinity`` (not JSON, but Python's json writes them) is read by the standard library so
that the value check names the value. A problem raises :class:`AnswerError` saying what the server did; the client
adds its URL and the row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from typing import Any

import msgspec
import orjson

POSITIVE_TOLERANCE = 1e-4
"""A returned log-probability above this is an error (a probability > 1), not a score."""


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


def dumps(value: Any) -> bytes:
    """``value`` as JSON bytes."""
    return orjson.dumps(value)


def loads(data: bytes) -> Any:
    """JSON bytes as Python values; text that is not one complete JSON value raises :class:`AnswerError`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise AnswerError(f"sent an answer that could not be read (not complete JSON: {err})") from None


def read(data: bytes, count: int, model: str, aliases: Callable[[], Collection[str]] = frozenset) -> list[Choice]:
    """The ``count`` choices of the answer ``data`` in ``index`` order, checked: complete JSON of :class:`Answer`'s
    shape, whose ``model`` is ``model`` (or one of ``aliases()``, asked only for another name), whose ``choices``
    are ``count`` objects indexed ``0..count-1``."""
    try:
        answer = _DECODER.decode(data)
    except msgspec.ValidationError as err:
        raise AnswerError(f"sent an answer of another shape than an OpenAI completion ({err})") from None
    except msgspec.DecodeError as err:
        try:  # NaN or Infinity: read by the standard library, so that checked() names the value
            answer = msgspec.convert(json.loads(data), Answer, str_keys=True)
        except (ValueError, msgspec.ValidationError):
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
    """``value`` if it is a log-probability (a finite number <= 0, within :data:`POSITIVE_TOLERANCE`)."""
    if type(value) is not float and type(value) is not int:
        raise AnswerError(f"returned {value!r} as the log-probability of token {token}: not a number")
    if not math.isfinite(value) or value > POSITIVE_TOLERANCE:
        raise AnswerError(f"returned the log-probability {value!r} for token {token}: not a log-probability (it "
                          "must be finite and <= 0); the server is faulty")
    return float(value)


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


def top_token(position: dict[int, Logprob] | dict[str, float]) -> str:
    """The most likely token at one position (the key whose log-probability is the highest, as text): what batch
    noise does not move, unlike the log-probability itself."""
    def value(token: Any) -> float:
        item = position[token]
        return checked(item.logprob if isinstance(item, Logprob) else item, token)

    return str(max(position, key=value))
