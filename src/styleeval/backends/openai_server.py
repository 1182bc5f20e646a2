"""The server backend: every call styleeval makes to an OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, a
hosted API) goes through :class:`ServerClient`, whose requests go through
:class:`~styleeval.backends.transport.Transport` (urllib3): pooled keep-alive connections, a total deadline per
request (a server that drips its answer byte by byte is cut off and retried), and the official ``openai`` client's
retries (408/409/429/5xx answers, timeouts and connection errors, 0.5 s doubling up to 8 s, ``max_retries`` times,
``Retry-After`` honoured).
On top of it this module adds:

- bounded concurrency: at most ``max_concurrency`` requests in flight, results in input order;
- one request per *row* (a row may hold several prompts, e.g. LogProb's three contexts), so that a failure raises a
  :class:`ServerError` whose ``row`` is the caller's row;
- answers parsed whole and checked before use (:mod:`styleeval.backends.answers`): a reply cut anywhere, from
  another model, with choices missing or out of their ``index`` order, for other tokens than those sent, or with a
  log-probability that is not finite, is positive or is below float32's range is a :class:`ServerError` naming the
  row, never a score;
- :class:`ServerBackend`, the :class:`~styleeval.backends.base.Backend` on top of it, whose identity is what the server
  reports (``/v1/models``: id, root, max_model_len) plus the top tokens at every position of a fixed probe text, so
  that two servers with different weights under one served name sign differently and a restarted server signs the
  same (a probe that tells no weights apart marks it ``-unverified``).

The API key comes from ``api_key=``, else ``STYLEEVAL_API_KEY``, else ``OPENAI_API_KEY`` (local servers accept
any key). It is never printed: every message of the client and the backend, and the served name a signature records,
go through :meth:`ServerClient.redact` (the key, the URL's credentials, any bearer token or Basic credentials a
server's words echo, blanked out).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from styleeval.backends import answers
from styleeval.backends.answers import AnswerError
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
from styleeval.progress import bar as progress_bar

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
IDENTITY_SECONDS = 300.0
"""A server's identity is probed again when it is older than this (long-lived processes)."""
PROBE_TEXT = "Style transfer rewrites a text in another style and keeps its meaning: nothing dropped or invented."
"""The fixed text whose prompt log-probabilities fingerprint the weights behind a URL."""
PROBE_TOP = 2
"""The top tokens asked for at every position of the probe: a server that honours the count lists at least two (one
that lists one names only the probe's own token, whatever its weights: the identity is then ``-unverified``)."""


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
        self.transport = Transport(base_url, api_key or api_key_from_env(), timeout, max_retries,
                                   pool_size=max_concurrency)
        self.base_url = self.transport.base_url
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.progress = progress
        self._model = model
        self._served: frozenset[str] | None = None
        self._served_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- models -------------------------------------------------------------------------------------------
    def list_models(self) -> list[dict[str, Any]]:
        """The models the server serves (``GET /models``), as dicts (``id``, and for vLLM ``root``...)."""
        page = self._call(lambda: answers.loads(self.transport.request("GET", "/models")), "listing the served models")
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
                raise UserError(self.redact(f"{self.base_url} serves {len(models)} models ({names}); pass the model "
                                            "name"))
            self._model = str(models[0]["id"])
        return self._model

    def served_names(self) -> frozenset[str]:
        """The names an answer for :attr:`model` may carry in its ``model`` field: the name itself and the other names
        ``/models`` lists for the same weights (``root``; vLLM answers with the first of its ``--served-model-name``).
        Listed once, when an answer first names another model."""
        with self._served_lock:
            if self._served is None:
                models = self.list_models()
                root = next((m.get("root") for m in models if m.get("id") == self.model), None)
                self._served = frozenset({self.model} | {str(m.get("id")) for m in models
                                                         if root is not None and m.get("root") == root})
            return self._served

    def fingerprint(self) -> str:
        """``server-<12 hex>``: a hash of what ``/models`` reports of the model (id, root, max_model_len) and of the
        weights' answers to :data:`PROBE_TEXT` that batch noise does not move: at every prompt position the most
        likely next token (``prompt_logprobs`` with the top :data:`PROBE_TOP` tokens; a margin of more than the noise,
        about 1e-3 in bf16, keeps the first in place), so other weights under the same name sign differently and the
        same weights sign the same across calls, batches and restarts. A server without prompt log-probabilities: its
        greedy 16-token reply and the generated tokens' top tokens. The hash is marked ``-unverified`` when the probe
        carries no information on the weights: no log-probabilities at all (a reply text alone cannot tell two models
        apart), or fewer than the :data:`PROBE_TOP` tokens asked for at a position (a server that ignores the count
        and lists only the token at hand names the probe's own tokens as "top": any weights would sign alike)."""
        entry = self.model_entry()
        reported = [entry.get("id"), entry.get("root"), entry.get("max_model_len")]
        probe, informative = self._call(self._probe, "fingerprinting the model")
        digest = hashlib.sha256(json.dumps([reported, probe]).encode()).hexdigest()[:12]
        return f"server-{digest}{'' if informative else '-unverified'}"

    def _probe(self) -> tuple[Any, bool]:
        """What the weights answer to :data:`PROBE_TEXT` (see :meth:`fingerprint`), and whether it tells weights
        apart."""
        try:
            choice = self._post("/completions", {"model": self.model, "prompt": PROBE_TEXT, "max_tokens": 1,
                                                 "temperature": 0.0, "prompt_logprobs": PROBE_TOP})[0]
            positions = [p for p in (choice.prompt_logprobs or [])[1:] if p]
            if positions:
                return [answers.top_token(p) for p in positions], _lists_top(positions)
        except TransportError as err:
            if err.status is None or err.status >= 500:
                raise
        except AnswerError:
            pass
        choice = self._post("/completions", {"model": self.model, "prompt": PROBE_TEXT, "max_tokens": 16,
                                             "temperature": 0.0, "logprobs": PROBE_TOP})[0]
        positions = (choice.logprobs.top_logprobs if choice.logprobs else None) or []
        if not positions:
            return choice.text, False
        return [choice.text, [answers.top_token(t) if t else None for t in positions]], _lists_top(positions)

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
            choice = self._post("/chat/completions", {"model": model, "messages": messages}, decoding, extra)[0]
            return (choice.message.content if choice.message else None) or ""

        return self.map_rows(one, list(zip(conversations, extras, strict=True)), "chat")

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
            choice = self._post("/completions", {"model": model, "prompt": [list(map(int, prompt))], **extra_body},
                                decoding, extra)[0]
            return choice.text or ""

        return self.map_rows(one, list(zip(prompts, extras, strict=True)), "completion")

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
                return self._call(lambda: send(batch), what)
            except ServerError as err:
                if err.status is None:  # unreachable after every retry: no row to blame
                    raise
            alone = []
            for k, row in enumerate(batch):  # which row? each alone
                try:
                    alone.append(self._call(lambda row=row: send([row])[0], what))
                except ServerError as err:
                    raise _RowFailure(index * per + k, err) from None
            return alone

        try:
            answered = self.map_rows(one, batches, what)
        except _RowFailure as failure:
            raise ServerError(failure.error.reason, failure.error.status, failure.row, what) from None
        except ServerError as err:  # the batch's first row
            raise ServerError(err.reason, err.status, None if err.row is None else err.row * per, what) from None
        return [row for batch in answered for row in batch]

    def _prompt_logprobs_one(self, prompts: Sequence[Sequence[int]],
                             tails: Sequence[int] | None = None) -> list[list[float]]:
        """One request: each prompt's token log-probabilities after the first token, or its last ``tails[i]`` only.
        The whole answer is read and checked (:func:`answers.prompt_logprobs`: one choice per prompt, by ``index``,
        every token sent named at its position) before a value is taken."""
        body = {"model": self.model, "prompt": [[int(t) for t in p] for p in prompts], "max_tokens": 1,
                "temperature": 0.0, "prompt_logprobs": 0}
        choices = self._post("/completions", body, count=len(prompts))
        wanted = tails if tails is not None else [None] * len(prompts)
        return self._read(lambda: [answers.prompt_logprobs(c, p, t)
                                   for c, p, t in zip(choices, prompts, wanted, strict=True)])

    def decoded_prompt(self, prompt: Sequence[int]) -> list[str | None]:
        """The text the server names each token of ``prompt`` after the first by (the ``decoded_token`` of its prompt
        log-probabilities: vLLM's own tokenizer's reading of the id), ``None`` where it names none."""
        body = {"model": self.model, "prompt": [[int(t) for t in prompt]], "max_tokens": 1, "temperature": 0.0,
                "prompt_logprobs": 0}

        def ask() -> list[str | None]:
            data = self.transport.request("POST", "/completions", answers.dumps(body), limit=answers.size_limit(body))
            answers.prompt_logprobs(answers.read(data, 1, self.model, self.served_names)[0], prompt)
            return answers.decoded_tokens(data, prompt)

        return self._call(ask, "checking the tokenizer")

    def top_logprobs(self, prompts: Sequence[Sequence[int]], k: int) -> list[dict[int, float]]:
        """The ``k`` most likely next tokens after each token-id prompt with their log-probabilities (``logprobs=k``)."""
        model = self.model

        def one(prompt: Sequence[int]) -> dict[int, float]:
            choice = self._post("/completions", {
                "model": model, "prompt": [list(map(int, prompt))], "max_tokens": 1, "temperature": 0.0,
                "logprobs": k, "return_tokens_as_token_ids": True})[0]
            top_logprobs = choice.logprobs.top_logprobs if choice.logprobs else None
            if not top_logprobs:
                raise ServerError(f"{self.base_url} returned no top log-probabilities", 200)
            top = top_logprobs[0] or {}
            return self._read(lambda: {int(str(tok).removeprefix("token_id:")): answers.checked(lp, tok)
                                       for tok, lp in top.items()})

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
        bar = progress_bar(total=len(rows), desc=what, unit="row", progress=self.progress)
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
              extra: dict[str, Any] | None = None, count: int = 1) -> list[answers.Choice]:
        """``body`` with the request parameters ``decoding`` and ``extra`` (``extra_body``'s fields merged in, unset
        ones left out, as the ``openai`` client sends them) posted to ``path``; the answer's ``count`` choices in
        ``index`` order, checked (:func:`answers.read`: complete JSON of the expected shape, from the served model); an
        answer larger than such a request can take (:func:`answers.size_limit`) is refused as it arrives."""
        fields = {**body, **(decoding or {}), **(extra or {})}
        fields.update(fields.pop("extra_body", None) or {})
        sent = {k: v for k, v in fields.items() if v is not None}
        data = self.transport.request("POST", path, answers.dumps(sent), limit=answers.size_limit(sent))
        return self._read(lambda: answers.read(data, count, self.model, self.served_names))

    def redact(self, text: str) -> str:
        """``text`` without the API key, the URL's credentials, or any bearer token or Basic credentials (a server's
        words may echo what it was sent): what every message of this client goes through."""
        return self.transport.secrets.redact(text)

    def _read(self, fn: Callable[[], R]) -> R:
        """``fn()``, an :class:`AnswerError` made a :class:`ServerError` (status 200) naming the server."""
        try:
            return fn()
        except AnswerError as err:
            raise ServerError(self.redact(f"{self.base_url} {err}"), 200) from None

    def _call(self, fn: Callable[[], R], what: str, row: int | None = None) -> R:
        try:
            return fn()
        except ServerError as err:
            raise ServerError(self.redact(err.reason), err.status, row, what) from None
        except TransportError as err:
            raise ServerError(self.redact(str(err)), err.status, row, what) from None
        except AnswerError as err:
            raise ServerError(self.redact(f"{self.base_url} {err}"), 200, row, what) from None
        except (ValueError, KeyError, AttributeError, TypeError, IndexError) as err:
            # an answer that is not the JSON asked for (wrong shape): the server's fault, not the input's
            raise ServerError(self.redact(f"{self.base_url} sent an answer that could not be read "
                                          f"({type(err).__name__}: {str(err)[:200]})"), 200, row, what) from None

    def close(self) -> None:
        """Stop the request threads and close the connections (the client opens new ones if used again)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self.transport.close()

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RowFailure(Exception):
    """A row of a batched request failed on its own (carried out of the worker thread with its row)."""

    def __init__(self, row: int, error: ServerError) -> None:
        super().__init__(error.reason)
        self.row, self.error = row, error


def _reads_as(tokenizer: Any, token: int, named: str) -> bool:
    """Whether ``tokenizer`` reads ``token`` as the server ``named`` it: its decoding, its vocabulary piece or that
    piece as text (servers name a token by one of these), leading and trailing spaces aside (a SentencePiece
    tokenizer's space marker is restored by some servers, dropped by others)."""
    piece = tokenizer.convert_ids_to_tokens(token)
    readings = {tokenizer.decode([token]), str(piece), tokenizer.convert_tokens_to_string([piece])}
    return named.strip() in {r.strip() for r in readings}


def _lists_top(positions: Sequence[Any]) -> bool:
    """Whether every probe position lists the :data:`PROBE_TOP` tokens asked for (else the probe tells no weights
    apart: see :meth:`ServerClient.fingerprint`)."""
    return all(isinstance(p, dict) and len(p) >= PROBE_TOP for p in positions)


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
        from styleeval.models import PRESETS, load_tokenizer  # noqa: PLC0415 - heavy (torch, via styleeval.models)

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
            raise UserError(self.client.redact(f"model: {self.base_url} does not serve {self.model_name!r} (it "
                                               f"serves {names}); pass the served model name"))
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
        """Probe the server now (see :meth:`ServerClient.fingerprint`), and check that the tokenizer is the served
        model's (:meth:`check_tokenizer`)."""
        identity = Identity(self.client.redact(self.model_name), self.client.fingerprint(), "server", self.kind)
        if self.tokenizer is not None:
            self.check_tokenizer()
        self._identity, self._probed = identity, time.monotonic()
        return identity

    def check_tokenizer(self) -> None:
        """The ids of :data:`PROBE_TEXT` in the client's tokenizer, sent to the server: where it names the token it
        scored at a position (vLLM's ``decoded_token``), that must be the tokenizer's reading of the id. Another
        tokenizer's ids are other tokens to the served model (its scores would be wrong numbers, with no error): a
        ``UserError`` naming both readings. A server that names no tokens, or refuses the probe (4xx: no prompt
        log-probabilities), cannot be checked here."""
        ids = list(self.tokenizer.encode(PROBE_TEXT))
        try:
            named = self.client.decoded_prompt(ids)
        except ServerError as err:
            if err.status is None or err.status >= 500:
                raise
            return
        for token, theirs in zip(ids[1:], named, strict=True):
            if theirs is not None and not _reads_as(self.tokenizer, token, theirs):
                name = getattr(self.tokenizer, "name_or_path", None) or type(self.tokenizer).__name__
                mine = self.tokenizer.decode([token])
                raise UserError(self.client.redact(
                    f"tokenizer: {name} is not the tokenizer of the model {self.model_name!r} at {self.base_url}: it "
                    f"decodes token {token} as {mine!r}, the server as {theirs!r}; pass the served model's tokenizer "
                    "(tokenizer=<its Hub id or folder>)"))

    def close(self) -> None:
        """Close the client's connections and threads (:meth:`ServerClient.close`)."""
        self.client.close()

    @property
    def max_length(self) -> int | None:
        """``max_model_len - 1`` (as ``/models`` reports it): vLLM must be allowed one generated token even when only
        prompts are scored; ``None`` when the server does not say."""
        return self._max_length

    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        import torch  # noqa: PLC0415 - heavy (torch)

        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        if group < 1:
            raise ValueError(f"group must be positive, got {group}")
        for i, p in enumerate(prompts):
            if len(p) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
        pairs = [(list(p), list(c)) for p, c in zip(prompts, continuations, strict=True)]
        chunks = [pairs[i : i + group] for i in range(0, len(pairs), group)]
        requests = [[(p + c, len(c)) for p, c in chunk if c] for chunk in chunks]
        answered = self.client.batched_prompt_logprobs(requests, "scoring")
        out = []
        for chunk, values in zip(chunks, answered, strict=True):
            it = iter(values)
            for _, c in chunk:
                lp = next(it) if c else []
                out.append(torch.from_numpy(np.array(lp, dtype=np.float32)))  # ~3x faster than torch.tensor
        return out

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           shared_prefixes: bool = False) -> torch.Tensor:
        """From the top-20 next tokens where they hold every candidate, else each candidate appended to the prompt
        and read back as a prompt log-probability (exact for any model and vocabulary; vLLM returns both)."""
        import torch  # noqa: PLC0415 - heavy (torch)

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
