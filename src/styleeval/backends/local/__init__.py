"""The local backend: a transformers causal LM, the one :class:`~styleeval.backends.local.engine.ScoringEngine` for
every log-probability (:mod:`.engine`, its packed token trees' attention masks included), and batched generation
(:mod:`.generation`)."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    PREFIX_REUSE,
    REVISION,
    TOKENIZER,
    TREE_LOGPROBS,
    TRUST_REMOTE_CODE,
    Backend,
    Decoding,
    Identity,
    TokenTree,
    reject_options,
)
from styleeval.errors import UserError
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.gguf_files import REAL_WEIGHTS, is_gguf_name
from styleeval.gguf_files import label as gguf_label
from styleeval.gguf_files import resolve as resolve_gguf
from styleeval.hub import DEFAULT_MODEL, TINY_RANDOM, available_here, check_downloadable, hub_id
from styleeval.optiontypes import Option
from styleeval.progress import loading

if TYPE_CHECKING:  # torch is imported with the model (styleeval.models), after the weights are known to be there
    import torch

DEFAULT_BATCH_TOKENS_CPU = 512
"""Token budget of one forward pass on a CPU (measured fastest on this project's 2-core machine)."""
DEFAULT_BATCH_TOKENS_GPU = 16384
HEAD_DTYPES = ("float32", "bfloat16", "float16")

_MODEL_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_MODEL_LOCKS_GUARD = threading.Lock()


def model_lock(model: Any) -> threading.RLock:
    """The one lock of a loaded model, shared by every backend around it: calls on one model run one at a time
    (whichever thread and backend they come from), for throughput: on a CPU a call already uses every core, on a GPU
    two would compete for memory. It guards no state of the engine (a call changes nothing another call reads:
    docs/architecture.md, "What may be shared between threads"); a sampled generation seeds torch's global
    generator (forked per row) under it."""
    with _MODEL_LOCKS_GUARD:
        lock = _MODEL_LOCKS.get(model)
        if lock is None:
            lock = _MODEL_LOCKS[model] = threading.RLock()
        return lock


def check_weights(model: Any, tokenizer: Any = None) -> None:
    """A model (and a tokenizer id) whose weights are neither here nor downloadable fails now, in at most
    :data:`~styleeval.hub.PROBE_SECONDS`, with one line (:class:`~styleeval.hub.ModelLoadError`), before torch and
    transformers are imported: a command without weights ends in about a second, not after the imports and the Hub
    client's retries. A local folder, a model object and :data:`~styleeval.hub.TINY_RANDOM` pass; a GGUF file is checked
    and a GGUF preset fetched (:mod:`styleeval.gguf_files`)."""
    for name, what in ((DEFAULT_MODEL if model is None else model, "model"), (tokenizer, "tokenizer")):
        if is_gguf_name(name) and what == "model":  # a GGUF file is read, a GGUF preset fetched, now
            resolve_gguf(name)
        elif isinstance(name, str) and name.lower() != TINY_RANDOM:
            check_downloadable(hub_id(name), what)


class LocalBackend(Backend):
    """A causal LM loaded here (a preset, Hub id, local path or model object).

    Args:
        model: what :func:`styleeval.models.load_model` takes.
        tokenizer, device, dtype, revision, trust_remote_code: as for :func:`~styleeval.models.load_model`.
            ``dtype="bfloat16"`` halves the weights' memory; a score is the same bits in any batch in either dtype
            (the engine's docstring), and bfloat16 is as close to exact as a naive bfloat16 loop.
        batch_tokens: token budget of one forward pass (default 512 on CPU, 16384 on a GPU).
        max_batch_rows, reuse_prefix, pack_prompts: :class:`~styleeval.backends.local.engine.ScoringEngine` options.
        head_dtype: ``"float32"`` (default) or ``"bfloat16"``/``"float16"``: the LM head and softmax rounded to it.
        generate_batch_size: prompts per batch of :meth:`generate` (default 16).
        progress: progress bars.
    """

    name = "local"
    options = (
        TOKENIZER,
        Option("device", str, "cpu, cuda, cuda:N or mps (default: cuda if any)"),
        Option("dtype", str, "float32 (default), bfloat16 or float16 (the signature names it: each dtype's "
               "scores are its own bits, whatever the batch)"),
        REVISION,
        TRUST_REMOTE_CODE,
        Option("batch_tokens", int, "token budget of one forward pass (default: 512 on CPU, 16384 on GPU)"),
        Option("max_batch_rows", int, "at most this many sequences per forward pass"),
        Option("head_dtype", str, "precision of the LM head and softmax (bfloat16 with --dtype bfloat16: the "
               "authors' numbers)", choices=HEAD_DTYPES),
        Option("generate_batch_size", int, "prompts per batch when generating replies (the autorater's paper mode; "
               "default 16)"),
        Option("reuse_prefix", bool, "run the prefix shared by all prompts once (default yes)", cli=False),
        Option("pack_prompts", bool, "run each distinct prompt once, its continuations packed as a token tree "
               "(default yes)", cli=False),
    )
    kind = "local"
    app_model = REAL_WEIGHTS  # a real model that needs no Hub account (styleeval.gguf_files)
    capabilities = frozenset({TREE_LOGPROBS, CANDIDATE_LOGPROBS, PREFIX_REUSE})
    _weights: dict[tuple, tuple[Any, Any, str, str]] = {}  # shared(): loaded weights, per load key
    _backends: dict[tuple, Backend] = {}  # shared(): backends around them, per option set

    def __init__(self, model: Any, tokenizer: Any = None, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None, revision: str | None = None, trust_remote_code: bool = False,
                 batch_tokens: int | None = None, max_batch_rows: int | None = None, head_dtype: str | None = None,
                 reuse_prefix: bool = True, pack_prompts: bool = True, generate_batch_size: int | None = None,
                 progress: bool = True, loaded: tuple[Any, Any, str, str] | None = None) -> None:
        if loaded is None:
            check_weights(model, tokenizer)
        from styleeval.backends.local.engine import ScoringEngine  # noqa: PLC0415 - heavy (torch, via styleeval.backends.local.engine)
        from styleeval.models import load_model, resolve_device, resolve_dtype  # noqa: PLC0415 - heavy (torch, via styleeval.models)

        head_name = str(head_dtype or "float32").removeprefix("torch.")
        if head_name not in HEAD_DTYPES:
            raise UserError(f"head_dtype must be one of {', '.join(HEAD_DTYPES)}, got {head_dtype!r}")
        if generate_batch_size is not None and generate_batch_size < 1:
            raise UserError(f"generate_batch_size must be positive, got {generate_batch_size}")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype or "float32")
        self.model, self.tokenizer, self.model_name, self.revision = loaded or load_model(
            DEFAULT_MODEL if model is None else model, tokenizer, self.device, self.dtype, revision,
            bool(trust_remote_code),
        )
        if batch_tokens is None:
            batch_tokens = DEFAULT_BATCH_TOKENS_CPU if self.device.type == "cpu" else DEFAULT_BATCH_TOKENS_GPU
        self.head_dtype = head_name
        self.generate_batch_size = int(generate_batch_size or 16)
        self.progress = progress
        self._lock = model_lock(self.model)
        self.engine = ScoringEngine(
            self.model, batch_tokens=batch_tokens, max_batch_rows=max_batch_rows, reuse_prefix=reuse_prefix,
            head_dtype=None if head_name == "float32" else resolve_dtype(head_name), pack_prompts=pack_prompts,
            progress=progress,
        )

    @classmethod
    def shared_instances(cls) -> list[Backend]:
        return [*super().shared_instances(), *cls._backends.values()]

    @classmethod
    def forget_shared(cls) -> None:
        super().forget_shared()
        cls._backends.clear()
        cls._weights.clear()

    @classmethod
    def missing_weights(cls, model: Any) -> str | None:
        """``"<id>: not in the local Hugging Face cache"`` for a Hub id (or preset) whose weights are not cached here,
        ``"<path>: no such GGUF file"``; ``None`` for a local folder, a model object, cached weights, a GGUF file or a
        GGUF preset (fetched on first use). No network request."""
        model = DEFAULT_MODEL if model is None else model
        if is_gguf_name(model):  # a preset is fetched on first use; a file is there or not
            if str(model).lower() in GGUF_PRESETS or os.path.isfile(os.path.expanduser(str(model))):
                return None
            return f"{model}: no such GGUF file"
        if not isinstance(model, str) or model.lower() == TINY_RANDOM:  # built here on first use
            return None
        model = hub_id(model)
        return None if available_here(model, ("config.json",)) else f"{model}: not in the local Hugging Face cache"

    @classmethod
    def weights_error(cls, model: Any, tokenizer: Any = None) -> UserError | None:
        """:func:`check_weights`'s error (a :class:`~styleeval.hub.ModelLoadError`: not in the local cache and not
        downloadable, one probe of at most :data:`~styleeval.hub.PROBE_SECONDS` per process), or ``None``."""
        try:
            check_weights(model, tokenizer)
        except UserError as err:
            return err
        return None

    @classmethod
    def model_label(cls, model: Any) -> str:
        """A preset's Hub id (the default: :data:`~styleeval.hub.DEFAULT_MODEL`), a local folder's name (its path
        is the machine's business), else the name as given."""
        if not isinstance(model, (str, type(None))):
            return type(model).__name__
        if gguf_label(model) is not None:
            return str(gguf_label(model))
        name = hub_id(DEFAULT_MODEL if model is None else model)
        folder = os.path.expanduser(name)
        return f"{os.path.basename(os.path.normpath(folder))} (a local folder)" if os.path.isdir(folder) else name

    @classmethod
    def shared(cls, model: Any, options: dict[str, Any], need_tokenizer: bool = True) -> Backend:
        """:meth:`Backend.shared` with the weights loaded once per process per (model, tokenizer, device, dtype,
        revision, trust_remote_code): engine options (``batch_tokens``, ``head_dtype``...) give cheap new backends
        around the shared weights. A local folder's revision is its fingerprint, so weights replaced in place are
        loaded again. A model object is not cached (it is loaded already)."""
        model = DEFAULT_MODEL if model is None else model
        if not isinstance(model, (str, bytes)) and not hasattr(model, "__fspath__"):
            return cls.from_options(model, options)
        reject_options(cls.name, options, cls.option_names())
        with Backend._shared_lock:  # another thread may be adding weights meanwhile
            first_time = not any(key[0] == str(model) for key in cls._weights)
        with loading(f"model {cls.model_label(model)}") if first_time else nullcontext():  # torch, then the weights
            check_weights(model, options.get("tokenizer"))
            from styleeval.models import model_revision_key  # noqa: PLC0415 - heavy (torch, via styleeval.models)

            given = {k: v for k, v in options.items() if v is not None}
            load = {k: given.pop(k) for k in ("tokenizer", "revision", "trust_remote_code") if k in given}
            key = (str(model), str(given.get("device")), str(given.get("dtype") or "float32"),
                   model_revision_key(model, load.get("revision")), bool(load.get("trust_remote_code")),
                   repr(load.get("tokenizer")))
            full = (cls, key, tuple(sorted((k, repr(v)) for k, v in given.items())))  # a subclass: its own backend
            with Backend._shared_lock:
                if key not in cls._weights:
                    first = cls(model, device=given.get("device"), dtype=given.get("dtype"), progress=False, **load)
                    cls._weights[key] = (first.model, first.tokenizer, first.model_name, first.revision)
                if full not in cls._backends:
                    cls._backends[full] = cls(model, loaded=cls._weights[key], **given)
                return cls._backends[full]

    @property
    def identity(self) -> Identity:
        return Identity(self.model_name, self.revision, str(self.dtype).removeprefix("torch."), self.kind,
                        self.head_dtype, self.engine.build)

    @property
    def max_length(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        with self._lock:
            return self.engine.token_logprobs(prompts, continuations)

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           shared_prefixes: bool = False) -> torch.Tensor:
        with self._lock:
            return self.engine.candidate_logprobs(prompts, candidates, share_prompts=shared_prefixes)

    def tree_logprobs(self, trees: Sequence[TokenTree], shared_prefixes: bool = False) -> list[list[torch.Tensor]]:
        with self._lock:
            return self.engine.tree_logprobs(trees, share_prompts=shared_prefixes)

    def generate(self, prompts: Sequence[Sequence[int]], decoding: Decoding, seeds: Sequence[int],
                 stop_ids: Sequence[int] = ()) -> list[str]:
        from styleeval.backends.local.generation import generate_replies  # noqa: PLC0415 - heavy (torch, via styleeval.backends.local.generation)

        with self._lock:
            return generate_replies(
                self.model, self.tokenizer, prompts, max_new_tokens=decoding.max_new_tokens,
                do_sample=decoding.do_sample, temperature=decoding.temperature, top_p=decoding.top_p, seeds=seeds,
                batch_size=self.generate_batch_size, stop_ids=stop_ids, progress=self.progress,
            )
