"""The one interface between the metrics and whatever computes log-probabilities or replies.

In the spirit of lm-evaluation-harness's ``LM``: a :class:`Backend` tokenizes nothing itself (prompts arrive as token
ids rendered by :mod:`styleeval.chat`), answers two calls that every backend has, :meth:`Backend.token_logprobs` and
:meth:`Backend.generate`, and advertises optional :attr:`Backend.capabilities` that a metric may ask for (never the
backend's type). :attr:`Backend.identity` is what a signature records about the weights.

Adding a backend (TGI, SGLang, llama.cpp, a hosted API): one module with a subclass that declares its ``name`` and
``options`` and is registered with :func:`styleeval.backends.register_backend` (or the ``styleeval.backends`` entry
point group), and its tests in ``tests/backends/`` (docs/architecture.md). Everything outside this package catches
:class:`BackendError`, never one backend's own error type.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from styleeval.errors import UserError
from styleeval.optiontypes import Option

if TYPE_CHECKING:  # torch is imported where a tensor is made: the CLI builds its parser without it
    import torch

TREE_LOGPROBS = "tree_logprobs"
"""Capability: :meth:`Backend.tree_logprobs` (a prompt and a token tree of continuations in one pass)."""
CANDIDATE_LOGPROBS = "candidate_logprobs"
"""Capability: :meth:`Backend.candidate_logprobs` is exact and cheap (one pass per prompt)."""
PREFIX_REUSE = "prefix_reuse"
"""Capability: prompts that share a prefix are cheaper when sent together (keep them in one call)."""
SERVER_CHAT = "server_chat"
"""Capability: :meth:`Backend.generate_chat` (the server renders the chat template itself)."""

TOKENIZER = Option("tokenizer", str, "tokenizer id or path (default: the model's; on a server prompts are tokenized "
                   "here)", aliases=("tokenizer_id",))
REVISION = Option("revision", str, "model revision (branch, tag or commit) of a Hub id")
TRUST_REMOTE_CODE = Option("trust_remote_code", bool, "allow model code from the Hub")
"""Options every backend that loads a tokenizer (or weights) from the Hub declares."""


class BackendError(RuntimeError):
    """A backend failed for good (a server rejected a request, could not be reached, or answered something unusable).

    ``row`` is the caller's row (``None`` when the failure concerns no row), ``reason`` the message without the row,
    ``status`` an HTTP status where there is one. Every backend's own errors subclass this; code outside
    ``styleeval.backends`` catches only this class.
    """

    def __init__(self, message: str, status: int | None = None, row: int | None = None, what: str = "") -> None:
        self.reason, self.status, self.row, self.what = message, status, row, what
        where = "" if row is None else f"row {row}" + (f" ({what})" if what else "") + ": "
        super().__init__(where + message)

    def at(self, row: int | None) -> BackendError:
        """The same error for row ``row`` of the caller's caller (same class)."""
        return type(self)(self.reason, self.status, row, self.what)


@dataclass(frozen=True)
class TokenTree:
    """A prompt followed by a tree of tokens, and where to read next-token log-probabilities of candidates: the data
    of the :data:`TREE_LOGPROBS` capability.

    ``nodes[j] = (token, parent)``: ``parent`` is ``-1`` for a child of the prompt's last token, else the index of
    an earlier node. ``reads[r] = (position, candidates)``: the log-probabilities of ``candidates`` as the next
    token after ``position`` (``-1``: the prompt's end; ``j``: node ``j``, given its ancestors).
    """

    prompt: Sequence[int]
    nodes: Sequence[tuple[int, int]]
    reads: Sequence[tuple[int, Sequence[int]]]


