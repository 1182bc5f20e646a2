"""How datasets and metrics are named in tables and plots: shared by the reports and plots of
:mod:`styleeval.metaeval` and :mod:`styleeval.systems`, which import it and not each other.

A label says what computed its number: a metric whose scores are negated before correlating (lower is better: TER,
PINC) is shown ``(negated)`` in every table and plot that negates it, and one computed with the
:data:`~styleeval.hub.TINY_RANDOM` preset's random weights carries :data:`RANDOM_WEIGHTS` (its signature's ``model``
field says so, on every machine)."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.hub import MODEL_AGREEMENT, PRESETS, TINY_RANDOM, UNKNOWN_AGREEMENT
from styleeval.signature import Signature

RANDOM_WEIGHTS = "random weights: not for numbers"
"""The warning on everything computed with the tiny-random preset (its numbers test the pipeline, nothing else)."""
RANDOM_MARK = " [random weights]"
"""Appended to a random-weight metric's label in tables and plots (a warning line with :data:`RANDOM_WEIGHTS`
sits above each of them)."""
NEGATED_MARK = " (negated)"
"""Appended to a lower-is-better metric's label where its scores are negated (higher = better)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for one: every count a report or a command prints goes through it.

    >>> counted(1, "row"), counted(2, "row"), counted(0, "system"), counted(1, "was", "were")
    ('1 row', '2 rows', '0 systems', '1 was')
    """
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def dataset_label(name: str) -> str:
    """A corpus's label in tables, as its module declares it (the name itself for a dataset that is no corpus)."""
    # imported here: the corpora import ``datasets`` (seconds), which no other label needs (the Space's readings)
    from styleeval.corpora import SPECS  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    spec = SPECS.get(name)
    return spec.label if spec is not None else name


_WORDS = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER", "meteor": "METEOR", "pinc": "PINC", "bleurt": "BLEURT",
          "comet": "COMET", "bertscore": "BERTScore", "emd": "EMD", "kl": "KL", "js": "JS"}
"""How the metrics' own names are written (as their authors and sacrebleu write them); other words are capitalized."""


def _word(word: str) -> str:
    """One word of a metric name as its authors write it; chrF's variants as sacrebleu names them (``chrf++`` ->
    ``chrF++``, ``chrf1`` -> ``chrF1``)."""
    variant = re.fullmatch(r"chrf(\d*\+*)", word.lower())
    if variant:
        return "chrF" + variant.group(1)
    return _WORDS.get(word.lower(), word.title())


def metric_label(name: str) -> str:
    """A metric's one display name, in every report, table, plot and the Space: ``s_bleu`` -> ``S-BLEU``, ``r_chrf``
    -> ``R-chrF``, ``s_chrf++`` (``s_chrf:word_order=2``) -> ``S-chrF++``, ``s_paper_bleu`` -> ``S-Paper-BLEU``,
    ``logprob_content`` -> ``LogProb content``.

    >>> [metric_label(n) for n in ("s_bleu", "s_chrf", "r_ter", "s_paper_bleu", "rs_comet", "s_cosine")]
    ['S-BLEU', 'S-chrF', 'R-TER', 'S-Paper-BLEU', 'RS-COMET', 'S-Cosine']
    >>> [metric_label(n) for n in ("s_chrf++", "r_chrf1+")]
    ['S-chrF++', 'R-chrF1+']
    """
    for prefix in ("rs_", "s_", "r_"):
        if name.startswith(prefix):
            words = name[len(prefix):].split("_")
            return f"{prefix[:-1].upper()}-" + "-".join(_word(w) for w in words)
    if name.startswith("logprob_"):
        return f"LogProb {name[8:]}"
    return name


SYSTEM_SCORE = "system score"
"""The column, in every table of system-level agreement with humans (``styleeval evaluate``'s agreement tables,
``metaeval``'s Lai table and ``wmt_kendall.csv``), that names how a metric's system scores were made from its rows
(:func:`system_statistic`): one metric's r with the humans differs with it (S-BLEU on Lai's systems: corpus BLEU
in ``evaluate``, mean sentence BLEU in ``metaeval``)."""

