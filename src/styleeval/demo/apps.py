"""The small apps of the LLM scorers' ``evaluate`` modules (``metrics/logprob_style/app.py``,
``metrics/llm_autorater/app.py``), derived from the scorer's declaration: :func:`app_row` is the endpoint's answer
for one row, :func:`metric_app` the page, :func:`launch` serves it. The full demo is ``spaces/style_eval_demo``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from styleeval.demo.readings import check_text
from styleeval.demo.settings import model_from_env
from styleeval.llm_scorer import LLMScorer


def app_row(scorer: LLMScorer, source: str, rewrite: str, style: str, **options: Any) -> dict[str, Any]:
    """``scorer``'s answer for one row (the fields checked: an empty one is a ``UserError`` naming it), by the scorer
    of :func:`~styleeval.demo.settings.model_from_env`'s model and ``options``: the row's ``app_fields`` (in the
    row's order), and the signature where the declaration shows it."""
    source, rewrite, style = (check_text(n, v) for n, v in (("source", source), ("rewrite", rewrite),
                                                              ("target style", style)))
    rows = scorer.rows(scorer.shared(**model_from_env(), **options), [source], [rewrite], [style])
    shown = {k: v for k, v in rows[0].items() if k in scorer.app_fields}
    return {**shown, "signature": rows.signature} if scorer.app_signed else shown  # type: ignore[attr-defined]


def metric_app(title: str, intro: str, endpoint: Callable[[str, str, str], dict], example: str, button: str,
               output: str) -> Any:
    """The page of one of these apps (a ``gradio.Blocks``): a source (``example``), a rewrite and a target style in,
    ``endpoint``'s answer out as JSON (its API name: the endpoint's name, ``/score``)."""
    import gradio as gr  # noqa: PLC0415 - optional extra [space]

    with gr.Blocks(title=title) as demo:
        gr.Markdown(intro)
        with gr.Row():
            source = gr.Textbox(label="Source", value=example)
            rewrite = gr.Textbox(label="Rewrite", value="Could you please send me the report?")
            style = gr.Textbox(label="Target style", value="polite")
        clicked = gr.Button(button, variant="primary")
        answer = gr.JSON(label=output)
        clicked.click(endpoint, [source, rewrite, style], answer, api_name=endpoint.__name__)
    return demo


def launch(demo: Any) -> None:
    """Serve an app's page: two requests at a time, on ``GRADIO_SERVER_NAME`` / ``GRADIO_SERVER_PORT`` (default
    127.0.0.1:7860)."""
    demo.queue(default_concurrency_limit=2).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
    )
