"""Random-weight chat models built offline, in production and in the tests: the ``tiny-random`` preset
(:func:`styleeval.models.tiny_random_dir`, the model that needs no download; its numbers are marked as from random
weights) is built here, and so are the tests' and the benchmarks' tiny models, and a tiny random text classifier
(:func:`build_classifier`: the style-classifier metrics' tests).

Nothing here downloads anything: a byte-level BPE tokenizer is trained in-process with the ``tokenizers``
library and given a chat template, and a ``LlamaForCausalLM`` is built from a config with random weights.
The real code paths (chat template, tokenization, KV cache, LM head) are exercised; only the weights are fake.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] | trim }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
"""A Llama-3-style chat template (without the date lines of the real Llama 3.2 template)."""

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A ChatML template (SmolLM2, Qwen): its end-of-turn token is ``<|im_end|>``."""

SPECIAL_TOKENS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|pad|>",
]

DEFAULT_CORPUS = [
    "You can repeat sentences, paraphrase sentences or rewrite sentences to change the style.",
    "Rewrite the following sentence to be polite: give me the report now.",
    "Paraphrase the following sentence: the meeting was moved to Tuesday afternoon.",
    "Repeat the following sentence: the cat sat on the mat and looked out of the window.",
    "Could you please send me the report when you have a moment? Thank you so much!",
    "The two presidents strengthened their ties over a friendly lunch in the capital.",
    "This restaurant was awful, the food was cold and the staff were rude to everyone.",
    "Ur ready 4 the party tonight?? lol. Are you ready for the party tonight?",
    "Numbers 0123456789 and punctuation .,;:!?'\"()-",
]


FAMILIES: dict[str, dict[str, object]] = {
    "llama-3.2": {"template": "meta-llama-Llama-3.2-3B-Instruct.jinja", "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
                  "eot": "<|eot_id|>", "special": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                                   "<|end_header_id|>", "<|eot_id|>", "<|python_tag|>", "<|eom_id|>"]},
    "llama-3.1": {"template": "meta-llama-Llama-3.1-8B-Instruct.jinja", "bos": "<|begin_of_text|>", "eos": "<|eot_id|>",
                  "eot": "<|eot_id|>", "special": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                                   "<|end_header_id|>", "<|eot_id|>", "<|python_tag|>", "<|eom_id|>"]},
    "qwen2.5": {"template": "Qwen-Qwen2.5-7B-Instruct.jinja", "bos": None, "eos": "<|im_end|>", "eot": "<|im_end|>",
                "special": ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]},
    "phi-3.5": {"template": "microsoft-Phi-3.5-mini-instruct.jinja", "bos": "<s>", "eos": "<|endoftext|>",
                "eot": "<|end|>", "special": ["<s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>",
                                              "<|endoftext|>"]},
    "gemma-2": {"template": "google-gemma-2-2b-it.jinja", "bos": "<bos>", "eos": "<eos>", "eot": "<end_of_turn>",
                "special": ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"]},
}
"""The chat-model families whose real templates ``../shared/chat_templates`` holds: the template file, the control
tokens a tokenizer needs for it, its BOS / EOS and its end-of-turn token (tests build tiny tokenizers with them)."""


def build_tokenizer(
    corpus: Iterable[str] | None = None,
    vocab_size: int = 600,
    chat_template: str | None = LLAMA3_TEMPLATE,
    family: str | None = None,
):
    """Train a byte-level BPE tokenizer on ``corpus`` and wrap it as a ``PreTrainedTokenizerFast``.

    Every byte is in the initial alphabet, so any text can be tokenized. ``chat_template=None`` gives a
    tokenizer without a chat template (to test the error path). ``family`` (a key of :data:`FAMILIES`) gives the
    tokenizer that family's control tokens, BOS and EOS (pass the family's real template as ``chat_template``).
    """
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 - heavy (transformers)

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    spec = FAMILIES[family] if family is not None else None
    specials = [*SPECIAL_TOKENS, *(t for t in spec["special"] if t not in SPECIAL_TOKENS)] if spec else SPECIAL_TOKENS
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus if corpus is not None else DEFAULT_CORPUS), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=spec["bos"] if spec else "<|begin_of_text|>",
        eos_token=spec["eos"] if spec else "<|eot_id|>",
        pad_token="<|pad|>",
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast


