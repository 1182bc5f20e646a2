"""styleeval demo Space: score a rewrite, see which words no instruction explains, compare metrics, score a file.

All the work is done by :mod:`styleeval.demo`; this file only lays it out. Configuration: ``STYLEEVAL_MODEL`` (preset,
Hub id, local folder or .gguf file; default ``smollm2-135m``, a real 135M chat model fetched on first use with no Hub
account; ``1b``/``3b``/``8b`` for the paper's models), ``STYLEEVAL_BASE_URL`` (a vLLM server instead of a local
model; ``STYLEEVAL_TOKENIZER``), ``STYLEEVAL_AUTORATER=0`` (no autorater), ``STYLEEVAL_DATA_DIR`` (offline corpora for
the meta-evaluation tab; ``STYLEEVAL_METAEVAL_LLM=1`` adds LogProb's correlations there, with the configured model).
The Meta-evaluation tab is computed once, after the URL is printed: in the background once the Space listens, or when
a visitor first opens the tab, whichever comes first. ``python app.py`` honours ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT``. The score action
is also the API endpoint ``/score`` (source, rewrite, style[, model]) -> dict. Where the configured model is a GGUF
preset run here, the Model menu offers every GGUF preset (:meth:`styleeval.demo.Demo.choices`), each loaded when first
chosen and kept; elsewhere it shows the one model configured.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
from pathlib import Path

from styleeval.extras import MissingExtraError, require

try:  # without gradio: one line naming the extra, not a traceback
    require("gradio", "the Space")
except MissingExtraError as err:
    raise SystemExit(f"spaces/style_eval_demo/app.py: {err}") from None

import gradio as gr  # noqa: E402
import matplotlib.pyplot  # noqa: E402, F401  (whole before any thread: Gradio sets its backend on every request)

from styleeval.demo import (  # noqa: E402
    EXAMPLES,
    MAX_BATCH_ROWS,
    MAX_CHARS,
    MAX_UPLOAD_BYTES,
    TIE_BELOW,
    UNEXPLAINED_BELOW,
    UPLOAD_REFUSED_OVER,
    Demo,
    Gate,
    Later,
    metaeval_note,
    metaeval_tab,
    size_text,
    space_banner,
    visitor_message,
    write_scored_csv,
)
from styleeval.labels import RANDOM_WEIGHTS  # noqa: E402
from styleeval.systems.report import fmt  # noqa: E402

DEMO = Demo(autorater=os.environ.get("STYLEEVAL_AUTORATER", "1") != "0")
GATE = Gate()  # the Meta-evaluation tab is computed alone: no request imports the same libraries meanwhile
CSS = "#banner, #banner-metaeval {border-left: 4px solid var(--color-accent); background: var(--block-background-fill); " \
      "padding: 0.25em 1em; border-radius: 4px}"
COLORS = {"style": "#4c9be8", "paraphrase": "#7bc67b", "repeat": "#cccccc", "unexplained": "#ff6b6b"}


def _user_error(fn):
    """An API endpoint: any error becomes one message the caller can act on (:func:`styleeval.demo.visitor_message`;
    never a traceback)."""
    @functools.wraps(fn)  # keeps the signature and type hints: gr.api reads them
    def wrapped(*args):
        try:
            with GATE.request():
                return fn(*args)
        except gr.Error:
            raise
        except Exception as err:
            raise gr.Error(visitor_message(err)) from None

    return wrapped


def _fmt(value: float) -> str:
    return "n/a" if value != value else f"{value:.4g}"


def _rating(value: float) -> str:
    return "unparsed" if value != value else f"{value:g}"


def _with_status(*cleared):
    """A UI handler returning ``(status, *outputs)``: empty status on success; on an error the status line under the
    button says it once, in the page's words (:func:`styleeval.demo.visitor_message`), until the next request, and
    every output is cleared (no stale result under an error). No pop-up: toasts of earlier errors would pile up over
    later results in other tabs."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapped(*args):
            try:
                with GATE.request():
                    return ("", *fn(*args))
            except gr.Error as err:
                message = str(err.message)
            except Exception as err:  # never Gradio's own error badge
                message = visitor_message(err)
            return (f"**Error:** {message}", *cleared)

        return wrapped

    return decorate


@_user_error
def score_api(source: str, rewrite: str, style: str, model: str | None = None) -> dict:
    """Scores of one rewrite: LogProb content and style, the autorater's ratings, S-BLEU and S-chrF; ``model``: one
    of the Model menu's values (a preset's name; none: the Space's default model)."""
    out = DEMO.score(source, rewrite, style, model=model)
    keys = ("content", "style_strength", "autorater", "s_bleu", "s_chrf", "signature", "warning")
    return {k: out[k] for k in keys if k in out}


