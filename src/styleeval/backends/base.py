"""The one interface between the metrics and whatever computes log-probabilities or replies.

In the spirit of lm-evaluation-harness's ``LM``: a :class:`Backend` tokenizes nothing itself (prompts arrive as token
ids rendered by :mod:`styleeval.chat`), answers two calls that every backend has, :meth:`Backend.token_logprobs` and
:meth:`Backend.generate`, and advertises optional :attr:`Backend.capabilities` that a metric may ask for (never the
backend's type). :attr:`Backend.identity` is what a signature records about the weights.

Adding a backend (TGI, SGLang, llama.cpp, a hosted API): one module in this package with a subclass, registered in
:func:`styleeval.backends.open_backend`, and its tests in ``tests/backends/`` (docs/architecture.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

TREE_LOGPROBS = "tree_logprobs"
"""Capability: :meth:`Backend.tree_logprobs` (a prompt and a token tree of continuations in one pass)."""
CANDIDATE_LOGPROBS = "candidate_logprobs"
"""Capability: :meth:`Backend.candidate_logprobs` is exact and cheap (one pass per prompt)."""
PREFIX_REUSE = "prefix_reuse"
"""Capability: prompts that share a prefix are cheaper when sent together (keep them in one call)."""
SERVER_CHAT = "server_chat"
"""Capability: :meth:`Backend.generate_chat` (the server renders the chat template itself)."""


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
    the weights' ``dtype`` (``server`` when the server decides), the backend ``kind`` and the precision ``head`` of
    the LM head and log-softmax."""

    model: str
    revision: str
    dtype: str
    kind: str
    head: str = "float32"

    @property
    def model_field(self) -> str:
        """``model@revision``: the signature's ``model`` field."""
        return f"{self.model}@{self.revision}"


class Backend(ABC):
    """Log-probabilities and replies from one model. Subclasses set :attr:`capabilities` and implement the calls.

    Attributes:
        kind: ``"local"`` or ``"server"`` (recorded in signatures; never branched on by callers).
        capabilities: optional calls this backend supports (:data:`TREE_LOGPROBS`, :data:`CANDIDATE_LOGPROBS`,
            :data:`PREFIX_REUSE`, :data:`SERVER_CHAT`).
        tokenizer: the tokenizer prompts are rendered with (``None`` only for a server used through
            :meth:`generate_chat`).
    """

    kind: str = "abstract"
    capabilities: frozenset[str] = frozenset()
    tokenizer: Any = None

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

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int]) -> torch.Tensor:
        """``(len(prompts), len(candidates))`` log-probabilities of each candidate as the next token (float32)."""
        cands = [int(c) for c in candidates]
        pairs = [(list(p), [c]) for p in prompts for c in cands]
        values = self.token_logprobs([p for p, _ in pairs], [c for _, c in pairs], group=len(cands))
        out = torch.stack([v[0] for v in values]) if values else torch.empty(0)
        return out.view(len(prompts), len(cands)).float()

    def tree_logprobs(self, trees: Sequence[Any]) -> list[list[torch.Tensor]]:
        """Token trees scored in one pass each (capability :data:`TREE_LOGPROBS`)."""
        raise NotImplementedError(f"the {self.kind} backend has no {TREE_LOGPROBS}")

    def generate_chat(self, conversations: Sequence[list[dict[str, str]]], decoding: Decoding,
                      seeds: Sequence[int]) -> list[str]:
        """Replies to chat conversations rendered by the server (capability :data:`SERVER_CHAT`)."""
        raise NotImplementedError(f"the {self.kind} backend has no {SERVER_CHAT}")


def reject_options(kind: str, given: dict[str, Any], applicable: Sequence[str]) -> None:
    """Options given for a backend they do not apply to are an error naming each, never silently ignored."""
    wrong = sorted(k for k, v in given.items() if v is not None and k not in applicable)
    if wrong:
        raise ValueError(f"{', '.join(wrong)}: not an option of the {kind} backend (it takes "
                         f"{', '.join(sorted(applicable))}); leave {'it' if len(wrong) == 1 else 'them'} out")
