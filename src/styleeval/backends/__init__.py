"""Backends: what computes log-probabilities and replies, behind one interface (:class:`Backend`).

A backend is chosen by name from a registry (``backend="local" | "openai" | "llamacpp"``, or any registered
name; when no name is given, ``openai`` where a ``base_url`` is given, else ``local``): :func:`backend_class` is the
only place that decides. Everything above (LogProb, the autorater, the metrics, the CLI, the evaluate modules, the
apps) passes the name and the options through, asks a backend for capabilities, never for its type, and catches
only :class:`BackendError`.

Registering a backend: :func:`register_backend` (in code), or an entry point in the ``styleeval.backends`` group
(``name = "package.module:Class"``), found the first time the registry (:data:`BACKENDS`, a
:class:`~styleeval.registry.Registry`) is read and imported when that backend is. Its declared ``options`` join the
CLI, the evaluate modules' keywords and the metric-spec options (:mod:`styleeval.options`). A plugin that cannot be
used (its module raises anything at import, or its entry names no Backend) is left out of those with one warning
naming it and is a :class:`BackendImportError` where it is named; an entry point named like a built-in backend, or a
name two distributions declare, is one warning saying which is used. A signature records the backend that computed
(:func:`signed_backend`), never what its class declares.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    PREFIX_REUSE,
    SERVER_CHAT,
    TREE_LOGPROBS,
    Backend,
    BackendError,
    Decoding,
    Identity,
    TokenTree,
)
from styleeval.errors import UserError
from styleeval.optiontypes import Option, merge_options
from styleeval.registry import Registry

__all__ = ["BACKENDS", "Backend", "BackendError", "BackendImportError", "Decoding", "Identity", "TokenTree",
           "backend_class", "backend_names", "backend_options", "clear_shared", "given_or_open", "open_backend", "register_backend", "shared_backend",
           "signed_backend", "split_options", "unregister_backend", "verify_shared",
           "CANDIDATE_LOGPROBS", "PREFIX_REUSE", "SERVER_CHAT", "TREE_LOGPROBS"]

DEFAULT_BACKEND = "local"
URL_BACKEND = "openai"
"""The backend chosen when none is named: ``openai`` where a ``base_url`` is given, else ``local``."""


class BackendImportError(UserError, ImportError):
    """A registered backend that cannot be used: its module fails to import (whatever it raises), or its entry names
    something that is not a :class:`Backend` subclass. One line naming the backend, its target and why (a
    :class:`~styleeval.errors.UserError`: the CLI prints it as such; an ``ImportError`` too)."""


def _is_backend(name: str, cls: object) -> None:
    if not isinstance(cls, type) or not issubclass(cls, Backend):
        raise TypeError(f"{'backend ' + repr(name) if name else 'register_backend'}: {cls!r} is not a Backend "
                        "subclass")


BACKENDS: Registry[type[Backend]] = Registry("backend", group="styleeval.backends", check=_is_backend)
"""Backend name -> class (:class:`~styleeval.registry.Registry`): the built-in ones as lazy entries (their modules,
numpy, torch, urllib3, imported when one is read), the ``styleeval.backends`` entry points' on first read, and any
:func:`register_backend` adds."""
_BUILTINS = {
    "local": "styleeval.backends.local:LocalBackend",
    "openai": "styleeval.backends.openai_server:ServerBackend",
    "llamacpp": "styleeval.backends.llamacpp:LlamaCppBackend",  # imports llama_cpp when a model is opened
}
for _name, _target in _BUILTINS.items():
    BACKENDS.add(_name, _target)
BUILTIN_BACKENDS = tuple(_BUILTINS)


def _named(name: str) -> type[Backend]:
    """The class registered as ``name``; a plugin that cannot be imported, or whose entry names no Backend subclass,
    is a :class:`BackendImportError` naming it."""
    try:
        return BACKENDS[name]
    except ImportError as err:
        raise BackendImportError(str(err)) from None
    except TypeError as err:  # the registry's check: the entry names something else
        raise BackendImportError(f"backend {name!r} ({BACKENDS.target(name)}) cannot be used: "
                                 f"{str(err).split(': ', 1)[-1]}") from None


def _declared_options(leave_out: str | None = None) -> list[tuple[str, tuple[Option, ...]]]:
    """Each registered backend's (name, options) but ``leave_out``'s; a plugin that cannot be used (its module fails
    to import, whatever it raises, or its entry names no Backend) is left out with a warning naming it (it fails
    where it is named: ``backend_class``), so that one broken install does not stop every command; a built-in one
    that cannot be imported is an error."""
    declared = []
    for name in BACKENDS.names():
        if name == leave_out:
            continue
        try:
            declared.append((name, _named(name).options))
        except BackendImportError as err:
            if name in BUILTIN_BACKENDS:
                raise
            warnings.warn(f"{err}; its options are left out until it can be imported", stacklevel=3)
    return declared


def register_backend(cls: type[Backend], name: str | None = None) -> type[Backend]:
    """Register a :class:`Backend` subclass under ``name`` (default: its ``name``); usable as a class decorator.
    Its options must not redefine an option another backend declares with another type; a name taken by another
    class is a ``ValueError``."""
    _is_backend("", cls)
    name = name or cls.name
    if not name or name == "abstract":
        raise ValueError(f"register_backend: {cls.__name__} needs a name (class attribute name)")
    merge_options([*_declared_options(leave_out=name), (name, cls.options)])
    BACKENDS.add(name, cls, lazy=False)
    return cls


def unregister_backend(name: str) -> None:
    """Remove a registered backend (tests, plugins reloaded)."""
    BACKENDS.unregister(name)


def backend_names() -> list[str]:
    """The registered backends' names."""
    return BACKENDS.names()


