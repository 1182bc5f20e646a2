"""``styleeval list``: every metric (with the options its spec takes), every corpus and every model preset, one line
each saying what it is.

    styleeval list                 # all three
    styleeval list metrics         # or: styleeval list corpora, styleeval list models

The names are read where they are declared (the metric registry, the corpora's specs, the model presets), so the
list is the one ``evaluate``, ``metaeval`` and ``load_corpus`` accept.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Iterator

from styleeval.escaping import terminal_text
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.hub import (
    DEFAULT_MODEL,
    MODEL_AGREEMENT,
    PRESETS,
    TINY_RANDOM,
    UNGATED_PRESET,
    UNKNOWN_AGREEMENT,
)
from styleeval.labels import metric_label
from styleeval.terminal import terminal_width

SUMMARY = "list the metrics (with their options), the corpora and the model presets"
"""What ``styleeval --help`` says of this command."""

KINDS = ("metrics", "corpora", "models")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``list`` sub-command."""
    p = subparsers.add_parser(
        "list", help=SUMMARY,
        description="List what styleeval knows by name: metrics (a spec is name or name:key=value:..., every metric "
        "also takes as=NAME), corpora (--datasets, load_corpus) and model presets (--model, model=...).",
    )
    p.add_argument("kind", nargs="?", choices=KINDS, default=None, metavar="WHAT",
                   help=f"what to list: {', '.join(KINDS)} (default: all three)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``styleeval list``; returns the exit status."""
    width = max(terminal_width(), 60)
    sections = {"metrics": metric_lines, "corpora": corpus_lines, "models": model_lines}
    for i, kind in enumerate([args.kind] if args.kind else KINDS):
        if i:
            print()
        for line in sections[kind](width):
            print(line)
    sys.stdout.flush()  # a reader gone (styleeval list | head): BrokenPipeError here, ended quietly by cli.main
    return 0


def _entry(name: str, text: str, width: int, indent: int) -> list[str]:
    """``name`` and ``text`` beside it, the text wrapped under itself."""
    head = f"  {name:<{indent - 3}} " if len(name) <= indent - 3 else f"  {name}\n{' ' * indent}"
    lines = textwrap.wrap(terminal_text(text), max(width - indent, 30), break_on_hyphens=False) or [""]
    return (head + lines[0]).split("\n") + [" " * indent + line for line in lines[1:]]


def metric_lines(width: int = 100) -> Iterator[str]:
    """The ``metrics`` section: each registered metric, its display name, what it computes and its options; then the
    namespaces (``lai:<score>``)."""
    from styleeval.metrics.registry import NAMESPACES, available_metrics, metric_options, metric_summary  # noqa: PLC0415 - heavy (numpy, via styleeval.metrics.registry)

    yield "metrics (a spec: NAME or NAME:key=value:key=value; every metric also takes as=NAME, its display name)"
    names = available_metrics()
    indent = min(max(len(n) for n in names) + 4, 22)
    for name in names:
        label = metric_label(name)
        text = (f"{label}: " if label != name else "") + metric_summary(name)
        options = metric_options(name)
        text += f" Options: {', '.join(options)}." if options else " No options."
        yield from _entry(name, text, width, indent)
    for namespace, (factory, options, member) in NAMESPACES.items():
        doc = re.sub(r":\w+:`([^`]*)`", r"\1", " ".join((factory.__doc__ or "").split()).replace("``", ""))
        text = doc.split(": ", 1)[-1] + (f" Options: {', '.join(options)}." if options else "")
        yield from _entry(f"{namespace}:<{member}>", text, width, indent)


def corpus_lines(width: int = 100) -> Iterator[str]:
    """The ``corpora`` section: each corpus's name, label, kind (``rating, systems``: a corpus ``evaluate --dataset``
    takes, :attr:`~styleeval.corpora.spec.CorpusSpec.compares_systems`) and the first line of its module's docstring."""
    from styleeval.corpora import SPECS  # noqa: PLC0415 - heavy (datasets, via styleeval.corpora)

    yield ("corpora (metaeval --datasets, styleeval.load_corpus(name); rating: rated rewrites, systems: several systems' "
           "rewrites of every source, evaluate --dataset; stel: STEL's tasks)")
    indent = max(len(n) for n in SPECS) + 4
    for name, spec in SPECS.items():
        module = sys.modules.get(getattr(spec.loader, "__module__", ""), None)
        first = ((module.__doc__ if module else None) or "").strip().splitlines()[:1]
        kind = f"{spec.kind}, systems" if spec.compares_systems else spec.kind
        text = f"[{kind}; {spec.label}] " + (first[0].replace("``", "") if first else "")
        yield from _entry(name, text, width, indent)


DEFAULT = "; the default"
"""The end of the default preset's line in ``list models``."""


def model_lines(width: int = 100) -> Iterator[str]:
    """The ``models`` section: the model presets, what each names, the default."""
    yield ("models (--model, model=... of LogProb, the autorater and ppl; besides these: a Hub id, a local folder "
           "or a .gguf file)")
    rows: list[tuple[str, str]] = []
    for key, source in GGUF_PRESETS.items():
        rows.append((key, f"{source.label}: a real chat model, fetched on first use without a Hub account "
                          f"({source.size / 1e6:,.0f} MB, sha256 pinned; {source.footprint})"))
    for key, hub_id in PRESETS.items():
        what = ("ungated, the size of 1b (not the paper's)" if key == UNGATED_PRESET
                else "the paper's backbone (gated on the Hub: accept Meta's licence first)")
        rows.append((key, f"{hub_id}: {what}" + (DEFAULT if hub_id == DEFAULT_MODEL else "")))
    rows.append((TINY_RANDOM, "a tiny model with random weights, made locally: tests the pipeline; its numbers mean "
                              "nothing (marked 'random weights' wherever shown)"))
    rows = [(key, f"{text.removesuffix(DEFAULT)}; {MODEL_AGREEMENT.get(key, UNKNOWN_AGREEMENT)}"  # what it is worth
             + (DEFAULT if text.endswith(DEFAULT) else "")) for key, text in rows]
    indent = max(len(k) for k, _ in rows) + 4
    for key, text in rows:
        yield from _entry(key, text, width, indent)