_SACREBLEU = {"bleu": "BLEU", "chrf": "chrF", "ter": "TER"}
"""sacrebleu's metrics (the registry names ``s_bleu``, ``r_chrf``...: their row scores are sacrebleu's sentence
scores), as sacrebleu writes them."""


@dataclass(frozen=True)
class SystemStatistic:
    """How a system's score is made from its rows: ``label`` (the :data:`SYSTEM_SCORE` cell: ``corpus BLEU``) and
    ``definition`` (what the legend under the table says of it): one wording for every report."""

    label: str
    definition: str


CORPUS_SCORE = "sacrebleu's corpus_score of the system's rewrites (their statistics summed: what `sacrebleu -i` prints)"
MEAN_SENTENCE = "the mean of the system's sentence scores (sacrebleu's sentence_score of each row)"
MEAN_ROW = "the mean of the system's row scores"


def system_statistic(aggregate: str, signature: Any = "") -> SystemStatistic:
    """How a metric's system score is made from its rows, named as every report names it: ``aggregate`` ``corpus``
    (sacrebleu's corpus score: ``corpus BLEU``) or ``mean`` (of the row scores: ``mean sentence BLEU`` for sacrebleu's
    metrics, whose row scores are sentence scores, ``mean row score`` for the others). The metric's kind is read from
    its ``signature``'s name (``s_bleu``, ``r_chrf``...: the registry name, which an ``as=NAME`` alias keeps).

    >>> [system_statistic(a, s).label for a, s in (("corpus", "s_bleu|nrefs:1"), ("mean", "s_bleu|nrefs:1"),
    ...                                               ("mean", "r_chrf|nc:6"), ("mean", "logprob|model:1b"))]
    ['corpus BLEU', 'mean sentence BLEU', 'mean sentence chrF', 'mean row score']
    """
    try:
        name = Signature.parse(signature).name
    except ValueError:
        name = ""
    prefix, _, kind = name.partition("_")
    word = _SACREBLEU.get(kind) if prefix in ("s", "r") else None
    if aggregate == "corpus":
        return SystemStatistic(f"corpus {word}" if word else "corpus score", CORPUS_SCORE)
    if aggregate != "mean":
        raise ValueError(f"aggregate must be 'corpus' or 'mean', got {aggregate!r}")
    return SystemStatistic(f"mean sentence {word}", MEAN_SENTENCE) if word else SystemStatistic("mean row score",
                                                                                                  MEAN_ROW)


def system_score_legend(statistics: Iterable[SystemStatistic]) -> str:
    """The legend of a :data:`SYSTEM_SCORE` column: each definition once, after the statistics it defines, and, where
    one metric kind is shown both ways (corpus and mean sentence BLEU), that they are different statistics.

    >>> print(system_score_legend([system_statistic("corpus", "s_bleu|tok:13a"), system_statistic("corpus", "s_ter|a:b"),
    ...                            system_statistic("mean", "s_bleu|tok:13a")]))  # doctest: +NORMALIZE_WHITESPACE
    System score: corpus BLEU, corpus TER = sacrebleu's corpus_score of the system's rewrites (their statistics
    summed: what `sacrebleu -i` prints); mean sentence BLEU = the mean of the system's sentence scores (sacrebleu's
    sentence_score of each row). Corpus and mean sentence BLEU are different statistics: their system scores, and
    their r with the humans, differ.
    """
    shown = list(dict.fromkeys(statistics))
    if not shown:
        return ""
    groups: dict[str, list[str]] = {}
    for statistic in shown:
        groups.setdefault(statistic.definition, []).append(statistic.label)
    text = "System score: " + "; ".join(f"{', '.join(labels)} = {definition}"
                                        for definition, labels in groups.items()) + "."
    words = [s.label.removeprefix("corpus ").removeprefix("mean sentence ") for s in shown]
    both = [w for w in dict.fromkeys(words) if words.count(w) > 1 and w in _SACREBLEU.values()]
    if both:
        text += (f" Corpus and mean sentence {', '.join(both)} are different statistics: their system scores, and "
                 "their r with the humans, differ.")
    return text


