"""Per-token explanations of a LogProb score (what the Space shows)."""

from __future__ import annotations

import math
from typing import Any

from styleeval.errors import UserError
from styleeval.logprob.prompts import CONTEXTS


def token_table(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per scored token of a ``LogProb.score(..., return_tokens=True)`` row.

    Each record has the token text, its log-probability under the three contexts, the context that explains it
    best, its contribution to content preservation (``log max p``) and to style strength
    (``p_style - max(p_paraphrase, p_repeat)``). The means of the last two columns are the row's scores.
    """
    if "tokens" not in row:
        raise UserError("row has no 'tokens': score with return_tokens=True")
    table = []
    for tok in row["tokens"]:
        logps = {ctx: tok[ctx] for ctx in CONTEXTS}
        best = max(CONTEXTS, key=lambda c: logps[c])
        table.append(
            {
                "token": tok["token"],
                **{f"logp_{ctx}": logps[ctx] for ctx in CONTEXTS},
                "best": best,
                "content": logps[best],
                "style": math.exp(logps["style"]) - math.exp(max(logps["paraphrase"], logps["repeat"])),
            }
        )
    return table
