"""LogProb: content preservation and style strength from a chat LLM's token probabilities.

Pauli, Augenstein & Assent (2025), "Mind the Style Gap", section 4. For a source X, a rewrite
X~ = x~_1..x~_n and a target style S, the rewrite is scored after three contexts (system prompt + one user
instruction of a prompt set, :mod:`styleeval.logprob.prompts`): rewrite to style S (t_s), paraphrase (t_pa), repeat
(t_r). With p_i^t the probability of rewrite token i after context t and the preceding rewrite tokens:

    content C = 1/n sum_i log max(p_i^ts, p_i^tpa, p_i^tr)            (equation 1)
    style   S = 1/n sum_i (p_i^ts - max(p_i^tpa, p_i^tr))             (equation 2, probabilities)

Every rewrite token is scored, the first one included, followed by the template's end-of-turn token
(``end_of_turn=False`` drops it). ``variant="authors"`` is the authors' ``LogProp.py`` procedure instead: their
hand-written Llama 3 prompt (the prompt set ``authors``), the first rewrite token as context (not scored), then every
later token and the end-of-turn token scored (see docs/logprob.md's table "ours vs the authors'").

The log-probabilities come from a :class:`~styleeval.backends.Backend` (``token_logprobs(prompts, continuations)``):
the local scoring engine or an OpenAI-compatible server, chosen once by :func:`styleeval.backends.open_backend`.
Tokenization is local in both. The signature is built in one place, :attr:`LogProb.signature`; its ``prompt`` field
is the prompt set's name and the digest of its text (:attr:`~styleeval.logprob.prompts.PromptSet.signed`).

``guard="prompt"`` (for LogProb as a training reward, docs/training.md "The hole, measured, and the prompt guard") also reads the rewrite after
two prompt contexts (:data:`styleeval.logprob.prompts.PROMPT_CONTEXTS`: the style instruction repeated, t_e, and the style
instruction without its source, t_u) and gives a rewrite that either reading explains at least as well as the source's
best reading the lowest content and style (:func:`guarded_equations`):

    P = max(1/n sum_i log p_i^te, 1/n sum_i log p_i^tu)
    (C_g, S_g) = (C, S) if P < C, else (-inf, -1)

``guard="repeat"`` gives the same lowest scores to a rewrite that repeats itself (:func:`self_repeat`: a run of
:data:`REPEAT_SPAN` words written more often than the source holds it, and at least twice); ``guard="prompt+repeat"``
is both.
"""

from __future__ import annotations

import math
import string
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from styleeval._version import __version__
from styleeval.backends import (
    Backend,
    BackendError,
    given_or_open,
    shared_backend,
    signed_backend,
    split_options,
)
from styleeval.chat import AuthorsFormat, ChatFormat
from styleeval.errors import RenamedKeys, RowError, RowsWarning, UserError, option_advice, option_text
from styleeval.logprob.prompts import CONTEXTS, PROMPT_CONTEXTS, PromptSet, get_prompt_set
from styleeval.progress import enabled
from styleeval.signature import Signature
from styleeval.validation import check_rows

if TYPE_CHECKING:  # imported where a tensor is made: the CLI builds its parser without torch
    import torch

__all__ = ["GUARDS", "REPEAT_SPAN", "LogProb", "LogProbScores", "NotFiniteWarning", "guarded_equations",
           "logprob_equations", "repeat_words", "self_repeat",
           "shared_logprob", "VARIANTS", "VARIANT_PROMPTS"]

PIPELINE_ROWS = 256
VARIANT_PROMPTS = {"default": "paper", "authors": "authors"}
"""Each variant's prompt set (:data:`styleeval.logprob.prompts.PROMPT_SETS`) when ``prompt`` is not given."""
VARIANTS = tuple(VARIANT_PROMPTS)
GUARDS = ("prompt", "repeat", "prompt+repeat")
"""The guards :class:`LogProb` takes (``guard=``): ``"prompt"`` (:func:`guarded_equations`), ``"repeat"``
(:func:`self_repeat`) and both, ``"prompt+repeat"``."""

REPEAT_SPAN = 4
"""The repeat guard's span: a rewrite repeats itself when a run of this many words, one with a letter, comes back in it
(:func:`self_repeat`). Measured (docs/training.md, "The repeat guard"): at 4 words none of the 500 rated rewrites of
the style-gap test set, nor any of Lai et al.'s 720 formality rewrites and 640 references, repeats itself, and 496
of the 500 outputs of run 3's shape (``{source}\\n\\nRewrite: {source}``) do; at 3 words a formal rewrite that names an
amount twice ("is 1,000 dollars") would."""


def logprob_equations(
    style: torch.Tensor, paraphrase: torch.Tensor, repeat: torch.Tensor
) -> tuple[float, float]:
    """Content preservation (eq. 1) and style strength (eq. 2) from per-token log-probabilities.

    The three tensors hold log p_i under the style, paraphrase and repeat contexts, one entry per scored
    token. Returns ``(nan, nan)`` when no token is scored.
    """
    import torch  # noqa: PLC0415 - heavy (torch)

    if style.numel() == 0:
        return math.nan, math.nan
    style, paraphrase, repeat = style.double(), paraphrase.double(), repeat.double()
    best_log = torch.maximum(torch.maximum(style, paraphrase), repeat)  # log max p = max log p
    content = best_log.mean()
    strength = (style.exp() - torch.maximum(paraphrase, repeat).exp()).mean()
    return float(content), float(strength)


def guarded_equations(
    style: torch.Tensor, paraphrase: torch.Tensor, repeat: torch.Tensor, echo: torch.Tensor, unsourced: torch.Tensor
) -> tuple[float, float, float]:
    """The prompt guard: content and style (eq. 1 and 2, :func:`logprob_equations`) where the source explains the
    rewrite better than the prompt does, else the lowest content and style, ``(-inf, -1)``.

    ``echo`` and ``unsourced`` hold log p_i under the prompt guard's two contexts
    (:data:`styleeval.logprob.prompts.PROMPT_CONTEXTS`): the style instruction repeated, and the style instruction without its
    source. With ``C`` the content (eq. 1, the mean log of the best of the source's three readings) and ``P`` the
    prompt's reading, the better of the two contexts' mean log-probabilities,

        P = max(1/n sum_i log p_i^echo, 1/n sum_i log p_i^unsourced)
        (C_g, S_g) = (C, S) if P < C, else (-inf, -1)

    Returns ``(C_g, S_g, P)``; ``(nan, nan, nan)`` when no token is scored.
    """
    content, strength = logprob_equations(style, paraphrase, repeat)
    if math.isnan(content):
        return math.nan, math.nan, math.nan
    prompt = max(float(echo.double().mean()), float(unsourced.double().mean()))
    if prompt >= content:
        return -math.inf, -1.0, prompt
    return content, strength, prompt


def repeat_words(text: str) -> list[str]:
    """The words the repeat guard compares: ``text`` split at white space, each casefolded with the punctuation at its
    ends stripped, the empty ones left out.

    >>> repeat_words("Rewrite: It is late -- sorry!")
    ['rewrite', 'it', 'is', 'late', 'sorry']
    """
    words = (word.strip(string.punctuation).casefold() for word in text.split())
    return [word for word in words if word]


def _runs(words: Sequence[str], span: int) -> dict[tuple[str, ...], int]:
    """How many times each run of ``span`` words that holds a letter occurs in ``words``, counting occurrences that do
    not overlap (left to right, as ``str.count`` counts)."""
    counts: dict[tuple[str, ...], int] = {}
    free_from: dict[tuple[str, ...], int] = {}  # run -> the first position where its next occurrence may start
    for start in range(len(words) - span + 1):
        run = tuple(words[start:start + span])
        if start >= free_from.get(run, 0) and any(c.isalpha() for word in run for c in word):
            counts[run] = counts.get(run, 0) + 1
            free_from[run] = start + span
    return counts


