"""A rated corpus as the systems to compare (``styleeval evaluate --dataset lai_formality``,
``evaluate_systems(dataset="lai_formality")``): every system's rewrite of every source, the corpus's references and
its human ratings as ``human_<dimension>`` columns, in the rows :func:`~styleeval.systems.evaluate_systems` reads.

>>> rows = dataset_rows("lai_formality")
>>> len(rows), {k: rows[0][k] for k in ("system", "source_id", "style", "human_content")}
(720, {'system': 'BART', 'source_id': '0', 'style': 'formal', 'human_content': 69.85})
"""

from __future__ import annotations

import os
from typing import Any

from styleeval.corpora import check_corpus_names, load_corpus, systems_corpora
from styleeval.corpora.schema import ASPECTS
from styleeval.errors import UserError
from styleeval.systems.report import HUMAN_PREFIX


def check_dataset(name: str) -> None:
    """A ``UserError`` unless ``name`` is a corpus of several systems per source (:func:`systems_corpora`): an
    unknown name gets a did-you-mean, a corpus without systems says why; both name the corpora that work."""
    works = systems_corpora()
    if name in works:
        return
    choose = f"choose from {', '.join(works)}"
    check_corpus_names(name)  # an unknown name: the did-you-mean every corpus argument gives
    raise UserError(f"corpus {name!r} has no systems to compare (it is not several systems' rewrites of each "
                    f"source); {choose}, or give a file of system outputs")


def dataset_rows(name: str, data_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The rows of corpus ``name`` as systems input, in the corpus's order: ``system``, ``source_id``, ``source``,
    ``rewrite``, ``style`` (the row's target style), ``references`` (the corpus's; none for the rows that are a
    human reference themselves: a reference is never its own reference) and one ``human_<dimension>`` column per
    rated dimension (content, style, fluency: the mean of the raters, on the corpus's scale; missing where the row
    has no rating of it). ``data_dir``: the local corpus mirror (default ``$STYLEEVAL_DATA_DIR``, else download)."""
    check_dataset(name)
    rows = []
    for i, record in enumerate(load_corpus(name, data_dir)):
        row = {"system": record["system"], "source_id": record["source_id"], "source": record["source"],
               "rewrite": record["rewrite"], "style": record["target_style"],
               "references": None if record["is_reference_rewrite"] else record["reference"],
               "_where": f"{name}, row {i} ({record['id']})"}
        row.update({f"{HUMAN_PREFIX}{aspect}": record[f"{aspect}_mean"] for aspect in ASPECTS})
        rows.append(row)
    return rows
