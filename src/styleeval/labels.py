"""How datasets and metrics are named in tables and plots: shared by the reports and plots of
:mod:`styleeval.metaeval` and :mod:`styleeval.systems`, which import it and not each other."""

from __future__ import annotations


def dataset_label(name: str) -> str:
    """A corpus's label in tables, as its module declares it (the name itself for a dataset that is no corpus)."""
    from styleeval.corpora import (
        SPECS,  # when used: corpora imports `datasets`, ~1 s of `styleeval evaluate`'s start-up
    )

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


def md_cell(text: object) -> str:
    """``text`` safe in one Markdown table cell (or list item): a ``|`` escaped, line breaks as spaces, so a name
    such as ``A | 99 |`` or one with a newline cannot add a column or a row."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
