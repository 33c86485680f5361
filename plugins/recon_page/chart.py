"""Charts as inline SVG, drawn on the server: stacked bars (one bar per run, one color per verdict)
and the delivery-latency lines (p50/p95/p99/max per run, the pipeline's bound as a step line)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

#: One fixed color per verdict, the same in every chart and legend.
VERDICT_COLORS: dict[str, str] = {
    "delivered": "#4caf50",
    "late": "#1e88e5",
    "mismatched": "#00897b",
    "out_of_order": "#3949ab",
    "pending": "#b0bec5",
    "lost": "#d32f2f",
    # a paler red than lost: also a loss, one hop earlier (the source holds it, the topic never did)
    "unpublished": "#e57373",
    "duplicated": "#f57c00",
    "topic_duplicate": "#8e24aa",
    "aborted_read": "#c2185b",
    "phantom": "#6d4c41",
    "unverifiable": "#546e7a",
    "invalid": "#fbc02d",
}
#: Every message once (topic_duplicate is a flag beside a verdict, so it would count twice).
ALL_SERIES = (
    "delivered",
    "late",
    "mismatched",
    "out_of_order",
    "pending",
    "lost",
    "unpublished",
    "duplicated",
    "aborted_read",
    "phantom",
    "unverifiable",
    "invalid",
)
#: What needs a person: small next to ``delivered``, so it gets its own scale.
PROBLEM_SERIES = (
    "lost",
    "unpublished",
    "duplicated",
    "mismatched",
    "out_of_order",
    "late",
    "aborted_read",
    "phantom",
    "unverifiable",
    "invalid",
    "topic_duplicate",
)


@dataclass(frozen=True)
class Bar:
    label: str  # under the axis, e.g. "11-22 02:33"
    title: str  # tooltip heading, e.g. the run id
    values: Mapping[str, int]
    note: str | None = None  # instead of values: "error", "running"


def nice_step(maximum: float, ticks: int = 4) -> float:
    """A 1-2-5 step so that ``ticks`` steps cover ``maximum``."""
    raw = max(maximum, 1) / ticks
    exp: float = 10 ** math.floor(math.log10(raw))  # int ** int is Any to typeshed (sign)
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= raw:
            return max(m * exp, 1)
    return 10 * exp  # pragma: no cover


def axis_range(low: float, high: float, ticks: int = 4) -> tuple[float, float, float]:
    """``(bottom, top, step)``: a 1-2-5 step and bounds on its multiples covering ``low..high``,
    zero included (a negative latency, from clock skew, goes below the axis, not off the chart)."""
    low, high = min(low, 0.0), max(high, 0.0)
    step = nice_step(high - low, ticks)
    return step * math.floor(low / step), step * max(1, math.ceil(high / step)), step


def compact(n: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:g}"


def stacked_bars(
    bars: Sequence[Bar],
    series: Sequence[str],
    *,
    title: str,
    width: int = 720,
    height: int = 210,
) -> str:
    """An ``<svg>`` of stacked bars (oldest run left); every segment has a ``<title>`` tooltip."""
    left, right, top, bottom = 52, 12, 14, 34
    pw, ph = width - left - right, height - top - bottom
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    totals = [sum(int(b.values.get(s, 0)) for s in series) for b in bars]
    step = nice_step(max(totals, default=0))
    ymax = step * max(1, math.ceil(max(totals, default=0) / step))
    for i in range(int(round(ymax / step)) + 1):
        y = top + ph - ph * (i * step) / ymax
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{compact(i * step)}</text>"
        )
    if not bars:
        out.append(
            f'<text class="empty" x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle">'
            "no runs yet</text></svg>"
        )
        return "".join(out)
    slot = pw / len(bars)
    bw = max(2.0, min(40.0, slot * 0.7))
    label_every = max(1, math.ceil(len(bars) / 8))
    for i, (bar, total) in enumerate(zip(bars, totals, strict=True)):
        x = left + slot * i + (slot - bw) / 2
        base: float = top + ph
        if bar.note is not None or total == 0:
            note = bar.note or "no messages"
            out.append(
                f'<rect class="bar-empty" x="{x:.1f}" y="{base - 3}" width="{bw:.1f}" height="3">'
                f"<title>{escape(bar.title)}: {escape(note)}</title></rect>"
            )
        for name in series:
            n = int(bar.values.get(name, 0))
            if n <= 0:
                continue
            h = max(ph * n / ymax, 1.0)
            base -= h
            out.append(
                f'<rect class="bar" data-verdict="{escape(name)}" x="{x:.1f}" y="{base:.1f}" '
                f'width="{bw:.1f}" height="{h:.1f}" fill="{VERDICT_COLORS.get(name, "#999")}">'
                f"<title>{escape(bar.title)}: {escape(name)} {n:,}</title></rect>"
            )
        if i % label_every == 0:
            out.append(
                f'<text class="xlabel" x="{x + bw / 2:.1f}" y="{top + ph + 16}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    out.append(
        f'<line class="axis" x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/></svg>'
    )
    return "".join(out)


def verdict_label(name: str) -> str:
    """A verdict's name behind its chart colour's swatch: the tables name a verdict the way the
    legends colour it (unknown verdicts grey)."""
    color = VERDICT_COLORS.get(name, "#999")
    swatch = f'<span class="swatch" style="background:{color}"></span>'
    return f'<span class="verdict">{swatch}{escape(name)}</span>'


def legend(series: Sequence[str]) -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{VERDICT_COLORS.get(s, "#999")}"></span>'
        f"{escape(s)}</li>"
        for s in series
    )
    return f'<ul class="legend">{items}</ul>'


#: The latency lines, fastest first, each with its color; the bound is drawn apart, in red.
LATENCY_SERIES: dict[str, str] = {
    "p50": "#43a047",
    "p95": "#00838f",
    "p99": "#8e24aa",
    "max": "#616161",
}
BOUND_COLOR = "#d32f2f"


@dataclass(frozen=True)
class LatencyPoint:
    label: str  # under the axis, as for a bar
    title: str  # tooltip heading, e.g. the run id
    values: Mapping[str, int] | None  # p50/p95/p99/max in ms; None: the run measured none
    bound_ms: int | None = None


def duration_ms(ms: float) -> str:
    """A latency as people read it: ``850 ms``, ``2.5 s``, ``3.2 min`` (negative stays so)."""
    if abs(ms) < 1000:
        return f"{ms:g} ms"
    if abs(ms) < 120_000:
        return f"{ms / 1000:.3g} s"
    return f"{ms / 60_000:.3g} min"


def _path(points: Sequence[tuple[float, float] | None]) -> str:
    """SVG path data through the points; a ``None`` breaks the line (a run without figures is a
    gap, not a fake zero)."""
    out, pen_down = [], False
    for point in points:
        if point is None:
            pen_down = False
            continue
        out.append(f"{'L' if pen_down else 'M'}{point[0]:.1f},{point[1]:.1f}")
        pen_down = True
    return " ".join(out)


def latency_lines(
    points: Sequence[LatencyPoint],
    *,
    title: str,
    width: int = 720,
    height: int = 210,
) -> str:
    """An ``<svg>`` of the latency percentiles per run (oldest left), one line per percentile
    with a ``<title>`` tooltip on every point, and each run's bound as a dashed step line."""
    left, right, top, bottom = 60, 12, 14, 34
    pw, ph = width - left - right, height - top - bottom
    figures = [v for p in points if p.values for v in p.values.values()]
    figures += [p.bound_ms for p in points if p.bound_ms is not None]
    low, high, step = axis_range(min(figures, default=0), max(figures, default=0))

    def y(v: float) -> float:
        return top + ph - ph * (v - low) / (high - low)

    out = [
        f'<svg class="chart latency" data-chart="latency" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i in range(int(round((high - low) / step)) + 1):
        tick = low + i * step
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(tick):.1f}" '
            f'y2="{y(tick):.1f}"/><text class="tick" x="{left - 6}" y="{y(tick) + 4:.1f}" '
            f'text-anchor="end">{escape(duration_ms(tick))}</text>'
        )
    if not any(p.values for p in points):
        out.append(
            f'<text class="empty" x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle">'
            "no latency measured yet</text></svg>"
        )
        return "".join(out)
    slot = pw / len(points)

    def x(i: int) -> float:
        return left + slot * (i + 0.5)

    # The bound can change between runs (the pipeline's setting did): a step per run's slot.
    steps: list[str] = []
    for i, p in enumerate(points):
        if p.bound_ms is None:
            continue
        by = y(p.bound_ms)
        steps.append(
            f"{'L' if i and points[i - 1].bound_ms is not None else 'M'}"
            f"{left + slot * i:.1f},{by:.1f} H{left + slot * (i + 1):.1f}"
        )
    if steps:
        last = next(p for p in reversed(points) if p.bound_ms is not None)
        out.append(
            f'<path class="bound" data-bound-ms="{last.bound_ms}" d="{" ".join(steps)}" '
            f'fill="none" stroke="{BOUND_COLOR}" stroke-width="1.5" stroke-dasharray="6 4">'
            f"<title>bound {escape(duration_ms(last.bound_ms or 0))} (latency.max_seconds)"
            "</title></path>"
        )
    for name, color in LATENCY_SERIES.items():
        line = [
            (x(i), y(p.values[name])) if p.values and name in p.values else None
            for i, p in enumerate(points)
        ]
        out.append(
            f'<path class="series" data-series="{escape(name)}" d="{_path(line)}" fill="none" '
            f'stroke="{color}" stroke-width="1.8"/>'
        )
        for i, p in enumerate(points):
            if not p.values or name not in p.values:
                continue
            bound = f" (bound {duration_ms(p.bound_ms)})" if p.bound_ms is not None else ""
            out.append(
                f'<circle class="point" data-series="{escape(name)}" cx="{x(i):.1f}" '
                f'cy="{y(p.values[name]):.1f}" r="2.6" fill="{color}"><title>'
                f"{escape(p.title)}: {escape(name)} {escape(duration_ms(p.values[name]))}"
                f"{escape(bound)}</title></circle>"
            )
    label_every = max(1, math.ceil(len(points) / 8))
    for i, p in enumerate(points):
        if i % label_every == 0:
            out.append(
                f'<text class="xlabel" x="{x(i):.1f}" y="{top + ph + 16}" '
                f'text-anchor="middle">{escape(p.label)}</text>'
            )
    out.append(
        f'<line class="axis" x1="{left}" x2="{left + pw}" y1="{y(0):.1f}" y2="{y(0):.1f}"/></svg>'
    )
    return "".join(out)


def latency_legend() -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{color}"></span>{escape(name)}</li>'
        for name, color in LATENCY_SERIES.items()
    )
    bound = f'<li><span class="swatch bound" style="background:{BOUND_COLOR}"></span>bound</li>'
    return f'<ul class="legend">{items}{bound}</ul>'
