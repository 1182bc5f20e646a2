"""Backends: what computes log-probabilities and replies, behind one interface (:class:`Backend`).

:func:`open_backend` is the only place that decides between a local model and a server; everything above it
(LogProb, the autorater, the metrics, the CLI, the evaluate modules, the apps) passes ``base_url`` through and asks a
backend for capabilities, never for its type.
"""

from __future__ import annotations

from typing import Any

from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    PREFIX_REUSE,
    SERVER_CHAT,
    TREE_LOGPROBS,
    Backend,
    Decoding,
    Identity,
)

__all__ = ["Backend", "Decoding", "Identity", "clear_shared", "given_or_open", "open_backend", "shared_backend", "CANDIDATE_LOGPROBS", "PREFIX_REUSE",
           "SERVER_CHAT", "TREE_LOGPROBS"]


def open_backend(model: Any = None, base_url: str | None = None, *, need_tokenizer: bool = True,
                 defaults: dict[str, Any] | None = None, **options: Any) -> Backend:
    """The backend for ``model``: a server when ``base_url`` is given, else a model loaded here.

    Args:
        model: a preset, Hub id, local path or model object; with ``base_url`` the served model name (``None``: the
            server's only model).
        base_url: an OpenAI-compatible server's API root (``http://host:8000/v1``).
        need_tokenizer: a server backend loads the tokenizer from the served name when none is given.
        defaults: options the caller would like where the backend takes them (e.g. the autorater's
            ``share_prompts``), never an error.
        **options: the backend's options (:data:`styleeval.backends.local.OPTIONS`,
            :data:`styleeval.backends.openai_server.OPTIONS`); ``None`` means "not given". An option the chosen
            backend does not take is a ``ValueError`` naming it.
    """
    if base_url is not None:
        from styleeval.backends.openai_server import OPTIONS, ServerBackend

        extra = {k: v for k, v in (defaults or {}).items() if k in OPTIONS and options.get(k) is None}
        return ServerBackend.from_options(model, base_url, {**options, **extra}, need_tokenizer=need_tokenizer)
    from styleeval.backends.local import OPTIONS as LOCAL_OPTIONS
    from styleeval.backends.local import LocalBackend

    extra = {k: v for k, v in (defaults or {}).items() if k in LOCAL_OPTIONS and options.get(k) is None}
    return LocalBackend.from_options(model, {**options, **extra})


def given_or_open(backend: Backend | None, model: Any = None, base_url: str | None = None, **options: Any) -> Backend:
    """``backend`` when one is given (then ``model``, ``base_url`` and every option must be left out: they belong to
    it), else :func:`open_backend` of the rest. What :class:`~styleeval.LogProb` and the autorater call."""
    if backend is None:
        return open_backend(model, base_url, **options)
    ignored = {"need_tokenizer", "defaults", "progress"}
    given = [k for k, v in {"model": model, "base_url": base_url, **options}.items()
             if v is not None and k not in ignored]
    if given:
        raise ValueError(f"{', '.join(given)}: a backend is given, and these belong to it; leave them out")
    return backend


_MODELS: dict[tuple, tuple[Any, Any]] = {}
_SERVERS: dict[tuple, Backend] = {}
_LOCAL: dict[tuple, Backend] = {}


def clear_shared() -> None:
    """Forget every shared model and client (the next :func:`shared_backend` call loads again)."""
    _MODELS.clear()
    _SERVERS.clear()
    _LOCAL.clear()


def shared_backend(model: Any = None, base_url: str | None = None, *, need_tokenizer: bool = True,
                   defaults: dict[str, Any] | None = None, **options: Any) -> Backend:
    """:func:`open_backend`, with the weights loaded once per process per (model, device, dtype, revision,
    trust_remote_code) and one server client per (URL, model, options): repeated calls (the evaluate modules, the
    meta-evaluation, the apps) do not reload weights. A local folder's revision is its fingerprint, so weights
    replaced in place are loaded again. Engine options (``batch_tokens``, ``head_dtype``...) give cheap new
    backends around the shared weights."""
    from styleeval.models import DEFAULT_MODEL, model_revision_key

    if base_url is not None:
        key = (base_url, str(model), need_tokenizer, tuple(sorted((k, repr(v)) for k, v in options.items())),
               tuple(sorted((k, repr(v)) for k, v in (defaults or {}).items())))
        if key not in _SERVERS:
            _SERVERS[key] = open_backend(model, base_url, need_tokenizer=need_tokenizer, defaults=defaults,
                                         progress=False, **options)
        return _SERVERS[key]
    if model is None:
        model = DEFAULT_MODEL
    if not isinstance(model, (str, bytes)) and not hasattr(model, "__fspath__"):
        return open_backend(model, defaults=defaults, **{"progress": False, **options})
    load = ("tokenizer", "device", "dtype", "revision", "trust_remote_code")
    key = (str(model), str(options.get("device")), str(options.get("dtype") or "float32"),
           model_revision_key(model, options.get("revision")), bool(options.get("trust_remote_code")),
           repr(options.get("tokenizer")))
    if key not in _MODELS:
        base = open_backend(model, progress=False, **{k: options.get(k) for k in load})
        _MODELS[key] = (base.model, base.tokenizer, base.model_name, base.revision)  # type: ignore[attr-defined]
    loaded, tokenizer, name, revision = _MODELS[key]
    rest = {k: v for k, v in options.items() if k not in load}
    full = (*key, tuple(sorted((k, repr(v)) for k, v in rest.items())),
            tuple(sorted((k, repr(v)) for k, v in (defaults or {}).items())))
    if full not in _LOCAL:
        backend = open_backend(loaded, tokenizer=tokenizer, device=options.get("device"),
                               dtype=options.get("dtype"), defaults=defaults, **{"progress": False, **rest})
        backend.model_name, backend.revision = name, revision  # type: ignore[attr-defined]
        _LOCAL[full] = backend
    return _LOCAL[full]
