"""Evaluating and comparing style-transfer systems (``styleeval evaluate``): :func:`evaluate_systems` and
:class:`SystemsReport` (:mod:`.evaluation`), the statistics (:mod:`.stats`), the report files (:mod:`.report`), a rated
corpus as the systems input (:mod:`.dataset`)."""

from styleeval.systems.evaluation import DEFAULT_METRICS, SystemsReport, evaluate_systems

__all__ = ["DEFAULT_METRICS", "SystemsReport", "evaluate_systems"]