def common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix shared by all ``sequences`` (0 for an empty list)."""
    if not sequences:
        return 0
    first = sequences[0]
    n = min(len(s) for s in sequences)
    for seq in sequences[1:]:
        i = 0
        while i < n and seq[i] == first[i]:
            i += 1
        n = i
        if n == 0:
            break
    return n


@dataclass(frozen=True)
class Decoding:
    """How a reply is generated: greedy or nucleus sampling, at most ``max_new_tokens`` tokens."""

    do_sample: bool
    max_new_tokens: int
    temperature: float | None = None
    top_p: float | None = None

    def tag(self, seed: int) -> str:
        """A short description for signatures: ``greedy-20`` or ``t0.5-p0.9-n512-seed0``."""
        if not self.do_sample:
            return f"greedy-{self.max_new_tokens}"
        return f"t{self.temperature:g}-p{self.top_p:g}-n{self.max_new_tokens}-seed{seed}"


@dataclass(frozen=True)
class Identity:
    """What identifies the numbers a backend gives: the model name, its ``revision`` (a Hub commit, ``local-<hash>``
    of a local folder, ``local`` for a model object, ``server-<hash>`` for what a server reports and computes),
    the weights' ``dtype`` (``server`` when the server decides), the backend ``kind``, the precision ``head`` of
    the LM head and log-softmax, and the ``build`` of a compute library whose kernels change the numbers with how it
    was compiled (llama.cpp: its version and instruction sets; ``""`` where the other fields say it all)."""

    model: str
    revision: str
    dtype: str
    kind: str
    head: str = "float32"
    build: str = ""

    @property
    def model_field(self) -> str:
        """``model@revision``: the signature's ``model`` field."""
        return f"{self.model}@{self.revision}"


