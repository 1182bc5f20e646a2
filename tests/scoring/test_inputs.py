"""ScoringInputs: a column shorter or longer than the rewrites is refused, naming the first row it leaves bare
(issue 48: the fingerprint's zip is strict, and checked first so the error says what to fix)."""

from __future__ import annotations

import re

import pytest

from styleeval.errors import UserError
from styleeval.metrics import get_metric
from styleeval.scoring import ScoringInputs, score_dataset

SOURCES = ["I need the report now.", "Send it.", "we r late again lol"]
REWRITES = ["I need the report now, please.", "Please send it.", "We are late again."]


def _inputs(**columns) -> ScoringInputs:
    fields = {"ids": ["0", "1", "2"], "sources": SOURCES, "rewrites": REWRITES, "references": [None] * 3,
              "styles": ["formal"] * 3, "source_ids": ["0", "1", "2"], **columns}
    return ScoringInputs("toy", **fields)


def test_equal_columns_score_every_row():
    scores = score_dataset(get_metric("s_bleu"), _inputs())
    assert len(scores) == 3
    assert len(_inputs().fingerprint) == 20


@pytest.mark.parametrize(("columns", "message"), [
    ({"sources": SOURCES[:2]}, "scoring inputs 'toy': 3 rewrites but 2 sources; row 2 has no source. Give every "
                               "column one entry per row (references: a list per row, or None)"),
    ({"styles": ["formal"]}, "scoring inputs 'toy': 3 rewrites but 1 styles; row 1 has no style."),
    ({"references": [None] * 4}, "scoring inputs 'toy': 3 rewrites but 4 references; row 3 has no rewrite."),
])
def test_a_column_of_another_length_is_refused_by_row(columns, message):
    data = _inputs(**columns)
    with pytest.raises(UserError, match="^" + re.escape(message)):
        data.fingerprint  # noqa: B018 - the property raises
    with pytest.raises(UserError, match="^" + re.escape(message)):
        score_dataset(get_metric("s_bleu"), data)
