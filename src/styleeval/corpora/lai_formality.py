"""Lai et al. (2022), human evaluation of formality transfer (GYAFC): 8 systems x 80 + 80 rated references.

Source files: ``data/outputs/{SYSTEM}.human.txt`` of ``laihuiyuan/eval-formality-transfer``: tab-separated,
no header, 80 lines of ``survey, input, output, reference, content-1, style-1, fluency-1, content-2,
style-2, fluency-2``; ratings are continuous 1-100. Lines 0-39 are informal->formal, 40-79 formal->informal.
``data/xformal/fr.80.ref0`` ... ``ref3`` hold four human references per input; ``load(references=4)`` puts the rating
files' reference and ``ref1``-``ref3`` in each row's ``reference`` list (Lai et al.'s Table 4). ``ref0`` is *not*
always the rating files' reference (the data README says it is): 7 of the 80 lines differ (lines 22, 23, 35, 46, 50,
51, 60; e.g. "He has his nose pierced." vs "He had his nose pierced."); Lai's metric scripts read the rating files'
reference, so that one comes first.
"""

from __future__ import annotations

import os
from pathlib import Path

from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, resolve
from styleeval.corpora._parsing import RowContext
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import CorpusSpec
from styleeval.errors import UserError

NAME = "lai_formality"
SOURCE = Source(NAME, "laihuiyuan/eval-formality-transfer", "ac47a0882926902fa79a59bbe3ba0eb4c97176f5")
SYSTEMS = ("BART", "HIGH", "IBT", "LUO", "NIU", "RAO", "YI", "ZHOU", "REF")
LINES = 80
RATING_FIELDS = ("content-1", "style-1", "fluency-1", "content-2", "style-2", "fluency-2")


def file_path(system: str) -> str:
    """Path of a system's rating file inside the source repository."""
    return f"data/outputs/{system}.human.txt"


def _read_lines(path: Path, url: str, fields: int | None = 10) -> list[tuple[RowContext, list[str]]]:
    """The 80 tab-separated lines of one of Lai's per-system files, each with its context (``fields``: the number of
    fields every line must have; ``None``: any)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != LINES:
        raise CorpusError(f"{len(lines)} lines, expected {LINES}", file=path, url=url)
    out = []
    for i, line in enumerate(lines):
        ctx = RowContext(path, url, i + 1)
        parts = line.rstrip("\r").split("\t")
        if fields is not None and len(parts) != fields:
            raise ctx.error(f"{len(parts)} tab-separated fields, expected {fields}")
        out.append((ctx, parts))
    return out


REFERENCE_FILES = tuple(f"data/xformal/fr.80.ref{k}" for k in range(4))


def load_references(data_dir: str | os.PathLike[str] | None = None) -> list[list[str]]:
    """The four human references of each of the 80 inputs (line order), from ``data/xformal/fr.80.ref{0..3}``."""
    columns = []
    for rel in REFERENCE_FILES:
        path, url = resolve(SOURCE, rel, data_dir), SOURCE.url(rel)
        column = []
        for ctx, (text,) in _read_lines(path, url, fields=1):
            if not text.strip():
                raise ctx.error("empty reference")
            column.append(text.strip())
        columns.append(column)
    return [list(refs) for refs in zip(*columns, strict=True)]


def load(data_dir: str | os.PathLike[str] | None = None, references: int = 1) -> Dataset:
    """The 720 rated rewrites in the long schema, ordered by system (as in :data:`SYSTEMS`) then line.

    ``references``: 1 (default) keeps the reference of the rating files (as Lai et al.'s single-reference tables and
    the other corpora); 4 gives every system row four human references of its input: that one, then ``ref1``,
    ``ref2``, ``ref3`` of ``data/xformal``.
    The rated reference rows (``system == "reference"``) have no reference either way.
    """
    if references not in (1, 4):
        raise UserError(f"references must be 1 or 4, got {references!r}")
    extra_refs = load_references(data_dir) if references == 4 else None
    rows = []
    sources: list[tuple[str, str]] | None = None
    for system in SYSTEMS:
        url = SOURCE.url(file_path(system))
        lines = _read_lines(resolve(SOURCE, file_path(system), data_dir), url)
        if sources is None:
            sources = [(x[1], x[3]) for _, x in lines]
        is_ref = system == "REF"
        for i, (ctx, x) in enumerate(lines):
            if (x[1], x[3]) != sources[i]:
                raise ctx.error(f"input/reference differ from line {i + 1} of {file_path(SYSTEMS[0])}")
            if x[0] not in {"1", "2", "3", "4", "5", "6"}:
                raise ctx.error(f"survey id {x[0]!r} is not a small integer")
            for k, label in ((1, "input"), (2, "output"), (3, "reference")):
                if not x[k].strip():
                    raise ctx.error(f"field {k} ({label}) is empty")
            scores = [ctx.number(x[k], f"{RATING_FIELDS[k - 4]} (column {k})", 1, 100) for k in range(4, 10)]
            rows.append(
                rating_row(
                    id=f"{NAME}/{system}/{i}",
                    dataset=NAME,
                    task="formality",
                    target_style="formal" if i < 40 else "informal",
                    source_id=str(i),
                    source=x[1],
                    rewrite=x[2],
                    reference=None if is_ref else ([x[3]] if extra_refs is None else [x[3], *extra_refs[i][1:]]),
                    system="reference" if is_ref else system,
                    is_reference_rewrite=is_ref,
                    content_scores=[scores[0], scores[3]],
                    style_scores=[scores[1], scores[4]],
                    fluency_scores=[scores[2], scores[5]],
                    n_raters=2,
                    rater_ids=[f"lai:survey{x[0]}:r1", f"lai:survey{x[0]}:r2"],
                    scale_min=1,
                    scale_max=100,
                    extra={
                        "survey_id": x[0],
                        "direction": "informal->formal" if i < 40 else "formal->informal",
                    },
                )
            )
    return rating_dataset(rows)


SPEC = CorpusSpec(NAME, "Lai", "rating", 1, load, compares_systems=True)
