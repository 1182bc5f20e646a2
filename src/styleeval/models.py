"""Loading causal chat models: model ids, presets, devices and dtypes."""

from __future__ import annotations

import os
from typing import Any

import torch

from styleeval.errors import UserError
from styleeval.hub import (  # noqa: F401  re-exported: the torch-free part of model loading lives in hub.py
    DEFAULT_MODEL,
    PRESETS,
    PROBE_SECONDS,
    TINY_RANDOM,
    UNGATED_PRESET,
    ModelLoadError,
    check_downloadable,
)
from styleeval.hub import looks_like_hub_id as _looks_like_hub_id


def preset_path(model: Any) -> str:
    """What a model name stands for: a preset's Hub id, the folder of :data:`TINY_RANDOM` (built on first use), or
    the name itself."""
    key = str(model).lower()
    if key == TINY_RANDOM:
        return str(tiny_random_dir())
    return PRESETS.get(key, str(model))


TINY_RANDOM_CONTEXT = 4096
"""The :data:`TINY_RANDOM` preset's context (``max_position_embeddings``): room for the judge prompt of every row of
the bundled corpora (at most 619 tokens of its byte-level tokenizer, ASSET) and the longest reply (512 tokens,
``paper-70b``). Its rotary embedding has no scaling, so no number depends on it; the tests' tiny models keep 512."""


