"""How datasets and metrics are named in tables and plots: shared by the reports and plots of
:mod:`styleeval.metaeval` and :mod:`styleeval.systems`, which import it and not each other."""

from __future__ import annotations

from styleeval.corpora import SPECS
from styleeval.escaping import md_cell

__all__ = ["dataset_label", "md_cell", "metric_label"]


def dataset_label(name: str) -> str:
    """A corpus's label in tables, as its module declares it (the name itself for a dataset that is no corpus)."""
    spec = SPECS.get(name)
    return spec.label if spec is not None else name


def metric_label(name: str) -> str:
    """``s_bleu`` -> ``S-Bleu``, ``r_ter`` -> ``R-Ter``, ``logprob_content`` -> ``LogProb content``."""
    if name.startswith(("s_", "r_")):
        return f"{name[0].upper()}-{name[2:].replace('_', ' ').title().replace(' ', '-')}"
    if name.startswith("rs_"):
        return f"RS-{name[3:].title()}"
    if name.startswith("logprob_"):
        return f"LogProb {name[8:]}"
    return name
