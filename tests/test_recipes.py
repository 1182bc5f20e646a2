"""The six "how to add" recipes of docs/architecture.md, followed as a new contributor would, each in a temporary
package outside ``src/`` (a backend, a metric, a corpus, a leaderboard statistic, a LogProb prompt set, an LLM scorer),
and run end to end through the public entry points: nothing else in the library is edited."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

BACKEND_MODULE = '''
"""A minimal backend: the two required calls over a transformers model, one sequence at a time (no batching, no
cache): the recipe's first step for a TGI, SGLang or llama.cpp client."""

import hashlib

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from styleeval.backends import Backend, Identity, register_backend
from styleeval.optiontypes import Option


class NaiveBackend(Backend):
    name = "naive"
    kind = "naive"
    options = (Option("max_tokens", int, "the longest sequence this backend scores"),)

    def __init__(self, model, max_tokens=None, progress=True):
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in self.model.parameters()))
        self._identity = Identity(str(model), "naive-" + weights.hexdigest()[:12], "float32", self.kind)
        self._max = max_tokens

    @property
    def identity(self):
        return self._identity

    @property
    def max_length(self):
        return self._max

    @torch.inference_mode()
    def token_logprobs(self, prompts, continuations, group=1):
        out = []
        for prompt, cont in zip(prompts, continuations, strict=True):
            if not len(cont):
                out.append(torch.empty(0))
                continue
            logits = self.model(torch.tensor([list(prompt) + list(cont)])).logits[0, len(prompt) - 1 : -1].float()
            out.append(torch.log_softmax(logits, -1).gather(1, torch.tensor(list(cont))[:, None])[:, 0])
        return out

    @torch.inference_mode()
    def generate(self, prompts, decoding, seeds, stop_ids=()):
        replies = []
        for prompt in prompts:
            ids, new = list(prompt), []
            for _ in range(decoding.max_new_tokens):
                token = int(self.model(torch.tensor([ids])).logits[0, -1].argmax())
                if token in stop_ids:
                    break
                ids.append(token)
                new.append(token)
            replies.append(self.tokenizer.decode(new, skip_special_tokens=True))
        return replies


register_backend(NaiveBackend)
'''

METRIC_MODULE = '''
from styleeval.metrics.base import Metric
from styleeval.metrics.registry import register
from styleeval.signature import Signature


@register("t_length_ratio")
class LengthRatio(Metric):
    """Characters of the rewrite per character of the source."""

    name = "t_length_ratio"
    inputs = "source"

    @property
    def signature(self):
        return Signature.build(self.name, {"unit": "chars", "version": "1"})

    def _score(self, sources, rewrites, references, styles):
        return [len(r) / max(1, len(s)) for s, r in zip(sources, rewrites, strict=True)]
'''

CORPUS_MODULE = '''
from styleeval.corpora import register_corpus
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import CorpusSpec

SOURCES = ["the food was cold.", "give me the report now.", "the meeting is on Tuesday.", "this is bad.",
           "send it today.", "the room was dirty."]
