"""LogProb as a reward for reinforcement learning: a callable with TRL's reward-function signature.

``trl.GRPOTrainer(reward_funcs=[LogProbReward(...)])`` takes it as it is (any trainer that calls
``reward(prompts=..., completions=..., **dataset_columns) -> list[float]`` does). Each completion is scored as a
rewrite of its row's source text towards its row's target style, both read from the dataset's columns, by
:class:`styleeval.LogProb` on the same backends as everything else (the local engine, a vLLM server, llama.cpp),
one batched call per reward call. The reward of a row is

    reward = content_weight * content + style_weight * style

with LogProb's content (the paper's equation 1: mean log of the best of the three instructions' token probabilities,
<= 0) and style (equation 2: mean probability gain of the style instruction, in [-1, 1]); each alone with the other
weight 0, then equal to ``LogProb.score``'s number. The default weights are explained in docs/training.md ("The
weights").

``guard="prompt"`` is the guarded reward (docs/training.md, "The hole, measured, and the prompt guard"): LogProb with the prompt guard
(:func:`styleeval.logprob.guarded_equations`), so that a completion the scorer reads better as the prompt's text (the
style instruction echoed, or what the instruction alone calls for) than as a rewrite, paraphrase or repetition of the
source gets ``floor``:

    P = max(1/n sum_i log p_i^echo, 1/n sum_i log p_i^unsourced)
    reward = content_weight * content + style_weight * style   if P < content, else floor

The signature says ``guard:prompt``; plain LogProb (the evaluation metric) is unchanged. ``guard="repeat"`` floors a
completion that repeats itself (:func:`styleeval.logprob.metric.self_repeat`: a run of 4 words written at least twice
and more often than the source holds it; docs/training.md, "The repeat guard"), ``guard="prompt+repeat"`` does both.

Rows LogProb cannot score get ``floor``, never an exception in the middle of training: an
empty or blank completion, a completion holding a lone surrogate (half of a UTF-16 pair, U+D800 to U+DFFF: no text,
what a decoder with ``errors="surrogateescape"`` makes of bytes that are not UTF-8; no tokenizer takes it), a row
longer than the scoring model's context, a non-finite score. The dataset's columns are the user's input, not the
policy's: a source or style that is not a non-empty text is refused at the first call, naming the row. A truncated
completion (cut at the trainer's ``max_completion_length``) is scored as the text it is, followed by the
end-of-turn token: LogProb itself finds that end improbable after a cut sentence (``mask_truncated_completions=True``
in TRL's config leaves such completions out of the loss instead).

Every score is a function of its row and the signature: the reward of a row does not depend on its batch-mates. The
signature of what scored is logged (``logging``, logger ``styleeval.rewards``) at the first call and whenever it
changes (a server that starts serving other weights), and kept in :attr:`LogProbReward.signature`.

>>> from styleeval.rewards import LogProbReward
>>> reward = LogProbReward(model="tiny-random", source_column="text", style="formal")
>>> values = reward(prompts=["Rewrite formally: gimme that."], completions=["Please give me that."],
...                 text=["gimme that."])
>>> len(values), values[0] < 0
(1, True)
>>> reward(prompts=["Rewrite formally: gimme that."], completions=["  "], text=["gimme that."])
[-34.0]
"""

from __future__ import annotations

import logging
import math
import numbers
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from styleeval.errors import RowsWarning, UserError
from styleeval.logprob import LogProb
from styleeval.validation import lone_surrogate, surrogate_error

__all__ = ["STYLE_WEIGHT", "WORST_CONTENT", "LogProbReward", "completion_text", "default_floor", "weighted_reward"]

LOG = logging.getLogger(__name__)

STYLE_WEIGHT = 24.0
"""The default weight of style against content 1.0: the ratio of the two terms' spreads (standard deviations, 0.727
and 0.0307) over the 500 rated rewrites of the style-gap test set scored by smollm2-135m, so that each term moves the
reward as much. At weight 1, copying the source outscores every rewrite people rated faithful and in style (257 of
257); at 24, 139 of 257 (docs/training.md, "The weights")."""

WORST_CONTENT = -10.0
"""The content of the default floor: a mean token probability of 4.5e-5, below every rated rewrite of the test set
(lowest -7.6 with smollm2-135m)."""

TRAINER_KEYWORDS = ("completion_ids", "trainer_state", "log_extra", "log_metric", "environments")
"""What TRL passes beside the dataset's columns: never read as a column."""

NOT_PASSED = ("prompt", "completion", "completion_ids")
"""Dataset columns TRL never passes to a reward as columns (the prompts and completions are its arguments)."""

_SCORING = threading.Lock()
"""One reward call scores at a time: ``warnings.catch_warnings`` swaps the process's warning filters, and two calls
inside it at once would leave the ignoring of :class:`RowsWarning` installed for good."""