def backend_options() -> list[Option]:
    """Every registered backend's options, merged by name (each records which backends take it); a plugin that
    cannot be imported is left out with a warning."""
    return merge_options(_declared_options())


def backend_class(backend: str | None = None, base_url: str | None = None) -> type[Backend]:
    """The registered class named ``backend``; ``None``: ``openai`` where ``base_url`` is given, else ``local``."""
    name = backend or (URL_BACKEND if base_url is not None else DEFAULT_BACKEND)
    if name not in BACKENDS:
        raise UserError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    return _named(name)


def signed_backend(backend: Backend | type[Backend]) -> str:
    """What a signature's ``backend`` field records: the backend that computed the numbers, from its class, never
    from what the class declares. A built-in backend signs as its ``kind`` (``local``, ``server``, ``llamacpp``);
    any other as ``<name>@<distribution>-<version>``: the name it is registered under and the distribution that
    provides it (its entry point's, else the installed distribution of its module, else ``<name>@<module>``), so that
    a plugin subclassing a built-in one (and inheriting its ``kind``) never signs as it, nor two plugins alike.

    >>> class Halved(backend_class("local")):  # a plugin's class, registered nowhere, of no distribution
    ...     pass
    >>> signed_backend(backend_class("local")), signed_backend(Halved)
    ('local', 'styleeval.backends.Halved@styleeval.backends')
    """
    cls = backend if isinstance(backend, type) else type(backend)
    qualified = f"{cls.__module__}:{cls.__qualname__}"
    if qualified in _BUILTINS.values():
        return str(cls.kind)
    names = sorted(n for n, obj in BACKENDS.loaded_items() if obj is cls)
    name = names[0] if names else f"{cls.__module__}.{cls.__qualname__}"
    origin = BACKENDS.origin(name) if names else None
    if origin is None:
        origin = _module_distribution(cls.__module__)
    return f"{name}@{origin.replace(' ', '-')}"


