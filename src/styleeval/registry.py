"""One registry for every kind of named thing styleeval looks up: metrics, backends, corpora, leaderboard
statistics and the CLI's commands are each a :class:`Registry`.

An entry is the object itself, or a lazy ``"module:object"`` string (``"styleeval.backends.local:LocalBackend"``;
a plain ``"module"`` names the module itself) imported the first time the entry is read: listing the names imports
nothing. A registry with an entry-point ``group`` adds the installed plugins' entries (``name = "package.module:Class"``
in the group) as lazy entries the first time it is read, each with the distribution that declares it
(:meth:`Registry.origin`); a name registered in code comes first, and a plugin's entry under it is left out with a
warning saying so, as is a name two distributions declare (the first on ``sys.path`` wins: the warning names both). A
name registered twice with another object is one ``ValueError`` in every registry (``backend 'naive' is registered
twice``); :meth:`Registry.unregister` removes one. A registry may be read and changed from several threads: the plugins
are read once, under its lock, before any reader sees the names; a lazy entry's import runs outside it (Python's
import lock makes it one import), its object put in place under it. An entry that cannot be imported, whatever its
module raises (an ``ImportError``, a ``SyntaxError``, a ``RuntimeError`` of its own...), is an ``ImportError`` naming
the registry, the name and its target.

>>> separators = Registry("separator")
>>> separators.add("sep", "os:sep")          # lazy: nothing imported until read
>>> separators.names(), separators.loaded("sep")
(['sep'], False)
>>> separators["sep"] == __import__("os").sep, separators.loaded("sep")
(True, True)
>>> separators.add("sep", "os:pathsep")
Traceback (most recent call last):
...
ValueError: separator 'sep' is registered twice
"""

from __future__ import annotations

import importlib
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_TARGET = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?")
"""A lazy entry: ``module.path:object.path`` or a plain ``module.path``."""


