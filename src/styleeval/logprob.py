"""LogProb: content preservation and style strength from a chat LLM's token probabilities.

Pauli, Augenstein & Assent (2025), "Mind the Style Gap", section 4. For a source X, a rewrite
X~ = x~_1..x~_n and a target style S, the rewrite is scored after three contexts (system prompt + one user
instruction, :mod:`styleeval.chat`): rewrite to style S (t_s), paraphrase (t_pa), repeat (t_r). With
p_i^t the probability of rewrite token i after context t and the preceding rewrite tokens:

    content C = 1/n sum_i log max(p_i^ts, p_i^tpa, p_i^tr)            (equation 1)
    style   S = 1/n sum_i (p_i^ts - max(p_i^tpa, p_i^tr))             (equation 2, probabilities)

Every rewrite token is scored, the first one included, followed by the template's end-of-turn token
(``end_of_turn=False`` drops it). ``variant="authors"`` is the authors' ``LogProp.py`` procedure instead: their
hand-written Llama 3 prompt, the first rewrite token as context (not scored), then every later token and the
end-of-turn token scored (see the README's table "ours vs the authors'").

The log-probabilities come from either backend through one call, ``token_logprobs(prompts, continuations)``:
the local :class:`~styleeval.engine.ScoringEngine` or an OpenAI-compatible server
(:class:`~styleeval.server.ServerClient`, vLLM's prompt log-probabilities). Tokenization is local in both.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from styleeval import __version__
from styleeval.chat import CONTEXTS, AuthorsFormat, ChatFormat, user_message
from styleeval.engine import ScoringEngine
from styleeval.models import DEFAULT_MODEL, PRESETS, load_model, resolve_device, resolve_dtype
from styleeval.signature import format_signature
from styleeval.validation import broadcast_texts, check_texts

DEFAULT_BATCH_TOKENS_CPU = 512
DEFAULT_BATCH_TOKENS_GPU = 16384
PIPELINE_ROWS = 256
VARIANTS = ("default", "authors")
HEAD_DTYPES = ("float32", "bfloat16", "float16")


def logprob_equations(
    style: torch.Tensor, paraphrase: torch.Tensor, repeat: torch.Tensor
) -> tuple[float, float]:
    """Content preservation (eq. 1) and style strength (eq. 2) from per-token log-probabilities.

    The three tensors hold log p_i under the style, paraphrase and repeat contexts, one entry per scored
    token. Returns ``(nan, nan)`` when no token is scored.
    """
    if style.numel() == 0:
        return math.nan, math.nan
    style, paraphrase, repeat = style.double(), paraphrase.double(), repeat.double()
    best_log = torch.maximum(torch.maximum(style, paraphrase), repeat)  # log max p = max log p
    content = best_log.mean()
    strength = (style.exp() - torch.maximum(paraphrase, repeat).exp()).mean()
    return float(content), float(strength)


class LogProbScores(list):
    """Per-row LogProb results (dicts with ``content`` and ``style``) in input order, with a ``signature``."""

    def __init__(self, rows: Sequence[dict[str, Any]], signature: str) -> None:
        super().__init__(rows)
        self.signature = signature

    @property
    def content(self) -> list[float]:
        """The content-preservation score of every row."""
        return [row["content"] for row in self]

    @property
    def style(self) -> list[float]:
        """The style-strength score of every row."""
        return [row["style"] for row in self]

    def __repr__(self) -> str:
        return f"LogProbScores({len(self)} rows, signature={self.signature!r})"


class LogProb:
    """The LogProb metric with a causal chat LLM, run locally or on an OpenAI-compatible server.

    Args:
        model: a preset (``"1b"``, ``"3b"``, ``"8b"``: the paper's Llama 3.x Instruct models), a Hub id, a
            local path, or a loaded ``*ForCausalLM`` object. Default: ``meta-llama/Llama-3.2-1B-Instruct``.
            With ``base_url``: the served model name (``None``: the only model the server lists).
        tokenizer: the tokenizer (object, id or path); loaded from the model id when omitted.
        variant: ``"default"`` (chat template of the tokenizer, every rewrite token scored) or ``"authors"`` (the
            authors' ``LogProp.py``: hand-written Llama 3 prompt, first rewrite token not scored; needs a Llama 3
            tokenizer).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``; ``None`` picks CUDA when available.
        dtype: ``"float32"`` (default), ``"bfloat16"`` or ``"float16"``.
        head_dtype: precision of the LM head and softmax: ``"float32"`` (default, whatever ``dtype``) or
            ``"bfloat16"``/``"float16"`` (logits and probabilities rounded to it, as in the authors' script: with
            ``dtype="bfloat16"`` it reproduces their numbers).
        batch_tokens: token budget of one forward pass (rows x padded length). Default: 512 on CPU (measured
            fastest on a 2-core CPU), 16384 on a GPU.
        max_batch_rows: at most this many sequences per forward pass.
        end_of_turn: score the template's end-of-turn token after each rewrite (``variant="authors"`` always does).
        chat_template: a Jinja chat template, for models whose tokenizer has none.
        on_overflow: ``"error"`` (default) or ``"skip"``: a row longer than the model's context gets NaN
            scores and a warning.
        revision: model revision (branch, tag or commit) for Hub ids.
        trust_remote_code: allow model code from the Hub (off by default).
        reuse_prefix: reuse the KV cache of the shared system prompt (exact; off only for testing).
        pack_prompts: run each distinct (context, source, style) prompt once, with all its rewrites packed after it
            as branches of a token tree (exact; fewer tokens when sources have several rewrites; off for testing).
        base_url: an OpenAI-compatible server that returns prompt log-probabilities (vLLM:
            ``http://host:port/v1``) instead of a local model; prompts are tokenized here and sent as token ids.
        api_key, max_concurrency, timeout, max_retries: server client settings
            (:class:`styleeval.server.ServerClient`).
        progress: show a progress bar.
        pipeline_rows: rows are scored in pieces of about this many (a source's rewrites never split), the next
            piece tokenized while the current one is scored; results do not depend on it.
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        variant: str = "default",
        device: str | torch.device | None = None,
        dtype: str | torch.dtype = "float32",
        head_dtype: str = "float32",
        batch_tokens: int | None = None,
        max_batch_rows: int | None = None,
        end_of_turn: bool = True,
        chat_template: str | None = None,
        on_overflow: str = "error",
        revision: str | None = None,
        trust_remote_code: bool = False,
        reuse_prefix: bool = True,
        pack_prompts: bool = True,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 5,
        progress: bool = True,
        pipeline_rows: int = PIPELINE_ROWS,
    ) -> None:
        if on_overflow not in ("error", "skip"):
            raise ValueError(f"on_overflow must be 'error' or 'skip', got {on_overflow!r}")
        if pipeline_rows < 1:
            raise ValueError(f"pipeline_rows must be positive, got {pipeline_rows}")
        self.pipeline_rows = int(pipeline_rows)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(map(repr, VARIANTS))}, got {variant!r}")
        head_name = str(head_dtype).removeprefix("torch.")
        if head_name not in HEAD_DTYPES:
            raise ValueError(f"head_dtype must be one of {', '.join(HEAD_DTYPES)}, got {head_dtype!r}")
        if variant == "authors" and not end_of_turn:
            raise ValueError("end_of_turn=False: the authors' variant always scores the end-of-turn token")
        self.variant = variant
        self.head_dtype = head_name
        self.on_overflow = on_overflow
        self.client = None
        if base_url is not None:
            from styleeval.models import load_tokenizer
            from styleeval.server import ServerClient

            if head_name != "float32":
                raise ValueError("head_dtype: a server computes its own log-probabilities; only 'float32' applies")
            served = None if model is None else PRESETS.get(str(model).lower(), str(model))
            self.client = ServerClient(base_url, model=served, api_key=api_key,
                                       max_concurrency=max_concurrency, timeout=timeout, max_retries=max_retries,
                                       progress=progress)
            self.model, self.device, self.dtype = None, None, None
            self.model_name, self.revision = self.client.model, "server"
            self.tokenizer = load_tokenizer(tokenizer if tokenizer is not None else self.model_name, revision)
            self.engine = None
            self.backend: Any = self.client  # one request per row: its three contexts
            self._backend_options: dict[str, Any] = {"per_request": len(CONTEXTS)}
            self.max_length = self.client.max_model_len()
        else:
            self.device = resolve_device(device)
            self.dtype = resolve_dtype(dtype)
            self.model, self.tokenizer, self.model_name, self.revision = load_model(
                DEFAULT_MODEL if model is None else model, tokenizer, self.device, self.dtype, revision, trust_remote_code
            )
            if batch_tokens is None:
                batch_tokens = DEFAULT_BATCH_TOKENS_CPU if self.device.type == "cpu" else DEFAULT_BATCH_TOKENS_GPU
            self.backend = self.engine = ScoringEngine(
                self.model, batch_tokens=batch_tokens, max_batch_rows=max_batch_rows, reuse_prefix=reuse_prefix,
                head_dtype=None if head_name == "float32" else resolve_dtype(head_name), pack_prompts=pack_prompts,
                progress=progress,
            )
            self._backend_options = {}
            self.max_length = getattr(self.model.config, "max_position_embeddings", None)
        if variant == "authors":
            self.chat: ChatFormat | AuthorsFormat = AuthorsFormat(self.tokenizer)
        else:
            self.chat = ChatFormat(self.tokenizer, chat_template=chat_template, end_of_turn=end_of_turn)

    @property
    def signature(self) -> str:
        """Everything that determines a score: model and revision, variant, dtype, head precision, template,
        end-of-turn, whether the first rewrite token is scored, backend, version."""
        return format_signature(
            "logprob",
            {
                "model": f"{self.model_name}@{self.revision}",
                "variant": self.variant,
                "dtype": "server" if self.dtype is None else str(self.dtype).removeprefix("torch."),
                "head": self.head_dtype,
                "tmpl": self.chat.template_hash,
                "eot": self.chat.end_of_turn,
                "first": self.variant != "authors",
                "backend": "server" if self.client is not None else "local",
                "version": __version__,
            },
        )

    def score(
        self,
        sources: Sequence[str],
        rewrites: Sequence[str],
        styles: Sequence[str] | str,
        return_tokens: bool = False,
    ) -> LogProbScores:
        """Score rewrites of sources towards target styles.

        Args:
            sources: the original texts.
            rewrites: the rewritten texts (an empty rewrite scores only the end-of-turn token).
            styles: the target style of each row (e.g. ``"polite"``), or one string for all rows.
            return_tokens: add a ``tokens`` list per row: for every scored token its text and its
                log-probability under each context (keys ``style``, ``paraphrase``, ``repeat``).

        Returns:
            :class:`LogProbScores`: one dict per row, in input order, with ``content`` (mean log of the best
            of the three probabilities, <= 0) and ``style`` (mean probability gain of the style instruction,
            in [-1, 1]).
        """
        sources = check_texts("sources", sources)
        n = len(sources)
        rewrites = check_texts("rewrites", rewrites, n)
        styles = broadcast_texts("styles", styles, n, allow_empty=False)
        if n == 0:
            return LogProbScores([], self.signature)

        order = sorted(range(n), key=lambda i: (sources[i], styles[i]))  # a source's rewrites side by side
        pieces = _pieces(order, [(sources[i], styles[i]) for i in range(n)], self.pipeline_rows)
        per_row: dict[int, tuple[list[int], list[torch.Tensor] | None]] = {}  # row -> (targets, 3 log-prob tensors)
        empty = False
        # the next piece is tokenized in a background thread while this one is scored (the tokenizer releases the
        # GIL; it is used by one thread at a time: decoding for return_tokens waits until every piece is done)
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(self._encode, pieces[0], sources, rewrites, styles)
            for k in range(len(pieces)):
                rows_k, prompts, targets = future.result()
                if k + 1 < len(pieces):
                    future = pool.submit(self._encode, pieces[k + 1], sources, rewrites, styles)
                skipped = self._check_lengths(prompts, targets, rows_k)
                live = [j for j, i in enumerate(rows_k) if i not in skipped]
                flat_prompts = [prompts[ctx][j] for j in live for ctx in CONTEXTS]  # row-major: one request per row
                flat_targets = [targets[j] for j in live for _ in CONTEXTS]
                flat = self.backend.token_logprobs(flat_prompts, flat_targets, **self._backend_options) if live else []
                c = len(CONTEXTS)
                for r, j in enumerate(live):
                    per_row[rows_k[j]] = (targets[j], flat[r * c : r * c + c])
                    empty = empty or len(targets[j]) == 0
                for j, i in enumerate(rows_k):
                    if i in skipped:
                        per_row[i] = (targets[j], None)
        if empty:
            warnings.warn("some rewrites have no scored token (an empty rewrite: with end_of_turn=False, or in the "
                          "authors' variant, whose first token is context): NaN", stacklevel=2)
        rows = []
        for i in range(n):
            target, lp = per_row[i]
            if lp is None:
                row: dict[str, Any] = {"content": math.nan, "style": math.nan}
                if return_tokens:
                    row["tokens"] = []
                rows.append(row)
                continue
            content, strength = logprob_equations(*lp)
            row = {"content": content, "style": strength}
            if return_tokens:
                row["tokens"] = [
                    {"token": self.tokenizer.decode([tok]), **{ctx: float(lp[k][j]) for k, ctx in enumerate(CONTEXTS)}}
                    for j, tok in enumerate(target)
                ]
            rows.append(row)
        return LogProbScores(rows, self.signature)

    def _encode(self, rows: list[int], sources: Sequence[str], rewrites: Sequence[str], styles: Sequence[str]
                ) -> tuple[list[int], dict[str, list[list[int]]], list[list[int]]]:
        """(rows, prompt ids per context, scored ids) of the given rows."""
        rewrite_ids = self.chat.rewrite_ids([rewrites[i] for i in rows])
        prompts = {ctx: self.chat.prompt_ids([user_message(ctx, sources[i], styles[i]) for i in rows])
                   for ctx in CONTEXTS}
        if self.variant == "authors":  # the first rewrite token is context, not scored
            prompts = {ctx: [p + t[:1] for p, t in zip(ids, rewrite_ids)] for ctx, ids in prompts.items()}
            return rows, prompts, [t[1:] for t in rewrite_ids]
        return rows, prompts, rewrite_ids

    def _check_lengths(self, prompts: dict[str, list[list[int]]], targets: list[list[int]], rows: list[int]
                       ) -> set[int]:
        """The rows (caller's numbering) longer than the model's context: an error, or skipped with a warning."""
        if not self.max_length:
            return set()
        skipped = set()
        for j, target in enumerate(targets):
            i = rows[j]
            longest = max(len(prompts[ctx][j]) for ctx in CONTEXTS) + len(target)
            if longest > self.max_length:
                if self.on_overflow == "error":
                    raise ValueError(
                        f"row {i}: prompt + rewrite is {longest} tokens, longer than the model's context of "
                        f"{self.max_length}; shorten it or pass on_overflow='skip'"
                    )
                skipped.add(i)
        if skipped:
            warnings.warn(
                f"{len(skipped)} rows longer than the model's context of {self.max_length} tokens were skipped "
                f"(NaN scores): rows {sorted(skipped)[:10]}",
                stacklevel=4,
            )
        return skipped


def _pieces(order: list[int], keys: Sequence[Any], size: int) -> list[list[int]]:
    """``order`` cut into pieces of about ``size`` rows, never between two rows of the same key (a prompt's
    rewrites stay in one piece, so the engine still runs that prompt once)."""
    pieces, current = [], []
    for i in order:
        if len(current) >= size and keys[i] != keys[current[-1]]:
            pieces.append(current)
            current = []
        current.append(i)
    pieces.append(current)
    return pieces


_SHARED: dict[tuple, LogProb] = {}


def shared_logprob(
    model: str | None = DEFAULT_MODEL,
    device: str | None = None,
    dtype: str = "float32",
    revision: str | None = None,
    base_url: str | None = None,
    **options: Any,
) -> LogProb:
    """A :class:`LogProb` whose weights are loaded once per process per (model, device, dtype, revision); a local
    folder's revision is its fingerprint, so weights replaced in place are loaded again.

    Other ``options`` (``variant``, ``head_dtype``, ``batch_tokens``, ``max_batch_rows``, ``end_of_turn``...) give
    cheap views that share the loaded model. With ``base_url`` (a server) one client per (model, URL, options).
    Used by the ``evaluate`` module and the meta-evaluation so that repeated calls do not reload weights.
    """
    from styleeval.models import model_revision_key

    if base_url is not None:
        key: tuple = ("server", model, base_url, revision, *sorted(options.items()))
        if key not in _SHARED:
            _SHARED[key] = LogProb(model, base_url=base_url, revision=revision, progress=False, **options)
        return _SHARED[key]
    model = DEFAULT_MODEL if model is None else model
    base_key = (model, device, str(dtype), model_revision_key(model, revision))
    key = (*base_key, *sorted(options.items()))
    if key not in _SHARED:
        base = _SHARED.get(base_key)
        if base is None:
            _SHARED[base_key] = base = LogProb(model, device=device, dtype=dtype, revision=revision, progress=False)
        _SHARED[key] = LogProb(
            base.model, tokenizer=base.tokenizer, device=base.device, dtype=base.dtype,
            revision=base.revision, progress=False, **options,
        )
    return _SHARED[key]
