"""The page's delivery-latency part: the percentile chart over the pipeline's recent runs and the
per-partition table of the newest measured run (``recon.latency``, read by :mod:`.data`).

Latency is the sink row's time minus its record's Kafka timestamp, in milliseconds. Both parts
show only when a run measured it (the pipeline declares ``sink.time_column``); negative
latencies (the sink's clock behind Kafka's) are counted and shown, never hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from html import escape

from recon_page import chart
from recon_page.data import WHOLE_RUN, Latency, Run

CAPTION = "Delivery latency per run (sink row time − Kafka timestamp)"


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _label(run: Run) -> str:
    # The same label as the bars of the other charts, so that a run lines up across them.
    return run.started_at.astimezone(UTC).strftime("%m-%d %H:%M") if run.started_at else "—"


def _percentiles(row: Latency) -> dict[str, int]:
    return {"p50": row.p50_ms, "p95": row.p95_ms, "p99": row.p99_ms, "max": row.max_ms}


def _skew(row: Latency) -> str:
    if not row.negative:
        return ""
    return (
        f' <strong class="bad">{row.negative:,} of {row.messages:,} negative</strong> '
        "(the sink's clock is behind Kafka's: clock skew, not a fast delivery)"
    )


def figure(runs: Sequence[Run], rows: Sequence[Latency]) -> str:
    """The chart's ``<figure>`` over ``runs`` (newest first, as the page has them), or "" when
    none of them has a whole-run latency row. A run without one is a gap in the lines."""
    by_run = {r.run_id: r for r in rows if r.partition == WHOLE_RUN}
    if not any(run.run_id in by_run for run in runs):
        return ""
    points = []
    for run in reversed(runs):
        row = by_run.get(run.run_id)
        points.append(
            chart.LatencyPoint(
                label=_label(run),
                title=f"{run.run_id} ({row.messages:,} messages)" if row else run.run_id,
                values=_percentiles(row) if row else None,
                bound_ms=row.bound_ms if row else None,
            )
        )
    newest = next(by_run[run.run_id] for run in runs if run.run_id in by_run)
    figures = " · ".join(
        f"{name} {chart.duration_ms(ms)}" for name, ms in _percentiles(newest).items()
    )
    bound = (
        f"bound {chart.duration_ms(newest.bound_ms)}" if newest.bound_ms is not None else "no bound"
    )
    since = f" Counted from the record's {newest.timestamp_type}." if newest.timestamp_type else ""
    note = (
        f'<p class="latency-note">Newest measured run <code>{_e(newest.run_id)}</code>: '
        f"{_e(figures)} over {newest.messages:,} messages; {_e(bound)}.{_e(since)}"
        f"{_skew(newest)}</p>"
    )
    svg = chart.latency_lines(points, title=CAPTION)
    return (
        f'<figure class="latency"><figcaption>{_e(CAPTION)}</figcaption>{svg}'
        f"{chart.latency_legend()}{note}</figure>"
    )


def _cell(ms: int, bound: int | None) -> str:
    over = bound is not None and ms > bound
    return f'<td class="num{" bad" if over else ""}">{ms:,}</td>'


def _row(name: str, row: Latency) -> str:
    return (
        f"<tr><td>{_e(name)}</td>"
        f'<td class="num">{row.messages:,}</td>'
        f'<td class="num{" bad" if row.negative else ""}">{row.negative:,}</td>'
        f'<td class="num">{row.min_ms:,}</td>'
        + "".join(_cell(ms, row.bound_ms) for ms in _percentiles(row).values())
        + f'<td class="num">{"—" if row.bound_ms is None else f"{row.bound_ms:,}"}</td></tr>'
    )


def partitions_table(whole: Latency | None, partitions: Sequence[Latency]) -> str:
    """The newest measured run's figures, the whole run first, then each partition (ms); a
    percentile over the bound is marked. "" without figures."""
    if whole is None and not partitions:
        return ""
    run_id = whole.run_id if whole else partitions[0].run_id
    rows = ([_row("all", whole)] if whole else []) + [_row(str(p.partition), p) for p in partitions]
    head = (
        '<tr><th>Partition</th><th class="num">Messages</th>'
        '<th class="num">Negative</th><th class="num">Min</th><th class="num">p50</th>'
        '<th class="num">p95</th><th class="num">p99</th><th class="num">Max</th>'
        '<th class="num">Bound</th></tr>'
    )
    return (
        f'<details class="latency"><summary>Latency by partition, in ms '
        f"(run <code>{_e(run_id)}</code>)</summary>"
        f'<div class="scroll"><table class="latency"><thead>{head}</thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></details>"
    )


# Half the row, as each verdict chart: alone on its row, a full-width chart would double in height.
CSS = """
.charts figure.latency{flex:0 1 calc(50% - 8px)}
.latency-note{font-size:12px;color:var(--muted);margin:4px 0 0}
svg .point{stroke:#fff;stroke-width:.8}
table.latency{width:auto;min-width:520px}
"""
