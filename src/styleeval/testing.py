"""Helpers for the tests only (the random-weight models themselves, the ``tiny-random`` preset's too, are built by
:mod:`styleeval.random_weights`): :func:`train_replies` overfits such a model into a judge whose replies are known.
"""

from __future__ import annotations

import torch


def train_replies(model, tokenizer, prompts: list[list[int]], replies: list[str], steps: int = 150,
                  lr: float = 1e-2, seed: int = 0):
    """Overfit ``model`` so that greedy decoding answers ``prompts[i]`` with ``replies[i]`` (then end of turn).

    For tests that need a judge whose replies are known (compliant or not) without real weights: Adam on the
    reply tokens only, a few seconds for the tiny shapes. Returns the model in eval mode.
    """
    torch.manual_seed(seed)
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    sequences, masks = [], []
    for prompt, reply in zip(prompts, replies, strict=True):
        target = tokenizer(reply, add_special_tokens=False)["input_ids"] + [eot]
        sequences.append(list(prompt) + target)
        masks.append([0] * len(prompt) + [1] * len(target))
    width = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for b, (seq, mask) in enumerate(zip(sequences, masks, strict=True)):
        ids[b, : len(seq)] = torch.tensor(seq)
        attention[b, : len(seq)] = 1
        labels[b, : len(seq)] = torch.where(torch.tensor(mask) == 1, torch.tensor(seq), torch.tensor(-100))
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        loss.backward()
        optimizer.step()
        if loss.item() < 1e-3:
            break
    return model.eval()