def tiny_random_dir() -> Any:
    """The folder of the :data:`TINY_RANDOM` preset (``tiny-random/`` in styleeval's cache: :mod:`styleeval.paths`),
    built there once, offline, in a few seconds (and again where an older build has another context)."""
    import json
    import shutil

    from styleeval.paths import cache_path

    root = cache_path(TINY_RANDOM)

    def current() -> bool:  # a complete build with today's context (an older one is replaced)
        if not ((root / "config.json").is_file() and (root / "tokenizer.json").is_file()):
            return False
        try:
            config = json.loads((root / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return config.get("max_position_embeddings") == TINY_RANDOM_CONTEXT

    if current():
        return root
    from styleeval.testing import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    model = build_model("tiny", vocab_size=len(tokenizer), head_scale=30.0,
                        max_position_embeddings=TINY_RANDOM_CONTEXT)
    tmp = root.with_name(f"{TINY_RANDOM}.{os.getpid()}.tmp")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if current():  # another process installed it while this one built: its folder stays, in use
        shutil.rmtree(tmp, ignore_errors=True)
        return root
    if root.exists():  # an older build: moved aside, then replaced
        old = root.with_name(f"{TINY_RANDOM}.{os.getpid()}.old")
        try:
            os.replace(root, old)
        except OSError:  # another process moved it first
            pass
        shutil.rmtree(old, ignore_errors=True)
    try:
        os.replace(tmp, root)
    except OSError:  # another process built it first
        shutil.rmtree(tmp, ignore_errors=True)
    return root

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def resolve_device(device: str | torch.device | None) -> torch.device:
    """A ``torch.device`` from ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or ``None`` (CUDA if available)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise UserError(f"device: unknown device {device!r} (use 'cpu', 'cuda', 'cuda:N' or 'mps')") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device: {device!r} requested but CUDA is not available on this machine")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise UserError(f"device: {device!r} requested but only {torch.cuda.device_count()} CUDA devices exist")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device: {device!r} requested but MPS is not available on this machine")
    if dev.type not in {"cpu", "cuda", "mps"}:
        raise UserError(f"device: unsupported device type {dev.type!r} (use 'cpu', 'cuda' or 'mps')")
    return dev


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """A floating ``torch.dtype`` from a name such as ``"float32"`` or ``"bfloat16"``."""
    if isinstance(dtype, torch.dtype):
        if not dtype.is_floating_point:
            raise UserError(f"dtype: {dtype} is not a floating-point dtype")
        return dtype
    if isinstance(dtype, str) and dtype.lower() in DTYPES:
        return DTYPES[dtype.lower()]
    raise UserError(f"dtype: unknown dtype {dtype!r}; use one of {sorted(set(DTYPES))}")


FINGERPRINT_SKIP = (".md", ".txt", ".lock", ".metadata")
"""Files of a local model folder that do not change its scores (docs, locks); everything else is fingerprinted."""


def _fingerprint_cache_path() -> str:
    from styleeval.paths import cache_path

    return str(cache_path("fingerprints.json"))


def model_fingerprint(path: str | os.PathLike[str]) -> str:
    """``local-<12 hex>``: a SHA-256 over the names and contents of a local model folder's files (weights,
    config, tokenizer, chat template), so that a model changed in place gets a new signature.

    Each file's digest is cached by (path, size, mtime) in ``fingerprints.json`` in styleeval's cache
    (:mod:`styleeval.paths`), so an unchanged folder is fingerprinted without reading its weights again.
    """
    import hashlib
    import json

    root = os.path.realpath(path)
    cache_file = _fingerprint_cache_path()
    try:
        with open(cache_file, encoding="utf-8") as f:
            cache = json.load(f)
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    changed = False
    total = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.lower().endswith(FINGERPRINT_SKIP):
                continue
            full = os.path.join(dirpath, name)
            stat = os.stat(full)
            key = f"{full}|{stat.st_size}|{stat.st_mtime_ns}"
            digest = cache.get(key)
            if not isinstance(digest, str):
                h = hashlib.sha256()
                with open(full, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                digest = cache[key] = h.hexdigest()
                changed = True
            total.update(os.path.relpath(full, root).encode() + b"\0" + digest.encode() + b"\0")
    if changed:
        try:
            os.makedirs(os.path.dirname(cache_file), exist_ok=True)
            tmp = f"{cache_file}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(cache, f)
            os.replace(tmp, cache_file)
        except OSError:
            pass  # a read-only cache only costs time
    return f"local-{total.hexdigest()[:12]}"


def model_revision_key(model: Any, revision: str | None = None) -> str | None:
    """What identifies the weights behind ``model`` for caches: the fingerprint of a local folder, else
    ``revision`` (Hub ids are pinned by their revision)."""
    if isinstance(model, (str, os.PathLike)):
        name = preset_path(model)
        if os.path.isdir(name):
            return model_fingerprint(name)
    return revision


def explain_load_error(name: str, err: BaseException, what: str = "model") -> ModelLoadError:
    """One line naming ``name`` and what to do about ``err`` (gated, unknown id, offline, wrong path...)."""
    kind = type(err).__name__
    text = str(err).strip().splitlines()[0] if str(err).strip() else kind
    looks_local = name.startswith((".", "/", "~")) or os.sep in name and not _looks_like_hub_id(name)
    if kind == "GatedRepoError" or "gated" in text.lower():
        hint = "it is gated: accept its licence on huggingface.co, then log in (`hf auth login` or HF_TOKEN)"
    elif looks_local and not os.path.exists(os.path.expanduser(name)):
        hint = "no such local folder: check the path, or give a Hub id such as meta-llama/Llama-3.2-1B-Instruct"
    elif kind in ("RepositoryNotFoundError", "RevisionNotFoundError") or "not a valid model identifier" in text:
        hint = "not found on the Hugging Face Hub: check the id (and --revision), log in if it is private, or pass a local path"
    elif kind in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or any(
            w in text.lower() for w in ("offline", "connect", "resolve", "network", "internet")):
        hint = ("not in the local cache and the Hub cannot be reached: download it once with network access "
                "(unset HF_HUB_OFFLINE), or pass a local path")
    else:
        hint = f"{kind}: {text}"
    return ModelLoadError(f"cannot load {what} {name!r}: {hint}")


def load_tokenizer(tokenizer: Any, revision: str | None = None, trust_remote_code: bool = False) -> Any:
    """A tokenizer object, or one loaded from a preset, Hub id or local path (``ValueError`` saying what to do)."""
    if not isinstance(tokenizer, (str, os.PathLike)):
        return tokenizer
    from transformers import AutoTokenizer

    name = preset_path(tokenizer)
    check_downloadable(name, "tokenizer")
    try:
        return AutoTokenizer.from_pretrained(name, revision=revision, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as err:
        raise ModelLoadError(f"{explain_load_error(name, err, 'tokenizer')} (the server backend tokenizes "
                             "locally: pass tokenizer=<Hub id or local path>)") from None


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """12 hex digits of SHA-256 over what makes a tokenizer's ids: its serialized model (vocabulary, merges,
    normalizer, pre-tokenizer, added tokens) for a fast tokenizer, else its sorted vocabulary; remembered on the
    object. Two tokenizers that differ in any id sign differently, whatever their names."""
    cached = getattr(tokenizer, "_styleeval_fingerprint", None)
    if cached is not None:
        return cached
    import hashlib
    import json

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # its JSON holds hash maps in a per-process order: sorted keys make it canonical
        text = json.dumps(json.loads(backend.to_str()), sort_keys=True, ensure_ascii=False)
    else:
        text = "\n".join(f"{k}\t{v}" for k, v in sorted(tokenizer.get_vocab().items()))
    special = sorted(str(t) for t in getattr(tokenizer, "all_special_tokens", []))
    digest = hashlib.sha256((text + "\n" + "\t".join(special)).encode("utf-8")).hexdigest()[:12]
    try:
        tokenizer._styleeval_fingerprint = digest
    except (AttributeError, TypeError):  # an object that takes no attributes: computed again next time
        pass
    return digest


def load_model(
    model: Any,
    tokenizer: Any = None,
    device: torch.device | None = None,
    dtype: torch.dtype = torch.float32,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> tuple[Any, Any, str, str]:
    """Load (or adopt) a causal LM and its tokenizer.

    ``model`` is a preset name (``"1b"``, ``"3b"``, ``"8b"``), a Hub id, a local path, or an already loaded
    model object. Returns ``(model, tokenizer, model_name, revision)`` with the model in eval mode on
    ``device`` in ``dtype``; ``revision`` is the Hub commit, or for a local folder its :func:`model_fingerprint`
    (``local-<hash>``), or ``local`` for a model object. ``model_name`` is what signatures record: the id, the
    folder's real path, or ``tiny-random`` for that preset (the same on every machine that builds the same weights:
    ``tiny-random@local-<hash of its files>``).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or torch.device("cpu")
    fingerprint = None
    if isinstance(tokenizer, (str, os.PathLike)):  # a tokenizer id or path is loaded, not passed on as a string
        tokenizer = load_tokenizer(tokenizer, None, trust_remote_code)
    if isinstance(model, (str, os.PathLike)):
        preset = str(model).lower() == TINY_RANDOM
        name = preset_path(model)
        if os.path.isdir(name):  # a local folder: one spelling of it in signatures, whatever the caller wrote
            name = os.path.realpath(name)
            fingerprint = model_fingerprint(name)
        check_downloadable(name)
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(name, revision=revision, trust_remote_code=trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(
                name, revision=revision, dtype=dtype, trust_remote_code=trust_remote_code
            )
        except (OSError, ValueError, ImportError) as err:
            raise explain_load_error(name, err) from None
        if preset:  # signed by name and content (the fingerprint), not by where this machine keeps the folder
            name = TINY_RANDOM
    elif isinstance(model, torch.nn.Module):
        name = getattr(model, "name_or_path", "") or getattr(model.config, "_name_or_path", "") or "<model object>"
        if tokenizer is None:
            if not name or name == "<model object>":
                raise UserError("tokenizer: a model object was given without a tokenizer; pass tokenizer=...")
            tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
        model = model.to(dtype)
    else:
        raise UserError(f"model: expected a model id, a path or a model object, got {type(model).__name__}")
    if not hasattr(model, "get_decoder") or model.get_output_embeddings() is None:
        raise UserError(f"model: {name!r} is not a causal LM with a backbone and an LM head")
    commit = fingerprint or revision or getattr(model.config, "_commit_hash", None) or "local"
    return model.to(device).eval(), tokenizer, str(name), str(commit)
