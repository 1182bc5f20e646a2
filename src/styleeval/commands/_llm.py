"""An LLM scorer's file command, derived from its declaration (:class:`~styleeval.llm_scorer.Command`): ``styleeval
score`` is :func:`llm_command` of LogProb that may run any declared scorer (``--metric SPEC``), ``styleeval autorate``
is the autorater's; the loop is :func:`styleeval.files.runner.scorer_file`."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from styleeval.commands._options import add_file_arguments, column_means, means_line, run_model_file_command
from styleeval.errors import UserError
from styleeval.files import scorer_file
from styleeval.files.records import RecordKind, TornTail, iter_scores
from styleeval.labels import counted
from styleeval.llm_scorer import LLMScorer


def llm_command(scorer: LLMScorer, choose: Sequence[LLMScorer] = ()) -> tuple[
        str, Callable[[argparse._SubParsersAction], None], Callable[[argparse.Namespace], int]]:
    """``SUMMARY``, ``register`` and ``run`` of ``scorer``'s command (what the CLI reads of a command module); with
    ``choose``, the command also takes ``--metric SPEC``: any of those scorers with its options
    (:func:`chosen_scorer`), ``scorer`` the default."""
    command = scorer.command

    def register(subparsers: argparse._SubParsersAction) -> None:
        others = "".join(f"With --metric {s.name}:...: the records of styleeval {s.command.name} (its --help), as that "
                         "command writes them.\n" for s in choose if s is not scorer)
        p = subparsers.add_parser(command.name, help=command.summary, description=command.description,
                                  epilog=command.epilog + others, formatter_class=argparse.RawDescriptionHelpFormatter)
        chunks = ", ".join(f"{s.command.chunk_size} for {s.name}" for s in choose)
        add_file_arguments(p, command.done, chunk_size=f"the scorer's: {chunks}" if choose else command.chunk_size)
        if choose:
            names = [s.name for s in choose]
            p.add_argument("--metric", metavar="SPEC", default=None,
                           help=f"the scorer, as a metric spec with its options: {' or '.join(names)} (default: "
                           f"{scorer.name}), e.g. {choose[-1].name}:model=3b; a metric of it ({scorer.metric_names[0]}) "
                           "names its scorer. The options below are "
                           f"{scorer.label}'s; another scorer's go in its spec")
        scorer.options.add_arguments(p)
        p.set_defaults(func=run)

    def run(args: argparse.Namespace) -> int:
        given = scorer.options.from_args(args)
        chosen, options = (scorer, given) if getattr(args, "metric", None) is None else \
            chosen_scorer(args.metric, choose, given)
        return run_model_file_command(args, partial(scorer_file, chosen), options, chosen.command.done,
                                      partial(_summary, chosen))

    register.__doc__ = f"Register the ``{command.name}`` sub-command."
    run.__doc__ = f"Run ``styleeval {command.name}``; returns the exit status (bad input raises ``UserError``)."
    return command.summary, register, run


def chosen_scorer(spec: str, scorers: Sequence[LLMScorer], flags: dict[str, Any]) -> tuple[LLMScorer, dict[str, Any]]:
    """The scorer a ``--metric`` spec names (its name, or one of its metrics: ``logprob_content`` names LogProb)
    and its options: the spec's, then the flags given (``flags``: option -> value). A name that is no LLM scorer, a
    flag the scorer does not take, or an option given both ways is a :class:`UserError` with the fix."""
    from styleeval.metrics.registry import parse_spec  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    name, given = parse_spec(spec)
    chosen = next((s for s in scorers if name in (s.name, *s.metric_names)), None)
    if chosen is None:
        raise UserError(_not_a_scorer(name, scorers))
    unfiled = [d for d in chosen.dimensions if name == f"{chosen.name}_{d.name}" and d.field is None]
    if unfiled:  # a metric its record files do not carry (the autorater's fluency)
        filed = [d.name for d in chosen.fields]
        raise UserError(f"--metric {spec}: the {chosen.label}'s files carry {' and '.join(filed)} "
                        f"({', '.join(f'{chosen.name}_{d}' for d in filed)}), not {unfiled[0].name}; per-row scores "
                        f"of {name} are in the rows.jsonl of `styleeval evaluate IN --metrics {spec.strip()} --out DIR`")
    try:
        options = chosen.options.from_spec(given)
    except UserError as err:
        raise UserError(f"--metric {spec}: {err}") from None
    alien = sorted(set(flags) - set(chosen.options.names))
    if alien:
        in_spec = [name for name, o in chosen.options.options.items() if o.type is not dict]  # what from_spec takes
        raise UserError(f"{_flag(scorers, alien[0])} is not an option of {chosen.name}: write its options in --metric "
                        f"({chosen.name}:model=...:<option>=...; they are {', '.join(in_spec)})")
    twice = sorted(set(flags) & set(options))
    if twice:
        raise UserError(f"{twice[0]} is given twice, as {_flag(scorers, twice[0])} and in --metric {spec}: "
                        "give it once")
    return chosen, {**options, **{k: _as_option_of(chosen, k, v) for k, v in flags.items()}}


def _flag(scorers: Sequence[LLMScorer], name: str) -> str:
    """The command-line flag of option ``name`` (its own, ``--no-end-of-turn``, else ``--name``)."""
    option = next((s.options[name] for s in scorers if name in s.options.names), None)
    return (option.flag if option is not None else None) or "--" + name.replace("_", "-")


def _as_option_of(scorer: LLMScorer, name: str, value: Any) -> Any:
    """A flag's value (parsed as the default scorer's option) checked as ``scorer``'s option ``name`` (its choices)."""
    try:
        return scorer.options[name].convert(value)
    except UserError as err:
        raise UserError(f"{_flag([scorer], name)}: {err} ({scorer.name}'s option)") from None


def _not_a_scorer(name: str, scorers: Sequence[LLMScorer]) -> str:
    """Why ``name`` cannot be ``--metric``'s, with the command that computes it where it is another metric."""
    from styleeval.metrics.registry import available_metrics  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    names = [n for s in scorers for n in (s.name, *s.metric_names)]
    if name in available_metrics():
        return (f"--metric {name}: score writes an LLM scorer's records ({', '.join(s.name for s in scorers)}); "
                f"per-row scores of any metric are in the rows.jsonl of `styleeval evaluate IN --metrics {name} "
                "--out DIR`")
    close = difflib.get_close_matches(name, names, 1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"--metric {name}: not an LLM scorer{hint}; choose one of {', '.join(names)}"


def _summary(scorer: LLMScorer, result: Any) -> str:
    """The summary line of a complete file: each field's mean (and the compliance share, where declared)."""
    command, records = scorer.command, RecordKind.of(scorer)
    flag = command.compliance
    means = column_means(iter_scores(result.output, records, TornTail()), records.scores,
                         count=None if flag is None else lambda r: r[flag] is True)
    line = means_line(means, command.shown, command.left_out)
    if flag is None:
        return line
    return f"{line}  compliance {means['counted'] / means['rows']:.3f} ({counted(means['rows'], 'row')})"
