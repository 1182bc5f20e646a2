"""The options of LogProb and the autorater, declared once: each :class:`Option` has one name, a type, choices, a
default and its help, and the :class:`Options` set generates from it the command-line arguments (``styleeval score``
/ ``autorate``), the keyword arguments the ``evaluate`` modules accept (with their aliases, e.g. ``model_id``), and
the parser of metric-spec options (``logprob_style:model=3b:batch_tokens=1024``).

``None`` means "not given" everywhere: the scorer's or the backend's own default applies, and an option given for a
backend it does not apply to is an error raised by :func:`styleeval.backends.open_backend`.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_TRUE, _FALSE = ("1", "yes", "true", "on"), ("0", "no", "false", "off")


@dataclass(frozen=True)
class Option:
    """One option: ``name`` (the keyword argument everywhere), its ``type`` (``str``, ``int``, ``float`` or
    ``bool``), ``choices``, ``help``, where it applies (``applies``: ``"scorer"``, ``"local"``, ``"server"`` or
    ``"any"``, for the help text), the command-line ``flag`` when not ``--name`` (``--no-end-of-turn``), a ``short``
    flag, and ``aliases`` accepted by the evaluate modules."""

    name: str
    type: type
    help: str
    choices: tuple[str, ...] | None = None
    applies: str = "any"
    flag: str | None = None
    short: str | None = None
    aliases: tuple[str, ...] = ()
    cli: bool = True

    def convert(self, value: Any) -> Any:
        """``value`` (a string from a spec, or a Python value) as this option's type; a ``ValueError`` naming the
        option otherwise."""
        if value is None:
            return None
        try:
            if self.type is bool and isinstance(value, str):
                if value.lower() not in _TRUE + _FALSE:
                    raise ValueError(value)
                out: Any = value.lower() in _TRUE
            elif self.type is bool:
                if not isinstance(value, bool):
                    raise ValueError(value)
                out = value
            elif self.type in (int, float) and isinstance(value, bool):
                raise ValueError(value)
            else:
                out = self.type(value)
        except (TypeError, ValueError):
            kind = "yes or no" if self.type is bool else f"a {self.type.__name__}"
            raise ValueError(f"{self.name} must be {kind}, got {value!r}") from None
        if self.choices is not None and out not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}, got {out!r}")
        return out


class Options:
    """A set of :class:`Option` (see the module docstring)."""

    def __init__(self, what: str, options: Sequence[Option]) -> None:
        self.what = what
        self.options = {o.name: o for o in options}
        self.aliases = {a: o.name for o in options for a in o.aliases}

    @property
    def names(self) -> list[str]:
        """Every option name, in order."""
        return list(self.options)

    def __getitem__(self, name: str) -> Option:
        return self.options[name]

    # -- command line ---------------------------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser, exclude: Iterable[str] = ()) -> None:
        """One argument per option (``--batch-tokens``, ``--no-end-of-turn``...), each defaulting to ``None``."""
        skip = set(exclude)
        for o in self.options.values():
            if not o.cli or o.name in skip:
                continue
            where = {"local": " (local model)", "server": " (server)"}.get(o.applies, "")
            flags = [o.flag or "--" + o.name.replace("_", "-"), *([o.short] if o.short else [])]
            if o.type is bool:
                negative = flags[0].startswith("--no-")
                parser.add_argument(*flags, dest=o.name, action="store_const", const=not negative, default=None,
                                    help=o.help + where)
            else:
                parser.add_argument(*flags, dest=o.name, type=o.type, choices=o.choices, default=None,
                                    metavar=None if o.choices else o.name.upper(), help=o.help + where)

    def from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        """The options given on the command line (``None``: not given)."""
        return {name: getattr(args, name) for name in self.options if getattr(args, name, None) is not None}

    # -- evaluate modules -----------------------------------------------------------------------------------------
    def from_kwargs(self, module: str, given: Mapping[str, Any], fixed: Iterable[str] = ()) -> dict[str, Any]:
        """Keyword arguments of an evaluate module checked, converted and with aliases resolved; ``None`` values
        dropped. An unknown name is a ``ValueError`` with the closest valid one; a wrong type names the option."""
        valid = [*fixed, *self.options, *self.aliases]
        out: dict[str, Any] = {}
        for key, value in given.items():
            name = self.aliases.get(key, key)
            if name not in self.options:
                close = difflib.get_close_matches(key, valid, 1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"{module}: unknown argument {key!r}{hint}; valid arguments: {', '.join(valid)}")
            if value is None:
                continue
            option = self.options[name]
            if option.type is bool:
                ok = isinstance(value, bool)
            else:  # a bool is no number here; an int is a fine float
                ok = not isinstance(value, bool) and (isinstance(value, option.type) or option.type is float
                                                      and isinstance(value, int))
            if not ok:
                raise ValueError(f"{module}: {key} must be {option.type.__name__} or None, got {type(value).__name__} "
                                 f"{value!r:.40}")
            if name in out:
                raise ValueError(f"{module}: {key} is another name for {name}; give one of them")
            out[name] = option.convert(value)
        return out

    # -- metric specs ---------------------------------------------------------------------------------------------
    def from_spec(self, given: Mapping[str, str], allowed: Iterable[str] | None = None) -> dict[str, Any]:
        """A metric spec's string options converted to their types; an option not in ``allowed`` (default: all) is
        an error listing the known ones."""
        known = list(self.options) if allowed is None else list(allowed)
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"unknown options {unknown} (known: {sorted(known)})")
        return {k: self.options[k].convert(v) for k, v in given.items()}


_MODEL = [
    Option("model", str, "preset (1b, 3b, 8b), Hub id or local path; with --base-url the served model name (default: "
           "1b locally, the server's only model on a server)", short="-m", aliases=("model_id",)),
    Option("base_url", str, "an OpenAI-compatible server (vLLM), e.g. http://127.0.0.1:8000/v1, instead of a local "
           "model"),
    Option("tokenizer", str, "tokenizer id or path (default: the model's; on a server prompts are tokenized here)",
           aliases=("tokenizer_id",)),
]
_SYSTEM_PROMPT = Option("system_prompt", str, "auto (default): a system turn where the chat template has one, else "
                        "folded into the user turn (Gemma); system or fold to force either",
                        choices=("auto", "system", "fold"), applies="scorer")
_BACKEND = [
    Option("device", str, "cpu, cuda, cuda:N or mps (default: cuda if any)", applies="local"),
    Option("dtype", str, "float32 (default), bfloat16 or float16", applies="local"),
    Option("revision", str, "model revision (branch, tag or commit) of a Hub id"),
    Option("trust_remote_code", bool, "allow model code from the Hub"),
    Option("batch_tokens", int, "token budget of one forward pass (default: 512 on CPU, 16384 on GPU)",
           applies="local"),
    Option("max_concurrency", int, "requests in flight (default 8)", applies="server"),
    Option("timeout", float, "seconds a request may take in all before it is retried (default 120)",
           applies="server"),
]

LOGPROB_OPTIONS = Options("LogProb", [
    *_MODEL,
    Option("variant", str, "default, or authors: the authors' LogProp.py procedure (their hand-written Llama 3 "
           "prompt, first rewrite token not scored)", choices=("default", "authors"), applies="scorer"),
    Option("end_of_turn", bool, "do not score the end-of-turn token after each rewrite", flag="--no-end-of-turn",
           applies="scorer"),
    Option("on_overflow", str, "a row longer than the model's context: stop with an error (default), or skip it "
           "(NaN scores)", choices=("error", "skip"), applies="scorer"),
    _SYSTEM_PROMPT,
    *_BACKEND,
    Option("head_dtype", str, "precision of the LM head and softmax (bfloat16 with --dtype bfloat16: the authors' "
           "numbers)", choices=("float32", "bfloat16", "float16"), applies="local"),
    Option("max_batch_rows", int, "at most this many sequences per forward pass", applies="local",
           aliases=("batch_size",)),
])
"""The options of :class:`styleeval.LogProb` (and its backend) that the CLI, the evaluate module and the metric specs
take."""

AUTORATER_OPTIONS = Options("the autorater", [
    *_MODEL,
    Option("mode", str, "expected: rating distributions read from the model (never breaks format; default); paper: "
           "the authors' generated JSON reply", choices=("expected", "paper"), applies="scorer"),
    Option("prompt", str, "the judge prompt (default: paper-small, the authors' 1B/3B/8B prompt)",
           choices=("paper-small", "paper-70b"), applies="scorer"),
    Option("parser", str, "paper mode's reply parser (default: robust)", choices=("robust", "authors"),
           applies="scorer"),
    _SYSTEM_PROMPT,
    Option("seed", int, "sampling seed of paper-70b (each row samples with its own seed derived from it)",
           applies="scorer"),
    *_BACKEND,
    Option("batch_size", int, "prompts per generate call (paper mode; default 16)", applies="local"),
])
"""The options of :class:`styleeval.Autorater` (and its backend) that the CLI, the evaluate module and the metric
specs take."""