# Real shapes of the paper's small models (random weights; used by the benchmark).
SHAPES: dict[str, dict[str, int | float | bool]] = {
    "tiny": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False,
    ),
    "small": dict(  # head_dim 64: what vLLM's CPU attention kernels accept (the served test model)
        hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False,
    ),
    "smollm2-135m": dict(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
        rope_theta=100000.0, tie_word_embeddings=True,
    ),
    "llama-3.2-1b": dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
        rope_theta=500000.0, tie_word_embeddings=True,
    ),
    "llama-3.2-3b": dict(
        vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
        num_attention_heads=24, num_key_value_heads=8, max_position_embeddings=131072,
        rope_theta=500000.0, tie_word_embeddings=True,
    ),
    "llama-3.1-8b": dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
        rope_theta=500000.0, tie_word_embeddings=False,
    ),
}


def build_model(
    shape: str = "tiny",
    vocab_size: int | None = None,
    seed: int = 0,
    head_scale: float = 1.0,
    dtype: torch.dtype = torch.float32,
    **overrides,
):
    """A ``LlamaForCausalLM`` with random weights and the named shape (see :data:`SHAPES`).

    ``vocab_size`` must cover the tokenizer (``len(tokenizer)``); real shapes keep their own, larger vocabulary.
    ``head_scale`` multiplies the LM head so that random weights give peaked next-token distributions.
    """
    from transformers import LlamaConfig, LlamaForCausalLM  # noqa: PLC0415 - heavy (transformers)

    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of {sorted(SHAPES)}")
    kwargs = dict(SHAPES[shape])
    if vocab_size is not None and vocab_size > int(kwargs.get("vocab_size", 0)):
        kwargs["vocab_size"] = vocab_size
    kwargs.update(overrides)
    config = LlamaConfig(**kwargs)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    if head_scale != 1.0:
        with torch.no_grad():
            if config.tie_word_embeddings:
                model.get_input_embeddings().weight.mul_(head_scale)
            else:
                model.lm_head.weight.mul_(head_scale)
    return model.to(dtype).eval()


CLASSIFIER_SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>"]
"""RoBERTa's special tokens, in its order (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2)."""


def build_classifier(labels: Iterable[str] = ("negative", "positive"), seed: int = 0, hidden_size: int = 32,
                     corpus: Iterable[str] | None = None):
    """A ``RobertaForSequenceClassification`` with random weights (2 layers) and a byte-level BPE tokenizer that adds
    ``<s> ... </s>`` as RoBERTa's does: ``(model, tokenizer)``, the labels named ``labels`` (``id2label`` in that
    order). What a real classifier's code path needs (tokenizer, padding token, position ids, the classification
    head), without its weights."""
    from transformers import (  # noqa: PLC0415 - heavy (transformers)
        PreTrainedTokenizerFast,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    names = list(labels)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=CLASSIFIER_SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(corpus if corpus is not None else DEFAULT_CORPUS), trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", 0), ("</s>", 2)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", cls_token="<s>",
                                        sep_token="</s>", pad_token="<pad>", unk_token="<unk>", model_max_length=128)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=2 * hidden_size, max_position_embeddings=130,
                           pad_token_id=1, bos_token_id=0, eos_token_id=2, num_labels=len(names),
                           id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)},
                           initializer_range=0.5)  # wide weights: probabilities that differ by text
    torch.manual_seed(seed)
    model = RobertaForSequenceClassification(config)
    return model.eval(), tokenizer
