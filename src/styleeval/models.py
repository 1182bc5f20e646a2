"""Loading causal chat models: model ids, presets, devices and dtypes."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from filelock import FileLock
from huggingface_hub.utils import are_progress_bars_disabled
from safetensors import SafetensorError

from styleeval.atomic import atomic_dir
from styleeval.digests import DigestCache, cache_file
from styleeval.errors import UserError
from styleeval.gguf_files import GGUFInfo, is_gguf_name
from styleeval.gguf_files import resolve as resolve_gguf
from styleeval.hub import (  # noqa: F401  re-exported: the torch-free part of model loading lives in hub.py
    DEFAULT_MODEL,
    PRESETS,
    PROBE_SECONDS,
    TINY_RANDOM,
    UNGATED_PRESET,
    WITHOUT_WEIGHTS,
    ModelLoadError,
    check_downloadable,
    did_you_mean,
    offline_variable,
)
from styleeval.hub import looks_like_hub_id as _looks_like_hub_id
from styleeval.paths import cache_path
from styleeval.progress import stage
from styleeval.random_weights import build_model, build_tokenizer


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
    root = cache_path(TINY_RANDOM)

    def current(folder: Path) -> bool:  # a complete build with today's context (an older one is replaced)
        if not ((folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()):
            return False
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return config.get("max_position_embeddings") == TINY_RANDOM_CONTEXT

    if current(root):
        return root

    tokenizer = build_tokenizer()
    model = build_model("tiny", vocab_size=len(tokenizer), head_scale=30.0,
                        max_position_embeddings=TINY_RANDOM_CONTEXT)
    with atomic_dir(root, done=current) as tmp:  # another process's build, finished meanwhile, is kept
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
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
    return cache_file()


def model_fingerprint(path: str | os.PathLike[str]) -> str:
    """``local-<12 hex>``: a SHA-256 over the names and contents of a local model folder's files (weights,
    config, tokenizer, chat template), so that a model changed in place gets a new signature.

    Each file's digest is cached by (path, size, mtime) in ``fingerprints.json`` in styleeval's cache
    (:mod:`styleeval.digests`), so an unchanged folder is fingerprinted without reading its weights again.
    """
    root = os.path.realpath(path)
    cache = DigestCache()
    total = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.lower().endswith(FINGERPRINT_SKIP):
                continue
            full = os.path.join(dirpath, name)
            total.update(os.path.relpath(full, root).encode() + b"\0" + cache.sha256(full).encode() + b"\0")
    cache.save()
    return f"local-{total.hexdigest()[:12]}"


def model_revision_key(model: Any, revision: str | None = None) -> str | None:
    """What identifies the weights behind ``model`` for caches: the fingerprint of a local folder, else
    ``revision`` (Hub ids are pinned by their revision)."""
    if isinstance(model, (str, os.PathLike)):
        if is_gguf_name(model):
            return resolve_gguf(model).revision
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
        variable = offline_variable()
        unset = f" (unset {variable})" if variable else ""
        hint = ("not in the local cache and the Hub cannot be reached: download it once with network access"
                f"{unset}, or pass a local path ({WITHOUT_WEIGHTS})")
    else:
        hint = f"{kind}: {text}"
    return ModelLoadError(f"cannot load {what} {name!r}{did_you_mean(name)}: {hint}")


def load_tokenizer(tokenizer: Any, revision: str | None = None, trust_remote_code: bool = False) -> Any:
    """A tokenizer object, or one loaded from a preset, Hub id or local path (``ValueError`` saying what to do)."""
    if not isinstance(tokenizer, (str, os.PathLike)):
        return tokenizer
    from transformers import AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

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


GGUF_MARKER = ".styleeval-gguf.json"
"""In a converted GGUF folder: the source file's SHA-256 and the folder's own fingerprint, written last (a folder
without it, or whose files changed since, is converted again)."""


def gguf_folder(info: GGUFInfo, progress: bool | None = None) -> Path:
    """A GGUF file converted once, by transformers' GGUF loader (de-quantized to float32), into a model folder in
    styleeval's cache (``gguf/converted/<16 hex of its SHA-256>``), so that later loads take seconds. A folder deleted,
    cut short or changed since it was written is built again; two processes converting at once convert once
    (a file lock)."""
    root = cache_path("gguf", "converted", info.sha256[:16])
    if _converted(root, info):
        return root
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root) + ".lock"):
            if _converted(root, info):  # another process converted it meanwhile
                return root
            for stale in root.parent.glob(f".{root.name}.*"):  # left by a killed conversion (the lock is ours)
                shutil.rmtree(stale, ignore_errors=True)
            with atomic_dir(root) as tmp:  # an older or cut folder replaced (no other converter: the lock)
                with stage(f"converting {os.path.basename(info.path)} (once; kept in {root.parent})", progress):
                    _convert_gguf(info, tmp)
                _readable_as_created(tmp)
            marker = {"sha256": info.sha256, "fingerprint": model_fingerprint(root)}  # last: the folder is complete
            (root / GGUF_MARKER).write_text(json.dumps(marker), encoding="utf-8")
    except (OSError, SafetensorError) as err:  # a full disk, a cache under a file, no permission
        raise ModelLoadError(f"cannot convert {info.path!r} into styleeval's cache ({root.parent}): "
                             f"{getattr(err, 'strerror', None) or err} (a float32 copy of the weights: up to 8 times the file's "
                             "size; STYLEEVAL_CACHE puts the cache elsewhere)") from None
    return root


def _readable_as_created(folder: Path) -> None:
    """A converted folder's files as ``open()`` would create them (0666 less the umask): transformers writes the
    weights 0600 (the folder itself, made by :func:`~styleeval.atomic.atomic_dir`, is as ``mkdir`` makes one)."""
    mask = _umask()
    for child in folder.iterdir():
        os.chmod(child, 0o666 & ~mask)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _converted(root: Path, info: GGUFInfo) -> bool:
    try:
        marker = json.loads((root / GGUF_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(marker, dict) and marker.get("sha256") == info.sha256
            and marker.get("fingerprint") == model_fingerprint(root))


def _convert_gguf(info: GGUFInfo, folder: Path) -> None:
    """Read the GGUF's tokenizer with transformers and write its weights de-quantized to float32 one tensor at a time
    (:mod:`styleeval.gguf_convert`: transformers' numbers to the bit, in a fraction of the memory its loader takes)."""
    from transformers import AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

    from styleeval.gguf_convert import MissingWeights, convert_tensors, one_reader  # noqa: PLC0415 - heavy (transformers, via styleeval.gguf_convert)

    directory, filename = os.path.split(info.path)
    unreadable = (f"cannot load model {info.path!r}: transformers cannot read this GGUF file (architecture "
                  f"{info.architecture}, quantization {info.quantization})")
    try:
        with _quiet_stderr(), one_reader(info.path):  # the file read once for the weights and the tokenizer
            convert_tensors(info.path, folder)  # the weights first: their buffers are freed before the tokenizer's
            tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=filename)
    except MissingWeights as err:  # transformers would fill them with random values: numbers that change each time
        missing = err.names
        raise ModelLoadError(f"{unreadable}: {len(missing)} weight(s) of the model are not in the file "
                             f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})") from None
    except OSError as err:
        if err.errno is not None:  # writing the folder failed (a full disk): said by gguf_folder
            raise
        raise ModelLoadError(f"{unreadable}: {_first_line(err)}") from None
    except (ValueError, KeyError, NotImplementedError, RuntimeError, TypeError) as err:
        raise ModelLoadError(f"{unreadable}: {_first_line(err)}") from None
    tokenizer.save_pretrained(folder)


def _first_line(err: BaseException) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _quiet_stderr() -> Any:
    """Where the libraries' progress bars are off (``-q`` / ``--no-progress``: ``HF_HUB_DISABLE_PROGRESS_BARS``),
    stderr is muted while transformers reads a GGUF file: its de-quantizing bar is a plain tqdm with no switch."""
    return contextlib.redirect_stderr(io.StringIO()) if are_progress_bars_disabled() else contextlib.nullcontext()


def model_source(model: str | os.PathLike[str]) -> str:
    """Where ``transformers`` loads a model named as styleeval names it: the converted folder of a ``.gguf`` file or of
    the ``smollm2-135m`` preset (fetched and converted once), the built folder of ``tiny-random``, the Hub id of a
    preset (``1b``...), else the name itself. For code of your own beside styleeval (a policy to train:
    docs/training.md), ``AutoModelForCausalLM.from_pretrained(model_source("smollm2-135m"))``.

    >>> model_source("1b"), model_source("Qwen/Qwen2.5-1.5B-Instruct")
    ('meta-llama/Llama-3.2-1B-Instruct', 'Qwen/Qwen2.5-1.5B-Instruct')
    """
    return _signed_source(model)[1]


def _signed_source(model: str | os.PathLike[str]) -> tuple[str, str, str | None]:
    """``(name, source, fingerprint)`` of a model named by a string: what signatures record, where transformers
    loads it from, and the revision that identifies the weights (``None``: a Hub id's own). A GGUF file or preset
    signs by its content (:class:`~styleeval.gguf_files.GGUFInfo`) and loads from its converted folder; the
    :data:`TINY_RANDOM` preset signs by name and content, not by where this machine keeps it; a local folder by its
    real path and fingerprint."""
    if is_gguf_name(model):
        info = resolve_gguf(model)
        return info.model_name, str(gguf_folder(info)), info.revision
    name = preset_path(model)
    if not os.path.isdir(name):
        return name, name, None
    real = os.path.realpath(name)
    return (TINY_RANDOM if str(model).lower() == TINY_RANDOM else real), real, model_fingerprint(real)


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
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

    device = device or torch.device("cpu")
    fingerprint = None
    if isinstance(tokenizer, (str, os.PathLike)):  # a tokenizer id or path is loaded, not passed on as a string
        tokenizer = load_tokenizer(tokenizer, None, trust_remote_code)
    if isinstance(model, (str, os.PathLike)):
        name, source, fingerprint = _signed_source(model)
        if source == name:
            check_downloadable(name)
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
                if fingerprint is not None and name.startswith("gguf:"):  # named as given, not by the cache's folder
                    tokenizer.name_or_path = os.fspath(model)
            model = AutoModelForCausalLM.from_pretrained(
                source, revision=revision, dtype=dtype, trust_remote_code=trust_remote_code
            )
        except (OSError, ValueError, ImportError) as err:
            raise explain_load_error(source, err) from None
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
    check_vocabulary(model, tokenizer, str(name))
    commit = fingerprint or revision or getattr(model.config, "_commit_hash", None) or "local"
    return model.to(device).eval(), tokenizer, str(name), str(commit)