@_with_status("", None, None, "")
def score_ui(source: str, rewrite: str, style: str, paper_mode: bool, model: str):
    out = DEMO.score(source, rewrite, style, paper_mode=paper_mode, model=model)
    lines = [f"**LogProb content** {_fmt(out['content'])}: {out['content_reading']}",
             f"**LogProb style** {_fmt(out['style_strength'])}: {out['style_reading']}"]
    warning = f"{out['warning']}: " if "warning" in out else ""  # the tiny-random preset: no reading is a result
    if "autorater" in out:
        a = out["autorater"]
        lines.append(f"**Autorater** (expected 1-5 rating) meaning {a['meaning']:.3g}, style {a['style']:.3g}: "
                     f"{warning}an LLM judge's expected rating, read from its rating probabilities")
    if "autorater_paper" in out:
        p = out["autorater_paper"]
        lines.append(f"**Autorater, paper mode** meaning {_rating(p['meaning'])}, style {_rating(p['style'])} "
                     f"({'parsed' if p['parsed'] else 'reply not readable'}): `{(p['reply'] or '')[:120]}`")
    lines.append(f"**S-BLEU** {out['s_bleu']:.1f}, **S-chrF** {out['s_chrf']:.1f}: overlap with the *source*; high for "
                 "copies, blind to swapped facts (the paper's point)")
    return "\n\n".join(lines), out["tokens"], out["token_table"], out["signature"]


@_with_status(None, "")
def compare_ui(source: str, rewrite_a: str, rewrite_b: str, style: str, model: str):
    return DEMO.compare(source, rewrite_a, rewrite_b, style, model=model), DEMO.signature(model)


def _remove_old_batches(age: float = 3600.0) -> None:
    """The scored files of earlier batches are served for an hour, then removed (nothing piles up in /tmp)."""
    for old in Path(tempfile.gettempdir()).glob("styleeval-batch-*"):
        try:
            if time.time() - old.stat().st_mtime > age:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


@_with_status(None, None, None, None, "")
def batch_ui(file, model: str):
    if file is None:
        raise gr.Error(f"No file to score: upload a CSV or JSONL file of at most {size_text(MAX_UPLOAD_BYTES)} with "
                       "the columns source, rewrite, style [, system]. (A file over "
                       f"{size_text(UPLOAD_REFUSED_OVER)} is refused by the upload itself.)")
    path = file if isinstance(file, str) else file.name
    rows, report = DEMO.batch(path, model=model)
    _remove_old_batches()
    folder = tempfile.mkdtemp(prefix="styleeval-batch-")
    scored = os.path.join(folder, f"{Path(path).stem}-scored.csv")  # named after the upload
    write_scored_csv(rows, scored)
    table = [[r["row"], r["system"], r["rewrite"], fmt(r["content"]), fmt(r["style_strength"])] for r in rows]
    cells = {(r.system, r.metric): r for r in report.systems.itertuples()}
    summary = []
    for system in report.ranking("logprob_content"):
        line = [system, int(cells[system, "logprob_content"].n)]
        for metric in ("logprob_content", "logprob_style"):
            c = cells[system, metric]
            cluster = f" ({int(c.cluster)})" if c.cluster == c.cluster else ""
            line.append(f"{fmt(c.score)} [{fmt(c.ci_low)}, {fmt(c.ci_high)}]{cluster}")
        summary.append(line)
    if report.random_weights:
        summary.append([RANDOM_WEIGHTS, "", "", ""])
    plot = report.plot(os.path.join(folder, "tradeoff.png"))
    return table, summary, plot, scored, rows[0]["signature"]


def _metaeval_metrics() -> list[str]:
    """The tab's metrics beyond the sacrebleu ones: LogProb's correlations where the Space sets
    ``STYLEEVAL_METAEVAL_LLM=1`` (500 rows: GPU advised)."""
    return [f"logprob_content{DEMO.metric_options}"] if os.environ.get("STYLEEVAL_METAEVAL_LLM", "0") == "1" else []


def _metaeval_alone():
    """The tab, computed with no request running (:class:`~styleeval.demo.Gate`)."""
    with GATE.exclusive():
        return metaeval_tab(_metaeval_metrics())


METAEVAL = Later(_metaeval_alone)  # never computed while the app is built


