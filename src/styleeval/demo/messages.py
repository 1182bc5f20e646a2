"""What the page says of an error, to a web visitor (:func:`visitor_message`: no command-line flag, no path of the
server) and to the Space's owner (:func:`log_for_owner`: the details on the Space's standard error;
:func:`for_the_space_owner`: a corpus that cannot be loaded, with what to set for the Space)."""

from __future__ import annotations

import sys
import traceback

from styleeval.backends import BackendError
from styleeval.errors import UserError
from styleeval.hub import ModelLoadError

_CLI_ADVICE = {  # what the library says to a command-line user -> what a web visitor can do
    " or pass the file's encoding (--encoding latin-1, encoding='latin-1')": " and upload it again",
    "; give the style with --style": "; add a style column",
}


SPACE_DATA_ADVICE = ("set STYLEEVAL_DATA_DIR (`styleeval space --data-dir DIR`) to a copy of the corpora laid out as "
                     "they download (the test set's files in DIR/style_gap_testset/data/), or give the Space network "
                     "access so that it downloads them from their original URLs when it starts; the other tabs work "
                     "without them")
"""What the Space's owner can do when the meta-evaluation's corpus cannot be loaded."""


def for_the_space_owner(error: BaseException) -> BaseException:
    """The meta-evaluation's failure to load its corpus, worded for the Space's owner (a
    :class:`~styleeval.errors.UserError`: what failed, the file and path included, and :data:`SPACE_DATA_ADVICE`),
    instead of ``metaeval``'s advice (``--datasets``, ``--allow-missing``: flags of a command the Space does not
    run); any other error as it is."""
    from styleeval.corpora import CorpusError  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    cause = error if isinstance(error, CorpusError) else error.__cause__
    if not isinstance(cause, (CorpusError, OSError)):
        return error
    reason = cause.reason if isinstance(cause, CorpusError) else str(cause)
    where = f" ({cause.file})" if isinstance(cause, CorpusError) and cause.file else ""
    return UserError(f"the ratings of the paper's test set (style_gap_testset) could not be loaded{where}: {reason}. "
                     f"To fix: {SPACE_DATA_ADVICE}")


def log_for_owner(what: str, error: BaseException) -> None:
    """An error the page words for its visitors, in full (paths, flags, traceback) on the Space's standard error,
    where its owner reads it."""
    print(f"styleeval Space: {what}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
    if not isinstance(error, UserError):  # a bug or a failing server: the traceback helps
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


def visitor_message(error: BaseException) -> str:
    """Any error of a request, as the page says it to a web visitor (Markdown, one paragraph): the input's own
    message where the visitor can act on it (command-line advice replaced by what to do in the page), else what
    happened in the page's words, with the details in the Space's log (:func:`log_for_owner`)."""
    if isinstance(error, ModelLoadError):
        log_for_owner("the model could not be loaded", error)
        return ("Scoring is not available in this Space: its model cannot be loaded here (see the note at the top "
                "of the page).")

    if isinstance(error, BackendError):
        log_for_owner("the model's backend failed", error)
        return ("The model did not answer this request; please try again in a minute. *For the Space's owner*: the "
                "Space's log has the details.")
    if isinstance(error, UserError):  # input refused: the message is for the person who gave it
        message = str(error)
        for advice, instead in _CLI_ADVICE.items():
            message = message.replace(advice, instead)
        return message
    log_for_owner("a request failed", error)
    return (f"Something went wrong on the server ({type(error).__name__}). *For the Space's owner*: the Space's log "
            "has the traceback.")
