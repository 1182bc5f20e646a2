"""What a model name stands for and whether its weights can be had, without importing torch or transformers.
:mod:`styleeval.models` loads the models and re-exports these names."""

from __future__ import annotations

import difflib
import os
import re
import sys
from contextvars import ContextVar

from styleeval.errors import UserError

PRESETS: dict[str, str] = {
    "1b": "meta-llama/Llama-3.2-1B-Instruct",
    "3b": "meta-llama/Llama-3.2-3B-Instruct",
    "8b": "meta-llama/Llama-3.1-8B-Instruct",
    "qwen-1.5b": "Qwen/Qwen2.5-1.5B-Instruct",
}
"""The paper's three backbones (appendix D.1; gated on the Hub: accept Meta's licence first); ``1b`` is the default.
``qwen-1.5b`` is an ungated chat model of the same size, for trying without the licence (not the paper's)."""

REAL_WEIGHTS = "smollm2-135m"
"""The real-weights preset: a real chat model that needs no Hub account and no GPU (a GGUF file:
:mod:`styleeval.gguf_files` fetches it; named here, with the other presets)."""

GGUF_PRESET_NAMES = (REAL_WEIGHTS, "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
"""Every GGUF preset (real chat models fetched on first use without a Hub account; :data:`REAL_WEIGHTS` the smallest
and quickest), in :mod:`styleeval.gguf_files`' order."""

DEFAULT_MODEL = PRESETS["1b"]
"""The model of LogProb and the autorater when none is given (local backend)."""
UNGATED_PRESET = "qwen-1.5b"

PROBE_SECONDS = 1.5
"""How long the one check that a model not in the local cache can be downloaded may take."""

_REACHABLE: dict[str, Exception | None] = {}
"""Per process and model: the error of that check (``None``: it can be downloaded)."""


def check_downloadable(name: str, what: str = "model") -> None:
    """Before loading a Hub id (``owner/name`` or a bare ``name``: a mistyped preset such as ``tiny-randm`` too,
    which transformers would ask the Hub about with its retries) that is not in the local cache: decide once per
    process, in at most
    :data:`PROBE_SECONDS`, whether it can be had (offline mode, then one ``HEAD`` of its config through
    huggingface_hub), instead of the Hub client's retries (about a minute); a :class:`ModelLoadError` in one line
    otherwise: offline, unreachable, not found (a mistyped id: the Hub answers 401 to a client not logged in), or
    gated (where to accept the licence, and an ungated preset that works now)."""
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
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415 - heavy (huggingface_hub)

    return any(isinstance(try_to_load_from_cache(name, f), str) for f in files)


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
"""The variables that put model downloads offline (huggingface_hub's and transformers' switches)."""


def offline_variable() -> str | None:
    """The variable that sets offline mode: ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` set now, or
    huggingface_hub's own flag (read from them when it was imported); ``None`` when online."""
    from huggingface_hub import constants  # noqa: PLC0415 - heavy (huggingface_hub)

    told = [v for v in OFFLINE_VARIABLES if os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")]
    return told[0] if told else "HF_HUB_OFFLINE" if constants.HF_HUB_OFFLINE else None


def _probe(name: str, what: str) -> Exception | None:
    """One ``HEAD`` of ``name``'s ``config.json`` (huggingface_hub's ``get_hf_file_metadata``, no retries, the
    stored token if any), its outcome told by huggingface_hub's own errors; ``None``: it can be downloaded (or the
    Hub failed in another way, which the loader reports)."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url  # noqa: PLC0415 - heavy (huggingface_hub)
    from huggingface_hub.errors import (  # noqa: PLC0415 - heavy (huggingface_hub)
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    start = f"cannot load {what} {name!r}{did_you_mean(name)}: not in the local cache and"
    unreachable = f"download it once with network access, or pass a local path ({WITHOUT_WEIGHTS})"
    variable = offline_variable()
    if variable is not None:
        return _offline_error(start, variable)
    endpoint = (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    network_errors = (OSError, *(m.TransportError for m in map(sys.modules.get, ("httpx", "httpx2"))
                                 if m is not None and hasattr(m, "TransportError")))
    # the transport errors of the HTTP library huggingface_hub loaded (httpx for 1.x, httpx2 for 2.x; requests'
    # are OSErrors), never imported here
    try:
        get_hf_file_metadata(hf_hub_url(name, "config.json", endpoint=endpoint), timeout=PROBE_SECONDS)
    except GatedRepoError:
        ungated = PRESETS[UNGATED_PRESET]
        return ModelLoadError(f"cannot load {what} {name!r}: it is gated: accept its licence at {endpoint}/{name}, "
                              f"then log in (`hf auth login` or HF_TOKEN); an ungated model that works now: --model "
                              f"{UNGATED_PRESET} ({ungated})")
    except RepositoryNotFoundError:
        return _not_found(name, what, endpoint)
    except (EntryNotFoundError, RevisionNotFoundError):
        return None  # the repository is there: the loader says what it lacks
    except HfHubHTTPError as err:
        status = err.response.status_code if err.response is not None else None
        return _not_found(name, what, endpoint) if status in (401, 403, 404) else None
    except OfflineModeIsEnabled:
        return _offline_error(start, "HF_HUB_OFFLINE")
    except network_errors as err:  # a timeout is said as one; a refused or unresolved connection fails at once
        timed_out = isinstance(err, TimeoutError) or "Timeout" in type(err).__name__
        why = f"no answer within {PROBE_SECONDS:g} s" if timed_out else "the connection failed"
        return ModelLoadError(f"{start} the Hub cannot be reached ({endpoint}: {why}, {type(err).__name__}): "
                              f"{unreachable}")
    return None


def _offline_error(start: str, variable: str) -> ModelLoadError:
    advice = OFFLINE_ADVICE.get()
    if advice is not None:  # the command went offline itself: its own option, not a variable, turns it off
        return ModelLoadError(f"{start} this command runs offline: {advice} to download it once, or pass a "
                              f"local path ({WITHOUT_WEIGHTS})")
    return ModelLoadError(f"{start} the Hub cannot be reached ({variable} is set): download it once with network "
                          f"access (unset {variable}), or pass a local path ({WITHOUT_WEIGHTS})")


def _not_found(name: str, what: str, endpoint: str) -> ModelLoadError:
    return ModelLoadError(f"cannot load {what} {name!r}{did_you_mean(name)}: not found on the Hub ({endpoint}): check the id (a private "
                          "repository also needs `hf auth login` or HF_TOKEN), or pass a local path")


TINY_RANDOM = "tiny-random"
"""A preset for trying the pipeline with no weights to download: a 2-layer random-weight Llama with a byte-level
BPE tokenizer and a Llama-3 chat template, built once on this machine (the test suite's model). Its numbers mean
nothing; every code path is the real one."""
MODEL_AGREEMENT: dict[str, str] = {
    TINY_RANDOM: "random weights, numbers mean nothing",
    REAL_WEIGHTS: "LogProb content vs the human content ratings of the paper's test set: Spearman 0.28 (measured; "
                  "the paper's Llama 3.2 1B: 0.37): for trying, not for publishing numbers",
    "1b": "LogProb content vs the human content ratings of the paper's test set: Spearman 0.37 (the paper's Table 4)",
    "3b": "LogProb content vs the human content ratings of the paper's test set: Spearman 0.54, the autorater 0.31 "
          "(the paper's Table 4)",
    "8b": "LogProb content vs the human content ratings of the paper's test set: Spearman 0.63, the autorater 0.67 "
          "(the paper's Table 4)",
    "qwen-1.5b": "agreement with humans not measured (not the paper's model)",
    "qwen2.5-coder-0.5b": "LogProb content vs the human content ratings of the paper's test set: Spearman 0.17, style "
                          "0.33 (measured; the paper's Llama 3.2 1B: 0.37): below the 135M on content",
    "qwen2.5-coder-1.5b": "LogProb content vs the human content ratings of the paper's test set: Spearman 0.43 "
                          "(measured; the paper's Llama 3.2 1B: 0.37): the first offline model whose content numbers "
                          "are worth reporting",
}
"""What each preset's numbers are worth: its known agreement with the human ratings (the paper's Table 4, all tasks;
``smollm2-135m``: measured, docs/models.md, "smollm2-135m"), in every report that uses it
(:func:`styleeval.labels.model_worth`) and in ``styleeval list models``."""
UNKNOWN_AGREEMENT = ("agreement with humans not known: measure it (styleeval metaeval --datasets style_gap_testset "
                     "--model MODEL)")
"""What a report says of a model that is no preset (or a preset whose agreement is not measured)."""
WITHOUT_WEIGHTS = (f"or the preset {TINY_RANDOM} to try the pipeline without weights: --model {TINY_RANDOM}, "
                   f"model={TINY_RANDOM} in a metric spec, LogProb(\"{TINY_RANDOM}\") in Python")
"""The advice that ends every model-load error: the preset, as each interface takes it."""


CLIENT_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE")
"""The Hugging Face clients' offline switches (huggingface_hub, datasets, evaluate, transformers); a model's Hub
probe reads only :data:`OFFLINE_VARIABLES`, the two that govern model downloads."""


OFFLINE_ADVICE: ContextVar[str | None] = ContextVar("styleeval_offline_advice", default=None)
"""How to allow downloads, set by a command that went offline itself (``reproduce-paper``: "run with --online"), for
as long as it runs: an offline error gives it rather than "unset HF_HUB_OFFLINE", a variable the user never set."""


def go_offline() -> None:
    """Set :data:`CLIENT_OFFLINE_VARIABLES` to 1 in this process: the clients imported afterwards never download (they read
    them once, when imported: call this first)."""
    for var in CLIENT_OFFLINE_VARIABLES:
        os.environ[var] = "1"


def hub_id(model: str) -> str:
    """A preset's Hub id (``1b`` -> ``meta-llama/Llama-3.2-1B-Instruct``), else the name itself."""
    return PRESETS.get(str(model).lower(), str(model))


class ModelLoadError(UserError):
    """A model or tokenizer could not be loaded; the message names it and says what to do, in one line."""


def looks_like_hub_id(name: str) -> bool:
    """Whether ``name`` has the form of a Hub id: ``owner/name``, or a bare ``name`` (the Hub's oldest ids, such as
    ``gpt2``, and what a mistyped preset looks like: ``tiny-randm``)."""
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?", name))


def preset_names() -> tuple[str, ...]:
    """Every model preset, as ``styleeval list models`` shows them: the GGUF presets :data:`GGUF_PRESET_NAMES`,
    :data:`PRESETS` and :data:`TINY_RANDOM`."""
    return (*GGUF_PRESET_NAMES, *PRESETS, TINY_RANDOM)


def did_you_mean(name: str) -> str:
    """`` (did you mean the preset tiny-random?)`` where ``name`` is close (:func:`difflib.get_close_matches`) to a
    preset's name or to the Hub id a preset stands for, without being it; ``""`` otherwise."""
    key = name.lower()
    candidates = {preset: preset for preset in preset_names()}
    candidates.update({hub_id.lower(): preset for preset, hub_id in PRESETS.items()})
    if key in candidates:
        return ""
    close = difflib.get_close_matches(key, candidates, n=1)
    if not close:
        return ""
    preset = candidates[close[0]]
    stands_for = f" ({PRESETS[preset]})" if preset in PRESETS else ""
    return f" (did you mean the preset {preset}{stands_for}?)"