def metaeval_ui():
    """The Meta-evaluation tab when it is opened: computed the first time (or waited for, where the background
    computation is under way), the same value afterwards; the banner's line on it with it."""
    tab = METAEVAL.get()
    return (_metaeval_note(tab), gr.Markdown(tab.message, visible=not tab.available),
            gr.Dataframe(value=tab.rows, visible=tab.available), gr.Plot(value=tab.figure, visible=tab.figure is not None),
            gr.Markdown(visible=bool(tab.board)), gr.Dataframe(value=tab.board, visible=bool(tab.board)))


def banner_ui():
    """The banner's line on the Meta-evaluation tab when a page loads: said where the tab is computed, else nothing
    yet (never waits)."""
    tab = METAEVAL.peek()
    return gr.skip() if tab is None else _metaeval_note(tab)


def model_note_ui(model: str):
    """The note under the Model menu, for the model chosen."""
    try:
        return DEMO.model_note(model)
    except Exception as err:  # never Gradio's error badge
        return f"**Error:** {visitor_message(err)}"


def _metaeval_note(tab):
    note = metaeval_note(tab.available)
    return gr.Markdown(note, visible=bool(note))


LEADERBOARD_NOTE = (
    "**Leaderboard** (content, test set): each metric ranked per statistic and clustered (WMT's rule: walking down "
    "the ranking, a metric opens a new cluster when any metric of the current one is significantly better, PERM-BOTH, "
    "p <= 0.05). acc_eq is the tie-calibrated pairwise accuracy of Deutsch et al. (2023): the share of pairs of rows "
    "that the metric orders as the humans do, a tie counted as agreeing when both tie, with the metric's tie "
    "threshold chosen to maximise it.")

