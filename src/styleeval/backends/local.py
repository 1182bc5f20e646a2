"""The local backend: a transformers causal LM, the one :class:`~styleeval.engine.ScoringEngine` for every
log-probability, and batched generation (:mod:`styleeval.generation`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    PREFIX_REUSE,
    TREE_LOGPROBS,
    Backend,
    Decoding,
    Identity,
    reject_options,
)

DEFAULT_BATCH_TOKENS_CPU = 512
"""Token budget of one forward pass on a CPU (measured fastest on this project's 2-core machine)."""
DEFAULT_BATCH_TOKENS_GPU = 16384
HEAD_DTYPES = ("float32", "bfloat16", "float16")

OPTIONS = ("tokenizer", "device", "dtype", "revision", "trust_remote_code", "batch_tokens", "max_batch_rows",
           "head_dtype", "reuse_prefix", "pack_prompts", "share_prompts", "batch_size", "progress")
"""What :class:`LocalBackend` takes besides the model."""


class LocalBackend(Backend):
    """A causal LM loaded here (a preset, Hub id, local path or model object).

    Args:
        model: what :func:`styleeval.models.load_model` takes.
        tokenizer, device, dtype, revision, trust_remote_code: as for :func:`~styleeval.models.load_model`.
        batch_tokens: token budget of one forward pass (default 512 on CPU, 16384 on a GPU).
        max_batch_rows, reuse_prefix, pack_prompts, share_prompts: :class:`~styleeval.engine.ScoringEngine` options.
        head_dtype: ``"float32"`` (default) or ``"bfloat16"``/``"float16"``: the LM head and softmax rounded to it.
        batch_size: prompts per ``generate`` call.
        progress: progress bars.
    """

    kind = "local"
    capabilities = frozenset({TREE_LOGPROBS, CANDIDATE_LOGPROBS, PREFIX_REUSE})

    def __init__(self, model: Any, tokenizer: Any = None, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None, revision: str | None = None, trust_remote_code: bool = False,
                 batch_tokens: int | None = None, max_batch_rows: int | None = None, head_dtype: str | None = None,
                 reuse_prefix: bool = True, pack_prompts: bool = True, share_prompts: bool = False,
                 batch_size: int | None = None, progress: bool = True) -> None:
        from styleeval.engine import ScoringEngine
        from styleeval.models import DEFAULT_MODEL, load_model, resolve_device, resolve_dtype

        head_name = str(head_dtype or "float32").removeprefix("torch.")
        if head_name not in HEAD_DTYPES:
            raise ValueError(f"head_dtype must be one of {', '.join(HEAD_DTYPES)}, got {head_dtype!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype or "float32")
        self.model, self.tokenizer, self.model_name, self.revision = load_model(
            DEFAULT_MODEL if model is None else model, tokenizer, self.device, self.dtype, revision,
            bool(trust_remote_code),
        )
        if batch_tokens is None:
            batch_tokens = DEFAULT_BATCH_TOKENS_CPU if self.device.type == "cpu" else DEFAULT_BATCH_TOKENS_GPU
        self.head_dtype = head_name
        self.batch_size = int(batch_size or 16)
        self.progress = progress
        self.engine = ScoringEngine(
            self.model, batch_tokens=batch_tokens, max_batch_rows=max_batch_rows, reuse_prefix=reuse_prefix,
            share_prompts=share_prompts, head_dtype=None if head_name == "float32" else resolve_dtype(head_name),
            pack_prompts=pack_prompts, progress=progress,
        )

    @classmethod
    def from_options(cls, model: Any, options: dict[str, Any]) -> LocalBackend:
        """A local backend from keyword options; an option of another backend is an error naming it."""
        reject_options("local", options, OPTIONS)
        return cls(model, **{k: v for k, v in options.items() if v is not None})

    @property
    def identity(self) -> Identity:
        return Identity(self.model_name, self.revision, str(self.dtype).removeprefix("torch."), self.kind,
                        self.head_dtype)

    @property
    def max_length(self) -> int | None:
        return getattr(self.model.config, "max_position_embeddings", None)

    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        return self.engine.token_logprobs(prompts, continuations)

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int]) -> torch.Tensor:
        return self.engine.candidate_logprobs(prompts, candidates)

    def tree_logprobs(self, trees: Sequence[Any]) -> list[list[torch.Tensor]]:
        return self.engine.tree_logprobs(trees)

    def generate(self, prompts: Sequence[Sequence[int]], decoding: Decoding, seeds: Sequence[int],
                 stop_ids: Sequence[int] = ()) -> list[str]:
        from styleeval.generation import generate_replies

        return generate_replies(
            self.model, self.tokenizer, prompts, max_new_tokens=decoding.max_new_tokens,
            do_sample=decoding.do_sample, temperature=decoding.temperature, top_p=decoding.top_p, seeds=seeds,
            batch_size=self.batch_size, stop_ids=stop_ids, progress=self.progress,
        )