def weighted_reward(content: float, style: float, content_weight: float, style_weight: float, floor: float) -> float:
    """``content_weight * content + style_weight * style``; ``floor`` where that is not a finite number."""
    value = content_weight * content + style_weight * style
    return value if math.isfinite(value) else floor


def default_floor(content_weight: float, style_weight: float) -> float:
    """The reward of a row with content :data:`WORST_CONTENT` and style -1 (its lowest possible): below every rated
    rewrite of the test set with smollm2-135m, whatever the weights. A model that finds text far less probable (a
    random-weight one scores content -11 to -18) can score real rows below it: give ``floor=`` there."""
    return content_weight * WORST_CONTENT - style_weight


def completion_text(completion: Any, row: int) -> str:
    """The text of one completion: a string (a plain dataset), or a conversation (a list of messages: the text of its
    last assistant message, whose content is a string or a list of parts ``{"type": "text", "text": ...}``; the
    tool results after it, where the policy's answer to them was cut away, are not its text). ``None`` content or text
    (a reply that is only a tool call) and a conversation with no assistant message are the empty text."""
    if isinstance(completion, str):
        return completion
    if not (isinstance(completion, Sequence) and not isinstance(completion, (bytes, bytearray))
            and all(isinstance(message, Mapping) for message in completion)):
        raise UserError(f"completion {row}: expected a string or a list of chat messages, got "
                        f"{type(completion).__name__}")
    replies = [message for message in completion if message.get("role", "assistant") == "assistant"]
    content = replies[-1].get("content") if replies else None
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        return "".join(_part_text(part, row) for part in content)
    raise UserError(f"completion {row}: the message's content is {type(content).__name__}, expected a string or a "
                    'list of parts {"type": "text", "text": ...}')


def _part_text(part: Any, row: int) -> str:
    """The text of one part of a message's content: a text part's text (``None``: empty), nothing for the others."""
    if not (isinstance(part, Mapping) and part.get("type") == "text"):
        return ""
    text = part.get("text")
    if text is None or isinstance(text, str):
        return text or ""
    raise UserError(f"completion {row}: a text part's text is {type(text).__name__}, not a string")


