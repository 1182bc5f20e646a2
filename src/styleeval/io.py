"""Moved to :mod:`styleeval.files` (records, resume, runner); the public names stay importable from here."""

from styleeval.files import (
    AUTORATER_RECORDS,
    INPUT_COLUMNS,
    LOGPROB_RECORDS,
    OUTPUT_FIELDS,
    FileJob,
    InputRow,
    RecordKind,
    ScoreFileResult,
    autorate_file,
    iter_records,
    read_rows,
    read_scores,
    run_file,
    score_file,
    timed_chunks,
)

__all__ = ["AUTORATER_RECORDS", "INPUT_COLUMNS", "LOGPROB_RECORDS", "OUTPUT_FIELDS", "FileJob", "InputRow",
           "RecordKind", "ScoreFileResult", "autorate_file", "iter_records", "read_rows", "read_scores", "run_file",
           "score_file", "timed_chunks"]
