"""An LLM scorer's file command, derived from its declaration (:class:`~styleeval.llm_scorer.Command`): ``styleeval
score`` is :func:`llm_command` of LogProb, ``styleeval autorate`` of the autorater; the loop is
:func:`styleeval.files.runner.scorer_file`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from typing import Any

from styleeval.commands._options import add_file_arguments, column_means, means_line, run_model_file_command
from styleeval.files import scorer_file
from styleeval.files.records import RecordKind, TornTail, iter_scores
from styleeval.labels import counted
from styleeval.llm_scorer import LLMScorer


def llm_command(scorer: LLMScorer) -> tuple[str, Callable[[argparse._SubParsersAction], None],
                                            Callable[[argparse.Namespace], int]]:
    """``SUMMARY``, ``register`` and ``run`` of ``scorer``'s command (what the CLI reads of a command module)."""
    command = scorer.command
    records = RecordKind.of(scorer)

    def register(subparsers: argparse._SubParsersAction) -> None:
        p = subparsers.add_parser(command.name, help=command.summary, description=command.description,
                                  epilog=command.epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        add_file_arguments(p, command.done, chunk_size=command.chunk_size)
        scorer.options.add_arguments(p)
        p.set_defaults(func=run)

    def summary(result: Any) -> str:
        flag = command.compliance
        means = column_means(iter_scores(result.output, records, TornTail()), records.scores,
                             count=None if flag is None else lambda r: r[flag] is True)
        line = means_line(means, command.shown, command.left_out)
        if flag is None:
            return line
        return f"{line}  compliance {means['counted'] / means['rows']:.3f} ({counted(means['rows'], 'row')})"

    def run(args: argparse.Namespace) -> int:
        return run_model_file_command(args, partial(scorer_file, scorer), scorer.options, command.done, summary)

    register.__doc__ = f"Register the ``{command.name}`` sub-command."
    run.__doc__ = f"Run ``styleeval {command.name}``; returns the exit status (bad input raises ``UserError``)."
    return command.summary, register, run