def self_repeat(rewrite: str, source: str, span: int = REPEAT_SPAN) -> bool:
    """The repeat guard: whether a rewrite repeats itself, a run of ``span`` words (:func:`repeat_words`) that holds a
    letter written at least twice, and more often than the source holds it. Occurrences are counted without overlap (as
    ``str.count`` counts); a rewrite that keeps a repetition of its source is no repeat, nor numbers written twice. A
    function of the two texts alone: the same verdict whatever model scores.

        R = 1 if some run w of span words, one with a letter, has
                count_rewrite(w) >= 2 and count_rewrite(w) > count_source(w);  else 0
        (C_g, S_g) = (-inf, -1) if R, else (C, S)

    >>> self_repeat("It is late. Rewrite: It is late.", "its late"), self_repeat("Sorry. Sorry. Sorry.", "sry")
    (False, False)
    >>> self_repeat("It is getting late. Rewrite: It is getting late.", "its getting late")
    True
    >>> self_repeat("No, no, no, no, no, no, no, no!", "no no no no no no no no")
    False
    """
    if span < 1:
        raise ValueError(f"span must be at least 1, got {span}")
    source_counts = _runs(repeat_words(source), span)
    return any(count >= 2 and count > source_counts.get(run, 0)
               for run, count in _runs(repeat_words(rewrite), span).items())


class NotFiniteWarning(UserWarning):
    """The model's log-probabilities are not finite for some rows (:meth:`LogProb.score` says it once per scorer)."""


RENAMED = {"style": "style_strength"}
"""Keys of a row in earlier versions (one name per number: ``style`` is the target style everywhere), still read with a
``FutureWarning``."""


def logprob_row(content: float, style_strength: float) -> RenamedKeys:
    """One row of :class:`LogProbScores`: ``content`` and ``style_strength`` (the old key ``style`` still reads, with
    a ``FutureWarning``: :class:`~styleeval.errors.RenamedKeys`)."""
    return RenamedKeys({"content": content, "style_strength": style_strength}, RENAMED)


class LogProbScores(list):
    """Per-row LogProb results (dicts with ``content`` and ``style_strength``, the names of the CLI's records and the
    ``evaluate`` module) in input order, with a ``signature``."""

    def __init__(self, rows: Sequence[dict[str, Any]], signature: str) -> None:
        super().__init__(rows)
        self.signature = signature

    @property
    def content(self) -> list[float]:
        """The content-preservation score of every row."""
        return [row["content"] for row in self]

    @property
    def style_strength(self) -> list[float]:
        """The style-strength score of every row."""
        return [row["style_strength"] for row in self]

    @property
    def style(self) -> list[float]:
        """``style_strength`` under its earlier name (with a ``FutureWarning``)."""
        warnings.warn(FutureWarning("LogProbScores.style is now LogProbScores.style_strength (one name per number "
                                    "everywhere); read .style_strength"), stacklevel=2)
        return self.style_strength

    def __repr__(self) -> str:
        return f"LogProbScores({len(self)} rows, signature={self.signature!r})"


