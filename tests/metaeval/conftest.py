"""A toy meta-evaluation shared by the figure and report tests: a constructed test set of three tasks of which only
sentiment has references, and a corpus of system outputs with references on two thirds of its rows."""

from __future__ import annotations

import pytest

from styleeval.metaeval import run_metaeval

TASKS = ("sentiment", "catchy", "formality")
SENTENCES = [f"the cat number {i} sat on the mat today and {w}" for i, w in enumerate("abcdefgh")]


def _toy_rows(dataset: str) -> list[dict]:
    """``style_gap_testset``: 8 rows per task, references only in sentiment (8 of 24). ``toy``: 3 systems x 8 sources,
    system C without references (16 of 24)."""
    rows = []
    for k in range(24):
        group, i = divmod(k, 8)
        s = SENTENCES[i]
        rewrite = (f"Could you {s}", s.upper(), s[::-1])[(i + group) % 3]
        if dataset == "style_gap_testset":
            task, system, reference = TASKS[group], "constructed", (s if group == 0 else None)
        else:
            task, system, reference = "politeness", "ABC"[group], (f"please {s}" if group < 2 else None)
        rows.append({"id": f"{dataset}/{k}", "dataset": dataset, "task": task, "target_style": "polite",
                     "source_id": str(i), "source": s, "rewrite": rewrite, "reference": reference, "system": system,
                     "is_reference_rewrite": False, "content_mean": float((3 * i + 2 * group) % 5 + 1),
                     "style_mean": 1.0, "fluency_mean": None})
    return rows


@pytest.fixture(scope="session")
def cut_result():
    """With R-BLEU in the run: the like rows of the test set's ALL are sentiment's 8 of 24, toy's 16 of 24."""
    return run_metaeval(["style_gap_testset", "toy"], ["s_bleu", "r_bleu", "s_chrf"], dimension="content",
                        loader=_toy_rows, n_boot=0)


@pytest.fixture(scope="session")
def whole_result():
    """The same corpora without a reference-based metric: every column on all its rows."""
    return run_metaeval(["style_gap_testset", "toy"], ["s_bleu", "s_chrf"], dimension="content", loader=_toy_rows,
                        n_boot=0)
