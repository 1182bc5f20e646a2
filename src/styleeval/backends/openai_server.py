"""The server backend: every call styleeval makes to an OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, a
hosted API) goes through :class:`ServerClient`, whose requests go through
:class:`~styleeval.backends.transport.Transport`: keep-alive connections, a total deadline per request (a server that
drips its answer byte by byte is cut off and retried), and the official ``openai`` client's retries (408/409/429/5xx
answers, timeouts and connection errors, 0.5 s doubling up to 8 s, ``max_retries`` times, ``Retry-After`` honoured).
On top of it this module adds:

- bounded concurrency: at most ``max_concurrency`` requests in flight, results in input order;
- one request per *row* (a row may hold several prompts, e.g. LogProb's three contexts), so that a failure raises a
  :class:`ServerError` whose ``row`` is the caller's row;
- answers checked before use: a reply without choices, with too few log-probabilities, or with a log-probability that
  is not finite or is positive is a :class:`ServerError` naming the row, never a NaN score;
- :class:`ServerBackend`, the :class:`~styleeval.backends.base.Backend` on top of it, whose identity is what the server
  reports (``/v1/models``: id, root, max_model_len) plus the rounded log-probabilities of a fixed probe text, so that
  two servers with different weights under one served name sign differently and a restarted server signs the same.

The API key comes from ``api_key=``, else ``STYLEEVAL_API_KEY``, else ``OPENAI_API_KEY`` (local servers accept
any key).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from tqdm.auto import tqdm

from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    REVISION,
    SERVER_CHAT,
    TOKENIZER,
    TRUST_REMOTE_CODE,
    Backend,
    BackendError,
    Decoding,
    Identity,
    reject_options,
)
from styleeval.backends.transport import Transport, TransportError
from styleeval.errors import UserError
from styleeval.hub import hub_id
from styleeval.optiontypes import Option

if TYPE_CHECKING:  # imported where a tensor is made: the CLI builds its parser without torch
    import torch

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_MAX_CONCURRENCY = 8
MAX_ROWS_PER_REQUEST = 16
"""Rows whose prompts share one request when a call has more rows than ``max_concurrency`` (at most this many a
request, and never fewer requests than ``max_concurrency``): per-request costs (HTTP, JSON, the SDK) are paid once
per group. A row's numbers do not depend on the rows it is sent with (the server scores every prompt alone)."""
POSITIVE_TOLERANCE = 1e-4
"""A returned log-probability above this is an error (a probability > 1), not a score."""
IDENTITY_SECONDS = 300.0
"""A server's identity is probed again when it is older than this (long-lived processes)."""
PROBE_TEXT = "Style transfer rewrites a text in another style and keeps its meaning: nothing dropped or invented."
"""The fixed text whose prompt log-probabilities fingerprint the weights behind a URL."""


class ServerError(BackendError):
    """A request to the server failed for good: rejected (4xx), unreachable after every retry, or answered with
    something unusable (a :class:`~styleeval.backends.base.BackendError`).

    ``status`` is the HTTP status of a rejected request, 200 for an answer that lacks what was asked for or holds
    invalid values, and ``None`` when the server could not be reached or timed out. ``row`` is the caller's row
    (``None`` when the failure concerns no row, e.g. listing the models); ``reason`` the message without the row.
    """


