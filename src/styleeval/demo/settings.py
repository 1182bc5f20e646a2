"""Which model the apps run: the arguments, else ``STYLEEVAL_MODEL`` / ``STYLEEVAL_BASE_URL`` /
``STYLEEVAL_TOKENIZER``, else the backend's ``app_model`` (:func:`model_from_env`); a visitor's chosen model that
cannot be had (:class:`ModelUnavailable`); a preset's footprint as a visitor reads it (:func:`_memory`)."""

from __future__ import annotations

import os
import re
from typing import Any

from styleeval.backends import backend_class
from styleeval.errors import UserError


def _settings(model: str | None = None, base_url: str | None = None, tokenizer: str | None = None) -> dict[str, Any]:
    """The arguments given, else the environment's variables, else the backend's ``app_model`` (locally the real
    135M preset ``smollm2-135m``, HuggingFaceTB's SmolLM2-135M-Instruct: a visitor sees readings of a real model; a
    server without a model name: its only model)."""
    given = {"model": model, "base_url": base_url, "tokenizer": tokenizer}
    chosen = {"model": os.environ.get("STYLEEVAL_MODEL") or None,
              "base_url": os.environ.get("STYLEEVAL_BASE_URL") or None,
              "tokenizer": os.environ.get("STYLEEVAL_TOKENIZER") or None,
              **{k: v for k, v in given.items() if v}}
    if chosen["model"] is None:  # the backend's choice for the apps: the real preset locally, a server's only model
        chosen["model"] = backend_class(None, chosen["base_url"]).app_model
    return chosen


def model_from_env() -> dict[str, Any]:
    """The model the apps use, from the environment: ``STYLEEVAL_MODEL`` (preset, Hub id, local path or ``.gguf``
    file; default ``smollm2-135m`` locally, the server's only model on a server), ``STYLEEVAL_BASE_URL`` (a server
    instead of a local model) and ``STYLEEVAL_TOKENIZER``; keyword arguments of
    :func:`styleeval.logprob.shared_logprob` and :func:`styleeval.autorater.rater.shared_autorater` (``None``: not
    given)."""
    return _settings()


class ModelUnavailable(UserError):
    """A model a visitor chose (not the Space's own: the banner speaks of that one) cannot be had here: one line
    naming it, what to do in the page and what the Space's owner can do (:meth:`~styleeval.demo.scorer.Demo.logprob`); the cause goes to
    the Space's log."""


def _memory(footprint: str) -> str:
    """A preset's footprint (:attr:`~styleeval.gguf_files.GGUFSource.footprint`) without its command-line advice,
    which a visitor cannot follow.

    >>> _memory("494M parameters, 2.5 GB in float32 (0.5 GB with --backend llamacpp)")
    '494M parameters, 2.5 GB in float32'
    """
    return re.sub(r" \([^()]*--[^()]*\)", "", footprint)
