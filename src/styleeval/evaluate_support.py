"""What the ``evaluate`` modules in ``metrics/`` share: keyword checking, style broadcasting, NaN-aware means.

The modules stay thin (constants, ``_info``, ``_compute``); their argument checks live here so that every module
reports a misspelled or mistyped keyword the same way: a ``ValueError`` naming the argument and the valid ones.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import Any

Option = tuple[tuple[type, ...], Any]
"""An option's accepted types (``type(None)`` for optional) and its default."""


def check_options(module: str, given: Mapping[str, Any], options: Mapping[str, Option]) -> dict[str, Any]:
    """``given`` keyword arguments checked against ``options`` and completed with the defaults.

    Raises ``ValueError`` naming an unknown argument (with the closest valid name) or a value of the wrong type.
    """
    out = {name: default for name, (_, default) in options.items()}
    for name, value in given.items():
        if name not in options:
            close = difflib.get_close_matches(name, list(options), 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{module}: unknown argument {name!r}{hint}; valid arguments: predictions, sources, "
                             f"styles, {', '.join(options)}")
        types, _ = options[name]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            expected = " or ".join("None" if t is type(None) else t.__name__ for t in types)
            raise ValueError(f"{module}: {name} must be {expected}, got {type(value).__name__} {value!r:.40}")
        out[name] = value
    return out


def resolve_aliases(module: str, options: dict[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """Options with every alias (``model_id``) renamed to its option (``model``); both given is an error. Options
    left ``None`` are dropped (not given)."""
    out = dict(options)
    for alias, name in aliases.items():
        value = out.pop(alias, None)
        if value is not None:
            if out.get(name) is not None:
                raise ValueError(f"{module}: {alias} is another name for {name}; give one of them")
            out[name] = value
    return {k: v for k, v in out.items() if v is not None}


def broadcast_styles(predictions: Sequence[str] | None, kwargs: dict[str, Any]) -> None:
    """A single string ``styles`` applies to every prediction (in place)."""
    if isinstance(kwargs.get("styles"), str) and predictions is not None:
        kwargs["styles"] = [kwargs["styles"]] * len(predictions)


def reject_references(module: str, references: Any) -> None:
    """These metrics compare a rewrite with its source: ``references=`` is a mistake, not ignored."""
    if references is not None:
        raise ValueError(f"{module} compares each prediction with its source and target style and takes no "
                         "references; pass sources=... and styles=...")


def nan_mean(values: Sequence[float]) -> float:
    """Mean of the non-NaN values (NaN when there is none)."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


class SourceStyleInputs:
    """Mixin for an ``evaluate.Metric`` whose inputs are predictions, sources and styles (put it first in the bases):
    a single string ``styles`` applies to every prediction, and ``references=`` is rejected, not silently ignored."""

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Like ``evaluate.Metric.compute``; ``references`` are rejected (the rewrite is compared with its source)."""
        reject_references(self.name, references)
        return super().compute(predictions=predictions, **kwargs)  # type: ignore[misc]

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Like ``evaluate.Metric.add_batch``; a single string ``styles`` applies to every prediction."""
        reject_references(self.name, references)
        broadcast_styles(predictions, kwargs)
        return super().add_batch(predictions=predictions, **kwargs)  # type: ignore[misc]
