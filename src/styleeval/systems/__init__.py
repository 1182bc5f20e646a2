"""Evaluating and comparing style-transfer systems (``styleeval evaluate``): :func:`evaluate_systems` and the
statistics of :func:`compare_systems` (:mod:`.evaluation` runs the metrics; :mod:`.inputs` checks the rows,
:mod:`.comparison` compares the systems, :mod:`.agreement` sets them beside the human ratings; computed by
:mod:`styleeval.stats`; their settings: :class:`~styleeval.stats.TestSettings`), the report and its files
(:class:`SystemsReport`, :mod:`.report`; its figure's labels placed by :mod:`.placement`), a rated corpus as the
systems input (:mod:`.dataset`)."""

from styleeval.stats.settings import TestSettings
from styleeval.systems.comparison import compare_systems
from styleeval.systems.evaluation import DEFAULT_METRICS, SystemsReport, evaluate_systems

__all__ = ["DEFAULT_METRICS", "SystemsReport", "TestSettings", "compare_systems", "evaluate_systems"]
