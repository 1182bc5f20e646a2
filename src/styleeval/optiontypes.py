"""The types of declared options: an :class:`Option` (one name, a type, choices, help, aliases) and an
:class:`Options` set, which generates the command-line arguments, checks the ``evaluate`` modules' keyword arguments
and parses metric-spec options. The declarations themselves live with their owners: the scorers' in
:mod:`styleeval.options`, each backend's on its class (``Backend.options``).

``None`` means "not given" everywhere.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from styleeval.errors import UserError

_TRUE, _FALSE = ("1", "yes", "true", "on"), ("0", "no", "false", "off")


@dataclass(frozen=True)
class Option:
    """One option: ``name`` (the keyword argument everywhere), its ``type`` (``str``, ``int``, ``float``, ``bool``
    or ``dict``), ``choices``, ``help``, the ``backends`` that take it (empty for a scorer's own option; filled in by
    :func:`styleeval.backends.backend_options` from each backend's declaration, for the help text), the command-line
    ``flag`` when not ``--name`` (``--no-end-of-turn``), a ``short`` flag, ``aliases`` accepted by the evaluate
    modules, and ``cli=False`` for options with no command-line argument."""

    name: str
    type: type
    help: str
    choices: tuple[str, ...] | None = None
    backends: tuple[str, ...] = ()
    flag: str | None = None
    short: str | None = None
    aliases: tuple[str, ...] = ()
    cli: bool = True

    def convert(self, value: Any) -> Any:
        """``value`` (a string from a spec, or a Python value) as this option's type; a ``ValueError`` naming the
        option otherwise."""
        if value is None:
            return None
        if self.type is dict:
            if not isinstance(value, Mapping):
                raise UserError(f"{self.name} must be a dict, got {type(value).__name__}")
            return dict(value)
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
            kind = "yes or no" if self.type is bool else f"{'an' if self.type is int else 'a'} {self.type.__name__}"
            raise UserError(f"{self.name} must be {kind}, got {value!r}") from None
        if self.choices is not None and out not in self.choices:
            raise UserError(f"{self.name} must be one of {', '.join(self.choices)}, got {out!r}")
        return out


class Options:
    """A set of :class:`Option` (see the module docstring): ``own`` options, then those ``more()`` returns when the set
    is used (the registered backends' options: a backend registered later is in the set from then on)."""

    def __init__(self, what: str, own: Sequence[Option],
                 more: Callable[[], Sequence[Option]] | None = None) -> None:
        self.what = what
        self._own = list(own)
        self._more = more

    @property
    def options(self) -> dict[str, Option]:
        """name -> :class:`Option`, own options first."""
        out = {o.name: o for o in self._own}
        for o in self._more() if self._more else ():
            out.setdefault(o.name, o)
        return out

    @property
    def aliases(self) -> dict[str, str]:
        """alias -> option name."""
        return {a: o.name for o in self.options.values() for a in o.aliases}

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
        every = set(_all_backends(self))
        for o in self.options.values():
            if not o.cli or o.name in skip:
                continue
            where = f" ({', '.join(o.backends)} backend)" if o.backends and set(o.backends) != every else ""
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
        options, aliases = self.options, self.aliases
        valid = [*fixed, *options, *aliases]
        out: dict[str, Any] = {}
        for key, value in given.items():
            name = aliases.get(key, key)
            if name not in options:
                close = difflib.get_close_matches(key, valid, 1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise UserError(f"{module}: unknown argument {key!r}{hint}; valid arguments: {', '.join(valid)}")
            if value is None:
                continue
            option = options[name]
            if option.type is bool:
                ok = isinstance(value, bool)
            else:  # a bool is no number here; an int is a fine float
                ok = not isinstance(value, bool) and (isinstance(value, option.type) or option.type is float
                                                      and isinstance(value, int))
            if not ok:
                raise UserError(f"{module}: {key} must be {option.type.__name__} or None, got {type(value).__name__} "
                                f"{value!r:.40}")
            if name in out:
                raise UserError(f"{module}: {key} is another name for {name}; give one of them")
            out[name] = option.convert(value)
        return out

    # -- metric specs ---------------------------------------------------------------------------------------------
    def from_spec(self, given: Mapping[str, str], allowed: Iterable[str] | None = None) -> dict[str, Any]:
        """A metric spec's string options converted to their types; an option not in ``allowed`` (default: all) is
        an error listing the known ones."""
        options = self.options
        known = [k for k, o in options.items() if o.type is not dict] if allowed is None else list(allowed)
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise UserError(f"unknown options {unknown} (known: {sorted(known)})")
        return {k: options[k].convert(v) for k, v in given.items()}


def _all_backends(options: Options) -> list[str]:
    names: list[str] = []
    for o in options.options.values():
        names += [b for b in o.backends if b not in names]
    return names


def merge_options(declared: Iterable[tuple[str, Sequence[Option]]]) -> list[Option]:
    """One :class:`Option` per name from several owners' declarations ``(owner, options)``, each recording the owners
    that declare it (``backends``). Two owners declaring one name with different types or choices are an error."""
    merged: dict[str, Option] = {}
    for owner, options in declared:
        for o in options:
            if o.name not in merged:
                merged[o.name] = replace(o, backends=(owner,))
                continue
            first = merged[o.name]
            if (first.type, first.choices) != (o.type, o.choices):
                raise ValueError(f"option {o.name!r}: the {owner} backend declares it as {o.type.__name__} "
                                 f"{o.choices or ''}, the {first.backends[0]} backend as {first.type.__name__} "
                                 f"{first.choices or ''}; one name must mean one thing")
            merged[o.name] = replace(first, backends=(*first.backends, owner))
    return list(merged.values())


