"""Pauli et al. (2025), "Mind the Style Gap": the constructed test set (500 rewrites, 6 tasks, 3 raters).

Source files: ``data/syntest_anno{1..6}.csv`` of ``AmaliePauli/style_transfer_evaluation``. AnswerA is style
strength, AnswerB content preservation, both 1-5 Likert. Without a local mirror the loader first tries the
authors' Hub dataset ``APauli/style_eval_content_test``: it is used when it holds the same six CSV files
(identical bytes, so the pinned checksums hold); otherwise the pinned GitHub raw files are downloaded.

Privacy: the source files name raters by their Prolific worker ids. The loader replaces them by stable pseudonyms
(``style_gap_testset:rater1`` ... ``rater5``, numbered by first appearance), consistent across the six files, so
no output of styleeval (datasets, Parquet, reports) carries a worker id.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import huggingface_hub
from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, local_data_dir, resolve, verify
from styleeval.corpora._parsing import read_csv
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import Config, CorpusSpec

logger = logging.getLogger(__name__)

NAME = "style_gap_testset"
SOURCE = Source(NAME, "AmaliePauli/style_transfer_evaluation", "1ec3ad9372da39ef8cdf4052285865442ba07ebb")
HUB_REPO = "APauli/style_eval_content_test"

# file number -> (task, expected rows)
TASKS: dict[int, tuple[str, int]] = {
    1: ("sentiment", 50),
    2: ("detoxification", 50),
    3: ("catchy", 100),
    4: ("politeness", 100),
    5: ("persuasiveness", 100),
    6: ("formality", 100),
}

_RATINGS = [f"Answer{g}_{k}" for g in "AB" for k in (1, 2, 3)]
_REQUIRED = {"sample_id", "input", "output", "style_to", "intention", "quest_nr", *_RATINGS}
_REQUIRED |= {f"prolificID_{k}" for k in (1, 2, 3)} | {"annoA_mean", "annoB_mean"}


def file_path(n: int) -> str:
    """Path of the n-th annotation file inside the source repository."""
    return f"data/syntest_anno{n}.csv"


def _pseudonym(raters: dict[str, str], worker: str) -> str:
    """A stable pseudonym for a crowd worker id: ``style_gap_testset:raterK`` in order of first appearance (files
    anno1..anno6, rows in file order, slots 1..3), the same person getting the same name in every file."""
    if worker not in raters:
        raters[worker] = f"{NAME}:rater{len(raters) + 1}"
    return raters[worker]


def _parse_file(n: int, path: Path, url: str, raters: dict[str, str]) -> list[dict]:
    task, expected = TASKS[n]
    required = _REQUIRED | ({"source", "reference"} if n <= 2 else {"source_from", "step"})
    rows = []
    seen: set[str] = set()
    for ctx, r in read_csv(path, url, required):
        style = [ctx.number(r[f"AnswerA_{k}"], f"AnswerA_{k}", 1, 5) for k in (1, 2, 3)]
        content = [ctx.number(r[f"AnswerB_{k}"], f"AnswerB_{k}", 1, 5) for k in (1, 2, 3)]
        for group, values in (("A", style), ("B", content)):
            released = ctx.number(r[f"anno{group}_mean"], f"anno{group}_mean", 1, 5)
            if abs(released - sum(values) / 3) > 1e-6:
                raise ctx.error(f"anno{group}_mean {released} differs from the mean of Answer{group}_1..3")
        quest_nr = str(int(ctx.number(r["quest_nr"], "quest_nr", 0, 1e9)))
        if quest_nr in seen:
            raise ctx.error(f"duplicate quest_nr {quest_nr}")
        seen.add(quest_nr)
        sample_id = int(ctx.number(r["sample_id"], "sample_id", 0, 1e9))
        intention = ctx.text(r, "intention")
        extra = {
            "input_origin": r["source"] if n <= 2 else r["source_from"],
            "quest_nr": int(quest_nr),
            "content_expected_preserved": intention == "style",
        }
        if n > 2:
            extra["step"] = r["step"] or None
        rows.append(
            rating_row(
                id=f"{NAME}/anno{n}/q{quest_nr}",
                dataset=NAME,
                task=task,
                target_style=ctx.text(r, "style_to"),
                source_id=f"anno{n}/{sample_id}",
                source=ctx.text(r, "input"),
                rewrite=ctx.text(r, "output"),
                reference=[ctx.text(r, "reference")] if n <= 2 else None,
                system=intention,
                is_reference_rewrite=False,
                content_scores=content,
                style_scores=style,
                fluency_scores=None,
                n_raters=3,
                rater_ids=[_pseudonym(raters, ctx.text(r, f"prolificID_{k}")) for k in (1, 2, 3)],
                scale_min=1,
                scale_max=5,
                extra=extra,
            )
        )
    if len(rows) != expected:
        raise CorpusError(f"{len(rows)} rows, expected {expected}", file=path, url=url)
    return rows


def _from_hub() -> dict[int, Path] | None:
    """The six CSV files from the Hub dataset when it holds them byte-identical; else None."""
    try:
        folder = Path(huggingface_hub.snapshot_download(HUB_REPO, repo_type="dataset", allow_patterns=["*.csv", "**/*.csv"]))
        found = {p.name: p for p in folder.rglob("syntest_anno*.csv")}
        paths = {n: found[f"syntest_anno{n}.csv"] for n in TASKS}
        for n, path in paths.items():
            verify(path, f"{NAME}/{file_path(n)}", f"https://huggingface.co/datasets/{HUB_REPO}")
        return paths
    except Exception as err:  # any Hub problem: fall back to the pinned GitHub files
        logger.info("Hub dataset %s not usable (%s); using the GitHub raw files", HUB_REPO, err)
        return None


def load(data_dir: str | os.PathLike[str] | None = None) -> Dataset:
    """The 500 rated rewrites in the long schema, in file order (anno1..anno6, rows as in each file)."""
    paths = None if local_data_dir(data_dir) is not None else _from_hub()
    rows: list[dict] = []
    raters: dict[str, str] = {}  # Prolific worker id -> pseudonym: worker ids never leave the loader
    for n in TASKS:
        path = paths[n] if paths else resolve(SOURCE, file_path(n), data_dir)
        rows.extend(_parse_file(n, path, SOURCE.url(file_path(n)), raters))
    return rating_dataset(rows)


SPEC = CorpusSpec(NAME, "Test set", "rating", 0, load,
                  configs=(Config("all"), *(Config(task) for task, _ in TASKS.values())))