class Backend(ABC):
    """Log-probabilities and replies from one model. Subclasses set :attr:`capabilities` and implement the calls.

    Attributes:
        name: the registered name (``backend="local"``, ``--backend openai``).
        options: the options this backend takes besides the model (:class:`~styleeval.optiontypes.Option`); the CLI,
            the evaluate modules and the metric specs offer them, and :meth:`from_options` rejects any other.
        kind: what the backend calls itself in messages, and what a built-in backend signs as (``backend:local``);
            any other signs as :func:`~styleeval.backends.signed_backend` says (its registered name and
            distribution), whatever it declares here; never branched on by callers.
        app_model: the model the apps (the Space, the metric modules' apps) run when none is named; ``None``: the
            backend's own choice (a server's only model).
        capabilities: optional calls this backend supports (:data:`TREE_LOGPROBS`, :data:`CANDIDATE_LOGPROBS`,
            :data:`PREFIX_REUSE`, :data:`SERVER_CHAT`).
        tokenizer: the tokenizer prompts are rendered with (``None`` only for a server used through
            :meth:`generate_chat`).

    Thread safety: a backend may be shared by threads; a call never changes state that another call reads.
    """

    name: ClassVar[str] = "abstract"
    options: ClassVar[tuple[Option, ...]] = ()
    kind: str = "abstract"
    app_model: ClassVar[str | None] = None
    capabilities: frozenset[str] = frozenset()
    tokenizer: Any = None
    _shared: ClassVar[dict[tuple, Backend]]
    _shared_lock = threading.Lock()

    @classmethod
    def from_options(cls, model: Any, options: dict[str, Any], need_tokenizer: bool = True) -> Backend:
        """This backend for ``model`` from keyword options (``None``: not given); an option it does not declare is a
        ``ValueError`` naming it. ``need_tokenizer=False``: prompts will not be tokenized here (a server's chat)."""
        reject_options(cls.name, options, cls.option_names())
        return cls(model, **{k: v for k, v in options.items() if v is not None})  # type: ignore[call-arg]

    def verify_identity(self) -> Identity:
        """The identity as it is now: a server is probed again (its weights may have been replaced behind the URL);
        a local model's identity was fixed when its weights were loaded. Callers compare the signatures they get
        before and after a long job."""
        return self.identity

    @classmethod
    def missing_weights(cls, model: Any) -> str | None:
        """Why this backend could not open ``model`` without a download (``"<id>: not in the local Hugging Face
        cache"``), checked without any network request; ``None`` when nothing is missing (a server holds its own)."""
        return None

    @classmethod
    def weights_error(cls, model: Any, tokenizer: Any = None) -> UserError | None:
        """The error opening ``model`` (and ``tokenizer``) would end in for want of weights, found without loading
        anything: not here and not downloadable (a backend that downloads asks once per process, within seconds);
        ``None`` when nothing is known to be missing (a server holds its own weights). What the Space tells its
        visitors at start."""
        return None

    @classmethod
    def model_label(cls, model: Any) -> str:
        """``model`` as given (``None``: this backend's default) named for a reader: a page, a log line."""
        return "the default model" if model is None else str(model)

    @classmethod
    def shared_instances(cls) -> list[Backend]:
        """The backends :meth:`shared` opened (what :func:`styleeval.backends.verify_shared` probes again)."""
        return list(cls.__dict__.get("_shared", {}).values())

    @classmethod
    def forget_shared(cls) -> None:
        """Forget what :meth:`shared` opened (the next call opens again)."""
        cls.__dict__.get("_shared", {}).clear()

    @classmethod
    def option_names(cls) -> list[str]:
        """The declared options' names, and ``progress`` (every backend takes it: a scorer's progress bars)."""
        return [o.name for o in cls.options] + ["progress"]

    @classmethod
    def shared(cls, model: Any, options: dict[str, Any], need_tokenizer: bool = True) -> Backend:
        """:meth:`from_options`, opened once per process per (model, options): what the evaluate modules, the
        meta-evaluation and the apps use so that repeated calls do not load or connect again."""
        key = (cls, repr(model), need_tokenizer, tuple(sorted((k, repr(v)) for k, v in options.items())))
        with Backend._shared_lock:
            cache = cls.__dict__.get("_shared")
            if cache is None:
                cache = cls._shared = {}
            if key not in cache:
                cache[key] = cls.from_options(model, options, need_tokenizer=need_tokenizer)
            return cache[key]

    def supports(self, capability: str) -> bool:
        """Whether this backend offers ``capability``."""
        return capability in self.capabilities

    @property
    @abstractmethod
    def identity(self) -> Identity:
        """What a signature records about the model behind this backend."""

    @property
    @abstractmethod
    def max_length(self) -> int | None:
        """The most tokens (prompt + continuation) one scored sequence may have; ``None`` when unknown."""

    @abstractmethod
    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        """The log-probability of every continuation token given its prompt and the continuation tokens before it:
        one float32 tensor per pair, in input order. ``group`` consecutive pairs belong to one caller row (a server
        sends them in one request, so that an error names the row: ``err.row`` is the pair's index // ``group``)."""

    @abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], decoding: Decoding, seeds: Sequence[int],
                 stop_ids: Sequence[int] = ()) -> list[str]:
        """One reply per token-id prompt, in input order. Sampling uses each row's own ``seeds[i]``, so a row's reply
        does not depend on the other rows of the call."""

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           shared_prefixes: bool = False) -> torch.Tensor:
        """``(len(prompts), len(candidates))`` log-probabilities of each candidate as the next token (float32).
        ``shared_prefixes``: a hint that the prompts share long prefixes (the autorater's instructions) which a
        :data:`PREFIX_REUSE` backend may compute once; it never changes the numbers."""
        import torch  # noqa: PLC0415 - heavy (torch)

        cands = [int(c) for c in candidates]
        pairs = [(list(p), [c]) for p in prompts for c in cands]
        values = self.token_logprobs([p for p, _ in pairs], [c for _, c in pairs], group=len(cands))
        out = torch.stack([v[0] for v in values]) if values else torch.empty(0)
        return out.view(len(prompts), len(cands)).float()

    def tree_logprobs(self, trees: Sequence[TokenTree], shared_prefixes: bool = False) -> list[list[torch.Tensor]]:
        """Token trees scored in one pass each (capability :data:`TREE_LOGPROBS`); ``shared_prefixes`` as for
        :meth:`candidate_logprobs`."""
        raise NotImplementedError(f"the {self.kind} backend has no {TREE_LOGPROBS}")

    def generate_chat(self, conversations: Sequence[list[dict[str, str]]], decoding: Decoding,
                      seeds: Sequence[int]) -> list[str]:
        """Replies to chat conversations rendered by the server (capability :data:`SERVER_CHAT`)."""
        raise NotImplementedError(f"the {self.kind} backend has no {SERVER_CHAT}")


def reject_options(name: str, given: dict[str, Any], applicable: Sequence[str]) -> None:
    """Options given for a backend they do not apply to are an error naming each, never silently ignored."""
    wrong = sorted(k for k, v in given.items() if v is not None and k not in applicable)
    if wrong:
        raise UserError(f"{', '.join(wrong)}: not an option of the {name} backend (it takes "
                        f"{', '.join(sorted(set(applicable) - {'progress'}))}); leave {'it' if len(wrong) == 1 else 'them'} out")
