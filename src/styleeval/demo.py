"""What the Space (``spaces/style_eval_demo``) shows, as plain functions: the UI only lays them out.

- :meth:`Demo.score`: LogProb content and style, the autorater (expected mode; paper mode on demand) and
  source-based BLEU/chrF for contrast, each with a one-line reading, and the rewrite token by token labelled with the
  instruction that explains it best (``unexplained`` below :data:`UNEXPLAINED_BELOW`).
- :meth:`Demo.compare`: two rewrites of one source, which one each metric prefers.
- :meth:`Demo.batch`: a CSV/JSONL file scored row by row, per-system means.
- :func:`metaeval_summary`: the test-set correlation table of the sacrebleu metrics (the Space computes it at start).

The model comes from ``STYLEEVAL_MODEL`` (Hub id or local folder; default the paper's 1B) or the argument;
``STYLEEVAL_BASE_URL`` points LogProb and the autorater at a vLLM server instead (``STYLEEVAL_TOKENIZER`` names the
tokenizer). Every bad input raises ``ValueError`` with a message a user can act on.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import Any

from styleeval.errors import UserError
from styleeval.labels import RANDOM_MARK, RANDOM_WEIGHTS, has_random_weights, mark_figure

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


def reading_content(value: float) -> str:
    """One line on what a LogProb content score means."""
    if not math.isfinite(value):
        return "no token could be scored"
    p = math.exp(value)
    return (f"on average each token has probability {p:.2f} under its best instruction; "
            + ("close to a faithful rewrite" if p > 0.5 else "some tokens are explained by no instruction: "
               "look for swapped, invented or dropped content in the highlighted tokens"))


def reading_style(value: float) -> str:
    """One line on what a LogProb style score means."""
    if not math.isfinite(value):
        return "no token could be scored"
    if value > 0.01:
        return "the style instruction explains the rewrite better than paraphrasing or repeating"
    if value < -0.01:
        return "paraphrasing or repeating explains the rewrite better than the style instruction"
    return "about neutral: the style change is small (typical values are close to 0)"


def model_from_env() -> dict[str, Any]:
    """The model the apps use, from the environment: ``STYLEEVAL_MODEL`` (preset, Hub id or local path; default
    ``1b`` locally, the server's only model on a server), ``STYLEEVAL_BASE_URL`` (a server instead of a local
    model) and ``STYLEEVAL_TOKENIZER``; keyword arguments of :func:`styleeval.logprob.shared_logprob` and
    :func:`styleeval.autorater.rater.shared_autorater` (``None``: not given)."""
    return {"model": os.environ.get("STYLEEVAL_MODEL") or None,
            "base_url": os.environ.get("STYLEEVAL_BASE_URL") or None,
            "tokenizer": os.environ.get("STYLEEVAL_TOKENIZER") or None}


class Demo:
    """The demo's models, loaded once and shared by every request (thread-safe lazy loading); the autorater runs on
    LogProb's backend (one copy of the weights, one server client)."""

    def __init__(self, model: str | None = None, base_url: str | None = None, tokenizer: str | None = None,
                 autorater: bool = True) -> None:
        given = {"model": model, "base_url": base_url, "tokenizer": tokenizer}
        chosen = {**model_from_env(), **{k: v for k, v in given.items() if v}}
        self.model, self.base_url, self.tokenizer = chosen["model"], chosen["base_url"], chosen["tokenizer"]
        self.use_autorater = autorater
        self._lock = threading.Lock()
        self._logprob: Any = None
        self._judges: dict[str, Any] = {}

    @property
    def metric_options(self) -> str:
        """This demo's model as metric-spec options (``:model=...:base_url=...``)."""
        opts = {"model": self.model, "base_url": self.base_url, "tokenizer": self.tokenizer}
        return "".join(f":{k}={v}" for k, v in opts.items() if v)

    def logprob(self) -> Any:
        """The shared :class:`styleeval.LogProb`."""
        with self._lock:
            if self._logprob is None:
                from styleeval.logprob import LogProb

                self._logprob = LogProb(self.model, tokenizer=self.tokenizer, base_url=self.base_url, progress=False)
            return self._logprob

    def judge(self, mode: str = "expected") -> Any:
        """The shared :class:`styleeval.Autorater` of ``mode``, on LogProb's backend."""
        backend = self.logprob().backend
        with self._lock:
            if mode not in self._judges:
                from styleeval.autorater import Autorater

                self._judges[mode] = Autorater(backend=backend, mode=mode, progress=False)
            return self._judges[mode]

    @property
    def warning(self) -> str:
        """``"random weights: not for numbers: "`` when the demo's model has random weights (the tiny-random preset:
        its signature says so), put before every reading of its numbers; else ``""``."""
        return f"{RANDOM_WEIGHTS}: " if has_random_weights(self.logprob().signature) else ""

    # -- one rewrite ----------------------------------------------------------------------------------------------
    def score(self, source: str, rewrite: str, style: str, paper_mode: bool = False) -> dict[str, Any]:
        """Every score of one rewrite, with readings and the highlighted tokens (see the module docstring)."""
        from styleeval.explain import token_table
        from styleeval.metrics import get_metric

        source, style = check_text("source", source), check_text("target style", style)
        rewrite = check_text("rewrite", rewrite)
        row = self.logprob().score([source], [rewrite], [style], return_tokens=True)[0]
        tokens = token_table(row)
        warning = self.warning
        out: dict[str, Any] = {
            "content": row["content"], "style": row["style"],
            "content_reading": warning + reading_content(row["content"]),
            "style_reading": warning + reading_style(row["style"]),
            "tokens": [(t["token"], _label(t)) for t in tokens],
            "token_table": [[t["token"], readable(t["logp_style"]), readable(t["logp_paraphrase"]),
                             readable(t["logp_repeat"]), t["best"], readable(t["style"])] for t in tokens],
            "signature": self.logprob().signature,
        }
        if warning:
            out["warning"] = RANDOM_WEIGHTS
        for name in ("s_bleu", "s_chrf"):
            out[name] = get_metric(name).compute([source], [rewrite])[0]
        if self.use_autorater:
            rated = self.judge("expected").rate([source], [rewrite], [style])[0]
            out["autorater"] = {"meaning": rated["meaning"], "style": rated["style"]}
            if paper_mode:
                paper = self.judge("paper").rate([source], [rewrite], [style], fallback=None)[0]
                out["autorater_paper"] = {"meaning": paper["meaning"], "style": paper["style"],
                                          "reply": paper.get("reply"), "parsed": paper["parsed"]}
        return out

    # -- two rewrites ---------------------------------------------------------------------------------------------
    def compare(self, source: str, rewrite_a: str, rewrite_b: str, style: str) -> list[list[Any]]:
        """``[metric, A, B, preferred]`` rows: which rewrite each metric prefers."""
        a = self.score(source, rewrite_a, style)
        b = self.score(source, rewrite_b, style)
        mark = RANDOM_MARK if self.warning else ""
        rows = [["LogProb content" + mark, a["content"], b["content"]],
                ["LogProb style" + mark, a["style"], b["style"]]]
        if "autorater" in a:
            rows += [["Autorater meaning" + mark, a["autorater"]["meaning"], b["autorater"]["meaning"]],
                     ["Autorater style" + mark, a["autorater"]["style"], b["autorater"]["style"]]]
        rows += [["S-BLEU (vs source)", a["s_bleu"], b["s_bleu"]], ["S-chrF (vs source)", a["s_chrf"], b["s_chrf"]]]
        return [[name, readable(x), readable(y), prefers(x, y)] for name, x, y in rows]

    # -- a file ---------------------------------------------------------------------------------------------------
    def batch(self, path: str) -> tuple[list[dict[str, Any]], Any]:
        """Score a CSV/JSONL file (columns source, rewrite, style [, system, source_id]); returns the scored rows
        (with the signature) and the :class:`~styleeval.systems.SystemsReport` comparing the systems (means with
        bootstrap CIs, paired tests, clusters)."""
        import pandas as pd

        from styleeval.files.records import read_rows
        from styleeval.systems.evaluation import compare_systems

        name, size = os.path.basename(path), os.path.getsize(path)
        if size > MAX_UPLOAD_BYTES:  # checked before reading: memory stays bounded whatever is uploaded
            raise UserError(f"{name} is {size / 1e6:.1f} MB; the demo takes files up to {MAX_UPLOAD_BYTES / 1e6:g} MB "
                            f"({MAX_BATCH_ROWS} rows). Use `styleeval score` for larger files.")
        try:
            rows = read_rows(path)
        except (UserError, FileNotFoundError) as err:
            raise UserError(for_upload(str(err), path)) from None
        if len(rows) > MAX_BATCH_ROWS:
            raise UserError(f"The file has {len(rows)} rows; the demo scores at most {MAX_BATCH_ROWS}. "
                            "Use `styleeval score` for larger files.")
        for r in rows:
            for name, value in (("source", r.source), ("rewrite", r.rewrite), ("style", r.style)):
                if len(value) > MAX_CHARS:
                    raise UserError(f"row {r.row}: the {name} is longer than {MAX_CHARS} characters")
        scores = self.logprob().score([r.source for r in rows], [r.rewrite for r in rows], [r.style for r in rows])
        warning = {"warning": RANDOM_WEIGHTS} if self.warning else {}  # a column of the scored file
        out = []
        for r, s in zip(rows, scores):
            system = r.extra.get("system")
            out.append({"row": r.row, **{k: v for k, v in r.extra.items() if k != "system"},  # as `styleeval score`
                        "system": "(all)" if system is None or str(system).strip() == "" else str(system),
                        "source": r.source, "rewrite": r.rewrite, "style": r.style, "content": s["content"],
                        "style_strength": s["style"], "signature": scores.signature, **warning})
        frame = pd.DataFrame({"row": [o["row"] for o in out], "system": [o["system"] for o in out],
                              "source_id": [r.source if r.extra.get("source_id") in (None, "") else str(r.extra["source_id"])
                                            for r in rows],
                              "logprob_content": [o["content"] for o in out],
                              "logprob_style": [o["style_strength"] for o in out]})
        report = compare_systems(frame, {m: scores.signature.renamed(m) for m in ("logprob_content", "logprob_style")},
                                 progress=False)
        # the CLI's defaults (1000 bootstrap resamples, 10,000 shufflings): the same file gives the same intervals
        return out, report


