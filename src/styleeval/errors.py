"""The errors a user can act on, and errors and warnings that carry the caller's row numbers as data.

:class:`UserError` is input (or an environment) refused with a message naming the problem and the fix: the command
line prints it as one line, ``evaluate`` notes a metric it stops as "not computed". Every error styleeval raises for
bad input derives from it (:class:`RowError`, the corpora's ``CorpusError``, ``MissingExtraError``,
``ModelLoadError``...); any other exception, a ``ValueError`` from numpy or pandas included, is a bug and keeps its
traceback. It is a ``ValueError``, so that ``except ValueError`` around styleeval calls keeps working.

A scorer raises :class:`RowError` with the index of the row in *its caller's* list; whoever called it with a
slice of a bigger input (the file runner, a piece of rows) maps ``row`` to its own numbering with
:meth:`RowError.at`, never by rewriting message text. :class:`RowsWarning` does the same for warnings about
several rows (rows skipped because they are too long).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


class UserError(ValueError):
    """Input or settings refused, with a message that names the problem (the file, the row, the option) and what to
    do; raised where input is checked, caught only where it is shown to the user."""


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


class RowsWarning(UserWarning):
    """A warning about some rows (caller's numbering in ``rows``); the message is ``template`` with ``{rows}``."""

    def __init__(self, template: str, rows: Sequence[int]) -> None:
        self.template = template
        self.rows = sorted(int(r) for r in rows)
        super().__init__(template.format(rows=self.rows[:10], count=len(self.rows)))

    def mapped(self, to: Callable[[int], int]) -> RowsWarning:
        """The same warning with every row mapped by ``to``."""
        return RowsWarning(self.template, [to(r) for r in self.rows])
