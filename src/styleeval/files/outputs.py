"""The check that a run's output is none of its inputs, under any name (before any work)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from styleeval.errors import UserError
from styleeval.files.records import STDIN


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file: the same real path (symbolic links followed), or, where both exist, the
    same file on disk (a hard link too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output_path(output: Path, inputs: Iterable[Path | str] = (), what: str = "the output file",
                      of: str = "the input file") -> None:
    """Before any work: OUT must be creatable (no parent is a file), not a folder, and none of ``inputs`` (under
    any name: a symbolic or hard link to an input is that input). ``what`` / ``of`` name them in the error."""
    if output.is_dir():
        raise UserError(f"{output}: is a directory; --out must name a file (e.g. {output}/scores.jsonl)")
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{output}: cannot be created, {parent} is a file, not a folder")
            break
    for source in inputs:
        if str(source) != STDIN and same_file(output, source):
            same = "" if str(source) == str(output) else f" ({source})"
            raise UserError(f"{output}: {what} must not be {of}{same}")
