"""Numbers as the page writes them: :func:`readable` values, :func:`prefers` (which of two scores is higher, ties
below :data:`TIE_BELOW`), p-values with a floor (:func:`p_text`)."""

from __future__ import annotations

import math

P_FLOOR = 1e-4
"""The smallest p-value the Space writes as a number; smaller ones are ``< 0.0001``."""


def p_text(p: float, floor: float = P_FLOOR) -> str:
    """A p-value as text: two significant digits, ``< floor`` below the floor (never ``0``: a test on a finite sample
    does not give p = 0), ``n/a`` for NaN.

    >>> p_text(0.6461), p_text(0.003), p_text(0.000049), p_text(0.0), p_text(float("nan"))
    ('0.65', '0.003', '< 0.0001', '< 0.0001', 'n/a')
    """
    if p is None or not math.isfinite(p):
        return "n/a"
    return f"< {floor:g}" if p < floor else f"{p:.2g}"


TIE_BELOW = 1e-3
"""Compare calls two scores a tie when they differ by less than this share of the larger magnitude (at least 1)."""


def readable(value: float, digits: int = 4) -> float | str:
    """A number for reading (:func:`styleeval.systems.report.fmt` as a float); ``"n/a"`` for NaN."""
    from styleeval.systems.report import fmt  # noqa: PLC0415 - heavy (pandas, via styleeval.systems.report)

    text = fmt(value, digits)
    return "n/a" if text == "–" else float(text)


def prefers(a: float, b: float) -> str:
    """``"A"``, ``"B"`` or ``"tie"`` (a difference below :data:`TIE_BELOW`, relative; or a score missing)."""
    if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) < TIE_BELOW * max(1.0, abs(a), abs(b)):
        return "tie"
    return "A" if a > b else "B"