SYSTEMS = {"copy": lambda s: s, "upper": str.upper, "short": lambda s: s[: len(s) // 2]}
RATINGS = {"copy": [5.0, 4.0], "upper": [3.0, 4.0], "short": [1.0, 2.0]}


def load(data_dir=None):
    rows = []
    for i, source in enumerate(SOURCES):
        for system, rewrite in SYSTEMS.items():
            content = [r + (i % 2) for r in RATINGS[system]]
            rows.append(rating_row(id=f"toy_corpus/{system}/{i}", dataset="toy_corpus", task="formality",
                                   target_style="formal", source_id=str(i), source=source,
                                   rewrite=rewrite(source), reference=None, system=system,
                                   is_reference_rewrite=False, content_scores=content, style_scores=None,
                                   fluency_scores=None, n_raters=2, rater_ids=None, scale_min=1, scale_max=6,
                                   extra={}))
    return rating_dataset(rows)


SPEC = register_corpus(CorpusSpec("toy_corpus", "Toy", "rating", 99, load))
'''

STATISTIC_MODULE = '''
import numpy as np

from styleeval.metaeval.statistics import leaderboard_statistic


@leaderboard_statistic("top_half_agreement", "share of rows on the same side of the median for the humans and the "
                       "metric")
def top_half_agreement(corpus, human, metric, rows):
    return float(np.mean((human > np.median(human)) == (metric > np.median(metric))))
'''

PROMPT_SET_MODULE = '''
from styleeval.logprob.prompts import PromptSet, register_prompt_set

TERSE = register_prompt_set(PromptSet(
    "terse",
    system="You rewrite sentences.",
    instructions={"style": "Make this {style}: {source}", "paraphrase": "Say this another way: {source}",
                  "repeat": "Say this again: {source}"},
))
'''


LLM_SCORER_MODULE = '''
"""A toy scorer declared as the recipe says: its words and characters per word of the source, as two dimensions."""

from styleeval.llm_scorer import MODEL_OPTIONS, Command, Dimension, LLMScorer
from styleeval.metrics.llm_metric import register_llm_metrics
from styleeval.optiontypes import Option, Options
from styleeval.signature import Signature


class Rows(list):
    def __init__(self, rows, signature):
        super().__init__(rows)
        self.signature = signature


class Toy:
    def __init__(self, model=None, unit="words", progress=True):
        self.unit = unit
        self.signature = Signature.build("toy", {"model": str(model), "unit": unit, "version": "1"})

    def score(self, sources, rewrites, styles):
        rows = []
        for source, rewrite, style in zip(sources, rewrites, styles, strict=True):
            ratio = len(rewrite.split()) / max(1, len(source.split()))
            rows.append({"ratio": ratio if self.unit == "words" else len(rewrite) / max(1, len(source)),
                         "styled": float(style in rewrite.lower()), "note": f"{style}: {len(rewrite)} chars"})
        return Rows(rows, self.signature)


_SHARED = {}


def shared_toy(model=None, **options):
    key = (model, *sorted(options.items()))
    return _SHARED.setdefault(key, Toy(model, **options, progress=False))


TOY = register_llm_metrics(LLMScorer(
    name="toy",
    label="toy",
    loading="the toy scorer",
    options=Options("the toy scorer", [*MODEL_OPTIONS, Option("unit", str, "words or chars", choices=("words", "chars"))]),
    dimensions=(Dimension("ratio", "ratio", "ratio", "rewrite length per source length."),
                Dimension("styled", "styled", "styled", "1 where the rewrite names its target style.")),
    make=Toy,
    shared=shared_toy,
    rows=lambda toy, sources, rewrites, styles: toy.score(sources, rewrites, styles),
    command=Command("toy-score", "toy scores for a file", "Score each rewrite with the toy scorer.", "", "scored",
                    16, "{:.3f}".format, "skipped: NaN scores"),
    extras=("note",),
    texts=("note",),
))
'''

EVALUATE_MODULE = '''
import styleeval.evaluate_support as support
from toy_scorer_plugin import TOY

ToyScorer = support.scorer_module(TOY, "toy_scorer", __name__, "A toy.", "Word and character ratios.",
                                  "predictions, sources, styles")
'''

COMMAND_MODULE = '''
from styleeval.commands._llm import llm_command
from toy_scorer_plugin import TOY

SUMMARY, register, run = llm_command(TOY)
'''


def _import(tmp_path: Path, name: str, source: str):
    """Import ``source`` as module ``name`` from a temporary package folder (what a plugin would be)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def naive_backend(tmp_path):
    from styleeval.backends import unregister_backend

    yield _import(tmp_path, "naive_backend_plugin", BACKEND_MODULE)
    unregister_backend("naive")
    sys.modules.pop("naive_backend_plugin", None)


ROWS = [("the food was cold.", "The food was warm.", "positive"),
        ("give me the report now.", "Could you send me the report?", "polite"),
        ("the meeting is on Tuesday.", "The meeting is on Monday.", "formal")]


def test_a_backend_added_by_the_recipe_serves_everything_by_name(naive_backend, tiny_model_dir, judge_model_dir,
                                                                  tmp_path, capsys):
    from styleeval import Autorater, LogProb
    from styleeval.cli import build_parser, main
    from styleeval.options import AUTORATER_OPTIONS, LOGPROB_OPTIONS

    sources, rewrites, styles = map(list, zip(*ROWS, strict=True))
    # LogProb by name, with the backend's own option; the same numbers as the local engine
    naive = LogProb(str(tiny_model_dir), backend="naive", max_tokens=4096, progress=False)
    local = LogProb(str(tiny_model_dir), device="cpu", progress=False)
    got, want = naive.score(sources, rewrites, styles), local.score(sources, rewrites, styles)
    assert got.content == pytest.approx(want.content, abs=1e-4) and got.style_strength == pytest.approx(want.style_strength, abs=1e-4)
    assert "backend:naive" in got.signature and "@naive-" in got.signature
    with pytest.raises(ValueError, match="max_tokens: not an option of the local backend"):
        LogProb(str(tiny_model_dir), max_tokens=5)
    # the autorater asks the backend for capabilities only: expected mode from the two required calls
    judged = Autorater(str(judge_model_dir), backend="naive", progress=False).rate(sources, rewrites, styles)
    reference = Autorater(str(judge_model_dir), device="cpu", progress=False).rate(sources, rewrites, styles)
    assert [r["meaning"] for r in judged] == pytest.approx([r["meaning"] for r in reference], abs=1e-3)
    # its options are declared once and reach the CLI, the evaluate modules and the metric specs
    assert LOGPROB_OPTIONS["max_tokens"].backends == ("naive",) and "max_tokens" in AUTORATER_OPTIONS.names
    assert "--max-tokens" in build_parser().format_help() or "--max-tokens" in _subcommand_help("score")
    # styleeval score and styleeval evaluate, by name
    table = tmp_path / "rows.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["system", "source_id", "source", "rewrite", "style"])
        for system in ("a", "b"):
            for i, (s, r, st) in enumerate(ROWS):
                writer.writerow([system, i, s, r if system == "a" else s, st])
    out = tmp_path / "scored.jsonl"
    assert main(["score", str(table), "--out", str(out), "--model", str(tiny_model_dir), "--backend", "naive",
                 "--max-tokens", "4096", "--quiet"]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 6 and records[0]["content"] == pytest.approx(want.content[0], abs=1e-4)
    assert "backend:naive" in records[0]["signature"]
    report = tmp_path / "report"
    assert main(["evaluate", str(table), "--metrics",
                 f"logprob_content:model={tiny_model_dir}:backend=naive:max_tokens=4096", "--out", str(report),
                 "--no-progress"]) == 0
    systems = (report / "systems.csv").read_text(encoding="utf-8")
    assert "logprob_content" in systems and (report / "report.md").is_file()
    capsys.readouterr()


def _subcommand_help(name: str) -> str:
    from styleeval.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices[name].format_help()


def test_a_metric_added_by_the_recipe_runs_in_evaluate_and_metaeval(tmp_path):
    from styleeval.metrics import get_metric
    from styleeval.metrics.registry import REGISTRY
    from styleeval.signature import Signature
    from styleeval.stats import TestSettings
    from styleeval.systems import evaluate_systems

    try:
        _import(tmp_path, "length_ratio_plugin", METRIC_MODULE)
        metric = get_metric("t_length_ratio")
        assert metric.compute(["abcd"], ["ab"]) == [0.5]
        assert Signature.parse(str(metric.signature)) == metric.signature
        rows = [{"system": sys_, "source_id": i, "source": s, "rewrite": r if sys_ == "a" else r + r, "style": st}
                for sys_ in ("a", "b") for i, (s, r, st) in enumerate(ROWS)]
        report = evaluate_systems(rows, ["t_length_ratio"], settings=TestSettings(trials=100, n_boot=100))
        means = report.systems.set_index("system")["mean"]
        assert means["b"] == pytest.approx(2 * means["a"])
    finally:
        REGISTRY.unregister("t_length_ratio")
        sys.modules.pop("length_ratio_plugin", None)


def test_a_corpus_and_a_statistic_added_by_the_recipes_reach_the_leaderboard(tmp_path):
    from styleeval.corpora import load_corpus, rating_corpora, unregister_corpus
    from styleeval.labels import dataset_label
    from styleeval.metaeval import run_metaeval
    from styleeval.metaeval.leaderboard import build_leaderboard, leaderboard_markdown
    from styleeval.metaeval.statistics import unregister_statistic

    try:
        _import(tmp_path, "toy_corpus_plugin", CORPUS_MODULE)
        _import(tmp_path, "toy_statistic_plugin", STATISTIC_MODULE)
        assert "toy_corpus" in rating_corpora() and dataset_label("toy_corpus") == "Toy"
        assert len(load_corpus("toy_corpus")) == 18
        result = run_metaeval(["toy_corpus"], ["s_chrf", "s_bleu"], "content", n_boot=0)
        corr = result.correlations
        assert set(corr["metric"]) == {"s_chrf", "s_bleu"} and (corr["n"] == 18).all()
        board = build_leaderboard([result], trials=20)
        assert {"acc_eq", "spearman", "system_pairwise_accuracy", "top_half_agreement"} <= set(board["statistic"])
        mine = board[board["statistic"] == "top_half_agreement"]
        human, chrf = result.human["toy_corpus"], result.scores["toy_corpus", "s_chrf"]
        want = float(np.mean((human > np.median(human)) == (chrf > np.median(chrf))))
        assert float(mine[mine["metric"] == "s_chrf"]["value"].iloc[0]) == pytest.approx(want)
        text = leaderboard_markdown(board)
        assert "## Toy: content" in text and "- top_half_agreement: share of rows" in text
    finally:
        unregister_corpus("toy_corpus")
        unregister_statistic("top_half_agreement")
        for name in ("toy_corpus_plugin", "toy_statistic_plugin"):
            sys.modules.pop(name, None)
    assert "toy_corpus" not in rating_corpora()


def test_a_logprob_prompt_set_added_by_the_recipe_is_scored_with_its_text_and_signed(tmp_path, tiny_model,
                                                                                      tiny_tokenizer, tiny_model_dir):
    """The recipe's one line, then the set by name in Python, in ``styleeval score --prompt`` and in a metric spec:
    every token's log-probability is a naive loop's with the set's own text (written out again here), and the
    signature names the set and the digest of its text."""
    import torch

    from styleeval import LogProb
    from styleeval.chat import TEMPLATE_KWARGS
    from styleeval.cli import main
    from styleeval.logprob.prompts import unregister_prompt_set
    from styleeval.metrics import get_metric

    system = "You rewrite sentences."
    instructions = {"style": "Make this {style}: {source}", "paraphrase": "Say this another way: {source}",
                    "repeat": "Say this again: {source}"}
    sources, rewrites, styles = map(list, zip(*ROWS, strict=True))
    try:
        terse = _import(tmp_path, "terse_prompt_plugin", PROMPT_SET_MODULE).TERSE
        lp = LogProb(str(tiny_model_dir), prompt="terse", device="cpu", progress=False)
        got = lp.score(sources, rewrites, styles, return_tokens=True)
        paper = LogProb(backend=lp.backend, progress=False).signature
        assert got.signature.fields["prompt"] == terse.signed == f"terse@{terse.digest}"
        assert paper.fields["prompt"] != terse.signed
        assert {k: v for k, v in got.signature.fields.items() if k != "prompt"} == \
            {k: v for k, v in paper.fields.items() if k != "prompt"}
        eot = tiny_tokenizer.convert_tokens_to_ids("<|eot_id|>")
        for (source, rewrite, style), row in zip(ROWS, got, strict=True):
            target = tiny_tokenizer(rewrite, add_special_tokens=False)["input_ids"] + [eot]
            for context, instruction in instructions.items():
                messages = [{"role": "system", "content": system},
                            {"role": "user", "content": instruction.format(style=style, source=source)}]
                text = tiny_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                                          **TEMPLATE_KWARGS)
                prompt = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
                with torch.no_grad():
                    logp = torch.log_softmax(tiny_model(torch.tensor([prompt + target])).logits[0].float(), -1)
                want = [logp[len(prompt) - 1 + j, token].item() for j, token in enumerate(target)]
                assert [t[context] for t in row["tokens"]] == pytest.approx(want, abs=1e-5), (context, source)
        # by name on the command line and in a metric spec
        table = tmp_path / "rows.jsonl"
        table.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": st}) + "\n" for s, r, st in ROWS),
                         encoding="utf-8")
        out = tmp_path / "scored.jsonl"
        assert main(["score", str(table), "--out", str(out), "--model", str(tiny_model_dir), "--prompt", "terse",
                     "--device", "cpu", "-q"]) == 0
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert {r["signature"] for r in records} == {got.signature}
        assert [r["content"] for r in records] == pytest.approx(got.content, abs=1e-6)
        metric = get_metric(f"logprob_style:model={tiny_model_dir}:prompt=terse:device=cpu")
        assert metric.compute(sources, rewrites, styles=styles) == pytest.approx(got.style_strength, abs=1e-6)
        assert metric.signature == got.signature.renamed("logprob_style")
    finally:
        unregister_prompt_set("terse")
        sys.modules.pop("terse_prompt_plugin", None)


def test_an_llm_scorer_added_by_the_recipe_gets_its_metrics_file_command_and_evaluate_module(tmp_path, capsys):
    """The recipe's declaration, then every layer derived from it: the metrics ``toy_ratio`` / ``toy_styled`` with
    the spec's option, the records of ``scorer_file`` (resumed), the command with its flag and summary line, the
    ``evaluate`` module's result."""
    import evaluate

    from styleeval.cli import COMMANDS, main
    from styleeval.files import read_scores, scorer_file
    from styleeval.files.records import RecordKind
    from styleeval.metrics import get_metric
    from styleeval.metrics.registry import REGISTRY, metric_options, metric_summary

    sources, rewrites, styles = map(list, zip(*ROWS, strict=True))
    ratios = [len(r.split()) / len(s.split()) for s, r, _ in ROWS]
    try:
        toy = _import(tmp_path, "toy_scorer_plugin", LLM_SCORER_MODULE).TOY
        _import(tmp_path, "toy_score_command", COMMAND_MODULE)
        # the metrics, one per dimension, with the declared options
        assert metric_options("toy_ratio") == ("model", "backend", "unit")
        assert metric_summary("toy_styled") == "1 where the rewrite names its target style."
        metric = get_metric("toy_ratio:model=m1")
        assert metric.compute(sources, rewrites, styles=styles) == pytest.approx(ratios)
        assert str(metric.signature) == "toy_ratio|model:m1|unit:words|version:1"
        chars = get_metric("toy_ratio:model=m1:unit=chars").compute(sources, rewrites, styles=styles)
        assert chars == pytest.approx([len(r) / len(s) for s, r, _ in ROWS])
        assert get_metric("toy_styled").compute(sources, rewrites, styles=styles) == [0.0, 0.0, 0.0]
        with pytest.raises(ValueError, match="unit"):
            get_metric("toy_ratio:unit=lines")
        # its record files: resumable, with the declared fields
        table = tmp_path / "rows.jsonl"
        table.write_text("".join(json.dumps({"source": s, "rewrite": r, "style": st}) + "\n" for s, r, st in ROWS),
                         encoding="utf-8")
        out = tmp_path / "toy.jsonl"
        assert scorer_file(toy, table, out, "m1", max_rows=2, progress=False).scored == 2
        assert scorer_file(toy, table, out, "m1", progress=False).scored == 1
        records = read_scores(out, RecordKind.of(toy))
        assert [r["ratio"] for r in records] == pytest.approx(ratios)
        assert records[2]["note"] == f"formal: {len(ROWS[2][1])} chars"
        assert list(records[0]) == ["row", "source", "rewrite", "style", "ratio", "styled", "note", "signature"]
        # its command, with the declared flag and summary line
        COMMANDS.add("toy-score", "toy_score_command")
        again = tmp_path / "again.jsonl"
        assert main(["toy-score", str(table), "--out", str(again), "--model", "m1", "--unit", "chars"]) == 0
        assert [r["ratio"] for r in read_scores(again, RecordKind.of(toy))] == pytest.approx(chars)
        assert f"mean ratio {np.mean(chars):.3f}  mean styled 0.000" in capsys.readouterr().err
        # its evaluate module
        module = tmp_path / "toy_scorer" / "toy_scorer.py"
        module.parent.mkdir()
        module.write_text(EVALUATE_MODULE, encoding="utf-8")
        got = evaluate.load(str(module.parent)).compute(predictions=rewrites, sources=sources, styles=styles,
                                                        model="m1")
        assert list(got) == ["ratio", "styled", "ratio_mean", "styled_mean", "signature"]
        assert got["ratio"] == pytest.approx(ratios) and got["ratio_mean"] == pytest.approx(np.mean(ratios))
        assert got["signature"] == "toy|model:m1|unit:words|version:1"
    finally:
        COMMANDS.unregister("toy-score")
        for name in ("toy_ratio", "toy_styled"):
            REGISTRY.unregister(name)
        for name in ("toy_scorer_plugin", "toy_score_command"):
            sys.modules.pop(name, None)