LAI_NAMES = {"comet": "COMET", "comet-w": "COMET-w", "bleurt": "BLEURT", "bertscore": "BERTScore", "meteor": "METEOR",
             "chrf": "chrF", "wmd": "WMD", "bleu": "BLEU", "rouge-1": "ROUGE-1", "rouge-2": "ROUGE-2",
             "rouge-l": "ROUGE-L", "c-pt16": "C-PT16", "c-gyafc": "C-GYAFC", "r-pt16": "R-PT16", "ppl": "GPT-2 PPL",
             "chatgpt-content": "ChatGPT", "chatgpt-style": "ChatGPT style", "chatgpt-fluency": "ChatGPT fluency"}
"""Lai et al.'s released scores (``lai:<score>``) as their paper names them."""


def figure_metric_label(name: str) -> str:
    """A metric's name on a figure of Lai et al.'s analyses: :func:`metric_label`, and Lai's released scores
    (``lai:<score>``) as their paper names them, a content score against the source ``S-`` and against the reference
    ``R-`` as ours, ``(Lai)`` after it.

    >>> [figure_metric_label(n) for n in ("lai:comet", "lai:bertscore-ref", "lai:c-gyafc", "lai:chatgpt-content-ref", "r_chrf")]
    ['S-COMET (Lai)', 'R-BERTScore (Lai)', 'C-GYAFC (Lai)', 'R-ChatGPT (Lai)', 'R-chrF']
    """
    if not name.startswith("lai:"):
        return metric_label(name)
    score = name.removeprefix("lai:")
    reference = score.endswith("-ref")
    base = score.removesuffix("-ref")
    if base not in LAI_NAMES:
        return name
    content = base in {"comet", "comet-w", "bleurt", "bertscore", "meteor", "chrf", "wmd", "bleu", "rouge-1", "rouge-2",
                       "rouge-l", "chatgpt-content"}
    side = ("R-" if reference else "S-") if content else ""
    return f"{side}{LAI_NAMES[base]} (Lai)"


def shown_label(name: str, negated: bool = False, random_weights: bool = False) -> str:
    """:func:`metric_label` with what a reader must know beside it: ``(negated)`` where the table or plot negates the
    scores, :data:`RANDOM_MARK` where they come from random weights.

    >>> shown_label("s_ter", negated=True)
    'S-TER (negated)'
    >>> shown_label("logprob_content", random_weights=True)
    'LogProb content [random weights]'
    """
    return metric_label(name) + (NEGATED_MARK if negated else "") + (RANDOM_MARK if random_weights else "")


def signed_label(name: str, signature: Any, negated: bool = False) -> str:
    """:func:`shown_label` of a metric whose random weights (if any) its ``signature`` tells."""
    return shown_label(name, negated, has_random_weights(signature))


def has_random_weights(signature: Any) -> bool:
    """Whether a number signed ``signature`` was computed with random weights: its ``model`` field (or a nested
    signature's) names the :data:`~styleeval.hub.TINY_RANDOM` preset. Anything that is not a signature: ``False``.

    >>> has_random_weights("logprob|model:tiny-random@local-218570e6b3ba|variant:default")
    True
    >>> has_random_weights("s_bleu|tok:13a"), has_random_weights("")
    (False, False)
    """
    try:
        parsed = Signature.parse(signature)
    except ValueError:
        return False
    for key, value in parsed.fields.items():
        if isinstance(value, Signature):
            if has_random_weights(value):
                return True
        elif key == "model" and value.split("@", 1)[0].lower() == TINY_RANDOM:
            return True
    return False