def api_key_from_env() -> str:
    """``STYLEEVAL_API_KEY``, else ``OPENAI_API_KEY``, else ``"EMPTY"`` (what local servers accept)."""
    return os.environ.get("STYLEEVAL_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"


class ServerClient:
    """A client of one OpenAI-compatible server.

    Args:
        base_url: the server's API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: the served model name sent with every request; ``None``: the only model the server lists.
        api_key: the API key (default: :func:`api_key_from_env`).
        max_concurrency: requests in flight at once.
        timeout: seconds one request may take in all (headers and body) before it is abandoned and retried.
        max_retries: retries of a failed request (429, 5xx, timeouts, connection errors) with exponential backoff.
        progress: show a progress bar over rows.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        progress: bool = False,
    ) -> None:
        if max_concurrency < 1:
            raise UserError(f"max_concurrency must be positive, got {max_concurrency}")
        if timeout <= 0:
            raise UserError(f"timeout must be positive, got {timeout}")
        if max_retries < 0:
            raise UserError(f"max_retries must be >= 0, got {max_retries}")
        self.transport = Transport(base_url, api_key or api_key_from_env(), timeout, max_retries)
        self.base_url = self.transport.base_url
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.progress = progress
        self._model = model
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- models -------------------------------------------------------------------------------------------
    def list_models(self) -> list[dict[str, Any]]:
        """The models the server serves (``GET /models``), as dicts (``id``, and for vLLM ``root``...)."""
        page = self._call(lambda: _loads(self.transport.request("GET", "/models")), "listing the served models")
        return [dict(m) for m in page["data"]]

    def model_entry(self) -> dict[str, Any]:
        """What ``/models`` says of the served model (``{}`` when it is not listed)."""
        return next((m for m in self.list_models() if m.get("id") == self.model), {})

    @property
    def model(self) -> str:
        """The served model name sent with every request (asked from the server when not given)."""
        if self._model is None:
            models = self.list_models()
            if len(models) != 1:
                names = ", ".join(repr(m["id"]) for m in models) or "none"
                raise UserError(f"{self.base_url} serves {len(models)} models ({names}); pass the model name")
            self._model = str(models[0]["id"])
        return self._model

    def fingerprint(self) -> str:
        """``server-<12 hex>``: a hash of what ``/models`` reports of the model (id, root, max_model_len) and of the
        weights' answers to :data:`PROBE_TEXT` that batch noise does not move: at every prompt position the most
        likely next token (``prompt_logprobs`` with the top token; a margin of more than the noise, about 1e-3 in
        bf16, keeps it in place), so other weights under the same name sign differently and the same weights sign
        the same across calls, batches and restarts. A server without prompt log-probabilities: its greedy 16-token
        reply and the generated tokens' log-probabilities' top tokens; one that gives no log-probabilities at all
        is marked ``-unverified`` (its reply text alone cannot tell two models apart)."""
        entry = self.model_entry()
        reported = [entry.get("id"), entry.get("root"), entry.get("max_model_len")]
        suffix = ""
        try:
            response = self._call(lambda: self._post("/completions", {
                "model": self.model, "prompt": PROBE_TEXT, "max_tokens": 1, "temperature": 0.0,
                "prompt_logprobs": 1}), "fingerprinting the model")
            entries = _first_choice(response, self.base_url).get("prompt_logprobs")
            if not entries:
                raise ServerError("no prompt_logprobs", 200)
            probe: Any = [_top_token(position) for position in entries[1:] if position]
        except ServerError as err:
            if err.status is None or err.status >= 500:
                raise
            response = self._call(lambda: self._post("/completions", {
                "model": self.model, "prompt": PROBE_TEXT, "max_tokens": 16, "temperature": 0.0, "logprobs": 1}),
                "fingerprinting the model")
            choice = _first_choice(response, self.base_url)
            top = (choice.get("logprobs") or {}).get("top_logprobs")
            if top:
                probe = [choice.get("text"), [max(t, key=t.get) if t else None for t in top]]
            else:
                probe, suffix = choice.get("text"), "-unverified"
        digest = hashlib.sha256(json.dumps([reported, probe]).encode()).hexdigest()[:12]
        return f"server-{digest}{suffix}"

    # -- requests -----------------------------------------------------------------------------------------
    def chat(self, conversations: Sequence[list[dict[str, str]]], per_row: Sequence[dict[str, Any]] | None = None,
             **decoding: Any) -> list[str]:
        """The reply text for each conversation (``POST /chat/completions``), in input order.

        ``decoding`` holds request parameters: ``max_tokens``, ``temperature``, ``top_p``, ``seed``,
        ``extra_body`` (server-specific fields, e.g. vLLM's ``chat_template_kwargs``)...; ``per_row[i]`` adds
        parameters of row ``i`` alone (its ``seed``).
        """
        model = self.model
        extras = list(per_row) if per_row is not None else [{}] * len(conversations)

        def one(item: tuple[list[dict[str, str]], dict[str, Any]]) -> str:
            messages, extra = item
            response = self._post("/chat/completions", {"model": model, "messages": messages}, decoding, extra)
            return (_first_choice(response, self.base_url).get("message") or {}).get("content") or ""

        return self.map_rows(one, list(zip(conversations, extras)), "chat")

    def complete(self, prompts: Sequence[Sequence[int]], stop_token_ids: Sequence[int] = (),
                 per_row: Sequence[dict[str, Any]] | None = None, **decoding: Any) -> list[str]:
        """The generated text after each token-id prompt (``POST /completions``), in input order.

        Prompts rendered and tokenized locally keep user text as text (see :class:`styleeval.chat.TextEncoder`);
        ``stop_token_ids`` (vLLM) ends a reply at the template's end of turn; ``per_row[i]`` adds parameters of row
        ``i`` alone (its ``seed``).
        """
        model = self.model
        extra_body = dict(decoding.pop("extra_body", {}) or {})
        if stop_token_ids:
            extra_body["stop_token_ids"] = [int(t) for t in stop_token_ids]
        extras = list(per_row) if per_row is not None else [{}] * len(prompts)

        def one(item: tuple[Sequence[int], dict[str, Any]]) -> str:
            prompt, extra = item
            response = self._post("/completions", {"model": model, "prompt": [list(map(int, prompt))], **extra_body},
                                  decoding, extra)
            return _first_choice(response, self.base_url).get("text") or ""

        return self.map_rows(one, list(zip(prompts, extras)), "completion")

    def prompt_logprobs(self, rows: Sequence[Sequence[Sequence[int]]]) -> list[list[list[float]]]:
        """For each row (a list of token-id prompts sent in one request), the log-probability of every prompt token
        after the first, given the tokens before it.

        Uses ``POST /completions`` with ``max_tokens=1`` and vLLM's ``prompt_logprobs=0``; a server that does not
        return prompt log-probabilities, or returns values that are not log-probabilities, raises
        :class:`ServerError` saying so.
        """
        return self.map_rows(self._prompt_logprobs_one, rows, "prompt log-probabilities")

    def batched_prompt_logprobs(self, requests: Sequence[Sequence[tuple[Sequence[int], int]]], what: str = "scoring"
                                ) -> list[list[list[float]]]:
        """For each request (a row's prompts, each with how many of its last tokens are wanted), those tokens'
        log-probabilities. Up to :data:`MAX_ROWS_PER_REQUEST` rows share one HTTP request when there are more rows
        than ``max_concurrency``; a failed batch is sent again row by row, so that an error names its own row."""
        def send(rows: Sequence[Sequence[tuple[Sequence[int], int]]]) -> list[list[list[float]]]:
            flat = [item for row in rows for item in row]
            if not flat:
                return [[] for _ in rows]
            values = iter(self._prompt_logprobs_one([p for p, _ in flat], [t for _, t in flat]))
            return [[next(values) for _ in row] for row in rows]

        per = max(1, min(MAX_ROWS_PER_REQUEST, -(-len(requests) // self.max_concurrency)))
        if per == 1:
            return self.map_rows(lambda r: send([r])[0], requests, what)
        batches = list(enumerate(requests[i : i + per] for i in range(0, len(requests), per)))

        def one(item: tuple[int, Sequence[Sequence[tuple[Sequence[int], int]]]]) -> list[list[list[float]]]:
            index, batch = item
            try:
                return send(batch)
            except ServerError as err:
                if err.status is None:  # unreachable after every retry: no row to blame
                    raise
            answers = []
            for k, row in enumerate(batch):  # which row? each alone
                try:
                    answers.append(self._call(lambda row=row: send([row])[0], what))
                except ServerError as err:
                    raise _RowFailure(index * per + k, err) from None
            return answers

        try:
            answered = self.map_rows(one, batches, what)
        except _RowFailure as failure:
            raise ServerError(failure.error.reason, failure.error.status, failure.row, what) from None
        except ServerError as err:  # the batch's first row
            raise ServerError(err.reason, err.status, None if err.row is None else err.row * per, what) from None
        return [row for batch in answered for row in batch]

    def _prompt_logprobs_one(self, prompts: Sequence[Sequence[int]],
                             tails: Sequence[int] | None = None) -> list[list[float]]:
        """One request: each prompt's token log-probabilities after the first token, or its last ``tails[i]`` only
        (the rest of the answer is not read). The answer is read as plain JSON (orjson when installed), not as the
        SDK's objects: a prompt's log-probabilities are hundreds of small dicts, and this is the client's hot path."""
        body = {"model": self.model, "prompt": [[int(t) for t in p] for p in prompts], "max_tokens": 1,
                "temperature": 0.0, "prompt_logprobs": 0}
        content = self.transport.request("POST", "/completions", _dumps(body))
        if tails is not None:
            fast = _tail_logprobs(content, prompts, tails)
            if fast is not None:
                for p, row in zip(prompts, fast):
                    if not all(-math.inf < v <= POSITIVE_TOLERANCE for v in row):  # then name the first bad one
                        for i, v in enumerate(row):
                            self._checked(v, p[len(p) - len(row) + i])
                return fast
        payload = _loads(content)
        choices = sorted(payload.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != len(prompts):
            raise ServerError(f"{self.base_url} answered {len(choices)} of {len(prompts)} prompts", 200)
        out = []
        for k, (prompt, choice) in enumerate(zip(prompts, choices)):
            entries = choice.get("prompt_logprobs")
            if entries is None:
                raise ServerError(
                    f"{self.base_url} returned no prompt_logprobs: this needs a server that scores prompt "
                    "tokens (vLLM's OpenAI server does; hosted APIs usually do not)", 200
                )
            if len(entries) != len(prompt):
                raise ServerError(f"{self.base_url} returned {len(entries)} prompt log-probabilities for a "
                                  f"prompt of {len(prompt)} tokens", 200)
            start = 1 if tails is None else max(1, len(prompt) - tails[k])
            values = []
            for token, entry in zip(prompt[start:], entries[start:]):
                item = entry.get(str(int(token))) if isinstance(entry, dict) else None
                if item is None:
                    raise ServerError(f"{self.base_url} returned no log-probability for prompt token {token}", 200)
                values.append(self._checked(_logprob_value(item), token))
            out.append(values)
        return out

    def _checked(self, value: float, token: Any) -> float:
        if not math.isfinite(value) or value > POSITIVE_TOLERANCE:
            raise ServerError(f"{self.base_url} returned the log-probability {value!r} for token {token}: not a "
                              "log-probability (it must be finite and <= 0); the server is faulty", 200)
        return value

    def top_logprobs(self, prompts: Sequence[Sequence[int]], k: int) -> list[dict[int, float]]:
        """The ``k`` most likely next tokens after each token-id prompt with their log-probabilities (``logprobs=k``)."""
        model = self.model

        def one(prompt: Sequence[int]) -> dict[int, float]:
            response = self._post("/completions", {
                "model": model, "prompt": [list(map(int, prompt))], "max_tokens": 1, "temperature": 0.0,
                "logprobs": k, "return_tokens_as_token_ids": True})
            top_logprobs = (_first_choice(response, self.base_url).get("logprobs") or {}).get("top_logprobs")
            if not top_logprobs:
                raise ServerError(f"{self.base_url} returned no top log-probabilities", 200)
            top = top_logprobs[0] or {}
            return {int(str(tok).removeprefix("token_id:")): self._checked(float(lp), tok) for tok, lp in top.items()}

        return self.map_rows(one, prompts, "top log-probabilities")

    # -- plumbing -----------------------------------------------------------------------------------------
    def map_rows(self, fn: Callable[[T], R], rows: Sequence[T], what: str = "request") -> list[R]:
        """``fn`` on every row with at most ``max_concurrency`` in flight; results in input order.

        A failure raises :class:`ServerError` whose ``row`` is the first failed row (4xx: the server's message).
        """
        rows = list(rows)
        results: list[Any] = [None] * len(rows)
        if not rows:
            return results
        bar = tqdm(total=len(rows), desc=what, unit="row", disable=not self.progress, leave=False)
        pool = self._workers()
        futures = [pool.submit(self._call, lambda r=r: fn(r), what, i) for i, r in enumerate(rows)]
        try:
            for i, future in enumerate(futures):
                results[i] = future.result()
                bar.update(1)
        except BaseException:
            for future in futures:
                future.cancel()
            wait(futures)  # the requests already sent end before the error is raised
            raise
        finally:
            bar.close()
        return results

    def _workers(self) -> ThreadPoolExecutor:
        """The request threads, started once and kept for the client's life (a pool a call would start its threads
        on every chunk, each waiting for the GIL before its first request)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="styleeval-http")
            return self._pool

    def _post(self, path: str, body: dict[str, Any], decoding: dict[str, Any] | None = None,
              extra: dict[str, Any] | None = None) -> Any:
        """``body`` with the request parameters ``decoding`` and ``extra`` (``extra_body``'s fields merged in, unset
        ones left out, as the ``openai`` client sends them) posted to ``path``; the answer as JSON values."""
        fields = {**body, **(decoding or {}), **(extra or {})}
        fields.update(fields.pop("extra_body", None) or {})
        data = self.transport.request("POST", path, _dumps({k: v for k, v in fields.items() if v is not None}))
        return _loads(data)

    def _call(self, fn: Callable[[], R], what: str, row: int | None = None) -> R:
        try:
            return fn()
        except ServerError as err:
            raise ServerError(err.reason, err.status, row, what) from None
        except TransportError as err:
            raise ServerError(str(err), err.status, row, what) from None
        except (ValueError, KeyError, AttributeError, TypeError, IndexError) as err:
            # an answer that is not the JSON asked for (truncated, wrong shape): the server's fault, not the input's
            raise ServerError(f"{self.base_url} sent an answer that could not be read ({type(err).__name__}: "
                              f"{str(err)[:200]})", 200, row, what) from None


class _RowFailure(Exception):
    """A row of a batched request failed on its own (carried out of the worker thread with its row)."""

    def __init__(self, row: int, error: ServerError) -> None:
        super().__init__(error.reason)
        self.row, self.error = row, error


def _first_choice(response: Any, base_url: str) -> dict[str, Any]:
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ServerError(f"{base_url} answered without any choice", 200)
    return choices[0]


_PROMPT_LOGPROBS = re.compile(rb'"prompt_logprobs"\s*:')
_ENTRY = re.compile(rb'\{\s*"(\d+)"\s*:\s*\{\s*"logprob"\s*:\s*(-?[0-9.eE+-]+|NaN|-?Infinity)')
"""A prompt position's entry as vLLM writes it: ``{"<token id>":{"logprob":<value>,...``; a JSON string cannot hold
it (its quotes would be escaped), so a match is structure, not text."""


def _tail_logprobs(content: bytes, prompts: Sequence[Sequence[int]], tails: Sequence[int]
                   ) -> list[list[float]] | None:
    """The log-probabilities of each prompt's last ``tails[i]`` tokens, read from the end of each choice's
    ``prompt_logprobs`` without decoding the rest of the answer (hundreds of entries a prompt, of which a few are
    wanted); ``None`` unless the answer has one choice per prompt, in order, whose last entries name exactly those
    tokens (then the caller decodes the whole answer, with its checks and messages)."""
    starts = [m.end() for m in _PROMPT_LOGPROBS.finditer(content)]  # positions, not copies of the answer
    if len(starts) != len(prompts):
        return None
    ends = [*starts[1:], len(content)]
    out = []
    for start, end, prompt, tail in zip(starts, ends, prompts, tails):
        want = [int(t) for t in prompt[len(prompt) - tail :]] if tail else []
        window = (end - start) * (tail + 2) // max(1, len(prompt)) + 256  # the choice's mean entry size
        while True:
            found = _ENTRY.findall(content, max(start, end - window), end)
            if len(found) >= tail or window >= end - start:
                break
            window *= 4
        found = found[len(found) - tail :] if tail else []
        if len(found) != tail or [int(t) for t, _ in found] != want:
            return None
        out.append([float(v) for _, v in found])
    return out


def _loads(data: bytes) -> Any:
    """JSON text as Python values (orjson when installed: about 4x faster on log-probability answers)."""
    try:
        import orjson

        return orjson.loads(data)
    except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib reads the same values
        pass
    except ValueError:  # NaN or Infinity (not JSON, but Python's json writes them): the stdlib reads them
        pass
    return json.loads(data)


def _dumps(value: Any) -> bytes:
    """``value`` as JSON bytes (orjson when installed: the request body of hundreds of token ids a prompt)."""
    try:
        import orjson

        return orjson.dumps(value)
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.dumps(value).encode()


def _logprob_value(item: Any) -> float:
    return float(item["logprob"] if isinstance(item, dict) else item)


def _top_token(position: dict[str, Any]) -> str:
    """The most likely token at one prompt position (the key whose log-probability is the highest): what batch
    noise does not move, unlike the log-probability itself."""
    return max(position, key=lambda token: _logprob_value(position[token]))


class ServerBackend(Backend):
    """An OpenAI-compatible server. Prompts are rendered and tokenized here (``tokenizer``) and sent as token ids;
    without a tokenizer only :meth:`generate_chat` is available (the server renders the chat).

    Args:
        model: the served model name (``None``: the only model the server lists; a preset such as ``1b`` means its
            Hub id).
        base_url: the server's API root.
        tokenizer: a tokenizer object, id or path; ``None``: loaded from the served name when ``need_tokenizer``.
        revision, trust_remote_code: for loading the tokenizer.
        api_key, max_concurrency, timeout, max_retries, progress: :class:`ServerClient` settings.
        extra_body: extra request fields of :meth:`generate_chat` (e.g. vLLM's ``chat_template_kwargs``).
    """

    name = "openai"
    options = (
        Option("base_url", str, "an OpenAI-compatible server (vLLM), e.g. http://127.0.0.1:8000/v1, instead of a "
               "local model"),
        TOKENIZER,
        REVISION,
        TRUST_REMOTE_CODE,
        Option("max_concurrency", int, f"requests in flight (default {DEFAULT_MAX_CONCURRENCY})"),
        Option("timeout", float, f"seconds a request may take in all before it is retried (default "
               f"{DEFAULT_TIMEOUT:g})"),
        Option("max_retries", int, f"retries of a failed request (default {DEFAULT_MAX_RETRIES})"),
        Option("api_key", str, "the server's API key (default: STYLEEVAL_API_KEY, else OPENAI_API_KEY)", cli=False),
        Option("extra_body", dict, "extra fields of chat requests (e.g. vLLM's chat_template_kwargs)", cli=False),
    )
    kind = "server"
    capabilities = frozenset({CANDIDATE_LOGPROBS, SERVER_CHAT})

    @classmethod
    def model_label(cls, model: Any) -> str:
        """A preset's served name, else the name given; ``None``: the server's only model."""
        return "the model the server serves" if model is None else hub_id(model)

    def __init__(self, model: str | None, base_url: str, tokenizer: Any = None, revision: str | None = None,
                 trust_remote_code: bool = False, api_key: str | None = None,
                 max_concurrency: int | None = None, timeout: float | None = None, max_retries: int | None = None,
                 extra_body: dict[str, Any] | None = None, progress: bool = True,
                 need_tokenizer: bool = True) -> None:
        from styleeval.models import PRESETS, load_tokenizer

        served = None if model is None else PRESETS.get(str(model).lower(), str(model))
        self.client = ServerClient(
            base_url, model=served, api_key=api_key,
            max_concurrency=DEFAULT_MAX_CONCURRENCY if max_concurrency is None else int(max_concurrency),
            timeout=DEFAULT_TIMEOUT if timeout is None else float(timeout),
            max_retries=DEFAULT_MAX_RETRIES if max_retries is None else int(max_retries), progress=progress,
        )
        self.base_url = self.client.base_url
        self.model_name = self.client.model
        served_models = self.client.list_models()  # reachable, and serving this name: checked before any work
        entry = next((m for m in served_models if m.get("id") == self.model_name), None)
        if entry is None:
            names = ", ".join(repr(m.get("id")) for m in served_models) or "none"
            raise UserError(f"model: {self.base_url} does not serve {self.model_name!r} (it serves {names}); pass "
                            "the served model name")
        self.extra_body = dict(extra_body or {})
        if tokenizer is None and need_tokenizer:
            tokenizer = self.model_name
        self.tokenizer = None if tokenizer is None else load_tokenizer(tokenizer, revision, bool(trust_remote_code))
        limit = entry.get("max_model_len")
        self._max_length: int | None = int(limit) - 1 if isinstance(limit, int) else None
        self._identity: Identity | None = None
        self._probed = 0.0

    @classmethod
    def from_options(cls, model: Any, options: dict[str, Any], need_tokenizer: bool = True) -> ServerBackend:
        """A server backend from keyword options (``base_url`` required); an option of another backend is an error
        naming it."""
        reject_options(cls.name, options, cls.option_names())
        given = {k: v for k, v in options.items() if v is not None}
        if "base_url" not in given:
            raise UserError("base_url: the openai backend needs the server's URL (e.g. --base-url "
                            "http://127.0.0.1:8000/v1)")
        return cls(model, given.pop("base_url"), need_tokenizer=need_tokenizer, **given)

    @property
    def identity(self) -> Identity:
        """What is behind the URL, probed once and again after :data:`IDENTITY_SECONDS` (a long-lived process, a
        Space or a notebook, notices a redeploy)."""
        if self._identity is None or time.monotonic() - self._probed > IDENTITY_SECONDS:
            return self.verify_identity()
        return self._identity

    def verify_identity(self) -> Identity:
        """Probe the server now (see :meth:`ServerClient.fingerprint`)."""
        self._identity = Identity(self.model_name, self.client.fingerprint(), "server", self.kind)
        self._probed = time.monotonic()
        return self._identity

    @property
    def max_length(self) -> int | None:
        """``max_model_len - 1`` (as ``/models`` reports it): vLLM must be allowed one generated token even when only
        prompts are scored; ``None`` when the server does not say."""
        return self._max_length

    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        import torch

        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        if group < 1:
            raise ValueError(f"group must be positive, got {group}")
        for i, p in enumerate(prompts):
            if len(p) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
        pairs = [(list(p), list(c)) for p, c in zip(prompts, continuations)]
        chunks = [pairs[i : i + group] for i in range(0, len(pairs), group)]
        requests = [[(p + c, len(c)) for p, c in chunk if c] for chunk in chunks]
        answered = self.client.batched_prompt_logprobs(requests, "scoring")
        out = []
        for chunk, values in zip(chunks, answered):
            it = iter(values)
            for _, c in chunk:
                lp = next(it) if c else []
                out.append(torch.from_numpy(np.array(lp, dtype=np.float32)))  # ~3x faster than torch.tensor
        return out

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           shared_prefixes: bool = False) -> torch.Tensor:
        """From the top-20 next tokens where they hold every candidate, else each candidate appended to the prompt
        and read back as a prompt log-probability (exact for any model and vocabulary; vLLM returns both)."""
        import torch

        cands = [int(c) for c in candidates]
        out = torch.empty((len(prompts), len(cands)), dtype=torch.float32)
        try:
            tops = self.client.top_logprobs(prompts, k=20)
        except ServerError as err:
            if err.status is None or err.status >= 500:  # unreachable or failing: no point in another route
                raise
            tops = [{} for _ in prompts]
        missing = []
        for i, top in enumerate(tops):
            if all(c in top for c in cands):
                out[i] = torch.tensor([top[c] for c in cands], dtype=torch.float32)
            else:
                missing.append(i)
        if missing:
            try:
                values = self.token_logprobs([prompts[i] for i in missing for _ in cands],
                                             [[c] for _ in missing for c in cands], group=len(cands))
            except ServerError as err:
                raise ServerError(
                    f"candidate tokens need their log-probabilities; {self.base_url} returned them neither among "
                    f"its top-20 next tokens nor as prompt log-probabilities ({err.reason}). Use a vLLM server",
                    err.status, None if err.row is None else missing[err.row], err.what,
                ) from None
            for k, i in enumerate(missing):
                out[i] = torch.stack([v[0] for v in values[k * len(cands) : (k + 1) * len(cands)]])
        return out

    def _sampling(self, decoding: Decoding, seeds: Sequence[int]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        params: dict[str, Any] = {"max_tokens": decoding.max_new_tokens}
        if decoding.do_sample:
            params.update(temperature=decoding.temperature, top_p=decoding.top_p)
            return params, [{"seed": int(s)} for s in seeds]
        params.update(temperature=0.0)
        return params, [{} for _ in seeds]

    def generate(self, prompts: Sequence[Sequence[int]], decoding: Decoding, seeds: Sequence[int],
                 stop_ids: Sequence[int] = ()) -> list[str]:
        params, per_row = self._sampling(decoding, seeds)
        return self.client.complete(prompts, stop_token_ids=stop_ids, per_row=per_row, **params)

    def generate_chat(self, conversations: Sequence[list[dict[str, str]]], decoding: Decoding,
                      seeds: Sequence[int]) -> list[str]:
        params, per_row = self._sampling(decoding, seeds)
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return self.client.chat(conversations, per_row=per_row, **params)
