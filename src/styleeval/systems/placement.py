"""Names next to points on a matplotlib plot, placed where they overlap no other name, no point, no error bar and no
line (:func:`place_labels`), as a reader of a paper's scatter plot expects; a name that had to move away from its
point, or that sits as near another point as its own, gets a leader line.

Everything is computed in display coordinates, after the figure is laid out: a name is a box (its text's extent,
padded so that two names never touch), an obstacle is a segment with a half-thickness (a point: a segment of length
0; an error bar and each of its caps: a segment as thick as its line; a leader line). The names are placed one by
one, the most crowded point first, each at the nearest of :data:`OFFSETS` that clashes with nothing placed or drawn
(and whose leader line, if it needs one, crosses no name and no other point, but those its own point lies in); where
none is free, at the one of least clash."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RINGS = (7, 12, 18, 26, 36, 48, 62, 80, 100)
"""How far (points) a name may sit from its point: on the first two rings it is next to it, further away it gets a
leader line."""
ANGLES = (45, -45, 135, -135, 90, -90, 0, 180, 20, -20, 160, -160, 70, -70, 110, -110)
"""The directions tried on each ring (degrees; up-right first, as a reader looks for a name)."""
OFFSETS = [(r * math.cos(math.radians(a)), r * math.sin(math.radians(a))) for r in RINGS for a in ANGLES]
"""Where a name may go around its point (points of offset, nearest first)."""
PAD = 2.0
"""Points of empty space around a name: two names are never closer than twice this."""


Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Segment:
    """An obstacle: the segment (x0, y0)-(x1, y1) in display pixels, ``half`` pixels thick on each side."""

    x0: float
    y0: float
    x1: float
    y1: float
    half: float = 0.0

    def hits(self, box: Box) -> bool:
        """Whether this thick segment touches the box."""
        return _segment_box_distance(self, box) <= self.half


def _segment_box_distance(s: Segment, box: Box) -> float:
    if _segment_crosses_box(s.x0, s.y0, s.x1, s.y1, box):
        return 0.0
    x0, y0, x1, y1 = box
    corners = ((x0, y0), (x0, y1), (x1, y0), (x1, y1))
    return min(min(_point_box_distance(px, py, box) for px, py in ((s.x0, s.y0), (s.x1, s.y1))),
               min(_point_segment_distance(cx, cy, s) for cx, cy in corners))


def _point_box_distance(x: float, y: float, box: Box) -> float:
    dx = max(box[0] - x, 0.0, x - box[2])
    dy = max(box[1] - y, 0.0, y - box[3])
    return math.hypot(dx, dy)


def _point_segment_distance(x: float, y: float, s: Segment) -> float:
    vx, vy = s.x1 - s.x0, s.y1 - s.y0
    length = vx * vx + vy * vy
    t = 0.0 if length == 0 else max(0.0, min(1.0, ((x - s.x0) * vx + (y - s.y0) * vy) / length))
    return math.hypot(x - (s.x0 + t * vx), y - (s.y0 + t * vy))


def _segment_crosses_box(x0: float, y0: float, x1: float, y1: float, box: Box) -> bool:
    """Liang-Barsky: whether any part of the segment lies inside the box."""
    lo, hi = 0.0, 1.0
    for p, q in ((-(x1 - x0), x0 - box[0]), (x1 - x0, box[2] - x0), (-(y1 - y0), y0 - box[1]), (y1 - y0, box[3] - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo > hi:
            return False
    return True


def _overlap(a: Box, b: Box) -> float:
    """The area two boxes share."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def drawn_obstacles(ax: Any) -> list[Segment]:
    """What is drawn on ``ax`` that a name must not cover, in display pixels: every line (error bars and their caps,
    a front, a trend: each segment of it, as thick as it is drawn), every marker (as a segment of length 0 as wide
    as the marker) and every collection of segments (matplotlib's error bars)."""
    from matplotlib.collections import LineCollection  # noqa: PLC0415 - heavy (matplotlib)

    to_pixels = ax.figure.dpi / 72
    out: list[Segment] = []
    for line in ax.get_lines():
        xy = ax.transData.transform(line.get_xydata())
        half = line.get_linewidth() * to_pixels / 2 + 0.5
        if line.get_linestyle() not in ("None", "none", "", " ") and len(xy) > 1:
            out += [Segment(*xy[k], *xy[k + 1], half) for k in range(len(xy) - 1)]
        marker = line.get_marker()
        if marker not in (None, "None", "none", "", " "):
            size = line.get_markersize() * to_pixels / 2
            if marker in ("|", "_"):  # an error bar's cap: a segment across the bar
                dx, dy = (0.0, size) if marker == "|" else (size, 0.0)
                out += [Segment(x - dx, y - dy, x + dx, y + dy, line.get_markeredgewidth() * to_pixels / 2 + 0.5)
                        for x, y in xy]
            else:
                out += [Segment(x, y, x, y, size + 0.5) for x, y in xy]
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            widths = collection.get_linewidths() or [1.0]
            for k, path in enumerate(collection.get_segments()):
                xy = ax.transData.transform(path)
                half = widths[k % len(widths)] * to_pixels / 2 + 0.5
                out += [Segment(*xy[j], *xy[j + 1], half) for j in range(len(xy) - 1)]
    return out


def place_labels(ax: Any, xy: Sequence[tuple[float, float]], labels: Sequence[str], fontsize: float = 8,
                 obstacles: Sequence[Segment] | None = None) -> list:
    """Annotate each point ``xy[i]`` (data coordinates) with ``labels[i]``, at the nearest of :data:`OFFSETS` where
    the name, padded by :data:`PAD`, stays inside the axes and overlaps no name placed before it, no obstacle
    (default: :func:`drawn_obstacles`, everything drawn on ``ax`` so far: points, error bars, lines) and no leader
    line, and where its own leader line crosses no name. A name away from its point gets a grey leader line. Call it
    when the figure is laid out (after ``tight_layout``) and everything else is drawn. Returns the text objects, in
    the order of ``labels``."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    to_pixels = fig.dpi / 72
    pad = PAD * to_pixels
    inside = ax.get_window_extent(renderer)
    frame: Box = (inside.x0, inside.y0, inside.x1, inside.y1)
    drawn = list(drawn_obstacles(ax) if obstacles is None else obstacles)
    points = [tuple(ax.transData.transform(p)) for p in xy]
    sizes = []
    for label in labels:
        probe = ax.text(0, 0, label, fontsize=fontsize)
        extent = probe.get_window_extent(renderer)
        probe.remove()
        sizes.append((extent.width, extent.height))

    def box_at(i: int, offset: tuple[float, float]) -> Box:
        (px, py), (w, h) = points[i], sizes[i]
        ha, va = _alignment(offset)
        x = px + offset[0] * to_pixels - {"left": 0, "center": w / 2, "right": w}[ha]
        y = py + offset[1] * to_pixels - {"bottom": 0, "center": h / 2, "top": h}[va]
        return (x - pad, y - pad, x + w + pad, y + h + pad)

    crowd = [sum(math.dist(p, q) < 60 * to_pixels for q in points) for p in points]
    markers = [s for s in drawn if s.x0 == s.x1 and s.y0 == s.y1]
    near = OFFSETS[:2 * len(ANGLES)]  # the first two rings: next to its point

    def needs_leader(i: int, offset: tuple[float, float], box: Box) -> bool:
        """Away from its point, or as near another point (not one it coincides with) as its own."""
        own = _point_box_distance(*points[i], box)
        return offset not in near or any(_point_box_distance(*q, box) < own + 2 * to_pixels for q in points
                                         if math.dist(q, points[i]) > 2 * to_pixels)

    placed: list[Box] = []
    leaders: list[Segment] = []
    chosen: dict[int, tuple[tuple[float, float], bool]] = {}
    for i in sorted(range(len(points)), key=lambda i: -crowd[i]):  # the most crowded first
        best: tuple[float, tuple[float, float], Box, bool] | None = None
        for offset in OFFSETS:
            box = box_at(i, offset)
            clash = (sum(_overlap(box, other) for other in placed) + _outside(box, frame)
                     + pad * pad * sum(s.hits(box) for s in [*drawn, *leaders]))
            leader = needs_leader(i, offset, box)
            if leader:  # its leader line crosses no name and no other point (but those its point lies in)
                line = _leader(points[i], box)
                clash += pad * pad * (sum(line.hits(other) for other in placed)
                                      + sum(_passes_through(line, m) for m in markers
                                            if math.dist((m.x0, m.y0), points[i]) > m.half))
            if best is None or clash < best[0]:
                best = (clash, offset, box, leader)
            if clash == 0:
                break
        assert best is not None
        _, offset, box, leader = best
        chosen[i] = offset, leader
        placed.append(box)
        if leader:
            leaders.append(_leader(points[i], box))
    texts = []
    for i, label in enumerate(labels):
        offset, leader = chosen[i]
        ha, va = _alignment(offset)
        texts.append(ax.annotate(label, xy[i], textcoords="offset points", xytext=offset, fontsize=fontsize,
                                 ha=ha, va=va, **({"arrowprops": {"arrowstyle": "-", "color": "grey", "lw": 0.6,
                                                                  "shrinkA": 1, "shrinkB": 3}} if leader else {})))
    return texts


def _passes_through(leader: Segment, marker: Segment) -> bool:
    """Whether a leader line passes through a marker (a segment of length 0 as thick as the marker)."""
    return _point_segment_distance(marker.x0, marker.y0, leader) <= marker.half


def _alignment(offset: tuple[float, float]) -> tuple[str, str]:
    dx, dy = offset
    ha = "left" if dx > 1e-9 else "right" if dx < -1e-9 else "center"
    va = "bottom" if dy > 1e-9 else "top" if dy < -1e-9 else "center"
    return ha, va


def _leader(point: tuple[float, float], box: Box) -> Segment:
    """The leader line matplotlib draws from a point to its name: towards the middle of the name's box."""
    return Segment(point[0], point[1], (box[0] + box[2]) / 2, (box[1] + box[3]) / 2, 0.5)


def _outside(box: Box, frame: Box) -> float:
    """A clash as large as the box when any of it is outside the axes."""
    out = box[0] < frame[0] or box[2] > frame[2] or box[1] < frame[1] or box[3] > frame[3]
    return (box[2] - box[0]) * (box[3] - box[1]) if out else 0.0
