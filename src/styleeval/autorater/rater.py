"""LLM-as-autorater: an instruct LLM rates meaning preservation and style on a 1-5 scale.

Two modes, on any :class:`~styleeval.backends.Backend` (a local model or an OpenAI-compatible server):

``paper``
    The authors' judge (Pauli et al. 2025, appendix D.2): the prompt of :mod:`styleeval.autorater.prompts`, a
    generated reply, ratings read by a parser (:mod:`styleeval.autorater.parsing`). Mukherjee et al.'s prompts
    (``prompt="mukherjee"``, ``"mukherjee-binary"``) ask one prompt per dimension, each reply a number
    (:func:`~styleeval.autorater.parsing.parse_number`). A row whose rating cannot be
    read stays NaN with ``parsed=False``. The authors filled it with the mean of the readable ratings; that fill
    depends on which rows are averaged, so it is applied once over the whole set being aggregated
    (:func:`fill_unparsed_with_mean`: a meta-evaluation dataset, an evaluate call), never per chunk. Sampling
    (``paper-70b``) is seeded per row from the seed and the row's content (:func:`row_seed`), so a row's reply does
    not depend on its batch-mates, on chunking or on resume.

``expected``
    A judge that cannot break format: the reply scaffold ``{"meaning": `` is teacher-forced after the same
    prompt and the model's probabilities of the rating tokens ``1``..``5`` at that position are read and
    renormalised over the five; the meaning rating is their expectation. The most probable meaning rating and
    ``, "style": `` are then appended and the style distribution is read the same way. Deterministic, every row
    parsed, batched and prefix-shared through the scoring engine (:meth:`Backend.candidate_logprobs`).

How the scaffold is tokenized: the assistant text (``{"meaning": 3, "style": `` ...) is tokenized on its own and
appended to the prompt ids; the rating tokens are where the encodings of ``<scaffold>1`` .. ``<scaffold>5`` part
(for Llama 3 the digits ``1``..``5``; for a tokenizer that glues the space to a digit, `` 1``..`` 5``).

With a prompt per dimension (Mukherjee et al.'s, whose user turn ends on "rating (on a scale of 1 to 5) ="), expected
mode reads the first token of the judge's reply: the probabilities of the prompt's ratings (``1``..``5``, or ``0`` and
``1`` for the binary prompt) at the start of the assistant turn, renormalised over them, and the rating is their
expectation (the binary prompt's: the probability of ``1``). Each dimension is its own pass.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from styleeval._version import __version__
from styleeval.autorater.parsing import NUMBER_PARSER, get_parser, parse_number
from styleeval.autorater.prompts import DimensionPrompt, JudgePrompt, get_prompt
from styleeval.backends import (
    SERVER_CHAT,
    TREE_LOGPROBS,
    Backend,
    TokenTree,
    given_or_open,
    shared_backend,
    signed_backend,
    split_options,
)
from styleeval.backends.base import common_prefix_length
from styleeval.chat import ChatFormat
from styleeval.errors import RowError, UserError
from styleeval.progress import enabled
from styleeval.signature import Signature
from styleeval.validation import check_rows

if TYPE_CHECKING:  # imported where a tensor is made: the CLI builds its parser without torch
    import torch

_CONTROL_LIKE = re.compile(r"<\|[A-Za-z_]+\|>|<\|im_(start|end)\|>")

MODES = ("paper", "expected")
RATINGS = ("1", "2", "3", "4", "5")
MEANING_SCAFFOLD = '{"meaning": '
STYLE_SCAFFOLD = ', "style": '


class AutoraterResults(list):
    """Per-row autorater results in input order, with the run's ``signature`` and ``compliance_rate``.

    Each row is a dict with ``meaning``, ``style`` (floats), ``parsed`` (bool) and, in paper mode, ``reply`` (the
    raw text), in expected mode ``meaning_probs`` and ``style_probs`` (the five renormalised probabilities of
    ratings 1..5). With a prompt per dimension the row has a rating per dimension the prompt rates (``fluency`` too
    with ``mukherjee``; ``style`` alone with ``mukherjee-binary``: ``meaning`` is then NaN), ``<dimension>_parsed``,
    and ``reply`` is a JSON object of each dimension's reply.
    """

    def __init__(self, rows: Sequence[dict[str, Any]], signature: str) -> None:
        super().__init__(rows)
        self.signature = signature

    @property
    def meaning(self) -> list[float]:
        """The meaning-preservation rating of every row."""
        return [row.get("meaning", math.nan) for row in self]

    @property
    def style(self) -> list[float]:
        """The style rating of every row."""
        return [row.get("style", math.nan) for row in self]

    @property
    def compliance_rate(self) -> float:
        """Share of rows whose ratings were read from the reply (1.0 in expected mode; NaN for no rows)."""
        return sum(bool(r["parsed"]) for r in self) / len(self) if self else math.nan

    def __repr__(self) -> str:
        return f"AutoraterResults({len(self)} rows, compliance={self.compliance_rate:.3f}, signature={self.signature!r})"


def row_seed(seed: int, conversation: list[dict[str, str]]) -> int:
    """The sampling seed of one row: a hash of the run's ``seed`` and the row's messages (31 bits), so that a row's
    reply is the same whatever rows share its call."""
    text = json.dumps([int(seed), conversation], ensure_ascii=False, sort_keys=True)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF


def fill_unparsed_with_mean(values: Sequence[float]) -> list[float]:
    """The authors' fallback over a whole set: every NaN rating becomes the mean of the readable ones (NaN if none is
    readable). Apply it once to everything being aggregated (a dataset, an evaluate call), not per chunk."""
    readable = [v for v in values if not math.isnan(v)]
    mean = sum(readable) / len(readable) if readable else math.nan
    return [mean if math.isnan(v) else float(v) for v in values]


def expectation(probs: torch.Tensor) -> torch.Tensor:
    """The expected rating sum_k k p_k of (..., 5) probabilities over ratings 1..5."""
    import torch  # noqa: PLC0415 - heavy (torch)

    return (probs.double() * torch.arange(1, 6, dtype=torch.float64)).sum(-1)


class Autorater:
    """An instruct LLM as a 1-5 judge of meaning preservation and style (see the module docstring).

    Args:
        model: a preset (``"1b"``, ``"3b"``, ``"8b"``, ``"smollm2-135m"``), a Hub id, a local path, a ``.gguf`` file
            or a model object (local backend);
            with ``base_url``, the served model name (``None``: the only model the server lists).
        tokenizer: the tokenizer (object, id or path); loaded from ``model`` when omitted. On a server it is needed in
            expected mode; in paper mode, giving it makes the prompts be rendered and tokenized here and sent as
            token ids (user text that looks like control tokens stays text, and the reply equals the local
            backend's); without it the server renders the chat itself (``/chat/completions``).
        mode: ``"expected"`` (default: deterministic, never breaks format) or ``"paper"`` (the authors' judge).
        prompt: ``"paper-small"`` (default; the authors' 1B/3B/8B prompt), ``"paper-70b"``, or Mukherjee et al.'s
            ``"mukherjee"`` (style, meaning and fluency, one prompt each) or ``"mukherjee-binary"`` (style, 0/1).
        parser: ``"robust"`` (default) or ``"authors"`` (paper mode); a prompt per dimension reads its one number
            with its own parser (``number``) and takes no other.
        seed: sampling seed (``paper-70b``); each row samples with :func:`row_seed` of it.
        max_new_tokens: override the prompt's reply length (paper mode).
        chat_template: a Jinja chat template for tokenizers without one.
        system_prompt: ``"auto"`` (default), ``"system"`` or ``"fold"``: the judge's system message as a system
            turn, or folded into the user turn where the template has no system role (Gemma; ``sys:folded`` in the
            signature). See :class:`styleeval.chat.ChatFormat`.
        backend: a :class:`~styleeval.backends.Backend` to use (then ``model``, ``base_url``, ``tokenizer`` and the
            backend options must not be given), or a registered backend's name (``"local"``, ``"openai"``).
        base_url: an OpenAI-compatible server (``http://host:port/v1``) instead of a local model.
        progress: show progress bars; ``None`` (default): where stderr is a terminal.
        **backend_options: the backend's options. Local: ``device``, ``dtype``, ``revision``,
            ``trust_remote_code``, ``generate_batch_size`` (prompts per generated batch, paper mode), ``batch_tokens``
            (expected mode). Server: ``api_key``, ``max_concurrency``, ``timeout``, ``max_retries``, ``revision``
            (of the tokenizer), ``extra_body`` (e.g. vLLM's ``{"chat_template_kwargs": {"date_string": "26 Jul
            2024"}}``, which the local backend pins). An option the backend does not take is a ``ValueError``.
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        mode: str = "expected",
        prompt: str = "paper-small",
        parser: str | None = None,
        base_url: str | None = None,
        seed: int = 0,
        max_new_tokens: int | None = None,
        chat_template: str | None = None,
        system_prompt: str = "auto",
        backend: Backend | str | None = None,
        progress: bool | None = None,
        **backend_options: Any,
    ) -> None:
        if mode not in MODES:
            raise UserError(f"mode: unknown mode {mode!r}; choose 'expected' or 'paper'")
        self.mode = mode
        self.prompt: JudgePrompt | DimensionPrompt = get_prompt(prompt)
        if self.prompt.per_dimension:
            if parser not in (None, NUMBER_PARSER):
                raise UserError(f"parser: prompt {self.prompt.name}'s replies are one number each, read by its own "
                                f"parser ({NUMBER_PARSER}); leave parser out")
            self.parser_name = NUMBER_PARSER
        else:
            self.parser_name = parser or "robust"
            self.parse = get_parser(self.parser_name)
        if max_new_tokens is not None and max_new_tokens < 1:
            raise UserError(f"max_new_tokens must be positive, got {max_new_tokens}")
        self.decoding = self.prompt.decoding
        if max_new_tokens is not None:
            self.decoding = replace(self.decoding, max_new_tokens=int(max_new_tokens))
        self.seed = int(seed)
        self.backend = backend = given_or_open(
            backend, model, base_url, tokenizer=tokenizer, progress=enabled(progress), need_tokenizer=mode == "expected",
            **backend_options)
        self.tokenizer = self.chat = None
        self._end_of_turn_id: int | None = None
        self._tree_cache: Any = False  # built on first use by _scaffold_tree
        self.system_prompt = system_prompt
        if backend.tokenizer is not None:
            self._set_tokenizer(backend.tokenizer, chat_template)
        elif not backend.supports(SERVER_CHAT):
            raise UserError("tokenizer: this backend needs a tokenizer to render the judge's prompts")

    def _set_tokenizer(self, tokenizer: Any, chat_template: str | None) -> None:
        self.tokenizer = tokenizer
        self.chat = ChatFormat(tokenizer, chat_template=chat_template, end_of_turn=False,
                               system_prompt=self.system_prompt)
        try:  # the template's end-of-turn token ends a generated reply
            self._end_of_turn_id = ChatFormat(tokenizer, chat_template=self.chat.template,
                                              system_prompt=self.system_prompt).end_of_turn_id
        except ValueError:
            self._end_of_turn_id = None

    # -- signature ----------------------------------------------------------------------------------------
    @property
    def signature(self) -> Signature:
        """Everything that determines a rating, built here and nowhere else: model@revision (a server: what is
        behind its URL), mode, prompt, parser, decoding, dtype, template, tokenizer, backend, version."""
        identity = self.backend.identity
        fields: dict[str, object] = {
            "model": identity.model_field,
            "mode": self.mode,
            "prompt": self.prompt.name,
            "parser": self.parser_name if self.mode == "paper" else "none",
            "decoding": self.decoding.tag(self.seed) if self.mode == "paper" else "scaffold",
            "dtype": identity.dtype,
        }
        if self.chat is not None:
            from styleeval.models import tokenizer_fingerprint  # noqa: PLC0415 - heavy (torch, via styleeval.models)

            fields["tmpl"] = self.chat.template_hash
            fields["tok"] = tokenizer_fingerprint(self.tokenizer)
            if self.chat.folds:
                fields["sys"] = "folded"
        fields["backend"] = signed_backend(self.backend)
        if identity.build:
            fields["build"] = identity.build
        fields["version"] = __version__
        return Signature.build("autorater", fields)

    # -- rating -------------------------------------------------------------------------------------------
    def rate(
        self,
        sources: Sequence[str],
        rewrites: Sequence[str],
        styles: Sequence[str] | str,
        fallback: str | None = None,
    ) -> AutoraterResults:
        """Rate each rewrite of a source towards a target style.

        Args:
            sources: the original texts.
            rewrites: the rewritten texts.
            styles: the target style of each row (e.g. ``"polite"``), or one string for all rows.
            fallback: paper mode: ``None`` (default) leaves a rating that could not be read NaN (``parsed=False``);
                ``"mean"`` fills it with the mean of the readable ratings *of this call* (the authors' rule). The
                fill depends on which rows are in the call: to aggregate, rate everything with ``None`` and apply
                :func:`fill_unparsed_with_mean` once over the whole set.

        Returns:
            :class:`AutoraterResults`, one dict per row in input order (see its docstring).
        """
        if fallback not in ("mean", None):
            raise UserError(f"fallback must be 'mean' or None, got {fallback!r}")
        sources, rewrites, styles = check_rows(sources, rewrites, styles)
        n = len(sources)
        if n == 0:
            return AutoraterResults([], self.signature)
        if self.prompt.per_dimension:
            rows = self._rate_dimensions(sources, rewrites, styles)
        else:
            conversations = [self.prompt.messages(s, r, st) for s, r, st in zip(sources, rewrites, styles, strict=True)]
            rows = self._rate_expected(conversations) if self.mode == "expected" else self._rate_paper(conversations)
        if self.mode == "paper" and fallback == "mean":
            _fill_with_mean(rows, self.prompt.dimensions)
        return AutoraterResults(rows, self.signature)

    # a prompt per dimension (Mukherjee et al.)
    def _rate_dimensions(self, sources: list[str], rewrites: list[str], styles: list[str]) -> list[dict[str, Any]]:
        """Each row's rating of every dimension of a :class:`DimensionPrompt`, one prompt per (row, dimension)."""
        import torch  # noqa: PLC0415 - heavy (torch)

        prompt = self.prompt
        assert isinstance(prompt, DimensionPrompt)
        rows: list[dict[str, Any]] = [{} for _ in sources]
        values = torch.tensor([float(r) for r in prompt.ratings], dtype=torch.float64)
        replies: list[dict[str, str]] = [{} for _ in sources]
        for dimension in prompt.dimensions:
            conversations = [prompt.messages(s, r, st, dimension)
                             for s, r, st in zip(sources, rewrites, styles, strict=True)]
            if self.mode == "paper":
                for i, reply in enumerate(self._generate(conversations)):
                    value = parse_number(reply, prompt.ratings)
                    rows[i][dimension] = math.nan if value is None else value
                    rows[i][f"{dimension}_parsed"] = value is not None
                    replies[i][dimension] = reply
                continue
            ids = self.chat.conversation_ids(conversations)
            self._check_context(ids, 16)
            shared, tails = self._scaffold("", prompt.ratings)
            probs = torch.softmax(self._rating_logprobs([p + shared for p in ids], [tails] * len(ids)), dim=-1)
            expected = (probs * values).sum(-1)
            for i in range(len(ids)):
                rows[i][dimension] = float(expected[i])
                rows[i][f"{dimension}_probs"] = probs[i].tolist()
        for i, row in enumerate(rows):
            row["parsed"] = self.mode == "expected" or all(row[f"{d}_parsed"] for d in prompt.dimensions)
            row.setdefault("meaning", math.nan)
            row.setdefault("style", math.nan)
            if self.mode == "paper":
                row["reply"] = json.dumps(replies[i], ensure_ascii=False)
        return rows

    # paper mode
    def _generate(self, conversations: list[list[dict[str, str]]]) -> list[str]:
        """The judge's reply to each conversation (each row sampled with its own seed)."""
        seeds = [row_seed(self.seed, conv) for conv in conversations]
        if self.chat is not None:  # rendered and tokenized here: user text stays text, on any backend
            prompts = self.chat.conversation_ids(conversations)
            self._check_context(prompts, self.decoding.max_new_tokens)
            return self.backend.generate(prompts, self.decoding, seeds, stop_ids=self._stop_ids())
        # the server renders the chat (no tokenizer here)
        if any(_CONTROL_LIKE.search(m["content"]) for conv in conversations for m in conv):
            warnings.warn("some texts look like chat control tokens and the server renders the chat itself; "
                          "pass tokenizer=... so that prompts are tokenized locally and stay text", stacklevel=4)
        return self.backend.generate_chat(conversations, self.decoding, seeds)

    def _rate_paper(self, conversations: list[list[dict[str, str]]]) -> list[dict[str, Any]]:
        replies = self._generate(conversations)
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
    def _scaffold(self, text: str, ratings: tuple[str, ...] = RATINGS) -> tuple[list[int], list[list[int]]]:
        """Token ids of ``text`` up to where the encodings of ``text + "1"`` .. ``text + "5"`` part, and the five
        rating tails after it (one token each for Llama 3; a tokenizer may glue the space to some digits)."""
        encoded = self.chat.encoder.plain([text + r for r in ratings])
        shared = common_prefix_length(encoded)
        tails = [list(e[shared:]) for e in encoded]
        if any(not t for t in tails):
            raise UserError(f"expected mode: the tokenizer cannot tell the ratings {', '.join(ratings)} apart after "
                            f"{text!r}")
        return list(encoded[0][:shared]), tails

    def _scaffold_tree(self) -> tuple[list[int], list, list, list[list], list[list[list]]] | None:
        """The reply scaffold of every row as one token tree (see :class:`styleeval.backends.TokenTree`): after the
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
        import torch  # noqa: PLC0415 - heavy (torch)

        prompts = self.chat.conversation_ids(conversations)
        self._check_context(prompts, 64)
        tree = self._scaffold_tree() if self.backend.supports(TREE_LOGPROBS) else None
        if tree is not None:  # one forward pass per row: the meaning and all five style continuations at once
            shared, nodes, reads, meaning_paths, style_paths = tree
            results = self.backend.tree_logprobs([TokenTree(p + shared, nodes, reads) for p in prompts],
                                                 shared_prefixes=True)

            def path_logprob(read_lps: list[torch.Tensor], path: list) -> float:
                return sum(float(read_lps[r][c]) for r, c in path)

            meaning_lp = torch.tensor([[path_logprob(lps, path) for path in meaning_paths] for lps in results],
                                      dtype=torch.float64)
            meaning_probs = torch.softmax(meaning_lp, dim=-1)
            best = meaning_probs.argmax(-1).tolist()
            style_lp = torch.tensor([[path_logprob(lps, path) for path in style_paths[k]]
                                     for lps, k in zip(results, best, strict=True)], dtype=torch.float64)
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
        """Meaning probabilities and style log-probabilities with one pass per step (backends without token trees)."""
        import torch  # noqa: PLC0415 - heavy (torch)

        meaning_ids, meaning_tails = self._scaffold(MEANING_SCAFFOLD)
        meaning_lp = self._rating_logprobs([p + meaning_ids for p in prompts], [meaning_tails] * len(prompts))
        meaning_probs = torch.softmax(meaning_lp, dim=-1)
        best = meaning_probs.argmax(-1).tolist()
        scaffolds = {k: self._scaffold(MEANING_SCAFFOLD + RATINGS[k] + STYLE_SCAFFOLD) for k in set(best)}
        style_lp = self._rating_logprobs([p + scaffolds[k][0] for p, k in zip(prompts, best, strict=True)],
                                         [scaffolds[k][1] for k in best])
        return meaning_probs, style_lp

    def _rating_logprobs(self, contexts: list[list[int]], tails: list[list[list[int]]]) -> torch.Tensor:
        """(n, ratings) float64 log-probabilities of each rating's tail tokens after each context (chain rule)."""
        import torch  # noqa: PLC0415 - heavy (torch)

        n = len(contexts)
        k = len(tails[0]) if tails else len(RATINGS)
        out = torch.empty((n, k), dtype=torch.float64)
        single = [i for i in range(n) if all(len(t) == 1 for t in tails[i])]
        by_candidates: dict[tuple[int, ...], list[int]] = {}
        for i in single:
            by_candidates.setdefault(tuple(t[0] for t in tails[i]), []).append(i)
        multi = sorted(set(range(n)) - set(single))
        for candidates, rows in by_candidates.items():
            out[rows] = self.backend.candidate_logprobs([contexts[i] for i in rows], candidates,
                                                        shared_prefixes=True).double()
        if multi:
            pairs = [(contexts[i], tail) for i in multi for tail in tails[i]]
            lps = self.backend.token_logprobs([c for c, _ in pairs], [t for _, t in pairs], group=k)
            sums = torch.tensor([float(lp.double().sum()) for lp in lps], dtype=torch.float64)
            out[multi] = sums.view(len(multi), k)
        return out

    def _check_context(self, prompts: list[list[int]], extra: int) -> None:
        limit = self.backend.max_length
        if not limit:
            return
        for i, p in enumerate(prompts):
            if len(p) + extra > limit:
                raise RowError(i, f"the judge prompt is {len(p)} tokens, too long for the model's context of "
                                  f"{limit} with {extra} tokens of reply")


def _fill_with_mean(rows: list[dict[str, Any]], dimensions: Sequence[str] = ("meaning", "style")) -> None:
    """The authors' fallback on one call's rows (``fallback="mean"``), per dimension."""
    for key in dimensions:
        if not any(r[f"{key}_parsed"] for r in rows):
            warnings.warn(f"no {key} rating could be read from any reply: NaN", stacklevel=3)
        filled = fill_unparsed_with_mean([r[key] if r[f"{key}_parsed"] else math.nan for r in rows])
        for r, v in zip(rows, filled, strict=True):
            r[key] = v


_SHARED: dict[tuple, Autorater] = {}


def shared_autorater(model: Any = None, base_url: str | None = None, backend: str | None = None,
                     **options: Any) -> Autorater:
    """An :class:`Autorater` on :func:`styleeval.backends.shared_backend` (weights loaded once per process per
    model, device, dtype and revision; one client per server), built once per option set and reused (the
    ``evaluate`` module, the meta-evaluation and the apps). The backend's declared options go to the backend,
    the others to :class:`Autorater`."""
    mine, own = split_options(options, backend, base_url)
    backend = shared_backend(model, base_url, backend=backend, need_tokenizer=own.get("mode", "expected") ==
                             "expected" or mine.get("tokenizer") is not None, **mine)
    key = (id(backend), *sorted((k, repr(v)) for k, v in own.items()))
    if key not in _SHARED or _SHARED[key].backend is not backend:
        _SHARED[key] = Autorater(backend=backend, progress=False, **own)
    return _SHARED[key]