class Registry(Mapping[str, T], Generic[T]):
    """Names -> objects of one ``kind`` (its name in messages). A read-only mapping over the materialised objects
    (``registry[name]``, ``name in registry``, ``list(registry)``: the names in order, ``registry.items()``);
    :meth:`add` / :meth:`register` / :meth:`unregister` change it.

    Args:
        kind: what an entry is, in messages (``metric``, ``backend``...).
        group: the entry-point group whose plugins join it (``styleeval.backends``), read once, lazily.
        check: called as ``check(name, obj)`` on every object when it is added or a lazy entry is imported (a type
            check); it raises to refuse it.
        order: the registry's order (``corpus_names()``: the specs' ``order``) as a key of the object; default: the
            order of registration. An ordered registry imports every lazy entry when it lists its names.
    """

    def __init__(self, kind: str, *, group: str | None = None, check: Callable[[str, T], None] | None = None,
                 order: Callable[[T], Any] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._order = order
        self._entries: dict[str, T | str] = {}
        self._lazy: set[str] = set()
        self._origins: dict[str, str] = {}  # a plugin's name -> "distribution version"
        self._plugins_read = group is None
        self._lock = threading.RLock()  # reentrant: an import under add() may register more entries

    # -- changing it --------------------------------------------------------------------------------------------
    def add(self, name: str, obj: T | str, *, lazy: bool | None = None) -> None:
        """Register ``obj`` as ``name``; a string is a lazy ``"module:object"`` entry unless ``lazy=False`` (a
        registry of strings). The same object (or the same lazy string) again is nothing new; a lazy entry is
        replaced by the object it names when that object registers itself (its module's decorator runs on import);
        any other object under a taken name is the duplicate ``ValueError``."""
        with self._lock:
            if not isinstance(name, str) or not name:
                raise ValueError(f"a {self.kind} needs a name, got {name!r}")
            lazy = isinstance(obj, str) if lazy is None else lazy
            if lazy and not (isinstance(obj, str) and _TARGET.fullmatch(obj)):
                raise ValueError(f"{self.kind} {name!r}: a lazy entry is 'module:object', got {obj!r}")
            if name in self._entries:
                current = self._entries[name]
                if current is obj or (lazy and name in self._lazy and current == obj):
                    return
                if not (name in self._lazy and not lazy and self._names_object(str(current), obj)):
                    raise ValueError(f"{self.kind} {name!r} is registered twice")
            if not lazy and self._check is not None:
                self._check(name, obj)  # type: ignore[arg-type]
            self._entries[name] = obj
            self._lazy.discard(name)
            if lazy:
                self._lazy.add(name)
            self._sort()

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@registry.register("name")`` adds the decorated object and returns it unchanged."""

        def decorate(obj: T) -> T:
            self.add(name, obj, lazy=False)
            return obj

        return decorate

    def unregister(self, name: str) -> None:
        """Remove ``name`` (nothing when it is not registered): tests, plugins reloaded."""
        with self._lock:
            self._entries.pop(name, None)
            self._lazy.discard(name)
            self._origins.pop(name, None)

    # -- reading it ---------------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every registered name, in the registry's order; nothing imported (unless the registry is ordered by its
        objects)."""
        self._read_plugins()
        if self._order is not None:
            with self._lock:
                waiting = list(self._lazy)
            for name in waiting:
                self.get(name)
        with self._lock:
            return list(self._entries)

    def get(self, name: str, default: Any = None) -> T | Any:  # type: ignore[override]
        """The object registered as ``name`` (a lazy entry imported now, once), else ``default``."""
        self._read_plugins()
        if name not in self._entries:
            return default
        target = self.target(name)
        if target is not None:
            try:
                obj = _load(target)
            except (ImportError, AttributeError) as err:
                raise ImportError(f"{self.kind} {name!r} ({target}) cannot be imported: {err}") from err
            except Exception as err:  # noqa: BLE001  a plugin's module may raise anything: one error naming it
                raise ImportError(f"{self.kind} {name!r} ({target}) cannot be imported: {type(err).__name__}: "
                                  f"{err}") from err
            with self._lock:
                if name in self._lazy and self._entries.get(name) == target:  # its import did not register it
                    if self._check is not None:
                        self._check(name, obj)
                    self._entries[name] = obj
                    self._lazy.discard(name)
                    self._sort()
        return self._entries[name]  # type: ignore[return-value]

    def loaded(self, name: str) -> bool:
        """Whether ``name`` is registered and its object is imported (not a lazy entry waiting to be read)."""
        return name in self._entries and name not in self._lazy

    def loaded_items(self) -> list[tuple[str, T]]:
        """The entries already imported, nothing imported now (a backend never opened has nothing to clear)."""
        with self._lock:
            return [(n, o) for n, o in self._entries.items() if n not in self._lazy]  # type: ignore[misc]

    def origin(self, name: str) -> str | None:
        """``"distribution version"`` of the installed distribution whose entry point registered ``name``, else
        ``None`` (registered in code)."""
        self._read_plugins()
        with self._lock:
            return self._origins.get(name)

    def target(self, name: str) -> str | None:
        """The ``"module:object"`` a lazy entry names, else ``None``."""
        with self._lock:
            return str(self._entries[name]) if name in self._lazy else None

    def __getitem__(self, name: str) -> T:
        if name not in self:
            raise KeyError(name)
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        self._read_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        with self._lock:
            return f"Registry({self.kind!r}, {list(self._entries)})"

    # -- inside -------------------------------------------------------------------------------------------------
    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        from importlib.metadata import entry_points  # noqa: PLC0415 - heavy (importlib.metadata)

        with self._lock:  # the flag set after the entries are in: no reader sees a registry without its plugins
            if self._plugins_read:
                return
            declared: dict[str, tuple[str, str]] = {}  # name -> (distribution, target) of the entry used
            for entry in entry_points(group=self.group):
                origin = _distribution(entry)
                if entry.name in declared:
                    first, target = declared[entry.name]
                    warnings.warn(f"{self.kind} {entry.name!r} is declared by two distributions, {first} ({target}) "
                                  f"and {origin} ({entry.value}): {first}'s is used (the first on sys.path); "
                                  "uninstall the other", stacklevel=3)
                elif entry.name in self._entries:
                    if self.target(entry.name) != entry.value:
                        taken = self.target(entry.name) or _qualified(self._entries[entry.name])
                        warnings.warn(f"{self.kind} {entry.name!r} of {origin} ({entry.value}) is left out: the "
                                      f"name is taken by {taken} (styleeval's own, or registered in code), which is "
                                      f"used; {origin} must declare another name", stacklevel=3)
                else:
                    declared[entry.name] = (origin, entry.value)
                    self.add(entry.name, entry.value)
                    self._origins[entry.name] = origin
            self._plugins_read = True

    def _sort(self) -> None:
        if self._order is None or self._lazy:
            return
        ordered = sorted(self._entries.items(), key=lambda item: self._order(item[1]))  # type: ignore[misc, arg-type]
        self._entries = dict(ordered)

    @staticmethod
    def _names_object(target: str, obj: object) -> bool:
        module, _, attr = target.partition(":")
        return getattr(obj, "__module__", None) == module and getattr(obj, "__qualname__", None) == attr


def _distribution(entry: Any) -> str:
    """``"name version"`` of the distribution that declares an entry point (``"an unnamed distribution"`` where the
    metadata names none)."""
    dist = getattr(entry, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return f"{name} {dist.version}" if name else "an unnamed distribution"  # type: ignore[union-attr]


def _qualified(obj: Any) -> str:
    """``module:qualname`` of a registered object (what a lazy entry would name)."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def _load(target: str) -> Any:
    """The object a ``"module:object"`` string names (a plain ``"module"``: the module)."""
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj
