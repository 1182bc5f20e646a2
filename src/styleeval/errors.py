"""The errors a user can act on, and errors and warnings that carry the caller's row numbers as data.

:class:`UserError` is input (or an environment) refused with a message naming the problem and the fix: the command
line prints it as one line, ``evaluate`` notes a metric it stops as "not computed". Every error styleeval raises for
bad input derives from it (:class:`RowError`, the corpora's ``CorpusError``, ``MissingExtraError``,
``ModelLoadError``...); any other exception, a ``ValueError`` from numpy or pandas included, is a bug and keeps its
traceback. It is a ``ValueError``, so that ``except ValueError`` around styleeval calls keeps working.

A scorer raises :class:`RowError` with the index of the row in *its caller's* list; whoever called it with a
slice of a bigger input (the file runner, a piece of rows) maps ``row`` to its own numbering with
:meth:`RowError.at`, never by rewriting message text. :class:`RowsWarning` does the same for warnings about
several rows (rows skipped because they are too long): a caller that hands a slice on says how its rows are named
with :func:`rows_named_by`, and a warning made inside names the caller's rows (a context variable: each thread its
own; ``warnings.catch_warnings`` would swap the process's filters under other threads).

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught, rows_named_by([10, 11, 12].__getitem__):
...     warnings.simplefilter("always")
...     with rows_named_by([2, 0].__getitem__):  # the inner call saw rows 2 and 0 of the outer one's
...         warnings.warn(RowsWarning("rows {rows} skipped", [0, 1]))
>>> str(caught[0].message)
'rows [10, 12] skipped'

Advice names an option as the caller's interface takes it (:func:`option_advice`): ``--on-overflow skip`` on the
command line, ``on_overflow='skip'`` in Python, ``logprob_content:on_overflow=skip`` in a metric spec (``evaluate``,
``metaeval``), nothing in the Space (a web visitor sets no option). Whoever knows the interface says it once with
:func:`advising` (the CLI's ``main``, the metric loops of ``evaluate`` and ``metaeval``, the Space's requests);
messages are built where the error is raised, in that context.

>>> option_advice("on_overflow", "skip")
" or pass on_overflow='skip'"
>>> with advising("cli"):
...     option_advice("on_overflow", "skip")
' or pass --on-overflow skip'
>>> with advising("spec", metric="logprob_content"):
...     option_advice("on_overflow", "skip")
' or add on_overflow=skip to the metric spec (logprob_content:on_overflow=skip)'
>>> with advising("space"):
...     option_advice("on_overflow", "skip")
''
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

INTERFACES = ("python", "cli", "spec", "space")
"""Where a user meets styleeval: Python calls (the default), the command line, metric specs, the Space."""

_INTERFACE: ContextVar[tuple[str, str | None]] = ContextVar("styleeval_interface", default=("python", None))


@contextmanager
def advising(interface: str, metric: str | None = None) -> Iterator[None]:
    """Within it, advice is phrased for ``interface`` (one of :data:`INTERFACES`; ``"spec"`` names the ``metric``
    whose spec takes the option). Per thread and task, as a context variable."""
    if interface not in INTERFACES:
        raise ValueError(f"interface must be one of {', '.join(INTERFACES)}, got {interface!r}")
    token = _INTERFACE.set((interface, metric))
    try:
        yield
    finally:
        _INTERFACE.reset(token)


def current_interface() -> str:
    """The interface advice is phrased for here (:func:`advising`; ``"python"`` outside any)."""
    return _INTERFACE.get()[0]


def option_text(name: str, value: object) -> str | None:
    """Option ``name`` set to ``value`` as the current interface takes it (``None`` in the Space, which takes no
    option): ``--on-overflow skip``, ``on_overflow='skip'``, ``logprob_content:on_overflow=skip``."""
    interface, metric = _INTERFACE.get()
    if interface == "cli":
        return f"--{name.replace('_', '-')} {value}"
    if interface == "spec":
        return f"{metric}:{name}={value}" if metric else f"{name}={value}"
    if interface == "space":
        return None
    return f"{name}={value!r}"


def option_advice(name: str, value: object) -> str:
    """`` or pass <option>`` (:func:`option_text`) to end a message's advice; in a metric spec, where to add it;
    ``""`` where the interface takes no option (the Space)."""
    text = option_text(name, value)
    if text is None:
        return ""
    interface, metric = _INTERFACE.get()
    if interface == "spec":
        return f" or add {name}={value} to the metric spec" + (f" ({text})" if metric else "")
    return f" or pass {text}"


class UserError(ValueError):
    """Input or settings refused, with a message that names the problem (the file, the row, the option) and what to
    do; raised where input is checked, caught only where it is shown to the user."""


def listing_advice(cli: str, python: str) -> str:
    """Where every valid name is listed, as the current interface reaches it: `` (styleeval list corpora)`` on the
    command line (and in metric specs), `` (styleeval.corpora.corpus_names())`` in Python, ``""`` in the Space."""
    interface = current_interface()
    if interface == "space":
        return ""
    return f" ({cli if interface in ('cli', 'spec') else python})"


def unknown_names(what: str, names: Sequence[str], known: Sequence[str], cli: str, python: str,
                  plural: str | None = None) -> UserError:
    """The error for ``names`` that are not among ``known``: the closest known name of each (difflib), the known ones
    where no name is close, and where all are listed (:func:`listing_advice`).

    >>> with advising("cli"):
    ...     print(unknown_names("corpus", ["lai_formalty"], ["lai_formality", "mir_yelp"], "styleeval list corpora",
    ...                         "corpus_names()", "corpora"))
    unknown corpus 'lai_formalty'; did you mean 'lai_formality'? (styleeval list corpora)
    >>> print(unknown_names("corpus", ["x", "mir_yep"], ["lai_formality", "mir_yelp"], "styleeval list corpora",
    ...                     "corpus_names()", "corpora"))
    unknown corpora 'x', 'mir_yep' (did you mean 'mir_yelp'?); choose from lai_formality, mir_yelp (corpus_names())
    """
    close = {n: difflib.get_close_matches(n, list(known), 1) for n in names}
    advice = listing_advice(cli, python)
    if len(names) == 1 and close[names[0]]:
        return UserError(f"unknown {what} {names[0]!r}; did you mean {close[names[0]][0]!r}?{advice}")
    shown = ", ".join(f"{n!r}" + (f" (did you mean {close[n][0]!r}?)" if close[n] else "") for n in names)
    return UserError(f"unknown {what if len(names) == 1 else plural or what + 's'} {shown}; choose from "
                     f"{', '.join(known)}{advice}")


class RenamedKeys(dict):
    """A result dict whose keys were renamed: an old key (``renamed``: old -> new) still reads the new key's value,
    with a ``FutureWarning`` naming the new key, so that code written for an earlier version keeps working and is
    told what to change. Only the new keys are listed (``keys()``, ``in``, ``json.dumps``, equality).

    >>> import warnings
    >>> row = RenamedKeys({"content": -1.5, "style_strength": 0.25}, {"style": "style_strength"})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     row["style"], row.get("style"), list(row)
    (0.25, 0.25, ['content', 'style_strength'])
    >>> print(caught[0].message)
    the key 'style' is now 'style_strength' (one name per number everywhere); read 'style_strength'
    """

    def __init__(self, values: Any, renamed: dict[str, str]) -> None:
        super().__init__(values)
        self._renamed = renamed

    def __missing__(self, key: Any) -> Any:
        new = self._renamed.get(key) if isinstance(key, str) else None
        if new is None or new not in self:
            raise KeyError(key)
        warnings.warn(FutureWarning(f"the key {key!r} is now {new!r} (one name per number everywhere); read {new!r}"),
                      stacklevel=2)
        return self[new]

    def get(self, key: Any, default: Any = None) -> Any:
        """``dict.get``, old keys included (with their warning)."""
        try:
            return self[key]
        except KeyError:
            return default

    def __reduce__(self) -> Any:  # pickled (a worker process, a cache) as what it is
        return (type(self), (dict(self), self._renamed))


class RowError(UserError):
    """Bad input in one row: ``row`` (0-based, the caller's numbering) and ``reason`` (what is wrong, what to do).

    ``str(err)`` is ``"row {row}: {reason}"``; ``where`` replaces ``"row {row}"`` when a caller knows more
    (``"in.csv, row 7 (line 9)"``).
    """

    def __init__(self, row: int, reason: str, where: str | None = None) -> None:
        self.row = int(row)
        self.reason = reason
        self.where = where if where is not None else f"row {self.row}"
        super().__init__(f"{self.where}: {reason}")

    def at(self, row: int, where: str | None = None) -> RowError:
        """The same error for row ``row`` of the caller's caller (same class, same reason)."""
        err = type(self).__new__(type(self))
        RowError.__init__(err, row, self.reason, where)
        for key, value in vars(self).items():
            if key not in ("row", "reason", "where"):
                setattr(err, key, value)
        return err


_ROW_NAMES: ContextVar[tuple[Callable[[int], int], ...]] = ContextVar("styleeval_row_names", default=())


@contextmanager
def rows_named_by(to: Callable[[int], int]) -> Iterator[None]:
    """Inside, a :class:`RowsWarning` made about row ``i`` names the caller's row ``to(i)`` (nested: the innermost
    mapping first). For whoever scores a slice of its rows, as :meth:`RowError.at` is for errors."""
    token = _ROW_NAMES.set((*_ROW_NAMES.get(), to))
    try:
        yield
    finally:
        _ROW_NAMES.reset(token)


class RowsWarning(UserWarning):
    """A warning about some rows (caller's numbering in ``rows``, through every :func:`rows_named_by` it is made
    inside); the message is ``template`` with ``{rows}``."""

    def __init__(self, template: str, rows: Sequence[int], *, named: bool = False) -> None:
        self.template = template
        rows = [int(r) for r in rows]
        for to in () if named else reversed(_ROW_NAMES.get()):
            rows = [int(to(r)) for r in rows]
        self.rows = sorted(rows)
        shown = str(self.rows[0]) if len(self.rows) == 1 else str(self.rows[:10])  # row 9, rows [3, 9]
        super().__init__(template.format(rows=shown, count=len(self.rows)))

    def mapped(self, to: Callable[[int], int]) -> RowsWarning:
        """The same warning with every row mapped by ``to``."""
        return RowsWarning(self.template, [to(r) for r in self.rows], named=True)
