"""The one client for OpenAI-compatible servers (vLLM, SGLang, llama.cpp, TGI, hosted APIs).

Every call that styleeval makes to a server goes through :class:`ServerClient`, built on the official ``openai``
client, which retries 408/409/429/5xx answers, timeouts and connection errors with exponential backoff (0.5 s
doubling up to 8 s, ``max_retries`` times) and honours ``Retry-After``. On top of it this module adds:

- bounded concurrency: at most ``max_concurrency`` requests in flight, results in input order;
- one request per *row* (a row may hold several prompts, e.g. LogProb's three contexts), so that a rejected
  request (4xx) raises a :class:`ServerError` that names the row;
- the two read-outs the metrics need: :meth:`ServerClient.chat` (generated replies, the autorater's paper mode)
  and :meth:`ServerClient.prompt_logprobs` (the log-probability of every prompt token given the tokens before it:
  vLLM's ``prompt_logprobs``, used for LogProb and the autorater's expected mode), plus
  :meth:`ServerClient.top_logprobs` (the top-K next-token log-probabilities after a prompt).

The API key comes from ``api_key=``, else ``STYLEEVAL_API_KEY``, else ``OPENAI_API_KEY`` (local servers accept
any key).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 5
DEFAULT_MAX_CONCURRENCY = 8


class ServerError(RuntimeError):
    """A request to the server failed for good: rejected (4xx), or unreachable after every retry.

    ``status`` is the HTTP status of a rejected request, 200 for an answer that lacks what was asked for, and
    ``None`` when the server could not be reached or timed out.
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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
        timeout: seconds one request may take before it is abandoned (and retried).
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
        try:
            from openai import OpenAI
        except ImportError as err:  # pragma: no cover - a dependency of the package
            raise ImportError("the server backend needs the 'openai' package: pip install openai") from err
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL such as 'http://127.0.0.1:8000/v1', got {base_url!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be positive, got {max_concurrency}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.progress = progress
        self.client = OpenAI(base_url=self.base_url, api_key=api_key or api_key_from_env(),
                             timeout=self.timeout, max_retries=self.max_retries)
        self._model = model

    # -- models -------------------------------------------------------------------------------------------
    def list_models(self) -> list[dict[str, Any]]:
        """The models the server serves (``GET /models``), as dicts (``id``, and for vLLM ``root``...)."""
        page = self._call(lambda: self.client.models.list(), "listing the served models")
        return [m.model_dump() for m in page.data]

    def max_model_len(self) -> int | None:
        """The served model's context length where the server says it (vLLM's ``max_model_len``), else ``None``."""
        for m in self.list_models():
            if m.get("id") == self.model and isinstance(m.get("max_model_len"), int):
                return int(m["max_model_len"])
        return None

    @property
    def model(self) -> str:
        """The served model name sent with every request (asked from the server when not given)."""
        if self._model is None:
            models = self.list_models()
            if len(models) != 1:
                names = ", ".join(repr(m["id"]) for m in models) or "none"
                raise ValueError(f"{self.base_url} serves {len(models)} models ({names}); pass the model name")
            self._model = str(models[0]["id"])
        return self._model

    # -- requests -----------------------------------------------------------------------------------------
    def chat(self, conversations: Sequence[list[dict[str, str]]], **decoding: Any) -> list[str]:
        """The reply text for each conversation (``POST /chat/completions``), in input order.

        ``decoding`` holds request parameters: ``max_tokens``, ``temperature``, ``top_p``, ``seed``,
        ``extra_body`` (server-specific fields, e.g. vLLM's ``chat_template_kwargs``)...
        """
        model = self.model

        def one(messages: list[dict[str, str]]) -> str:
            response = self.client.chat.completions.create(model=model, messages=messages, **decoding)
            return response.choices[0].message.content or ""

        return self.map_rows(one, conversations, "chat")

    def complete(self, prompts: Sequence[Sequence[int]], stop_token_ids: Sequence[int] = (), **decoding: Any) -> list[str]:
        """The generated text after each token-id prompt (``POST /completions``), in input order.

        Prompts rendered and tokenized locally keep user text as text (see :class:`styleeval.chat.TextEncoder`);
        ``stop_token_ids`` (vLLM) ends a reply at the template's end of turn.
        """
        model = self.model
        extra = dict(decoding.pop("extra_body", {}) or {})
        if stop_token_ids:
            extra["stop_token_ids"] = [int(t) for t in stop_token_ids]

        def one(prompt: Sequence[int]) -> str:
            response = self.client.completions.create(model=model, prompt=[list(map(int, prompt))],
                                                      extra_body=extra or None, **decoding)
            return response.choices[0].text or ""

        return self.map_rows(one, prompts, "completion")

    def prompt_logprobs(self, rows: Sequence[Sequence[Sequence[int]]]) -> list[list[list[float]]]:
        """For each row (a list of token-id prompts sent in one request), the log-probability of every prompt token
        after the first, given the tokens before it.

        Uses ``POST /completions`` with ``max_tokens=1`` and vLLM's ``prompt_logprobs=0``; a server that does not
        return prompt log-probabilities raises :class:`ServerError` saying so.
        """
        return self.map_rows(self._prompt_logprobs_one, rows, "prompt log-probabilities")

    def _prompt_logprobs_one(self, prompts: Sequence[Sequence[int]]) -> list[list[float]]:
        response = self.client.completions.create(
            model=self.model, prompt=[list(map(int, p)) for p in prompts], max_tokens=1, temperature=0.0,
            extra_body={"prompt_logprobs": 0},
        )
        choices = sorted(response.choices, key=lambda c: c.index)
        out = []
        for prompt, choice in zip(prompts, choices):
            entries = (choice.model_extra or {}).get("prompt_logprobs")
            if entries is None:
                raise ServerError(
                    f"{self.base_url} returned no prompt_logprobs: this needs a server that scores prompt "
                    "tokens (vLLM's OpenAI server does; hosted APIs usually do not)", 200
                )
            if len(entries) != len(prompt):
                raise ServerError(f"{self.base_url} returned {len(entries)} prompt log-probabilities for a "
                                  f"prompt of {len(prompt)} tokens", 200)
            values = []
            for token, entry in zip(prompt[1:], entries[1:]):
                item = entry.get(str(int(token))) if isinstance(entry, dict) else None
                if item is None:
                    raise ServerError(f"{self.base_url} returned no log-probability for prompt token {token}", 200)
                values.append(float(item["logprob"] if isinstance(item, dict) else item))
            out.append(values)
        if len(out) != len(prompts):
            raise ServerError(f"{self.base_url} answered {len(out)} of {len(prompts)} prompts", 200)
        return out

    def token_logprobs(
        self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], per_request: int = 1
    ) -> list[Any]:
        """The local engine's contract on a server: the log-probability of every continuation token given its prompt
        and the preceding continuation tokens, one float32 tensor per pair, in input order.

        Each prompt + continuation is sent as token ids (:meth:`prompt_logprobs`); ``per_request`` consecutive pairs
        go in one request (LogProb's three contexts of a row), so a rejected request names its row.
        """
        import torch

        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        if per_request < 1:
            raise ValueError(f"per_request must be positive, got {per_request}")
        for i, p in enumerate(prompts):
            if len(p) == 0:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
        pairs = [(list(p), list(c)) for p, c in zip(prompts, continuations)]
        chunks = [pairs[i : i + per_request] for i in range(0, len(pairs), per_request)]
        requests = [[p + c for p, c in chunk if c] for chunk in chunks]
        answered = self.map_rows(lambda r: self._prompt_logprobs_one(r) if r else [], requests, "scoring")
        out = []
        for chunk, values in zip(chunks, answered):
            it = iter(values)
            for _, c in chunk:
                lp = next(it)[-len(c):] if c else []
                out.append(torch.tensor(lp, dtype=torch.float32))
        return out

    def top_logprobs(self, prompts: Sequence[Sequence[int]], k: int) -> list[dict[int, float]]:
        """The ``k`` most likely next tokens after each token-id prompt with their log-probabilities (``logprobs=k``)."""
        model = self.model

        def one(prompt: Sequence[int]) -> dict[int, float]:
            response = self.client.completions.create(
                model=model, prompt=[list(map(int, prompt))], max_tokens=1, temperature=0.0, logprobs=k,
                extra_body={"return_tokens_as_token_ids": True},
            )
            logprobs = response.choices[0].logprobs
            if logprobs is None or not logprobs.top_logprobs:
                raise ServerError(f"{self.base_url} returned no top log-probabilities", 200)
            top = logprobs.top_logprobs[0] or {}
            return {int(str(tok).removeprefix("token_id:")): float(lp) for tok, lp in top.items()}

        return self.map_rows(one, prompts, "top log-probabilities")

    # -- plumbing -----------------------------------------------------------------------------------------
    def map_rows(self, fn: Callable[[T], R], rows: Sequence[T], what: str = "request") -> list[R]:
        """``fn`` on every row with at most ``max_concurrency`` in flight; results in input order.

        A failure raises :class:`ServerError` naming the first failed row (4xx: the server's message).
        """
        rows = list(rows)
        results: list[Any] = [None] * len(rows)
        if not rows:
            return results
        bar = tqdm(total=len(rows), desc=what, unit="row", disable=not self.progress, leave=False)
        try:
            with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(rows))) as pool:
                futures = [pool.submit(self._call, lambda r=r: fn(r), f"row {i} ({what})")
                           for i, r in enumerate(rows)]
                try:
                    for i, future in enumerate(futures):
                        results[i] = future.result()
                        bar.update(1)
                except BaseException:
                    for future in futures:
                        future.cancel()
                    raise
        finally:
            bar.close()
        return results

    def _call(self, fn: Callable[[], R], what: str) -> R:
        import openai

        try:
            return fn()
        except ServerError as err:
            raise ServerError(f"{what}: {err}", err.status) from None
        except openai.APIStatusError as err:
            message = _error_message(err)
            raise ServerError(f"{what}: {self.base_url} answered {err.status_code}: {message}",
                              err.status_code) from None
        except openai.APITimeoutError:
            raise ServerError(f"{what}: {self.base_url} did not answer within {self.timeout:g} s, "
                              f"{self.max_retries} retries included (raise timeout=...)") from None
        except openai.APIConnectionError as err:
            raise ServerError(f"{what}: cannot reach {self.base_url} after {self.max_retries} retries "
                              f"({err.__cause__ or err}); is the server running?") from None


def _error_message(err: Any) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return str(getattr(err, "message", err))
