"""A tiny GGUF file written from a random-weight transformers Llama, as llama.cpp's convert_hf_to_gguf.py lays one out
(float32 tensors under llama.cpp's names, q/k rows permuted for its rotary layout, a byte-level BPE vocabulary), so
that styleeval's GGUF path (header, digest, conversion, cache) is tested in a second instead of on a 98 MB file."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np


def _permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's row order for q and k (transformers' GGUF loader undoes it)."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(
        weight.shape)


def write_gguf(model, tokenizer, path: Path, architecture: str = "llama", drop: tuple[str, ...] = (),
               vocabulary: int | None = None, quantize: gguf.GGMLQuantizationType | None = None) -> Path:
    """``model`` (a ``LlamaForCausalLM``) and its byte-level ``tokenizer`` as a float32 GGUF file at ``path``; the
    tensors named in ``drop`` (llama.cpp's names) are left out; ``vocabulary``: only the first tokens listed (a file
    whose vocabulary does not match its weights); ``quantize``: the matrices quantized so (gguf's own quantizer, as
    llama.cpp's real files are: Q8_0, Q4_1, ...), the norms kept in float32."""
    config = model.config
    writer = gguf.GGUFWriter(str(path), architecture)
    add_tensor = writer.add_tensor

    def add(name: str, data: np.ndarray) -> None:
        if name in drop:
            return
        if quantize is None or data.ndim < 2:
            add_tensor(name, data)
        else:
            add_tensor(name, gguf.quants.quantize(data, quantize), raw_dtype=quantize)

    writer.add_tensor = add
    writer.add_name("tiny random llama")
    writer.add_basename("tiny-llama")
    writer.add_size_label("2L")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if quantize is None else
                         gguf.LlamaFileType[f"MOSTLY_{quantize.name}"])
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_freq_base(float(getattr(config, "rope_theta", None) or config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    tokens = [None] * len(vocab)
    for text, index in vocab.items():
        tokens[index] = text
    special = {t["id"] for t in spec["added_tokens"] if t.get("special")}
    writer.add_tokenizer_model("gpt2")
    tokens = tokens[:vocabulary]
    writer.add_token_list(tokens)
    writer.add_token_types([3 if i in special else 1 for i in range(len(tokens))])
    merges = spec["model"]["merges"]
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_chat_template(tokenizer.chat_template)
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    if not config.tie_word_embeddings:
        writer.add_tensor("output.weight", state["lm_head.weight"])
    for i in range(config.num_hidden_layers):
        p = f"model.layers.{i}."
        writer.add_tensor(f"blk.{i}.attn_norm.weight", state[p + "input_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.attn_q.weight", _permute(state[p + "self_attn.q_proj.weight"], heads))
        writer.add_tensor(f"blk.{i}.attn_k.weight", _permute(state[p + "self_attn.k_proj.weight"], kv_heads))
        writer.add_tensor(f"blk.{i}.attn_v.weight", state[p + "self_attn.v_proj.weight"])
        writer.add_tensor(f"blk.{i}.attn_output.weight", state[p + "self_attn.o_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", state[p + "post_attention_layernorm.weight"])
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", state[p + "mlp.gate_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_up.weight", state[p + "mlp.up_proj.weight"])
        writer.add_tensor(f"blk.{i}.ffn_down.weight", state[p + "mlp.down_proj.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
