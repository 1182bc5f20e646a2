"""STEL (Wegmann & Nguyen, 2021): style-similarity quadruple tasks, not rewrite ratings.

Each task: ``anchor_1`` and ``anchor_2`` say one thing in two styles, ``sentence_1`` and ``sentence_2``
(STEL's ``Alternative 1.1`` / ``1.2``) say another thing in the same two styles; ``correct_alternative`` is 1
if ``sentence_1`` has the style of ``anchor_1``, else 2. Texts are kept verbatim (the em-subj-pronoun texts
end with a newline, as in the source files).

Licence: the repository is MIT, **except** the ``Data/STEL/dimensions`` samples (formality from GYAFC /
Yahoo Answers, simplicity from TurkCorpus), whose rights lie with other entities. They are loaded only with
``include_dimensions=True``, for local use; never publish them.
"""

from __future__ import annotations

import os

from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, resolve
from styleeval.corpora._parsing import read_csv
from styleeval.corpora.schema import STEL_FEATURES
from styleeval.corpora.spec import Config, CorpusSpec
from styleeval.errors import UserError

NAME = "stel"
SOURCE = Source(NAME, "nlpsoc/STEL", "e52f0521df53bd57c9ecafda16e7f2d6966a9993")

# component -> (group, path in the repository, expected tasks)
CHARACTERISTICS: dict[str, tuple[str, str, int]] = {
    "contraction": ("characteristics", "Data/STEL/characteristics/quad_questions_char_contraction.tsv", 100),
    "emotives": ("characteristics", "Data/STEL/characteristics/quad_questions_char_emotives.tsv", 200),
    "nbr_substitution": ("characteristics", "Data/STEL/characteristics/quad_questions_char_substitution.tsv", 100),
    "em-subj-pronoun": ("characteristics", "Data/STEL/characteristics/quad_questions_em-subj-pronoun_100.tsv", 100),
}
DIMENSIONS: dict[str, tuple[str, str, int]] = {
    "formality": ("dimensions", "Data/STEL/dimensions/quad_stel-dimension_formal-100_sample.tsv", 100),
    "simplicity": ("dimensions", "Data/STEL/dimensions/quad_stel-dimension_simple-100_sample.tsv", 100),
}
PUBLIC_COMPONENTS = tuple(CHARACTERISTICS)
RESTRICTED_COMPONENTS = tuple(DIMENSIONS)

_VOTES = "# Votes out of 5 for Correct Alternative"
_COLUMNS = {"", "Anchor 1", "Anchor 2", "Alternative 1.1", "Alternative 1.2", "Correct Alternative", "ID",
            _VOTES, "style type"}


def _parse(component: str, group: str, path: str, expected: int, data_dir) -> list[dict]:
    local = resolve(SOURCE, path, data_dir)
    url = SOURCE.url(path)
    rows = []
    for ctx, r in read_csv(local, url, _COLUMNS, delimiter="\t"):
        if r["style type"] != component:
            raise ctx.error(f"style type {r['style type']!r}, expected {component!r}")
        correct = int(ctx.number(r["Correct Alternative"], "Correct Alternative", 1, 2))
        task_id = ctx.text(r, "ID")
        if not task_id.endswith(f"--{correct - 1}"):
            raise ctx.error(f"ID {task_id!r} does not encode Correct Alternative {correct}")
        votes = (r[_VOTES] or "").strip()
        rows.append(
            {
                "id": f"{NAME}/{component}/{task_id}",
                "component": component,
                "group": group,
                "anchor_1": ctx.text(r, "Anchor 1"),
                "anchor_2": ctx.text(r, "Anchor 2"),
                "sentence_1": ctx.text(r, "Alternative 1.1"),
                "sentence_2": ctx.text(r, "Alternative 1.2"),
                "correct_alternative": correct,
                "votes_correct": None if votes in ("", "-") else int(ctx.number(votes, _VOTES, 0, 5)),
                "source_index": int(ctx.number(r[""], "index", 0, 1e9)),
                "source_file": path,
            }
        )
    if len(rows) != expected:
        raise CorpusError(f"{len(rows)} tasks, expected {expected}", file=local, url=url)
    return rows


def load(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    include_dimensions: bool = False,
    components: tuple[str, ...] | list[str] | None = None,
) -> Dataset:
    """STEL tasks with :data:`STEL_FEATURES`, component by component in the order of :data:`CHARACTERISTICS`.

    Args:
        data_dir: local mirror (see :func:`styleeval.corpora.load_corpus`).
        include_dimensions: also load the formality and simplicity samples (licence-restricted: local use
            only, never publish them).
        components: load only these components (restricted ones still need ``include_dimensions=True``).
    """
    table = dict(CHARACTERISTICS)
    if include_dimensions:
        table.update(DIMENSIONS)
    if components is not None:
        blocked = [c for c in components if c in DIMENSIONS and not include_dimensions]
        unknown = [c for c in components if c not in CHARACTERISTICS and c not in DIMENSIONS]
        if blocked or unknown:
            raise UserError(
                f"unknown STEL components {unknown}" if unknown
                else f"{blocked} are licence-restricted: pass include_dimensions=True (local use only)"
            )
        table = {c: table[c] for c in table if c in components}
    rows = []
    for component, (group, path, expected) in table.items():
        rows.extend(_parse(component, group, path, expected, data_dir))
    return Dataset.from_list(rows, features=STEL_FEATURES)


SPEC = CorpusSpec(NAME, "STEL", "stel", 5, load,
                  configs=(Config("all"), *(Config(c) for c in PUBLIC_COMPONENTS), *(Config(c, restricted=True) for c in RESTRICTED_COMPONENTS)))
