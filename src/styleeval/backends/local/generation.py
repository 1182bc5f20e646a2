"""Batched local text generation with a Hugging Face causal LM (the autorater's paper mode).

Prompts are token ids (rendered with the chat template by :mod:`styleeval.chat`). Rows are sorted by length,
left-padded into batches of ``batch_size`` and generated with ``model.generate``; replies come back in input
order, decoded without special tokens. Greedy decoding does not depend on batching (up to float rounding).
Sampling runs each row alone, seeded with its own seed (``seeds[i]``), so a row's reply does not depend on the other
rows of the call, on chunking or on resume; the caller's global random state is left as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from styleeval.progress import bar as progress_bar


@torch.inference_mode()
def generate_replies(
    model,
    tokenizer,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    do_sample: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
    seeds: Sequence[int] | None = None,
    batch_size: int = 16,
    stop_ids: Iterable[int] = (),
    progress: bool = False,
) -> list[str]:
    """Generate one reply per token-id prompt; returns the decoded replies in input order.

    Args:
        model: a ``*ForCausalLM`` model in eval mode.
        tokenizer: its tokenizer (decoding, pad token).
        prompts: token ids of each prompt (non-empty).
        max_new_tokens: at most this many generated tokens per reply.
        do_sample, temperature, top_p: greedy (default) or nucleus sampling (``top_k`` is disabled).
        seeds: one sampler seed per prompt (sampling only; default 0 for every row).
        batch_size: prompts per ``generate`` call (greedy; sampled rows run one at a time).
        stop_ids: token ids that end a reply (besides the model's own end-of-sequence ids).
        progress: show a progress bar over prompts.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    for i, p in enumerate(prompts):
        if len(p) == 0:
            raise ValueError(f"prompt {i} is empty")
    device = next(model.parameters()).device
    stops = sorted({int(t) for t in stop_ids} | _model_eos(model, tokenizer))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (stops[0] if stops else 0)
    options: dict = {"max_new_tokens": int(max_new_tokens), "do_sample": bool(do_sample), "pad_token_id": pad,
                     "eos_token_id": stops or None}
    if do_sample:
        options.update(temperature=float(temperature or 1.0), top_p=float(top_p or 1.0), top_k=0)
    else:
        options.update(temperature=None, top_p=None, top_k=None)
    seeds = [0] * len(prompts) if seeds is None else [int(s) for s in seeds]
    if len(seeds) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")

    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]), reverse=True)
    if do_sample:
        batch_size = 1  # each row with its own seed: independent of its batch-mates
    replies: list[str] = [""] * len(prompts)
    bar = progress_bar(total=len(prompts), desc="generating", unit="row", progress=progress)
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            width = max(len(prompts[i]) for i in chunk)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for b, i in enumerate(chunk):  # left padding: every prompt ends at the last column
                ids[b, width - len(prompts[i]) :] = torch.tensor(list(prompts[i]), dtype=torch.long)
                mask[b, width - len(prompts[i]) :] = 1
            if do_sample:
                with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                    torch.manual_seed(seeds[chunk[0]])
                    out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **options)
            else:
                out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), **options)
            for b, i in enumerate(chunk):
                new = out[b, width:].tolist()
                cut = next((k for k, t in enumerate(new) if t in stops), len(new))
                replies[i] = tokenizer.decode(new[:cut], skip_special_tokens=True)
            bar.update(len(chunk))
    finally:
        bar.close()
    return replies


def _model_eos(model, tokenizer) -> set[int]:
    ids: set[int] = set()
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(source, "eos_token_id", None) if source is not None else None
        if eos is not None:
            ids.update([eos] if isinstance(eos, int) else eos)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids
