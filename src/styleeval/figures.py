"""How every figure of styleeval is written (``tradeoff``, the meta-evaluation's plots, the leaderboard, Lai's
figures): PNG for reading, or PDF / SVG for a paper (``--figure-format``), the format named by the file's extension.

PDF embeds its fonts as TrueType (Type 42), not Type 3, which the ACL and IEEE checkers refuse; PDF and SVG carry no
creation date, so that the same figure is the same file."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from styleeval.escaping import md_cell

FIGURE_FORMATS = ("png", "pdf", "svg")
"""The formats of ``--figure-format``; PNG is the default."""

DPI = 120
"""Pixels per inch of a PNG (vector formats have none)."""

_METADATA = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}


def save_figure(fig: Any, path: str | Path, dpi: int = DPI, tight: bool = False) -> Path:
    """Write the matplotlib figure ``fig`` to ``path``, in the format its extension names (PNG without one); ``dpi``
    applies to raster formats; ``tight``: cropped to what is drawn, with 0.04 inch around it. The figure stays open
    (the caller closes it)."""
    import matplotlib  # noqa: PLC0415 - heavy (matplotlib)

    path = Path(path)
    fmt = path.suffix.lower().lstrip(".") or "png"
    with matplotlib.rc_context({"pdf.fonttype": 42, "svg.hashsalt": "styleeval"}):
        fig.savefig(path, format=fmt, dpi=dpi, metadata=_METADATA.get(fmt),
                    **({"bbox_inches": "tight", "pad_inches": 0.04} if tight else {}))
    return path


def fit_title(ax: Any, text: str, **kwargs: Any) -> Any:
    """``text`` as the title of ``ax``, each line wrapped so that the whole title lies inside the figure (measured on
    the rendered text, after ``fig.tight_layout()``, which is run again for the wrapped title); ``kwargs`` go to
    ``set_title``. Returns the title's Text."""
    fig = ax.figure
    lines = text.split("\n")
    width = max(len(line) for line in lines)
    while True:
        title = ax.set_title("\n".join(textwrap.fill(line, width) for line in lines), **kwargs)
        fig.tight_layout()
        renderer = fig.canvas.get_renderer()
        box, frame = title.get_window_extent(renderer), fig.bbox
        if width <= 20 or (frame.x0 <= box.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1):
            return title
        width -= max(1, width // 12)


def figure_link(name: str, title: str) -> str:
    """A figure in a Markdown report: shown (``![title](name)``) where viewers show it (PNG, SVG), a link where they
    do not (PDF)."""
    text = md_cell(title).replace("[", "\\[").replace("]", "\\]")
    return f"[{text}]({name})" if name.lower().endswith(".pdf") else f"![{text}]({name})"