def signed_models(signature: Any) -> list[str]:
    """The models a number signed ``signature`` was computed with: its ``model`` fields (a nested signature's too),
    without their digests; ``[]`` for anything that is not a signature or names no model.

    >>> signed_models("logprob|model:gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f|variant:default")
    ['gguf:smollm2-135M:Q4_1']
    >>> signed_models("s_bleu|tok:13a")
    []
    """
    try:
        parsed = Signature.parse(signature)
    except ValueError:
        return []
    out: list[str] = []
    for key, value in parsed.fields.items():
        if isinstance(value, Signature):
            out += [m for m in signed_models(value) if m not in out]
        elif key == "model" and value.split("@", 1)[0] not in out:
            out.append(value.split("@", 1)[0])
    return out


def model_preset(model: str) -> str | None:
    """The preset a signed model name (:func:`signed_models`) is, or ``None``: a Hub id of :data:`~styleeval.hub.
    PRESETS`, a GGUF preset's file (``gguf:smollm2-135M:Q4_1``: by the name its file signs as), ``tiny-random``.

    >>> model_preset("meta-llama/Llama-3.2-1B-Instruct"), model_preset("gguf:smollm2-135M:Q4_1")
    ('1b', 'smollm2-135m')
    >>> model_preset("gguf:Qwen2.5-Coder-1.5B:Q4_K_M")
    'qwen2.5-coder-1.5b'
    >>> model_preset("my/own-model") is None
    True
    """
    low = model.lower()
    if low == TINY_RANDOM:
        return TINY_RANDOM
    gguf = next((key for key, source in GGUF_PRESETS.items() if source.signed_name.lower() == low), None)
    if gguf is not None:
        return gguf
    return next((key for key, hub_id in PRESETS.items() if hub_id.lower() == low), None)


@dataclass(frozen=True)
class ModelWorth:
    """What a report's numbers of one model are worth: the model (as signed), its preset, the metrics computed with
    it and its known agreement with the human ratings (:data:`~styleeval.hub.MODEL_AGREEMENT`)."""

    model: str
    preset: str | None
    metrics: tuple[str, ...]
    agreement: str

    def line(self) -> str:
        """``gguf:smollm2-135M:Q4_1 (smollm2-135m; LogProb content, LogProb style): LogProb content vs ...``."""
        named = self.model if self.preset in (None, self.model) else f"{self.model} ({self.preset})"
        return f"{named}, for {', '.join(metric_label(m) for m in self.metrics)}: {self.agreement}"

    def to_dict(self) -> dict[str, Any]:
        """For ``report.json``."""
        return {"model": self.model, "preset": self.preset, "metrics": list(self.metrics),
                "agreement": self.agreement}


def model_worth(signatures: Mapping[str, Any]) -> list[ModelWorth]:
    """One :class:`ModelWorth` per model the metrics of ``signatures`` (label -> signature) were computed with, in
    the order they first appear: what a report says of each model it uses.

    >>> [w.line() for w in model_worth({"logprob_content": "logprob|model:tiny-random@local-2185",
    ...                                 "s_bleu": "s_bleu|tok:13a"})]
    ['tiny-random, for LogProb content: random weights, numbers mean nothing']
    """
    metrics: dict[str, list[str]] = {}
    for label, signature in signatures.items():
        for model in signed_models(signature):
            metrics.setdefault(model, []).append(label)
    out = []
    for model, labels in metrics.items():
        preset = model_preset(model)
        out.append(ModelWorth(model, preset, tuple(labels), MODEL_AGREEMENT.get(preset or "", UNKNOWN_AGREEMENT)))
    return out


def model_worth_lines(signatures: Mapping[str, Any]) -> list[str]:
    """``Model: <line>`` for each model of ``signatures`` (:func:`model_worth`): the reports' lines on what their
    numbers are worth."""
    return [f"Model: {w.line()}" for w in model_worth(signatures)]