with gr.Blocks(title="styleeval: evaluate text style transfer", delete_cache=(3600, 3600)) as demo:
    gr.Markdown(
        "# Evaluate a style-transfer rewrite\n"
        "LogProb (Pauli et al. 2025, *Mind the Style Gap*) scores each rewrite token after three instructions "
        "(rewrite to the style / paraphrase / repeat): a token that **no** instruction explains (red) is a likely "
        "swapped, invented or dropped-context word. Limits: "
        f"{MAX_CHARS} characters per field, {MAX_BATCH_ROWS} rows per file.")
    gr.Markdown(space_banner(DEMO, metaeval_available=None), elem_id="banner")  # the model's note, at once
    m_note = gr.Markdown(visible=False, elem_id="banner-metaeval")  # the Meta-evaluation's, once it is computed
    choices = DEMO.choices()
    chooser = gr.Dropdown(choices=choices, value=DEMO.default_choice, label="Model", elem_id="model",
                          interactive=len(choices) > 1,  # one model configured: shown, nothing else offered
                          info="LogProb and the autorater of every tab; each model is loaded when first chosen "
                               "(that request waits for it), then kept" if len(choices) > 1 else
                               "the only model of this Space")
    model_note = gr.Markdown(DEMO.model_note(), elem_id="model-note")
    chooser.change(model_note_ui, chooser, model_note, api_name=False, concurrency_limit=None)
    with gr.Tab("Score"):
        with gr.Row():
            source = gr.Textbox(label="Source", lines=3, elem_id="source")
            rewrite = gr.Textbox(label="Rewrite", lines=3, elem_id="rewrite")
        with gr.Row():
            style = gr.Textbox(label="Target style", value="polite", elem_id="style")
            paper = gr.Checkbox(label="also run the autorater in paper mode (slower)", value=False)
        score_button = gr.Button("Score", variant="primary", elem_id="score")
        score_status = gr.Markdown(elem_id="score-status")
        readings = gr.Markdown("_Scores appear here after scoring._", elem_id="readings")
        tokens = gr.HighlightedText(label="Rewrite, token by token: which instruction explains each token (red: "
                                          f"none gives it a probability of {UNEXPLAINED_BELOW:g} or more)",
                                    color_map=COLORS, show_legend=True, show_inline_category=False,
                                    elem_id="tokens")
        with gr.Accordion("Per-token log-probabilities", open=False):
            token_table = gr.Dataframe(headers=["token", "log p style", "log p paraphrase", "log p repeat", "best",
                                                "style gain"], elem_id="token-table")
        signature = gr.Textbox(label="Signature", interactive=False)
        gr.Examples([[s, a, st] for s, a, _, st in EXAMPLES] + [[s, b, st] for s, _, b, st in EXAMPLES],
                    inputs=[source, rewrite, style])
        score_button.click(score_ui, [source, rewrite, style, paper, chooser],
                           [score_status, readings, tokens, token_table, signature], api_name=False)
    with gr.Tab("Compare"):
        c_source = gr.Textbox(label="Source", value=EXAMPLES[0][0])
        with gr.Row():
            c_a = gr.Textbox(label="Rewrite A", value=EXAMPLES[0][1])
            c_b = gr.Textbox(label="Rewrite B", value=EXAMPLES[0][2])
        c_style = gr.Textbox(label="Target style", value=EXAMPLES[0][3])
        c_button = gr.Button("Compare", variant="primary", elem_id="compare")
        c_status = gr.Markdown(elem_id="compare-status")
        c_table = gr.Dataframe(headers=["metric", "A", "B", "prefers"], elem_id="compare-table")
        gr.Markdown(f"4 significant digits; two scores are a tie when they differ by less than {TIE_BELOW:.1%} of "
                    f"the larger absolute value, or by less than {TIE_BELOW:g} when both are within ±1.")
        gr.Examples([list(e) for e in EXAMPLES], inputs=[c_source, c_a, c_b, c_style])
        c_signature = gr.Textbox(label="Signature", interactive=False, elem_id="compare-signature")
        c_button.click(compare_ui, [c_source, c_a, c_b, c_style, chooser], [c_status, c_table, c_signature],
                       api_name=False)
    with gr.Tab("Batch"):
        gr.Markdown(f"Upload a CSV or JSONL file with the columns `source`, `rewrite`, `style` and optionally "
                    f"`system` and `source_id` (pairs rows across systems; default: the source) (at most {MAX_BATCH_ROWS} rows, {MAX_CHARS} characters per field).")
        b_file = gr.File(label="Rewrites (CSV/JSONL)", file_types=[".csv", ".jsonl"], elem_id="batch-file")
        b_button = gr.Button("Score file", variant="primary", elem_id="batch")
        b_status = gr.Markdown(elem_id="batch-status")
        b_table = gr.Dataframe(headers=["row", "system", "rewrite", "content", "style_strength"], elem_id="batch-table")
        b_means = gr.Dataframe(headers=["system", "rows", "content: mean [95% CI] (cluster)",
                                        "style: mean [95% CI] (cluster)"], label="Per system", elem_id="batch-means")
        gr.Markdown("Systems in one cluster are not significantly different (paired approximate randomization, "
                    "Holm-adjusted p < 0.05); `styleeval evaluate` gives the full report with more metrics.")
        b_plot = gr.Image(label="Content vs style per system (95% CIs, Pareto front in red)", type="filepath",
                          show_label=False)  # the label would sit over the figure's random-weights warning
        b_out = gr.File(label="Scored file", elem_id="batch-out")
        b_signature = gr.Textbox(label="Signature", interactive=False, elem_id="batch-signature")
        b_button.click(batch_ui, [b_file, chooser], [b_status, b_table, b_means, b_plot, b_out, b_signature],
                       api_name=False)
    with gr.Tab("Meta-evaluation") as m_tab:
        gr.Markdown("Spearman correlation of source-based BLEU/chrF (and LogProb content when the Space sets "
                    "`STYLEEVAL_METAEVAL_LLM=1`) with the content ratings of the paper's 500-row test set, per task "
                    "(computed once, while the Space runs: the first visitor to open this tab may wait up to a "
                    "minute).")
        m_message = gr.Markdown("_Computing the correlations..._", elem_id="metaeval-status")
        m_table = gr.Dataframe(headers=["metric", "subset", "n", "spearman", "p"], elem_id="metaeval-table",
                               visible=False)
        m_plot = gr.Plot(visible=False)
        m_board_note = gr.Markdown(LEADERBOARD_NOTE, visible=False)
        m_board = gr.Dataframe(headers=["statistic", "metric", "value", "rank", "cluster", "n"],
                               elem_id="leaderboard", visible=False)
    m_tab.select(metaeval_ui, None, [m_note, m_message, m_table, m_plot, m_board_note, m_board], api_name=False,
                 concurrency_limit=None)  # waits on the one computation: never holds the scoring requests' slot
    demo.load(banner_ui, None, m_note, api_name=False, concurrency_limit=None)
    gr.api(score_api, api_name="score")

demo.queue(default_concurrency_limit=1, max_size=32)

if __name__ == "__main__":
    demo.launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")), max_file_size=UPLOAD_REFUSED_OVER,
                css=CSS, prevent_thread_lock=True)  # the URL first
    METAEVAL.start()  # then the Meta-evaluation tab, in the background
    demo.block_thread()
