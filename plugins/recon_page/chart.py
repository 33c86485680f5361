"""Stacked bar charts as inline SVG, drawn on the server: one bar per run, one color per verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

#: One fixed color per verdict, the same in every chart and legend.
VERDICT_COLORS: dict[str, str] = {
    "delivered": "#4caf50",
    "pending": "#b0bec5",
    "lost": "#d32f2f",
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
    "pending",
    "lost",
    "duplicated",
    "aborted_read",
    "phantom",
    "unverifiable",
    "invalid",
)
#: What needs a person: small next to ``delivered``, so it gets its own scale.
PROBLEM_SERIES = (
    "lost",
    "duplicated",
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
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= raw:
            return max(m * exp, 1)
    return 10 * exp  # pragma: no cover


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
        base = top + ph
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


def legend(series: Sequence[str]) -> str:
    items = "".join(
        f'<li><span class="swatch" style="background:{VERDICT_COLORS.get(s, "#999")}"></span>'
        f"{escape(s)}</li>"
        for s in series
    )
    return f'<ul class="legend">{items}</ul>'