def warning_field(signature: Any) -> dict[str, str]:
    """``{"warning": RANDOM_WEIGHTS}`` for results signed with random weights, else ``{}``: the key every result dict
    (the evaluate modules', the Space's API) carries beside such numbers.

    >>> warning_field("logprob|model:tiny-random@local-218570e6b3ba"), warning_field("s_bleu|tok:13a")
    ({'warning': 'random weights: not for numbers'}, {})
    """
    return {"warning": RANDOM_WEIGHTS} if has_random_weights(signature) else {}


def random_weight_metrics(signatures: Mapping[str, Any]) -> list[str]:
    """The metrics (keys of ``signatures``, in order) computed with random weights."""
    return [name for name, signature in signatures.items() if has_random_weights(signature)]


def random_weights_warning(names: Iterable[str]) -> str:
    """``random weights: not for numbers: LogProb content, LogProb style (the tiny-random preset)``, or ``""`` when
    ``names`` is empty."""
    names = list(names)
    if not names:
        return ""
    return (f"{RANDOM_WEIGHTS}: {', '.join(metric_label(n) for n in names)} "
            f"{'was' if len(names) == 1 else 'were'} computed with the {TINY_RANDOM} preset's random weights")


def with_warning(frame: Any, random: Iterable[str], column: str = "metric") -> Any:
    """A table (pandas DataFrame) with a ``warning`` column, :data:`RANDOM_WEIGHTS` on the rows whose ``column``
    names a metric of ``random`` (empty elsewhere), when ``random`` names any; else ``frame`` as it is."""
    random = set(random)
    if not random:
        return frame
    return frame.assign(warning=[RANDOM_WEIGHTS if m in random else "" for m in frame[column]])


def note_models(fig: Any, signatures: Mapping[str, Any], width: int = 120) -> None:
    """Write what the figure's model numbers are worth (:func:`model_worth_lines`) across the bottom of a laid-out
    matplotlib figure, when any of ``signatures`` names a model: the figure grows at the bottom to make room, every
    axes keeps its place in inches."""
    lines = [part for line in model_worth_lines(signatures) for part in textwrap.wrap(line, width)]
    if not lines:
        return
    width_in, height = fig.get_size_inches()
    extra = 0.1 + 0.16 * len(lines)
    fig.set_size_inches(width_in, height + extra)
    for ax in fig.axes:  # keep every axes where it was, in inches: the figure grows at the bottom
        box = ax.get_position()
        ax.set_position([box.x0, (box.y0 * height + extra) / (height + extra), box.width,
                         box.height * height / (height + extra)])
    for text_object in [*fig.texts, *([fig._suptitle] if getattr(fig, "_suptitle", None) else [])]:
        x, y = text_object.get_position()
        text_object.set_position((x, (y * height + extra) / (height + extra)))
    fig.text(0.01, 0.05 / (height + extra), "\n".join(lines), ha="left", va="bottom", color="#333333", fontsize=7)


def mark_figure(fig: Any, names: Iterable[str]) -> None:
    """Write :func:`random_weights_warning` across the top of a laid-out matplotlib figure, when any of ``names`` was
    computed with random weights: the figure grows at the top to make room, every axes keeps its place in inches."""
    text = random_weights_warning(names)
    if not text:
        return
    width, height = fig.get_size_inches()
    extra = 0.35
    fig.set_size_inches(width, height + extra)
    for ax in fig.axes:  # keep every axes where it was, in inches: the figure grows at the top
        box = ax.get_position()
        ax.set_position([box.x0, box.y0 * height / (height + extra), box.width, box.height * height / (height + extra)])
    for text_object in [*fig.texts, *([fig._suptitle] if getattr(fig, "_suptitle", None) else [])]:
        x, y = text_object.get_position()
        text_object.set_position((x, y * height / (height + extra)))
    fig.text(0.5, 1 - 0.08 / (height + extra), text, ha="center", va="top", color="#c00000", fontsize=9,
             fontweight="bold", wrap=True)

