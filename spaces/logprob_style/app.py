"""Gradio Space: score a style-transfer rewrite with LogProb and see which tokens drive the scores."""

from __future__ import annotations

import os

import gradio as gr

from styleeval import LogProb
from styleeval.explain import token_table

MODEL = os.environ.get("STYLEEVAL_MODEL", "meta-llama/Llama-3.2-1B-Instruct")
_SCORER: LogProb | None = None

EXAMPLES = [
    ["Send me the report now.", "Could you please send me the report when you have a moment?", "polite"],
    ["Send me the report now.", "Could you please send me the invoice when you have a moment?", "polite"],
    ["ur ready 4 the party tonight??", "Are you ready for the party tonight?", "formal"],
    ["The food was cold and the staff were rude.", "The food was warm and the staff were lovely.", "positive"],
]


def scorer() -> LogProb:
    global _SCORER
    if _SCORER is None:
        _SCORER = LogProb(MODEL, progress=False)
    return _SCORER


def score(source: str, rewrite: str, style: str):
    lp = scorer()
    row = lp.score([source], [rewrite], style, return_tokens=True)[0]
    table = [[repr(r["token"]), round(r["logp_style"], 4), round(r["logp_paraphrase"], 4), round(r["logp_repeat"], 4),
              r["best"], round(r["style"], 6)] for r in token_table(row)]
    return round(row["content"], 4), round(row["style"], 4), table, lp.signature


with gr.Blocks(title="LogProb style-transfer evaluation") as demo:
    gr.Markdown(
        "# LogProb: content preservation and style strength\n"
        "Pauli et al. (2025), *Mind the Style Gap*. Each rewrite token is scored after three instructions: "
        "rewrite to the style, paraphrase, repeat. **Content** = mean log of the best of the three "
        "probabilities (≤ 0, higher is better); **style** = mean gain of the style instruction (−1 to 1)."
    )
    with gr.Row():
        source = gr.Textbox(label="Source", lines=3)
        rewrite = gr.Textbox(label="Rewrite", lines=3)
    style = gr.Textbox(label="Target style", value="polite")
    button = gr.Button("Score", variant="primary")
    with gr.Row():
        content_out = gr.Number(label="Content preservation")
        style_out = gr.Number(label="Style strength")
    tokens_out = gr.Dataframe(
        headers=["token", "log p (style)", "log p (paraphrase)", "log p (repeat)", "best", "style gain"],
        label="Per token",
    )
    signature_out = gr.Textbox(label="Signature", interactive=False)
    gr.Examples(EXAMPLES, inputs=[source, rewrite, style])
    button.click(score, [source, rewrite, style], [content_out, style_out, tokens_out, signature_out])

if __name__ == "__main__":
    demo.launch()
