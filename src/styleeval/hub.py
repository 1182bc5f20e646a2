"""What a model name stands for and whether its weights can be had, without importing torch or transformers.
:mod:`styleeval.models` loads the models and re-exports these names."""

from __future__ import annotations

import os
import re

from styleeval.errors import UserError

PRESETS: dict[str, str] = {
    "1b": "meta-llama/Llama-3.2-1B-Instruct",
    "3b": "meta-llama/Llama-3.2-3B-Instruct",
    "8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen-1.5b": "Qwen/Qwen2.5-1.5B-Instruct",
}
"""The paper's three backbones (appendix D.1; gated on the Hub: accept Meta's licence first); ``1b`` is the default.
``qwen-1.5b`` is an ungated chat model of the same size, for trying without the licence (not the paper's)."""

DEFAULT_MODEL = PRESETS["1b"]
"""The model of LogProb and the autorater when none is given (local backend)."""
UNGATED_PRESET = "qwen-1.5b"

PROBE_SECONDS = 1.5
"""How long the one check that a model not in the local cache can be downloaded may take."""

_REACHABLE: dict[str, Exception | None] = {}
"""Per process and model: the error of that check (``None``: it can be downloaded)."""


def check_downloadable(name: str, what: str = "model") -> None:
    """Before loading a Hub id that is not in the local cache: decide once per process, in at most
    :data:`PROBE_SECONDS`, whether it can be had (``HF_HUB_OFFLINE``, one request for its config), instead of the
    Hub client's retries (about a minute); a :class:`ModelLoadError` in one line otherwise: offline, unreachable,
    not found, or gated (where to accept the licence, and an ungated preset that works now)."""
    if not looks_like_hub_id(name) or available_here(name):
        return
    if name not in _REACHABLE:
        _REACHABLE[name] = _probe(name, what)
    if _REACHABLE[name] is not None:
        raise _REACHABLE[name]  # type: ignore[misc]


def available_here(name: str, files: tuple[str, ...] = ("config.json", "tokenizer_config.json")) -> bool:
    """Whether ``name`` is a local folder, or a Hub id with one of ``files`` in the local Hugging Face cache (no
    network request)."""
    if os.path.isdir(os.path.expanduser(name)):
        return True
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(name, f), str) for f in files)


def _probe(name: str, what: str) -> Exception | None:
    import httpx

    start = f"cannot load {what} {name!r}: not in the local cache and"
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return ModelLoadError(f"{start} the Hub cannot be reached (HF_HUB_OFFLINE is set): download it once with "
                              "network access (unset HF_HUB_OFFLINE), or pass a local path (or --model "
                              f"{TINY_RANDOM} to try the pipeline without weights)")
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    headers = {}
    try:
        from huggingface_hub import get_token

        token = get_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
    except ImportError:  # pragma: no cover
        pass
    try:
        response = httpx.head(f"{endpoint}/{name}/resolve/main/config.json", headers=headers,
                              timeout=PROBE_SECONDS, follow_redirects=False)
    except httpx.HTTPError as err:
        return ModelLoadError(f"{start} the Hub cannot be reached ({endpoint}: no answer within {PROBE_SECONDS:g} s, "
                              f"{type(err).__name__}): download it once with network access, or pass a local path "
                              f"(or --model {TINY_RANDOM} to try the pipeline without weights)")
    if response.status_code in (401, 403):
        ungated = PRESETS[UNGATED_PRESET]
        return ModelLoadError(f"cannot load {what} {name!r}: it is gated: accept its licence at {endpoint}/{name}, "
                              f"then log in (`hf auth login` or HF_TOKEN); an ungated model that works now: --model "
                              f"{UNGATED_PRESET} ({ungated})")
    if response.status_code == 404:
        return ModelLoadError(f"cannot load {what} {name!r}: not found on the Hub ({endpoint}): check the id, or pass "
                              "a local path")
    return None


TINY_RANDOM = "tiny-random"
"""A preset for trying the pipeline with no weights to download: a 2-layer random-weight Llama with a byte-level
BPE tokenizer and a Llama-3 chat template, built once on this machine (the test suite's model). Its numbers mean
nothing; every code path is the real one."""



OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE")
"""The Hugging Face clients' offline switches (huggingface_hub, datasets, evaluate, transformers)."""


def go_offline() -> None:
    """Set :data:`OFFLINE_VARIABLES` to 1 in this process: the clients imported afterwards never download (they read
    them once, when imported: call this first)."""
    for var in OFFLINE_VARIABLES:
        os.environ[var] = "1"


def hub_id(model: str) -> str:
    """A preset's Hub id (``1b`` -> ``meta-llama/Llama-3.2-1B-Instruct``), else the name itself."""
    return PRESETS.get(str(model).lower(), str(model))


class ModelLoadError(UserError):
    """A model or tokenizer could not be loaded; the message names it and says what to do, in one line."""


def looks_like_hub_id(name: str) -> bool:
    """Whether ``name`` has the form of a Hub id (``owner/name``)."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", name))