def write_scored_csv(rows: Sequence[dict[str, Any]], path: str) -> str:
    """The scored rows of :meth:`Demo.batch` as the CSV the Space offers for download, every cell through the CSV rule
    (:func:`styleeval.escaping.csv_text`: a text such as ``=HYPERLINK(...)`` does not run when the file is opened in a
    spreadsheet); returns ``path``."""
    import csv

    from styleeval.escaping import csv_text

    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: csv_text(v) for k, v in r.items()} for r in rows)
    return path


MAX_UPLOAD_BYTES = 2_000_000
"""The largest batch upload the demo reads (200 rows of 3 fields of 1000 characters fit)."""

_CLI_ADVICE = {
    " or pass the file's encoding (--encoding latin-1, encoding='latin-1')": " and upload it again",
    "; give the style with --style": "; add a style column",
}


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
    from styleeval.systems.report import fmt

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


def metaeval_summary(data_dir: str | None = None, metrics: Sequence[str] = ("s_bleu", "s_chrf", "s_paper_bleu"),
                     extra_metrics: Sequence[str] = ()) -> tuple[list[list[Any]], Any]:
    """Correlations with the content ratings on the test set, per task: rows ``[metric, subset, n, spearman, p]``
    and the Figure-2-style plot (a matplotlib figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from styleeval.metaeval import run_metaeval

    result = run_metaeval(["style_gap_testset"], [*metrics, *extra_metrics], dimension="content", data_dir=data_dir,
                          n_boot=0)
    corr = result.correlations
    mark = {m: RANDOM_MARK if m in result.random_weights else "" for m in result.metrics}
    rows = [[r.metric + mark[r.metric], r.subset, int(r.n), round(float(r.spearman), 3),
             round(float(r.spearman_p), 4)] for r in corr.itertuples()]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    subsets = list(dict.fromkeys(corr.subset))
    width = 0.8 / max(1, len(result.metrics))
    for k, m in enumerate(result.metrics):
        vals = [float(corr[(corr.metric == m) & (corr.subset == s)].spearman.iloc[0])
                if len(corr[(corr.metric == m) & (corr.subset == s)]) else math.nan for s in subsets]
        ax.bar([i + (k - (len(result.metrics) - 1) / 2) * width for i in range(len(subsets))], vals, width,
               label=m + mark[m])
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
    page: a Space user can open no file of the repository)."""
    reason = str(error).splitlines()[0] if str(error) else type(error).__name__
    return ("**The meta-evaluation is not available in this Space**: it correlates metrics with the human content "
            "ratings of Pauli et al.'s 500-row test set, and those ratings could not be loaded "
            f"({reason}). The Space's owner can set `STYLEEVAL_DATA_DIR` to the absolute path of a local copy of "
            "the corpora, or let the Space download them from their original URLs when it starts. The other tabs "
            "work without them; `styleeval metaeval` runs the full meta-evaluation on a machine with the corpora.")


def metaeval_leaderboard(data_dir: str | None = None, metrics: Sequence[str] = ("s_bleu", "s_chrf", "s_paper_bleu"),
                         extra_metrics: Sequence[str] = (), trials: int = 100) -> list[list[Any]]:
    """The metrics leaderboard on the test set's content ratings (:mod:`styleeval.metaeval.leaderboard`): rows
    ``[statistic, metric, value, rank, cluster, n]``, values to 4 significant digits."""
    from styleeval.metaeval import run_metaeval
    from styleeval.metaeval.leaderboard import build_leaderboard

    result = run_metaeval(["style_gap_testset"], [*metrics, *extra_metrics], dimension="content", data_dir=data_dir,
                          n_boot=0)
    board = build_leaderboard([result], trials=trials)
    return [[r.statistic, r.metric + (RANDOM_MARK if r.metric in result.random_weights else ""),
             float(f"{r.value:.4g}"), int(r.rank),
             int(r.cluster) if math.isfinite(r.cluster) else "", int(r.n)] for r in board.itertuples()]
