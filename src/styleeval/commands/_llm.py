"""An LLM scorer's file command, derived from its declaration (:class:`~styleeval.llm_scorer.Command`): ``styleeval
score`` is :func:`llm_command` of LogProb that may run any declared scorer (``--metric SPEC``), ``styleeval autorate``
is the autorater's; the loop is :func:`styleeval.files.runner.scorer_file`."""

from __future__ import annotations

import argparse
import difflib
import textwrap
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
    (:func:`chosen_scorer`), ``scorer`` the default, and every one of their options as a flag."""
    command = scorer.command
    others = [s for s in choose if s is not scorer]

    def register(subparsers: argparse._SubParsersAction) -> None:
        p = subparsers.add_parser(command.name, help=command.summary, description=command.description,
                                  epilog=command.epilog + "".join(_other_records(s) for s in others),
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  allow_abbrev=not choose)  # --mode (the autorater's) is no short --model
        chunks = ", ".join(f"{s.command.chunk_size} for {s.name}" for s in choose)
        add_file_arguments(p, command.done, chunk_size=f"the scorer's: {chunks}" if choose else command.chunk_size)
        if choose:
            names = [s.name for s in choose]
            p.add_argument("--metric", metavar="SPEC", default=None,
                           help=f"the scorer, as a metric spec with its options: {' or '.join(names)} (default: "
                           f"{scorer.name}), e.g. {choose[-1].name}:model=3b:mode=paper; a metric of it "
                           f"({scorer.metric_names[0]}) names its scorer, whose records hold all its fields. An "
                           "option goes in the spec or as a flag (once); the flags below are "
                           f"{scorer.label}'s, then the other scorers' own (--prompt takes the chosen scorer's "
                           "prompt names)")
        scorer.options.add_arguments(p)
        taken = set(scorer.options.names)
        for other in others:
            group = p.add_argument_group(f"{other.label}'s own options (with --metric {other.name})")
            other.options.add_arguments(group, exclude=taken)
            taken |= set(other.options.names)
        p.set_defaults(func=run)

    def run(args: argparse.Namespace) -> int:
        flags = {k: v for s in (scorer, *others) for k, v in s.options.from_args(args).items()}
        chosen, options = chosen_scorer(args.metric or scorer.name, choose, flags) if choose else (scorer, flags)
        return run_model_file_command(args, partial(scorer_file, chosen), options, chosen.command.done,
                                      partial(_summary, chosen))

    register.__doc__ = f"Register the ``{command.name}`` sub-command."
    run.__doc__ = f"Run ``styleeval {command.name}``; returns the exit status (bad input raises ``UserError``)."
    return command.summary, register, run


def _other_records(scorer: LLMScorer) -> str:
    """The epilog's paragraph on another scorer's records (``--metric NAME``)."""
    fields = ", ".join(RecordKind.of(scorer).fields)
    return "\n" + textwrap.fill(
        f"With --metric {scorer.name}[:OPTION=VALUE...] OUT gets {scorer.label}'s records instead, as `styleeval "
        f"{scorer.command.name}` writes them (the same bytes; either command resumes the other's OUT): {fields}.",
        width=112) + "\n"


def chosen_scorer(spec: str, scorers: Sequence[LLMScorer], flags: dict[str, Any]) -> tuple[LLMScorer, dict[str, Any]]:
    """The scorer a ``--metric`` spec names (its name, or one of its metrics: ``logprob_content`` names LogProb)
    and its options: the spec's, then the flags given (``flags``: option -> value). A name that is no LLM scorer, a
    metric whose dimension its records do not hold or its options do not rate, a flag the scorer does not take, or
    an option given both ways with two values is a :class:`UserError` with the fix."""
    from styleeval.metrics.registry import parse_spec  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    name, given = parse_spec(spec)
    chosen = next((s for s in scorers if name in (s.name, *s.metric_names)), None)
    if chosen is None:
        raise UserError(_not_a_scorer(name, scorers))
    elsewhere = sorted(set(given) & {"as", "fill"})
    if elsewhere:
        raise UserError(f"--metric {spec}: {elsewhere[0]}= applies to a metric in `styleeval evaluate` / `metaeval`, "
                        "not to score's records; leave it out")
    try:
        options = chosen.options.from_spec(given)
    except UserError as err:
        raise UserError(f"--metric {spec}: {err}") from None
    alien = sorted(set(flags) - set(chosen.options.names))
    if alien:
        raise UserError(_not_its_flag(alien[0], chosen, scorers))
    typed = {k: _as_option_of(chosen, k, v) for k, v in flags.items()}  # checked as the chosen scorer's options
    for key in sorted(set(typed) & set(options)):
        if typed[key] != options[key]:
            given = _flag(scorers, key) + ("" if isinstance(flags[key], bool) else f" {flags[key]}")
            raise UserError(f"{key} is given twice, as {given} and in --metric {spec}: give it once")
    options = {**options, **typed}
    if name != chosen.name:
        _check_dimension(chosen, name.removeprefix(f"{chosen.name}_"), options)
    return chosen, options


def _check_dimension(scorer: LLMScorer, dimension: str, options: dict[str, Any]) -> None:
    """A metric named in ``--metric`` is one whose dimension the records hold and the options rate."""
    if scorer.dimension(dimension).field is None:
        fields = ", ".join(str(d.field) for d in scorer.fields)
        raise UserError(f"--metric {scorer.name}_{dimension}: {scorer.label}'s records hold {fields}, not "
                        f"{dimension} (a metric only: per-row {dimension} is in the rows.jsonl of `styleeval evaluate "
                        f"IN --metrics {scorer.name}_{dimension}:... --out DIR`)")
    if scorer.check is not None:
        scorer.check(dimension, options)


def _not_its_flag(key: str, chosen: LLMScorer, scorers: Sequence[LLMScorer]) -> str:
    """Why the flag of option ``key`` cannot go with ``chosen``, naming the scorer whose it is."""
    owner = next((s for s in scorers if key in s.options.names), None)
    whose = f" (it is {owner.name}'s: --metric {owner.name})" if owner is not None else ""
    takes = ", ".join(k for k, o in chosen.options.options.items() if o.type is not dict)  # what a spec takes
    return f"{_flag(scorers, key)} is not an option of {chosen.name}{whose}; {chosen.name} takes: {takes}"


def _flag(scorers: Sequence[LLMScorer], name: str) -> str:
    """The command-line flag of option ``name`` (its own, ``--no-end-of-turn``, else ``--name``)."""
    option = next((s.options[name] for s in scorers if name in s.options.names), None)
    return (option.flag if option is not None else None) or "--" + name.replace("_", "-")


def _as_option_of(scorer: LLMScorer, name: str, value: Any) -> Any:
    """A flag's value (parsed as the first scorer that declares it) checked as ``scorer``'s option ``name``."""
    try:
        return scorer.options[name].convert(value)
    except UserError as err:
        raise UserError(f"--{name.replace('_', '-')}: {err} ({scorer.name}'s option)") from None


def _not_a_scorer(name: str, scorers: Sequence[LLMScorer]) -> str:
    """Why ``name`` cannot be ``--metric``'s, with the command that computes it where it is another metric."""
    from styleeval.metrics.registry import available_metrics  # noqa: PLC0415 - heavy (urllib3, via styleeval.metrics)

    names = [n for s in scorers for n in (s.name, *s.metric_names)]
    if not name:
        return f"--metric needs a scorer's name before its options: {' or '.join(s.name for s in scorers)} (e.g. " \
               f"{scorers[-1].name}:model=3b)"
    if name in available_metrics() or ":" in name:  # a registered metric, or one of a namespace (lai:comet)
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