def _number(name: str, value: Any, bound: str = "") -> float:
    """``value`` as a float, when it is a finite real number (a NumPy one included), not a bool, and ``>= 0`` where
    ``bound`` says so; else refused naming ``name``."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value)
            or (bound and value < 0)):
        raise UserError(f"{name} must be a finite number{' ' + bound if bound else ''}, got {value!r}")
    return float(value) + 0.0  # -0.0 is 0.0


class LogProbReward:
    """A TRL reward function from LogProb content and style.

    Args:
        source_column: the dataset column with each row's source text (TRL passes every column to the reward).
        style_column: the dataset column with each row's target style; ignored when ``style`` is given.
        style: one target style for every row (e.g. ``"formal"``) instead of a column.
        content_weight, style_weight: the reward is ``content_weight * content + style_weight * style``
            (default 1.0 and :data:`STYLE_WEIGHT`); ``style_weight=0`` rewards content alone, ``content_weight=0``
            style alone.
        floor: the reward of a row LogProb cannot score (empty or blank completion, a lone surrogate in it, longer
            than the model's context, a non-finite score);
            default :func:`default_floor` (-34.0 with the default weights).
        **logprob_options: :class:`styleeval.LogProb`'s arguments (``model``, ``base_url``, ``backend``: a backend
            object shared with other scorers, ``dtype``, ``guard="prompt"``, ``"repeat"`` or ``"prompt+repeat"``: the guarded reward...). ``on_overflow``
            and ``progress`` are the reward's own (rows too long get ``floor``; no bars in a training loop): giving
            them is an error.
    """

    def __init__(self, *, source_column: str = "source", style_column: str = "style", style: str | None = None,
                 content_weight: float = 1.0, style_weight: float = STYLE_WEIGHT, floor: float | None = None,
                 **logprob_options: Any) -> None:
        own = sorted(set(logprob_options) & {"on_overflow", "progress", "return_tokens"})
        if own:
            raise UserError(f"{', '.join(own)}: set by the reward (a row longer than the model's context gets the "
                            "floor, no progress bars); leave it out")
        content_weight = _number("content_weight", content_weight, ">= 0")
        style_weight = _number("style_weight", style_weight, ">= 0")
        if floor is None:
            floor = default_floor(content_weight, style_weight)
            if not math.isfinite(floor):
                raise UserError(f"the default floor of content_weight={content_weight:g}, style_weight="
                                f"{style_weight:g} is {floor}: give smaller weights or floor=")
        floor = _number("floor", floor)
        if content_weight == 0 and style_weight == 0:
            raise UserError("content_weight and style_weight are both 0: every reward would be 0")
        for option, column in (("source_column", source_column), ("style_column", None if style else style_column)):
            if column in NOT_PASSED + TRAINER_KEYWORDS:
                raise UserError(f"{option}={column!r}: TRL never passes {column!r} to a reward as a dataset column; "
                                "name another column")
        if style is not None and not (isinstance(style, str) and style.strip()):
            raise UserError(f"style must be a non-empty string, got {style!r}")
        self.source_column, self.style_column, self.style = source_column, style_column, style
        self.content_weight, self.style_weight, self.floor = content_weight, style_weight, floor
        self.logprob = LogProb(on_overflow="skip", progress=False, **logprob_options)
        self.__name__ = ("logprob" if style_weight and content_weight else (
            "logprob_content" if content_weight else "logprob_style")) + ("_guarded" if self.logprob.guard else "")
        """The name TRL logs the reward under (``rewards/<name>/mean``)."""
        self._logged: str | None = None

    @property
    def signature(self) -> str:
        """The LogProb signature of what scores, and the reward's weights and floor."""
        return (f"{self.logprob.signature}|reward:{self.content_weight:g}*content+{self.style_weight:g}*style"
                f"|floor:{self.floor:g}")

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        """One reward per completion, in order. ``columns`` are the dataset's (TRL repeats each row's values for its
        completions); what TRL passes beside them (``completion_ids``, ``trainer_state``, ``log_metric``...) is used
        where it helps (``log_metric``: the batch's mean content and style, and the share of floored rows;
        ``log_extra``: each row's content and style in the completions table) and never read as a column."""
        n = len(completions)
        texts = [completion_text(c, i) for i, c in enumerate(completions)]
        sources = self._column(self.source_column, columns, n, "source_column")
        styles = [self.style] * n if self.style is not None else self._column(self.style_column, columns, n,
                                                                                 "style_column or style=")
        if len(prompts) != n:
            raise UserError(f"{len(prompts)} prompts for {n} completions: one prompt per completion")
        scored = [i for i, text in enumerate(texts) if text.strip() and lone_surrogate(text) is None]
        content, style = [math.nan] * n, [math.nan] * n
        with _SCORING:
            if scored:
                with warnings.catch_warnings():  # a row past the context is the floor, said by log_metric
                    warnings.simplefilter("ignore", RowsWarning)
                    scores = self.logprob.score([sources[i] for i in scored], [texts[i] for i in scored],
                                                [styles[i] for i in scored])
                for i, row in zip(scored, scores, strict=True):
                    content[i], style[i] = row["content"], row["style_strength"]
            self._log_signature()
        rewards = [weighted_reward(c, s, self.content_weight, self.style_weight, self.floor)
                   for c, s in zip(content, style, strict=True)]
        _report(columns, content, style, guarded=self.logprob.guard is not None)
        return rewards

    def _column(self, name: str, columns: Mapping[str, Any], n: int, option: str) -> list[str]:
        if name not in columns or name in TRAINER_KEYWORDS:
            given = sorted(k for k in columns if k not in TRAINER_KEYWORDS)
            raise UserError(f"no dataset column {name!r} for the reward (columns passed: "
                            f"{', '.join(given) or 'none'}): add it to the dataset or set {option}")
        values = list(columns[name])
        if len(values) != n:
            raise UserError(f"column {name!r} has {len(values)} values for {n} completions")
        for i, value in enumerate(values):
            if not isinstance(value, str) or not value.strip():
                raise UserError(f"row {i}: column {name!r} is {value!r}, not a non-empty text")
            at = lone_surrogate(value)
            if at is not None:
                raise surrogate_error(f"row {i}: column {name!r}", value, at)
        return values

    def _log_signature(self) -> None:
        signature = self.signature
        if signature != self._logged:
            if self._logged is not None:
                LOG.warning("the reward's scorer changed during training: %s (was %s)", signature, self._logged)
            else:
                LOG.info("LogProb reward scored by %s", signature)
            self._logged = signature


def _report(columns: Mapping[str, Any], content: list[float], style: list[float], guarded: bool = False) -> None:
    """The batch's numbers through TRL's ``log_metric`` / ``log_extra`` hooks, where the trainer passes them; with a
    guard also the share of rows it floored (``logprob/guarded``: content ``-inf``, among the floored)."""
    log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
    finite = [i for i, c in enumerate(content) if math.isfinite(c)]
    if callable(log_metric):
        if finite:
            log_metric("logprob/content", sum(content[i] for i in finite) / len(finite))
            log_metric("logprob/style", sum(style[i] for i in finite) / len(finite))
        log_metric("logprob/floored", (len(content) - len(finite)) / len(content) if content else 0.0)
        if guarded:
            log_metric("logprob/guarded", sum(c == -math.inf for c in content) / len(content) if content else 0.0)
    if callable(log_extra):
        log_extra("logprob_content", content)
        log_extra("logprob_style", style)
