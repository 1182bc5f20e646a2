"""A rated corpus as the systems to compare (``styleeval evaluate --dataset lai_formality``,
``evaluate_systems(dataset="lai_formality")``): every system's rewrite of every source, the corpus's references and
its human ratings as ``human_<dimension>`` columns, in the rows :func:`~styleeval.systems.evaluate_systems` reads.

>>> rows = dataset_rows("lai_formality")
>>> len(rows), {k: rows[0][k] for k in ("system", "source_id", "style", "human_content")}
(720, {'system': 'BART', 'source_id': '0', 'style': 'formal', 'human_content': 69.85})
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from styleeval.corpora import check_corpus_names, load_corpus, systems_corpora
from styleeval.corpora.schema import ASPECTS
from styleeval.errors import UserError, current_interface
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


def check_input_choice(has_rows: bool, dataset: str | None, style: str | None = None, *,
                       files: Sequence[str] = (), system_from_filename: bool = False) -> None:
    """The rule of the systems input: rows (the files IN on the command line) or the corpus ``dataset``, exactly one
    of them, and with a corpus no ``style`` (nor ``--system-from-filename``): the corpus names each row's system and
    target style. A ``UserError`` otherwise, phrased for the interface (:func:`~styleeval.errors.current_interface`:
    IN and ``--dataset`` on the command line, naming the ``files`` given; rows and ``dataset=`` in Python)."""
    cli = current_interface() == "cli"
    if dataset is None:
        if not has_rows:
            raise UserError("give the files of system outputs (IN ...) or --dataset NAME (a rated corpus's systems)"
                            if cli else "give the rows to evaluate, or dataset=NAME for a rated corpus's systems")
        return
    if has_rows:
        raise UserError(f"give IN files or --dataset {dataset}, not both ({' '.join(files)})" if cli
                        else f"give rows or dataset={dataset!r}, not both")
    if not cli:
        if style is not None:
            raise UserError(f"style={style!r} with dataset={dataset!r}: the corpus gives each row its target style; "
                            "leave style out")
        return
    for given, option in ((system_from_filename, "--system-from-filename"), (style, "--style")):
        if given:
            raise UserError(f"{option} with --dataset: the corpus names each row's system and target style; "
                            f"leave {option} out")
