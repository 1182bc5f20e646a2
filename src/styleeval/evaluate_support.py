"""What the ``evaluate`` modules in ``metrics/`` share: style broadcasting, rejecting references, every input row a
text (refused naming the row, before evaluate's own check, whose message names neither the row nor the fix),
NaN-aware means, one call at a time per module object.

The modules stay thin (constants, ``_info``, ``_compute``); their keyword arguments are checked by
:meth:`styleeval.options.Options.from_kwargs`, so every module reports a misspelled or mistyped keyword the same way:
a ``ValueError`` naming the argument and the valid ones.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

from styleeval.errors import UserError
from styleeval.validation import text_value


def broadcast_styles(predictions: Sequence[str] | None, kwargs: dict[str, Any]) -> None:
    """A single string ``styles`` applies to every prediction (in place)."""
    if isinstance(kwargs.get("styles"), str) and predictions is not None:
        kwargs["styles"] = [kwargs["styles"]] * len(predictions)


def reject_references(module: str, references: Any) -> None:
    """These metrics compare a rewrite with its source: ``references=`` is a mistake, not ignored."""
    if references is not None:
        raise UserError(f"{module} compares each prediction with its source and target style and takes no "
                        "references; pass sources=... and styles=...")


def check_inputs(batch: dict[str, Any], where: str = "") -> None:
    """Every row of every input (``predictions``, ``sources``, ``styles``) is a text: a missing one (``None``, NaN) or
    one that is not a ``str`` is refused naming the input and its row (:func:`styleeval.validation.text_value`:
    ``predictions[2] is None (missing); give every row its text ...``); ``where`` follows the row (`` of this
    add_batch call``). evaluate's own encoding would refuse a ``None`` in the first row only, and without naming it
    ("Module inputs don't match the expected format"), and pass it on from any other row."""
    for name, values in batch.items():
        if values is None or isinstance(values, (str, bytes, dict)):
            continue  # evaluate names a missing input, and a single text is no list of rows (it says so)
        for i, value in enumerate(values):
            text_value(value, f"{name}[{i}]{where}")


PAULI_2025 = """\
@misc{pauli2025mindthestylegap,
    title = {Mind the Style Gap: Meta-Evaluation of Style and Attribute Transfer Metrics},
    author = {Pauli, Amalie Brogaard and Augenstein, Isabelle and Assent, Ira},
    year = {2025},
}
"""
"""The citation of LogProb and the LLM autorater (Pauli et al., 2025)."""


def source_style_info(description: str, inputs_description: str, citation: str = PAULI_2025) -> Any:
    """The ``evaluate.MetricInfo`` of a module whose inputs are ``predictions``, ``sources`` and ``styles`` (strings)
    and whose reference is the authors' repository: what the LLM scorers' modules' ``_info`` returns."""
    import datasets  # noqa: PLC0415 - heavy (datasets)
    import evaluate  # noqa: PLC0415 - heavy (evaluate)

    return evaluate.MetricInfo(
        module_type="metric",
        description=description,
        citation=citation,
        inputs_description=inputs_description,
        features=datasets.Features({name: datasets.Value("string") for name in ("predictions", "sources", "styles")}),
        reference_urls=["https://github.com/AmaliePauli/style_transfer_evaluation"],
    )


def scorer_module(scorer: Any, module: str, where: str, summary: str, description: str, inputs_description: str) -> type:
    """The ``evaluate.Metric`` class of an LLM scorer's ``evaluate`` module ``module`` (``logprob_style``; the class is
    named after it, ``LogprobStyle``, as evaluate names a module after its class), defined in the module ``where``
    (its ``__name__``): :class:`SourceStyleInputs` first, ``_info`` from :func:`source_style_info`, ``_compute`` the
    declaration's :meth:`~styleeval.llm_scorer.LLMScorer.evaluate`; its docstring ``description``,
    ``inputs_description`` and ``summary``, as evaluate's ``add_start_docstrings`` writes it."""
    import evaluate  # noqa: PLC0415 - heavy (evaluate)

    def _info(self: Any) -> Any:
        return source_style_info(description, inputs_description)

    def _compute(self: Any, predictions: list[str], sources: list[str], styles: Any, **options: Any) -> Any:
        return scorer.evaluate(module, predictions, sources, styles, options)

    name = "".join(part.capitalize() for part in module.split("_"))
    cls = type(name, (SourceStyleInputs, evaluate.Metric), {"__module__": where, "__qualname__": name,
                                                            "__doc__": summary, "_info": _info, "_compute": _compute})
    return evaluate.utils.file_utils.add_start_docstrings(description, inputs_description)(cls)


def nan_mean(values: Sequence[float]) -> float:
    """Mean of the non-NaN values (NaN when there is none)."""
    kept = [v for v in values if not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


class SourceStyleInputs:
    """Mixin for an ``evaluate.Metric`` whose inputs are predictions, sources and styles (put it first in the bases):
    a single string ``styles`` applies to every prediction, and ``references=`` is rejected, not silently ignored.

    One module object may be shared by threads: ``compute`` and ``add_batch`` hold the object's lock. evaluate keeps
    a call's inputs in one writer per object (an Arrow buffer or cache file, written by ``add_batch``, read and
    dropped by ``compute``, which also seeds the global generators), so two calls at once would write into, read or
    delete each other's inputs. A ``compute(predictions=...)`` is one whole cycle under the lock; rows added with
    ``add_batch`` belong to whichever ``compute()`` comes next, from any thread, so threads that accumulate batches
    need one module object each.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._calls = threading.RLock()  # reentrant: evaluate's compute calls add_batch
        self._computing = False

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Like ``evaluate.Metric.compute``; ``references`` are rejected (the rewrite is compared with its source)."""
        reject_references(self.name, references)
        with self._calls:
            self._computing = True
            try:
                return super().compute(predictions=predictions, **kwargs)  # type: ignore[misc]
            finally:
                self._computing = False

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Like ``evaluate.Metric.add_batch``; a single string ``styles`` applies to every prediction; a row that is
        not a text is refused naming it (:func:`check_inputs`)."""
        reject_references(self.name, references)
        broadcast_styles(predictions, kwargs)
        with self._calls:
            check_inputs({"predictions": predictions, **kwargs}, "" if self._computing else " of this add_batch call")
            return super().add_batch(predictions=predictions, **kwargs)  # type: ignore[misc]