class LogProb:
    """The LogProb metric with a causal chat LLM, run locally or on an OpenAI-compatible server.

    Args:
        model: a preset (``"1b"``, ``"3b"``, ``"8b"``: the paper's Llama 3.x Instruct models;
            ``"smollm2-135m"``: a real 135M chat model fetched on first use, no Hub account), a Hub id, a local
            path, a ``.gguf`` file, or a loaded ``*ForCausalLM`` object. Default: ``meta-llama/Llama-3.2-1B-Instruct``.
            With ``base_url``: the served model name (``None``: the only model the server lists).
        tokenizer: the tokenizer (object, id or path); loaded from the model id when omitted.
        variant: ``"default"`` (chat template of the tokenizer, every rewrite token scored) or ``"authors"`` (the
            authors' ``LogProp.py``: hand-written Llama 3 prompt, first rewrite token not scored; needs a Llama 3
            tokenizer).
        prompt: the prompt set (:data:`styleeval.logprob.prompts.PROMPT_SETS`: a name, or a
            :class:`~styleeval.logprob.prompts.PromptSet`): its system prompt and three instructions, and for
            ``variant="authors"`` its hand-written template. Default: ``"paper"``, or ``"authors"`` with
            ``variant="authors"``. The signature carries its name and the digest of its text.
        end_of_turn: score the template's end-of-turn token after each rewrite (``variant="authors"`` always does).
        chat_template: a Jinja chat template, for models whose tokenizer has none.
        on_overflow: ``"error"`` (default) or ``"skip"``: a row longer than the model's context gets NaN
            scores and a warning.
        system_prompt: ``"auto"`` (default): a system turn where the chat template has one, else the system prompt
            folded into the user turn (Gemma; the signature then says ``sys:folded``); ``"system"`` or ``"fold"``
            to force either (:class:`styleeval.chat.ChatFormat`).
        backend: a :class:`~styleeval.backends.Backend` to use (then ``model``, ``base_url`` and the backend
            options below must not be given), or the name of a registered backend (``"local"``, ``"openai"``;
            default: ``"openai"`` when ``base_url`` is given, else ``"local"``).
        base_url: an OpenAI-compatible server that returns prompt log-probabilities (vLLM:
            ``http://host:port/v1``) instead of a local model; prompts are tokenized here and sent as token ids.
        progress: show progress bars; ``None`` (default): where stderr is a terminal.
        pipeline_rows: rows are scored in pieces of about this many (a source's rewrites never split), the next
            piece tokenized while the current one is scored; results do not depend on it.
        guard: ``None`` (default: the paper's LogProb), or a guard of LogProb as a training reward, which gives a
            rewrite that games the reward content ``-inf`` and style ``-1``: ``"prompt"`` (:func:`guarded_equations`;
            two more contexts, 5/3 of the compute), a rewrite the prompt explains at least as well as the source,
            each row also getting ``prompt_reading`` (the prompt's reading P); ``"repeat"`` (:func:`self_repeat`; no
            more compute), a rewrite that repeats itself, each row also getting ``self_repeat`` (True or False; None
            for a row skipped for its length);
            ``"prompt+repeat"``, both. The signature says ``guard:`` and the guard.
        **backend_options: the backend's options. Local: ``device``, ``dtype`` (``"float32"`` default,
            ``"bfloat16"``, ``"float16"``), ``head_dtype`` (precision of the LM head and softmax: ``"float32"``
            default, or ``"bfloat16"``/``"float16"`` as in the authors' script), ``batch_tokens`` (default 512 on
            CPU, 16384 on a GPU), ``max_batch_rows``, ``revision``, ``trust_remote_code``, ``reuse_prefix`` and
            ``pack_prompts`` (exact; off only for testing). Server: ``revision`` and ``trust_remote_code`` (of the
            tokenizer), ``api_key``, ``max_concurrency``, ``timeout``, ``max_retries``. An option the backend
            does not take is a ``ValueError`` naming it.
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        variant: str = "default",
        end_of_turn: bool = True,
        chat_template: str | None = None,
        on_overflow: str = "error",
        system_prompt: str | None = None,
        backend: Backend | str | None = None,
        base_url: str | None = None,
        progress: bool | None = None,
        pipeline_rows: int = PIPELINE_ROWS,
        prompt: str | PromptSet | None = None,
        guard: str | None = None,
        **backend_options: Any,
    ) -> None:
        if on_overflow not in ("error", "skip"):
            raise UserError(f"on_overflow must be 'error' or 'skip', got {on_overflow!r}")
        if pipeline_rows < 1:
            raise UserError(f"pipeline_rows must be positive, got {pipeline_rows}")
        if variant not in VARIANTS:
            raise UserError(f"variant must be one of {', '.join(map(repr, VARIANTS))}, got {variant!r}")
        if guard is not None and guard not in GUARDS:
            raise UserError(f"guard must be None or one of {', '.join(map(repr, GUARDS))}, got {guard!r}")
        self.guard = guard
        guards = set(guard.split("+")) if guard else set()
        self._prompt_guard, self._repeat_guard = "prompt" in guards, "repeat" in guards
        self.contexts: tuple[str, ...] = CONTEXTS + (PROMPT_CONTEXTS if self._prompt_guard else ())
        """The contexts every rewrite is read after: the paper's three, then the guard's."""
        if variant == "authors":
            given = [name for name, value in (("end_of_turn", not end_of_turn), ("chat_template", chat_template),
                                              ("system_prompt", system_prompt)) if value]
            if given:
                raise UserError(f"{', '.join(given)}: the authors' variant uses their hand-written Llama 3 prompt "
                                "(system turn, end-of-turn token scored); leave it out or use variant='default'")
        self.prompt = prompt = prompt if isinstance(prompt, PromptSet) else get_prompt_set(
            VARIANT_PROMPTS[variant] if prompt is None else prompt)
        if (prompt.template is not None) != (variant == "authors"):
            authors = VARIANT_PROMPTS["authors"]
            raise UserError(f"prompt: the prompt set {prompt.name!r} " + (
                f"writes its own template, which the authors' variant fills: use {option_text('variant', 'authors')}"
                if prompt.template is not None else
                "is rendered with the model's chat template; variant='authors' needs a prompt set with a hand-written "
                f"template (the authors': {option_text('prompt', authors)}, or leave the prompt out)"))
        self.pipeline_rows = int(pipeline_rows)
        self._told_not_finite = False
        self.variant = variant
        self.on_overflow = on_overflow
        self.backend = backend = given_or_open(backend, model, base_url, tokenizer=tokenizer,
                                               progress=enabled(progress),
                                               **backend_options)
        self.tokenizer = backend.tokenizer
        if variant == "authors":
            self.chat: ChatFormat | AuthorsFormat = AuthorsFormat(self.tokenizer, prompt.template,
                                                                  prompt.end_of_turn)
        else:
            self.chat = ChatFormat(self.tokenizer, chat_template=chat_template, end_of_turn=end_of_turn,
                                   system_prompt=system_prompt or "auto")

    @property
    def max_length(self) -> int | None:
        """The longest prompt + rewrite (tokens) the backend scores."""
        return self.backend.max_length

    @property
    def signature(self) -> Signature:
        """Everything that determines a score, built here and nowhere else: model and revision (a server: what is
        behind its URL), variant, prompt set (name and digest of its text), dtype, head precision, template, tokenizer, end-of-turn, whether the first rewrite token is
        scored, backend (the one that computed: :func:`~styleeval.backends.signed_backend`), the backend's build where its
        kernels depend on it (llama.cpp), version."""
        from styleeval.models import tokenizer_fingerprint  # noqa: PLC0415 - heavy (torch, via styleeval.models)

        identity = self.backend.identity
        return Signature.build(
            "logprob",
            {
                "model": identity.model_field,
                "variant": self.variant,
                "prompt": self.prompt.signed,
                "dtype": identity.dtype,
                "head": identity.head,
                "tmpl": self.chat.template_hash,
                "tok": tokenizer_fingerprint(self.tokenizer),
                **({"sys": "folded"} if getattr(self.chat, "folds", False) else {}),
                "eot": self.chat.end_of_turn,
                "first": self.variant != "authors",
                **({"guard": self.guard} if self.guard else {}),
                "backend": signed_backend(self.backend),
                **({"build": identity.build} if identity.build else {}),
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
            styles: the target style of each row (e.g. ``"polite"``), or one string for all rows: free text, put as
                written into the style instruction; one close to a known style but not one (``polyte``, ``Polite.``)
                is said once (:class:`~styleeval.validation.StyleSpellingWarning`).
            return_tokens: add a ``tokens`` list per row: for every scored token its text and its
                log-probability under each context (keys ``style``, ``paraphrase``, ``repeat``).

        Returns:
            :class:`LogProbScores`: one dict per row, in input order, with ``content`` (mean log of the best
            of the three probabilities, <= 0) and ``style_strength`` (mean probability gain of the style
            instruction, in [-1, 1]); the names of ``styleeval score``'s records and of the ``evaluate`` module.
        """
        sources, rewrites, styles = check_rows(sources, rewrites, styles)
        n = len(sources)
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
                contexts = self.contexts
                flat_prompts = [prompts[ctx][j] for j in live for ctx in contexts]  # row-major: one request per row
                flat_targets = [targets[j] for j in live for _ in contexts]
                try:
                    flat = self.backend.token_logprobs(flat_prompts, flat_targets, group=len(contexts)) if live else []
                except BackendError as err:  # its row is the live row's position: name the caller's row
                    raise (err if err.row is None else err.at(rows_k[live[err.row]])) from None
                c = len(contexts)
                for r, j in enumerate(live):
                    per_row[rows_k[j]] = (targets[j], flat[r * c : r * c + c])
                    empty = empty or len(targets[j]) == 0
                for j, i in enumerate(rows_k):
                    if i in skipped:
                        per_row[i] = (targets[j], None)
        if empty:
            warnings.warn("some rewrites have no scored token (an empty rewrite: with end_of_turn=False, or in the "
                          "authors' variant, whose first token is context): NaN", stacklevel=2)
        repeats = self._self_repeats(sources, rewrites, [i for i in range(n) if per_row[i][1] is not None])
        rows, floored = [], set()
        for i in range(n):
            target, lp = per_row[i]
            if lp is None:
                row: dict[str, Any] = logprob_row(math.nan, math.nan)
                if self._prompt_guard:
                    row["prompt_reading"] = math.nan
                if self._repeat_guard:
                    row["self_repeat"] = None  # not scored: no verdict
                if return_tokens:
                    row["tokens"] = []
                rows.append(row)
                continue
            if self._prompt_guard:
                content, strength, prompt = guarded_equations(*lp)
                if content == -math.inf:
                    floored.add(i)
            else:
                content, strength = logprob_equations(*lp)
            if i in repeats:
                content, strength = -math.inf, -1.0
                floored.add(i)
            row = logprob_row(content, strength)
            if self._prompt_guard:
                row["prompt_reading"] = prompt
            if self._repeat_guard:
                row["self_repeat"] = i in repeats
            if return_tokens:
                row["tokens"] = [
                    {"token": self.tokenizer.decode([tok]),
                     **{ctx: float(lp[k][j]) for k, ctx in enumerate(self.contexts)}}
                    for j, tok in enumerate(target)
                ]
            rows.append(row)
        self._tell_not_finite([row for i, row in enumerate(rows) if per_row[i][1] is not None and per_row[i][0]
                               and i not in floored], n)  # a floored row's -inf is the guard's verdict
        return LogProbScores(rows, self.signature)

    def _self_repeats(self, sources: Sequence[str], rewrites: Sequence[str], rows: list[int]) -> set[int]:
        """The rows among ``rows`` whose rewrite repeats itself (:func:`self_repeat`), where the repeat guard is on;
        else none."""
        if not self._repeat_guard:
            return set()
        return {i for i in rows if self_repeat(rewrites[i], sources[i])}

    def _tell_not_finite(self, scored: list[dict[str, Any]], n: int) -> None:
        """Rows with scored tokens whose score is not finite (a log-probability NaN or inf) are said once per scorer,
        naming the model (its weights hold NaN or inf, or its dtype overflows), never silently."""
        if self._told_not_finite:
            return
        bad = sum(1 for row in scored if not (math.isfinite(row["content"]) and math.isfinite(row["style_strength"])))
        if bad:
            self._told_not_finite = True
            warnings.warn(NotFiniteWarning(
                f"the model {self.backend.identity.model_field} gives log-probabilities that are not finite (NaN or "
                f"inf) for {bad} of {n} rows, which score NaN: its weights hold NaN or inf values, or its dtype "
                "overflows (float16: try bfloat16 or float32); said once"), stacklevel=3)

    def prompt_ids(self, context: str, sources: Sequence[str], styles: Sequence[str]) -> list[list[int]]:
        """Token ids of the prompt of ``context`` (``style``, ``paraphrase``, ``repeat`` or a guard's) for each row: the prompt
        set's system prompt and instruction, rendered and tokenized as :meth:`score` does (for ``variant="authors"``
        without the first rewrite token, which :meth:`score` appends)."""
        users = [self.prompt.user_message(context, s, st) for s, st in zip(sources, styles, strict=True)]
        return self.chat.prompt_ids(users, self.prompt.system)

    def _encode(self, rows: list[int], sources: Sequence[str], rewrites: Sequence[str], styles: Sequence[str]
                ) -> tuple[list[int], dict[str, list[list[int]]], list[list[int]]]:
        """(rows, prompt ids per context, scored ids) of the given rows."""
        rewrite_ids = self.chat.rewrite_ids([rewrites[i] for i in rows])
        prompts = {ctx: self.prompt_ids(ctx, [sources[i] for i in rows], [styles[i] for i in rows])
                   for ctx in self.contexts}  # the paper's three, then the guard's
        if self.variant == "authors":  # the first rewrite token is context, not scored
            prompts = {ctx: [p + t[:1] for p, t in zip(ids, rewrite_ids, strict=True)] for ctx, ids in prompts.items()}
            return rows, prompts, [t[1:] for t in rewrite_ids]
        return rows, prompts, rewrite_ids

    def _check_lengths(self, prompts: dict[str, list[list[int]]], targets: list[list[int]], rows: list[int]
                       ) -> set[int]:
        """The rows (caller's numbering) longer than the model's context: an error, or skipped with a warning."""
        limit = self.max_length
        if not limit:
            return set()
        skipped = set()
        for j, target in enumerate(targets):
            i = rows[j]
            longest = max(len(prompts[ctx][j]) for ctx in self.contexts) + len(target)
            if longest > limit:
                if self.on_overflow == "error":
                    raise RowError(i, f"prompt + rewrite is {longest} tokens, longer than the model's context of "
                                      f"{limit}; shorten it{option_advice('on_overflow', 'skip')}")
                skipped.add(i)
        if skipped:
            one = len(skipped) == 1
            warnings.warn(RowsWarning(
                f"{{count}} row{'' if one else 's'} longer than the model's context of {limit} tokens "
                f"{'was' if one else 'were'} skipped (NaN scores): row{'' if one else 's'} {{rows}}", skipped),
                stacklevel=4)
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


def shared_logprob(model: Any = None, base_url: str | None = None, backend: str | None = None,
                   **options: Any) -> LogProb:
    """A :class:`LogProb` whose backend is :func:`styleeval.backends.shared_backend`: weights loaded once per process
    per (model, device, dtype, revision), one client per server. Options are :class:`LogProb`'s and its backend's
    (the backend's declared options go to it, the others to :class:`LogProb`; ``None`` means not given); used by the
    ``evaluate`` module, the meta-evaluation and the apps."""
    mine, own = split_options(options, backend, base_url)
    backend = shared_backend(model, base_url, backend=backend, **mine)
    key = (id(backend), *sorted((k, repr(v)) for k, v in own.items()))
    if key not in _SHARED or _SHARED[key].backend is not backend:
        _SHARED[key] = LogProb(backend=backend, progress=False, **own)
    return _SHARED[key]