def check_vocabulary(model: Any, tokenizer: Any, name: str) -> None:
    """Every token id text or the chat template can make has a row in ``model``'s input embedding and in its LM head:
    else one :class:`ModelLoadError` naming the model, now, rather than ``IndexError: index out of range in self``
    deep inside a forward pass (a tokenizer that is not the weights' own; a GGUF file is checked before it is
    converted too: :func:`styleeval.gguf_header.vocabulary_mismatch`). The tokenizer's vocabulary must fit the rows
    (rows beyond it, padding, are no error), and so must every added token its chat template writes; an added token
    past the rows that the template does not write is no error: text holding its string is tokenized as text
    (:class:`styleeval.chat.TextEncoder`) -- transformers adds ``<|endoftext|>`` to a GGUF file's byte-level
    tokenizer that names no end of text."""
    rows = {"input embedding": getattr(model.get_input_embeddings(), "num_embeddings", None),
            "LM head": getattr(getattr(model.get_output_embeddings(), "weight", None), "shape", (None,))[0]}
    template = tokenizer.chat_template if isinstance(getattr(tokenizer, "chat_template", None), str) else ""
    added = tokenizer.get_added_vocab() if hasattr(tokenizer, "get_added_vocab") else {}
    written = sorted((i, t) for t, i in added.items() if t in template)
    size = int(getattr(tokenizer, "vocab_size", 0) or 0)
    for what, count in rows.items():
        if count is None:
            continue
        if size > count:
            raise ModelLoadError(f"cannot load model {name!r}: its tokenizer's vocabulary holds {size} tokens, but "
                                 f"its {what} has {count} rows: the tokenizer is not the weights' own (pass the "
                                 "model's own tokenizer)")
        past = [(i, t) for i, t in written if i >= count]
        if past:
            raise ModelLoadError(f"cannot load model {name!r}: its chat template writes {past[0][1]!r}, token id "
                                 f"{past[0][0]}, but its {what} has {count} rows: the tokenizer is not the weights' own")