@functools.cache
def _module_distribution(module: str) -> str:
    """``"name version"`` of the installed distribution providing ``module``'s top-level package, else ``module``."""
    import importlib.metadata  # noqa: PLC0415 - heavy (importlib.metadata)

    top = module.partition(".")[0]
    if top == "styleeval":  # styleeval's own modules: its version is signed apart
        return module
    for dist in importlib.metadata.packages_distributions().get(top, ()):
        try:
            return f"{dist} {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return module


def _options(base_url: str | None, options: dict[str, Any]) -> dict[str, Any]:
    return {**options, "base_url": base_url} if base_url is not None else dict(options)


def open_backend(model: Any = None, base_url: str | None = None, *, backend: str | None = None,
                 need_tokenizer: bool = True, **options: Any) -> Backend:
    """The backend named ``backend`` (see :func:`backend_class`) for ``model``.

    Args:
        model: a preset, Hub id, local path or model object; on a server the served model name (``None``: the
            server's only model).
        base_url: an OpenAI-compatible server's API root (``http://host:8000/v1``): an option of the ``openai``
            backend, and what chooses it when no ``backend`` is named.
        backend: a registered backend name.
        need_tokenizer: ``False`` when prompts will not be tokenized here (a server rendering the chat itself).
        **options: the backend's declared options; ``None`` means "not given". An option the chosen backend does
            not declare is a ``ValueError`` naming it.
    """
    cls = backend_class(backend, base_url)
    return cls.from_options(model, _options(base_url, options), need_tokenizer=need_tokenizer)


def shared_backend(model: Any = None, base_url: str | None = None, *, backend: str | None = None,
                   need_tokenizer: bool = True, **options: Any) -> Backend:
    """:func:`open_backend`, opened once per process per (model, options) (``Backend.shared``; the local backend
    also loads the weights once for every engine option set): repeated calls (the evaluate modules, the
    meta-evaluation, the apps) do not reload weights or reconnect. Progress bars are off unless asked for."""
    cls = backend_class(backend, base_url)
    opts = _options(base_url, options)
    if opts.get("progress") is None:
        opts["progress"] = False
    return cls.shared(model, opts, need_tokenizer=need_tokenizer)


def split_options(options: dict[str, Any], backend: str | None = None,
                  base_url: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` split into backend options (those any registered backend declares: the chosen one rejects those
    it does not take, naming them) and the rest (a scorer's own), ``None`` values dropped."""
    names = {o.name for o in backend_options()} | set(backend_class(backend, base_url).option_names())
    given = {k: v for k, v in options.items() if v is not None}
    return {k: v for k, v in given.items() if k in names}, {k: v for k, v in given.items() if k not in names}


def given_or_open(given: Backend | str | None, model: Any = None, base_url: str | None = None,
                  **options: Any) -> Backend:
    """``given`` when it is a :class:`Backend` (then ``model``, ``base_url`` and every option must be left out: they
    belong to it), else :func:`open_backend` of the rest with ``given`` as the backend's name. What
    :class:`~styleeval.LogProb` and the autorater call."""
    if not isinstance(given, Backend):
        return open_backend(model, base_url, backend=given, **options)
    ignored = {"need_tokenizer", "progress"}
    named = [k for k, v in {"model": model, "base_url": base_url, **options}.items()
             if v is not None and k not in ignored]
    if named:
        raise UserError(f"{', '.join(named)}: a backend is given, and these belong to it; leave them out")
    return given


def verify_shared() -> None:
    """Probe every shared backend again (:meth:`Backend.verify_identity`): what a long run does before it compares
    the signatures it started with."""
    for _, cls in BACKENDS.loaded_items():  # a backend never imported was never opened
        for backend in cls.shared_instances():
            backend.verify_identity()


def clear_shared() -> None:
    """Forget every shared backend and loaded model (the next :func:`shared_backend` call loads again)."""
    for _, cls in BACKENDS.loaded_items():
        cls.forget_shared()
