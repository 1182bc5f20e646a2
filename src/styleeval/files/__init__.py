"""Record files: reading and writing (:mod:`.records`), resuming (:mod:`.resume`), the resumable runner (:mod:`.runner`)
behind ``styleeval score`` and ``styleeval autorate`` (:func:`scorer_file`: any LLM scorer's declaration)."""

from styleeval.files.records import (
    AUTORATER_RECORDS,
    INPUT_COLUMNS,
    LOGPROB_RECORDS,
    OUTPUT_FIELDS,
    InputRow,
    RecordKind,
    iter_records,
    read_rows,
    read_scores,
)
from styleeval.files.runner import (
    FileJob,
    ScoreFileResult,
    autorate_file,
    run_file,
    score_file,
    scorer_file,
)
from styleeval.run import timed_chunks

__all__ = ["AUTORATER_RECORDS", "INPUT_COLUMNS", "LOGPROB_RECORDS", "OUTPUT_FIELDS", "FileJob", "InputRow",
           "RecordKind", "ScoreFileResult", "autorate_file", "iter_records", "read_rows", "read_scores", "run_file",
           "score_file", "scorer_file", "timed_chunks"]
