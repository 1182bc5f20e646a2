"""The Batch tab's files: upload limits (:data:`MAX_BATCH_ROWS`, :data:`MAX_UPLOAD_BYTES`), sizes as Gradio's file
component shows them (:func:`size_text`), a file error in the Space's words (:func:`for_upload`), the upload's
carried columns and the scored CSV offered for download (:func:`write_scored_csv`)."""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from styleeval.demo.messages import _CLI_ADVICE
from styleeval.escaping import csv_text

MAX_BATCH_ROWS = 200
"""Most rows of an uploaded batch file."""
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
"""The largest batch upload the demo reads (200 rows of 3 fields of 1000 characters fit): 2.0 MB as Gradio's file
component counts (:func:`size_text`)."""
UPLOAD_REFUSED_OVER = 20 * 1024 * 1024
"""The server's own limit on an upload (Gradio's ``max_file_size``: larger files are refused before they arrive,
with a notice that fades); files over :data:`MAX_UPLOAD_BYTES` but under it arrive and the status line says their
size and the limit."""
LARGER_FILES = "For larger files, use the styleeval package on your own machine (`styleeval score FILE`)."


def size_text(n_bytes: int) -> str:
    """A file size as Gradio's file component shows it beside the file (its JavaScript: divide by 1024 while over
    1024, units B/KB/MB/GB, ``toFixed(1)``, which rounds halves up): every size the Space writes uses this rule, so
    a message and the component never give one file two sizes.

    >>> size_text(3_200_050), size_text(MAX_UPLOAD_BYTES), size_text(UPLOAD_REFUSED_OVER), size_text(512)
    ('3.1 MB', '2.0 MB', '20.0 MB', '512.0 B')
    """
    value, units = float(n_bytes), ["B", "KB", "MB", "GB", "TB"]
    unit = 0
    while value > 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    return f"{Decimal(value).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} {units[unit]}"


def for_upload(message: str, path: str) -> str:
    """A file error as the Space says it: the upload's name instead of the server's path, no command-line flags."""
    name = os.path.basename(path)
    for full in {str(path), os.path.abspath(path), os.path.realpath(path)}:
        message = message.replace(full, name)
    for advice, instead in _CLI_ADVICE.items():
        message = message.replace(advice, instead)
    return message


def carried_columns(rows: Sequence[Any]) -> list[str]:
    """The upload's other columns (``system`` aside), in order of first appearance over every row: a JSONL row may
    add a column that earlier rows lack (their cell is empty), as in ``styleeval score``'s output."""
    return [k for k in dict.fromkeys(k for r in rows for k in r.extra) if k != "system"]


def write_scored_csv(rows: Sequence[dict[str, Any]], path: str) -> str:
    """The scored rows of :meth:`~styleeval.demo.scorer.Demo.batch` as the CSV the Space offers for download, every cell and every header
    cell (an upload's column names are the visitor's text) through the CSV rule (:func:`styleeval.escaping.csv_text`:
    a text such as ``=HYPERLINK(...)`` does not run when the file is opened in a spreadsheet); returns ``path``."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow([csv_text(name) for name in rows[0]])
        writer.writerows([csv_text(r[name]) for name in rows[0]] for r in rows)
    return path
