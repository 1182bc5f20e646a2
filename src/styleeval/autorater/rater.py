"""LLM-as-autorater: an instruct LLM rates meaning preservation and style on a 1-5 scale.

Two modes, each with a local (Hugging Face) or a server (OpenAI-compatible) backend:

``paper``
    The authors' judge (Pauli et al. 2025, appendix D.2): the prompt of :mod:`styleeval.autorater.prompts`, a
    generated reply, ratings read by a parser (:mod:`styleeval.autorater.parsing`). A row whose rating cannot be
    read gets the mean of the readable rows of the same call (the authors' fallback), per dimension, and
    ``parsed=False``.

``expected``
    A judge that cannot break format: the reply scaffold ``{"meaning": `` is teacher-forced after the same
    prompt and the model's probabilities of the rating tokens ``1``..``5`` at that position are read and
    renormalised over the five; the meaning rating is their expectation. The most probable meaning rating and
    ``, "style": `` are then appended and the style distribution is read the same way. Deterministic, every row
    parsed, batched and prefix-shared through the scoring engine (:meth:`ScoringEngine.candidate_logprobs`).

How the scaffold is tokenized: the assistant text (``{"meaning": 3, "style": `` ...) is tokenized on its own and
appended to the prompt ids; the rating tokens are where the encodings of ``<scaffold>1`` .. ``<scaffold>5`` part
(for Llama 3 the digits ``1``..``5``; for a tokenizer that glues the space to a digit, `` 1``..`` 5``).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from styleeval import __version__
from styleeval.autorater.parsing import get_parser
from styleeval.autorater.prompts import JudgePrompt, get_prompt
from styleeval.signature import format_signature
from styleeval.validation import broadcast_texts, check_texts

_CONTROL_LIKE = re.compile(r"<\|[A-Za-z_]+\|>|<\|im_(start|end)\|>")

MODES = ("paper", "expected")
RATINGS = ("1", "2", "3", "4", "5")
MEANING_SCAFFOLD = '{"meaning": '
STYLE_SCAFFOLD = ', "style": '


class AutoraterResults(list):
    """Per-row autorater results in input order, with the run's ``signature`` and ``compliance_rate``.

    Each row is a dict with ``meaning``, ``style`` (floats), ``parsed`` (bool) and, in paper mode, ``reply`` (the
    raw text), in expected mode ``meaning_probs`` and ``style_probs`` (the five renormalised probabilities of
    ratings 1..5).
    """

    def __init__(self, rows: Sequence[dict[str, Any]], signature: str) -> None:
        super().__init__(rows)
        self.signature = signature

    @property
    def meaning(self) -> list[float]:
        """The meaning-preservation rating of every row."""
        return [row["meaning"] for row in self]

    @property
    def style(self) -> list[float]:
        """The style rating of every row."""
        return [row["style"] for row in self]

    @property
    def compliance_rate(self) -> float:
        """Share of rows whose ratings were read from the reply (1.0 in expected mode; NaN for no rows)."""
        return sum(bool(r["parsed"]) for r in self) / len(self) if self else math.nan

    def __repr__(self) -> str:
        return f"AutoraterResults({len(self)} rows, compliance={self.compliance_rate:.3f}, signature={self.signature!r})"


def expectation(probs: torch.Tensor) -> torch.Tensor:
    """The expected rating sum_k k p_k of (..., 5) probabilities over ratings 1..5."""
    return (probs.double() * torch.arange(1, 6, dtype=torch.float64)).sum(-1)


class Autorater:
    """An instruct LLM as a 1-5 judge of meaning preservation and style (see the module docstring).

    Args:
        model: a preset (``"1b"``, ``"3b"``, ``"8b"``), a Hub id, a local path or a model object (local backend);
            with ``base_url``, the served model name (``None``: the only model the server lists).
        tokenizer: the tokenizer (object, id or path); loaded from ``model`` when omitted. The server backend needs
            it in expected mode; in paper mode, giving it makes the prompts be rendered and tokenized here and sent
            as token ids to ``/completions`` (user text that looks like control tokens stays text, and the reply
            equals the local backend's); without it the server renders the chat itself (``/chat/completions``).
        mode: ``"expected"`` (default: deterministic, never breaks format) or ``"paper"`` (the authors' judge).
        prompt: ``"paper-small"`` (default; the authors' 1B/3B/8B prompt) or ``"paper-70b"``.
        parser: ``"robust"`` (default) or ``"authors"`` (paper mode).
        base_url: an OpenAI-compatible server (``http://host:port/v1``) instead of a local model.
        device, dtype, revision, trust_remote_code: as for :class:`styleeval.LogProb` (local backend).
        seed: sampling seed (``paper-70b``), sent to servers as ``seed``.
        max_new_tokens: override the prompt's reply length (paper mode).
        batch_size: prompts per ``generate`` call (paper mode, local).
        batch_tokens: token budget of one forward pass (expected mode, local).
        chat_template: a Jinja chat template for tokenizers without one.
        api_key, max_concurrency, timeout, max_retries: server client settings (:class:`styleeval.server.ServerClient`).
        extra_body: extra request fields for the server (e.g. vLLM's
            ``{"chat_template_kwargs": {"date_string": "26 Jul 2024"}}``, which the local backend pins).
        progress: show progress bars.
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        mode: str = "expected",
        prompt: str = "paper-small",
        parser: str = "robust",
        base_url: str | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype = "float32",
        seed: int = 0,
        max_new_tokens: int | None = None,
        batch_size: int = 16,
        batch_tokens: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 5,
        extra_body: dict[str, Any] | None = None,
        progress: bool = True,
    ) -> None:
        from styleeval.models import DEFAULT_MODEL

        if mode not in MODES:
            raise ValueError(f"mode: unknown mode {mode!r}; choose 'expected' or 'paper'")
        self.mode = mode
        self.prompt: JudgePrompt = get_prompt(prompt)
        self.parser_name = parser
        self.parse = get_parser(parser)
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be positive, got {max_new_tokens}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.decoding = self.prompt.decoding
        if max_new_tokens is not None:
            from dataclasses import replace

            self.decoding = replace(self.decoding, max_new_tokens=int(max_new_tokens))
        self.seed = int(seed)
        self.batch_size = int(batch_size)
        self.progress = progress
        self.extra_body = dict(extra_body or {})
        self.base_url = base_url
        self.model = self.tokenizer = self.chat = self.engine = self.client = None
        if base_url is not None:
            from styleeval.server import ServerClient

            self.client = ServerClient(base_url, model=None if model is None else str(model), api_key=api_key,
                                       max_concurrency=max_concurrency, timeout=timeout, max_retries=max_retries,
                                       progress=progress)
            self.model_name, self.revision, self.dtype = self.client.model, "server", None
            if mode == "expected" or tokenizer is not None:
                from transformers import AutoTokenizer

                if tokenizer is None or isinstance(tokenizer, str):
                    name = tokenizer or (str(model) if model is not None else self.client.model)
                    try:
                        tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
                    except OSError as err:
                        raise ValueError(
                            f"tokenizer: expected mode on a server renders prompts locally and needs the model's "
                            f"tokenizer; could not load {name!r} ({err}); pass tokenizer=<id or path>"
                        ) from err
                self._set_tokenizer(tokenizer, chat_template)
        else:
            from styleeval.engine import ScoringEngine
            from styleeval.logprob import DEFAULT_BATCH_TOKENS_CPU, DEFAULT_BATCH_TOKENS_GPU
            from styleeval.models import load_model, resolve_device, resolve_dtype

            self.device = resolve_device(device)
            self.dtype = resolve_dtype(dtype)
            self.model, tokenizer, self.model_name, self.revision = load_model(
                DEFAULT_MODEL if model is None else model, tokenizer, self.device, self.dtype, revision,
                trust_remote_code,
            )
            self._set_tokenizer(tokenizer, chat_template)
            if batch_tokens is None:
                batch_tokens = DEFAULT_BATCH_TOKENS_CPU if self.device.type == "cpu" else DEFAULT_BATCH_TOKENS_GPU
            self.engine = ScoringEngine(self.model, batch_tokens=batch_tokens, share_prompts=True, progress=progress)

    def _set_tokenizer(self, tokenizer: Any, chat_template: str | None) -> None:
        from styleeval.chat import ChatFormat

        self.tokenizer = tokenizer
        self._tree_cache: Any = False  # built on first use by _scaffold_tree
        self.chat = ChatFormat(tokenizer, chat_template=chat_template, end_of_turn=False)
        try:  # the template's end-of-turn token ends a generated reply
            self._end_of_turn_id = ChatFormat(tokenizer, chat_template=self.chat.template).end_of_turn_id
        except ValueError:
            self._end_of_turn_id = None

    # -- signature ----------------------------------------------------------------------------------------
    @property
    def backend(self) -> str:
        """``"local"`` or ``"server"``."""
        return "server" if self.client is not None else "local"

    @property
    def signature(self) -> str:
        """Everything that determines a rating: model@revision, mode, prompt, parser, decoding, dtype, backend."""
        fields: dict[str, object] = {
            "model": f"{self.model_name}@{self.revision}",
            "mode": self.mode,
            "prompt": self.prompt.name,
            "parser": self.parser_name if self.mode == "paper" else "none",
            "decoding": self.decoding.tag(self.seed) if self.mode == "paper" else "scaffold",
            "dtype": str(self.dtype).removeprefix("torch.") if self.dtype is not None else "server",
        }
        if self.chat is not None:
            fields["tmpl"] = self.chat.template_hash
        fields.update(backend=self.backend, version=__version__)
        return format_signature("autorater", fields)

    # -- rating -------------------------------------------------------------------------------------------
    def rate(
        self,
        sources: Sequence[str],
        rewrites: Sequence[str],
        styles: Sequence[str] | str,
        fallback: str | None = "mean",
    ) -> AutoraterResults:
        """Rate each rewrite of a source towards a target style.

        Args:
            sources: the original texts.
            rewrites: the rewritten texts.
            styles: the target style of each row (e.g. ``"polite"``), or one string for all rows.
            fallback: paper mode: ``"mean"`` gives a rating that could not be read the mean of the readable
                ratings of this call (the authors' rule; NaN if none is readable); ``None`` leaves it NaN.

        Returns:
            :class:`AutoraterResults`, one dict per row in input order (see its docstring).
        """
        if fallback not in ("mean", None):
            raise ValueError(f"fallback must be 'mean' or None, got {fallback!r}")
        sources = check_texts("sources", sources)
        n = len(sources)
        rewrites = check_texts("rewrites", rewrites, n)
        styles = broadcast_texts("styles", styles, n, allow_empty=False)
        if n == 0:
            return AutoraterResults([], self.signature)
        conversations = [self.prompt.messages(s, r, st) for s, r, st in zip(sources, rewrites, styles)]
        rows = self._rate_expected(conversations) if self.mode == "expected" else self._rate_paper(conversations)
        if self.mode == "paper" and fallback == "mean":
            _fill_with_mean(rows)
        return AutoraterResults(rows, self.signature)

    # paper mode
    def _rate_paper(self, conversations: list[list[dict[str, str]]]) -> list[dict[str, Any]]:
        decoding = self.decoding
        if self.client is not None:
            params: dict[str, Any] = {"max_tokens": decoding.max_new_tokens}
            if decoding.do_sample:
                params.update(temperature=decoding.temperature, top_p=decoding.top_p, seed=self.seed)
            else:
                params.update(temperature=0.0)
            if self.chat is not None:  # rendered and tokenized here: user text stays text, as locally
                prompts = self.chat.conversation_ids(conversations)
                replies = self.client.complete(prompts, stop_token_ids=self._stop_ids(), **params)
            else:
                if any(_CONTROL_LIKE.search(m["content"]) for conv in conversations for m in conv):
                    warnings.warn("some texts look like chat control tokens and the server renders the chat itself; "
                                  "pass tokenizer=... so that prompts are tokenized locally and stay text",
                                  stacklevel=3)
                if self.extra_body:
                    params["extra_body"] = self.extra_body
                replies = self.client.chat(conversations, **params)
        else:
            from styleeval.generation import generate_replies

            prompts = self.chat.conversation_ids(conversations)
            self._check_context(prompts, decoding.max_new_tokens)
            replies = generate_replies(
                self.model, self.tokenizer, prompts, max_new_tokens=decoding.max_new_tokens,
                do_sample=decoding.do_sample, temperature=decoding.temperature, top_p=decoding.top_p,
                seed=self.seed, batch_size=self.batch_size, stop_ids=self._stop_ids(), progress=self.progress,
            )
        rows = []
        for reply in replies:
            meaning, style = self.parse(reply)
            rows.append({
                "meaning": math.nan if meaning is None else float(meaning),
                "style": math.nan if style is None else float(style),
                "parsed": meaning is not None and style is not None,
                "meaning_parsed": meaning is not None,
                "style_parsed": style is not None,
                "reply": reply,
            })
        return rows

    def _stop_ids(self) -> list[int]:
        return [self._end_of_turn_id] if self._end_of_turn_id is not None else []

    # expected mode
    def _scaffold(self, text: str) -> tuple[list[int], list[list[int]]]:
        """Token ids of ``text`` up to where the encodings of ``text + "1"`` .. ``text + "5"`` part, and the five
        rating tails after it (one token each for Llama 3; a tokenizer may glue the space to some digits)."""
        from styleeval.engine import common_prefix_length

        encoded = [self.tokenizer(text + r, add_special_tokens=False)["input_ids"] for r in RATINGS]
        shared = common_prefix_length(encoded)
        tails = [list(e[shared:]) for e in encoded]
        if any(not t for t in tails):
            raise ValueError(f"expected mode: the tokenizer cannot tell the ratings 1-5 apart after {text!r}")
        return list(encoded[0][:shared]), tails

    def _scaffold_tree(self) -> tuple[list[int], list, list, list[list], list[list[list]]] | None:
        """The reply scaffold of every row as one token tree (see :class:`styleeval.engine.TokenTree`): after the
        shared ``{"meaning": `` ids, the five meaning ratings (a trie over their tokens), each followed by
        ``, "style": `` and the five style ratings. Returns ``(shared ids, nodes, reads, meaning paths, style
        paths)``, a path being the (read, candidate) pairs whose log-probabilities add up to one rating; ``None``
        when the tokenizer does not extend the scaffold token by token (then two passes are used)."""
        if self._tree_cache is not False:
            return self._tree_cache
        shared, meaning_tails = self._scaffold(MEANING_SCAFFOLD)
        nodes: list[tuple[int, int]] = []
        reads: list[tuple[int, list[int]]] = []
        read_at: dict[int, int] = {}
        children: dict[tuple[int, int], int] = {}

        def add_path(root: int, tokens: list[int], scored: bool, last_node: bool) -> tuple[list, int]:
            pos, path = root, []
            for k, tok in enumerate(tokens):
                if scored:
                    if pos not in read_at:
                        read_at[pos] = len(reads)
                        reads.append((pos, []))
                    cands = reads[read_at[pos]][1]
                    if tok not in cands:
                        cands.append(tok)
                    path.append((read_at[pos], cands.index(tok)))
                if k == len(tokens) - 1 and not last_node:
                    break
                if (pos, tok) not in children:
                    children[(pos, tok)] = len(nodes)
                    nodes.append((tok, pos))
                pos = children[(pos, tok)]
            return path, pos

        meaning_paths, style_paths = [], []
        for k, tail in enumerate(meaning_tails):
            path, end = add_path(-1, tail, scored=True, last_node=True)
            meaning_paths.append(path)
            style_shared, style_tails = self._scaffold(MEANING_SCAFFOLD + RATINGS[k] + STYLE_SCAFFOLD)
            head = shared + tail
            if style_shared[: len(head)] != head:
                self._tree_cache = None
                return None
            _, end = add_path(end, style_shared[len(head):], scored=False, last_node=True)
            style_paths.append([add_path(end, t, scored=True, last_node=False)[0] for t in style_tails])
        self._tree_cache = (shared, nodes, reads, meaning_paths, style_paths)
        return self._tree_cache

    def _rate_expected(self, conversations: list[list[dict[str, str]]]) -> list[dict[str, Any]]:
        prompts = self.chat.conversation_ids(conversations)
        self._check_context(prompts, 64)
        tree = self._scaffold_tree() if self.engine is not None else None
        if tree is not None:  # one forward pass per row: the meaning and all five style continuations at once
            from styleeval.engine import TokenTree

            shared, nodes, reads, meaning_paths, style_paths = tree
            results = self.engine.tree_logprobs([TokenTree(p + shared, nodes, reads) for p in prompts])

            def path_logprob(read_lps: list[torch.Tensor], path: list) -> float:
                return sum(float(read_lps[r][c]) for r, c in path)

            meaning_lp = torch.tensor([[path_logprob(lps, path) for path in meaning_paths] for lps in results],
                                      dtype=torch.float64)
            meaning_probs = torch.softmax(meaning_lp, dim=-1)
            best = meaning_probs.argmax(-1).tolist()
            style_lp = torch.tensor([[path_logprob(lps, path) for path in style_paths[k]]
                                     for lps, k in zip(results, best)], dtype=torch.float64)
        else:
            meaning_probs, style_lp = self._two_pass(prompts)
        style_probs = torch.softmax(style_lp, dim=-1)
        meaning, style = expectation(meaning_probs), expectation(style_probs)
        return [
            {"meaning": float(meaning[i]), "style": float(style[i]), "parsed": True,
             "meaning_probs": meaning_probs[i].tolist(), "style_probs": style_probs[i].tolist()}
            for i in range(len(prompts))
        ]

    def _two_pass(self, prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Meaning probabilities and style log-probabilities with one pass per step (the server backend)."""
        meaning_ids, meaning_tails = self._scaffold(MEANING_SCAFFOLD)
        meaning_lp = self._rating_logprobs([p + meaning_ids for p in prompts], [meaning_tails] * len(prompts))
        meaning_probs = torch.softmax(meaning_lp, dim=-1)
        best = meaning_probs.argmax(-1).tolist()
        scaffolds = {k: self._scaffold(MEANING_SCAFFOLD + RATINGS[k] + STYLE_SCAFFOLD) for k in set(best)}
        style_lp = self._rating_logprobs([p + scaffolds[k][0] for p, k in zip(prompts, best)],
                                         [scaffolds[k][1] for k in best])
        return meaning_probs, style_lp

    def _rating_logprobs(self, contexts: list[list[int]], tails: list[list[list[int]]]) -> torch.Tensor:
        """(n, 5) float64 log-probabilities of each rating's tail tokens after each context (chain rule)."""
        n = len(contexts)
        out = torch.empty((n, len(RATINGS)), dtype=torch.float64)
        single = [i for i in range(n) if all(len(t) == 1 for t in tails[i])]
        by_candidates: dict[tuple[int, ...], list[int]] = {}
        for i in single:
            by_candidates.setdefault(tuple(t[0] for t in tails[i]), []).append(i)
        multi = sorted(set(range(n)) - set(single))
        if self.engine is not None:
            for candidates, rows in by_candidates.items():
                out[rows] = self.engine.candidate_logprobs([contexts[i] for i in rows], candidates).double()
            if multi:
                pairs = [(contexts[i], tail) for i in multi for tail in tails[i]]
                lps = self.engine.token_logprobs([c for c, _ in pairs], [t for _, t in pairs])
                sums = torch.tensor([float(lp.double().sum()) for lp in lps], dtype=torch.float64)
                out[multi] = sums.view(len(multi), len(RATINGS))
            return out
        return _server_rating_logprobs(self.client, contexts, tails, out)

    def _check_context(self, prompts: list[list[int]], extra: int) -> None:
        limit = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        if not limit:
            return
        for i, p in enumerate(prompts):
            if len(p) + extra > limit:
                raise ValueError(f"row {i}: the judge prompt is {len(p)} tokens, too long for the model's context "
                                 f"of {limit} with {extra} tokens of reply")


def _server_rating_logprobs(client, contexts: list[list[int]], tails: list[list[list[int]]],
                            out: torch.Tensor) -> torch.Tensor:
    """Rating log-probabilities from a server: the top-20 next tokens where they hold every (one-token) rating,
    else each rating's tokens appended to the context and read back as prompt log-probabilities (exact for any
    model and vocabulary; vLLM returns them)."""
    from styleeval.server import ServerError

    missing = [i for i in range(len(contexts)) if any(len(t) != 1 for t in tails[i])]
    single = [i for i in range(len(contexts)) if i not in set(missing)]
    if single:
        try:
            tops = client.top_logprobs([contexts[i] for i in single], k=20)
        except ServerError as err:
            if err.status is None or err.status >= 500:  # unreachable or failing: no point in another route
                raise
            tops = [{} for _ in single]
        for i, top in zip(single, tops):
            candidates = [t[0] for t in tails[i]]
            if all(c in top for c in candidates):
                out[i] = torch.tensor([top[c] for c in candidates], dtype=torch.float64)
            else:
                missing.append(i)
    if missing:
        missing.sort()
        try:
            rows = client.prompt_logprobs([[contexts[i] + tail for tail in tails[i]] for i in missing])
        except ServerError as err:
            raise ServerError(
                f"expected mode needs the log-probabilities of the rating tokens; {client.base_url} returned them "
                f"neither among its top-20 next tokens nor as prompt log-probabilities ({err}). Use a vLLM server "
                "or mode='paper'.", err.status,
            ) from None
        for i, per_prompt in zip(missing, rows):
            out[i] = torch.tensor([sum(lp[-len(tail):]) for lp, tail in zip(per_prompt, tails[i])],
                                  dtype=torch.float64)
    return out


def _fill_with_mean(rows: list[dict[str, Any]]) -> None:
    """The authors' fallback: an unreadable rating becomes the mean of the readable ones (per dimension)."""
    for key in ("meaning", "style"):
        readable = [r[key] for r in rows if r[f"{key}_parsed"]]
        mean = sum(readable) / len(readable) if readable else math.nan
        if not readable:
            warnings.warn(f"no {key} rating could be read from any reply: NaN", stacklevel=3)
        for r in rows:
            if not r[f"{key}_parsed"]:
                r[key] = mean


_SHARED: dict[tuple, Autorater] = {}


def shared_autorater(model: Any = None, **options: Any) -> Autorater:
    """An :class:`Autorater` built once per process per (model, options) and reused (the ``evaluate`` module and
    the meta-evaluation use it so that repeated calls do not reload weights)."""
    from styleeval.models import model_revision_key

    revision = None if options.get("base_url") else model_revision_key(model, options.get("revision"))
    key = (str(model), revision, *sorted((k, repr(v)) for k, v in options.items()))
    if key not in _SHARED:
        _SHARED[key] = Autorater(model, **{"progress": False, **options})
    return _SHARED[key]
