"""What the Space (``spaces/style_eval_demo``) shows, as plain functions: the UI only lays them out. Every name is
exported here (``from styleeval.demo import Demo``); each topic is a module of its own:

- :mod:`.scorer`: :class:`Demo` and its requests. :meth:`Demo.score`: LogProb content and style, the autorater
  (expected mode; paper mode on demand) and source-based BLEU/chrF for contrast, each with a one-line reading, and the
  rewrite token by token labelled with the instruction that explains it best (``unexplained`` below
  :data:`UNEXPLAINED_BELOW`); :meth:`Demo.compare`: two rewrites of one source, which one each metric prefers;
  :meth:`Demo.batch`: a CSV/JSONL file scored row by row, per-system means.
- :mod:`.readings`: the text fields' checks (:func:`check_text`, :data:`MAX_CHARS`, the page's :data:`EXAMPLES`) and
  what one score means (:func:`reading_content`, calibrated per model by :data:`READING_CALIBRATION`;
  :func:`reading_style`); :mod:`.numbers`: numbers as the page writes them (:func:`readable`, :func:`prefers`,
  :func:`p_text`).
- :mod:`.settings`: which model the apps run (:func:`model_from_env`), a visitor's chosen model that cannot be had
  (:class:`ModelUnavailable`).
- :mod:`.uploads`: the Batch tab's limits and files (:func:`size_text`, :func:`for_upload`, :func:`write_scored_csv`).
- :mod:`.metaevaluation`: :func:`metaeval_summary`: the test-set correlation table of the sacrebleu metrics;
  :func:`metaeval_tab`: the whole Meta-evaluation tab, which the Space computes once (:class:`Later`, of
  :mod:`.concurrency`, with :class:`Gate`), in the background once it listens or when the tab is first opened,
  never before its URL is printed.
- :mod:`.apps`: the LLM scorers' small apps (``metrics/*/app.py``) from their declarations: :func:`app_row` (one
  row's answer), :func:`metric_app` (the page), :func:`launch`.
- :mod:`.banner`: :func:`space_banner`: what works in this Space (which model; random weights; weights that cannot be
  had; corpora missing), decided at start without loading the model; :mod:`.messages`: :func:`visitor_message`: any
  error in the page's words, :func:`log_for_owner`: its details for the Space's owner.

The model comes from the argument or ``STYLEEVAL_MODEL`` (preset, Hub id, local folder or ``.gguf`` file; default
the backend's ``app_model``: locally the real 135M preset ``smollm2-135m``, which needs no Hub account); ``STYLEEVAL_BASE_URL`` points
LogProb and the autorater at a vLLM server instead (default: the server's only model; ``STYLEEVAL_TOKENIZER`` names
the tokenizer). Where that model is a GGUF preset run here, a visitor may choose another GGUF preset
(:meth:`Demo.choices`, :meth:`Demo.model_note`; every request method takes ``model=``): each is loaded on first use
and kept, one per preset, and a preset that cannot be had is one line naming it and the fix
(:class:`ModelUnavailable`). Every bad input raises a :class:`~styleeval.errors.UserError` (a ``ValueError``) with a message a user
can act on. What a web visitor reads names no command-line flag and no path of the server: advice that only the
Space's owner can follow says so ("For the Space's owner: ...").
"""

from styleeval.demo.apps import app_row, launch, metric_app
from styleeval.demo.banner import (
    OWNER_MODEL_ADVICE,
    OWNER_REAL_MODEL_ADVICE,
    REAL_MODEL_WORTH,
    metaeval_note,
    space_banner,
)
from styleeval.demo.concurrency import Gate, Later
from styleeval.demo.messages import SPACE_DATA_ADVICE, for_the_space_owner, log_for_owner, visitor_message
from styleeval.demo.metaevaluation import (
    TAB_METRICS,
    MetaevalTab,
    content_metaeval,
    leaderboard_of,
    metaeval_leaderboard,
    metaeval_summary,
    metaeval_tab,
    metaeval_unavailable,
    summary_of,
)
from styleeval.demo.numbers import P_FLOOR, TIE_BELOW, p_text, prefers, readable
from styleeval.demo.readings import (
    CONTENT_ERROR_AT,
    EXAMPLES,
    MAX_CHARS,
    READING_CALIBRATION,
    UNCALIBRATED,
    UNEXPLAINED_BELOW,
    check_text,
    reading_content,
    reading_style,
)
from styleeval.demo.scorer import Demo
from styleeval.demo.settings import ModelUnavailable, model_from_env
from styleeval.demo.uploads import (
    LARGER_FILES,
    MAX_BATCH_ROWS,
    MAX_UPLOAD_BYTES,
    UPLOAD_REFUSED_OVER,
    carried_columns,
    for_upload,
    size_text,
    write_scored_csv,
)

__all__ = [
    "CONTENT_ERROR_AT", "EXAMPLES", "LARGER_FILES", "MAX_BATCH_ROWS", "MAX_CHARS", "MAX_UPLOAD_BYTES",
    "OWNER_MODEL_ADVICE", "OWNER_REAL_MODEL_ADVICE", "P_FLOOR", "READING_CALIBRATION", "REAL_MODEL_WORTH",
    "SPACE_DATA_ADVICE", "TAB_METRICS", "TIE_BELOW", "UNCALIBRATED", "UNEXPLAINED_BELOW", "UPLOAD_REFUSED_OVER",
    "Demo", "Gate", "Later", "MetaevalTab", "ModelUnavailable", "app_row", "carried_columns", "check_text", "content_metaeval",
    "for_the_space_owner", "for_upload", "launch", "leaderboard_of", "log_for_owner", "metaeval_leaderboard", "metaeval_note",
    "metaeval_summary", "metaeval_tab", "metric_app", "metaeval_unavailable", "model_from_env", "p_text", "prefers", "readable",
    "reading_content", "reading_style", "size_text", "space_banner", "summary_of", "visitor_message",
    "write_scored_csv",
]
