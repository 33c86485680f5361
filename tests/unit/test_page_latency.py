"""The reconciliation page and the verdict ``late`` (issue 19): the verdict in the charts, tables
and repair hints, and the delivery-latency chart per run read from ``recon.latency``.

The database is a stand-in for the psycopg2 connection that answers each query with given rows
(and records it); the HTML is checked as the page renders it, with fake runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from fixtures.page_fakes import FakeConn, page_run
from psycopg2 import errors

from recon.model import details
from recon_page import app, chart, data, hints, latency, links, render, repairs
from recon_page.data import Discrepancy, Latency, Run

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = '<script>alert("x")</script>&'


# --- stand-ins ----------------------------------------------------------------------------------


def _run(i: int, **counts: int) -> Run:
    return page_run(i, "payments", "exactly_once", "late", T0, **counts)


def _lat(
    run_id: str, partition: int = -1, *, p99: int = 1800, mx: int = 2500, **kw: Any
) -> Latency:
    figures: dict[str, Any] = dict(
        messages=100, negative=0, min_ms=10, p50_ms=400, p95_ms=1200, p99_ms=p99, max_ms=mx,
        bound_ms=2000,
    )  # fmt: skip
    figures.update(kw)
    return Latency(pipeline="payments", run_id=run_id, partition=partition, **figures)


def _late_row(latency_ms: int = 2500, bound_ms: int = 2000) -> Discrepancy:
    return Discrepancy(
        pipeline="payments", run_id="scheduled__r2", verdict="late", message_id="m-17",
        topic="orders", partition=1, offsets=[17], sink_keys=["s17"], sink_count=1,
        detail=details.LATE % (latency_ms, bound_ms),
    )  # fmt: skip


def _view(
    runs: Sequence[Run],
    rows: Sequence[Latency] = (),
    partitions: Sequence[Latency] = (),
    discrepancies: Sequence[Discrepancy] = (),
) -> render.PipelineView:
    return render.PipelineView(
        latest=runs[0], runs=runs, discrepancies=discrepancies, latency=rows,
        latency_partitions=partitions,
    )  # fmt: skip


def _section(view: render.PipelineView) -> str:
    return render.pipeline_section(view, LINKS)


def _attr_values(html: str, element: str, attribute: str) -> list[str]:
    return re.findall(rf"<{element}\b[^>]*\b{attribute}=\"([^\"]*)\"", html)


# --- data: reading recon.latency ----------------------------------------------------------------


def test_latency_reads_the_whole_run_rows_of_the_latest_runs() -> None:
    conn = FakeConn(
        [
            ("payments", "r2", -1, 100, 3, -40, 400, 1200, 1800, 2500, 2000, "CreateTime", T0),
            ("payments", "r1", -1, 90, 0, 5, 300, 900, 1000, 1100, None, None, T0),
        ]
    )
    rows = data.latency(conn, "payments", limit=500)
    assert rows[0] == Latency(
        "payments", "r2", -1, messages=100, negative=3, min_ms=-40, p50_ms=400, p95_ms=1200,
        p99_ms=1800, max_ms=2500, bound_ms=2000, timestamp_type="CreateTime", started_at=T0,
    )  # fmt: skip
    assert rows[1].bound_ms is None and rows[1].max_ms == 1100
    sql, params = conn.queries[0]
    assert "recon.latency" in sql and "x.partition = -1" in sql
    # the same runs the page shows, never more
    assert params == {"p": "payments", "limit": data.MAX_RUNS}


def test_latency_partitions_reads_one_run_without_its_whole_run_row() -> None:
    conn = FakeConn(
        [("payments", "r2", 0, 50, 0, 10, 400, 1200, 1800, 2500, 2000, "LogAppendTime", None)]
    )
    (row,) = data.latency_partitions(conn, "payments", "r2")
    assert (row.partition, row.p95_ms, row.started_at) == (0, 1200, None)
    sql, params = conn.queries[0]
    assert "x.partition <> -1" in sql
    assert params == ("payments", "r2", data.MAX_LATENCY_PARTITIONS)


def test_latency_rows_are_read_by_column_name() -> None:
    # every selected column is a Latency field of the same name (then started_at)
    selected = [c.strip().removeprefix("x.") for c in data._LATENCY_COLUMNS.split(",")]
    fields = [f.name for f in dataclasses.fields(Latency)]
    assert [*selected, "started_at"] == [f for f in fields if f in selected or f == "started_at"]
    assert set(fields) == {*selected, "started_at"}
    # a row of another shape fails instead of shifting a figure into the next field
    row = ("payments", "r2", -1, 100, 3, -40, 400, 1200, 1800, 2500, 2000, "CreateTime", T0)
    with pytest.raises(ValueError):
        data._latency(row[:-1])
    with pytest.raises(ValueError):
        data._latency((*row, "extra"))
    assert data._latency(row).p95_ms == 1200 and data._latency(row).bound_ms == 2000


def test_no_latency_table_yet_is_no_latency() -> None:
    # a results schema from before issue 19: the page still renders, without the chart
    missing = errors.UndefinedTable('relation "recon.latency" does not exist')
    assert data.latency(FakeConn(missing), "payments") == []
    assert data.latency_partitions(FakeConn(missing), "payments", "r1") == []


def test_late_sorts_after_missing_and_wrong_rows_and_before_pending() -> None:
    order = data.VERDICT_ORDER
    assert order.index("invalid") < order.index("late") < order.index("pending")
    conn = FakeConn([])
    data.discrepancies(conn, "payments")
    assert "late" in conn.queries[0][1]["order"]


def test_the_view_reads_the_partitions_of_the_newest_measured_run_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    monkeypatch.setattr(data, "runs", lambda conn, p: [_run(2), _run(1)])
    monkeypatch.setattr(data, "discrepancies", lambda conn, p: [])
    monkeypatch.setattr(repairs, "list_repairs", lambda conn, p: [])
    monkeypatch.setattr(data, "latency", lambda conn, p: [_lat("scheduled__r2"), _lat("r1")])
    monkeypatch.setattr(
        data, "latency_partitions", lambda conn, p, run_id: asked.append(run_id) or []
    )
    view = app._view(object(), _run(2))
    assert asked == ["scheduled__r2"] and len(view.latency) == 2

    monkeypatch.setattr(data, "latency", lambda conn, p: [])
    assert app._view(object(), _run(2)).latency_partitions == []
    assert asked == ["scheduled__r2"]  # no query for a pipeline that measures no latency


# --- chart: the latency lines -------------------------------------------------------------------


def _points() -> list[chart.LatencyPoint]:
    measured = {"p50": 400, "p95": 1200, "p99": 1800, "max": 2500}
    return [
        chart.LatencyPoint("11-20 08:00", "r0", dict(measured), bound_ms=2000),
        chart.LatencyPoint("11-20 08:01", "r1", None),
        chart.LatencyPoint("11-20 08:02", "r2", {**measured, "max": 6000}, bound_ms=2000),
    ]


def _circle_y(svg: str, series: str) -> list[float]:
    return [
        float(y)
        for y in re.findall(
            rf'<circle class="point" data-series="{series}" [^>]*cy="([-\d.]+)"', svg
        )
    ]


def test_latency_lines_draw_each_percentile_and_the_bound() -> None:
    svg = chart.latency_lines(_points(), title="Latency")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert _attr_values(svg, "path", "data-series") == ["p50", "p95", "p99", "max"]
    # a point per measured run and percentile; the run without figures has none
    assert len(re.findall(r"<circle ", svg)) == 2 * 4
    assert _attr_values(svg, "path", "data-bound-ms") == ["2000"]
    # a run without figures is a gap: each line starts again after it
    p50 = re.search(r'data-series="p50" d="([^"]*)"', svg)
    assert p50 is not None and p50[1].count("M") == 2 and "L" not in p50[1]
    # higher latency is higher up; the slowest run's max above the bound's line
    bound_y = float(re.search(r'class="bound"[^>]*d="M[\d.]+,([\d.]+)', svg)[1])  # type: ignore[index]
    (p50_y, _), (max_y_0, max_y_2) = _circle_y(svg, "p50"), _circle_y(svg, "max")
    assert max_y_2 < bound_y < p50_y
    assert max_y_2 < max_y_0
    assert "r2: max 6 s (bound 2 s)" in svg


def test_a_changed_bound_is_a_step_and_a_missing_one_no_line() -> None:
    pts = _points()
    pts[2] = chart.LatencyPoint("c", "r2", {"p50": 1, "p95": 2, "p99": 3, "max": 4}, bound_ms=500)
    svg = chart.latency_lines(pts, title="Latency")
    bound = re.search(r'class="bound" data-bound-ms="(\d+)" d="([^"]*)"', svg)
    assert bound is not None and bound[1] == "500"  # the newest run's bound
    assert bound[2].count("M") == 2  # r1 has none: the line stops there
    no_bound = [chart.LatencyPoint("a", "r0", {"p50": 1, "p95": 2, "p99": 3, "max": 4})]
    assert 'class="bound"' not in chart.latency_lines(no_bound, title="Latency")


def test_negative_latencies_are_drawn_below_zero_not_clipped() -> None:
    pts = [chart.LatencyPoint("a", "r0", {"p50": -300, "p95": 100, "p99": 200, "max": 900})]
    svg = chart.latency_lines(pts, title="Latency")
    axis_y = float(re.search(r'<line class="axis"[^>]*y1="([-\d.]+)"', svg)[1])  # type: ignore[index]
    (p50_y,) = _circle_y(svg, "p50")
    (p95_y,) = _circle_y(svg, "p95")
    assert p95_y < axis_y < p50_y
    assert ">-500 ms</text>" in svg  # a tick below zero: the axis reaches the skewed p50


def test_latency_chart_escapes_titles_and_labels() -> None:
    pts = [chart.LatencyPoint(EVIL, EVIL, {"p50": 1, "p95": 2, "p99": 3, "max": 4}, 10)]
    svg = chart.latency_lines(pts, title=EVIL)
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_duration_ms_reads_as_people_read_it() -> None:
    assert [chart.duration_ms(v) for v in (850, -40, 2500, 150_000)] == [
        "850 ms", "-40 ms", "2.5 s", "2.5 min",
    ]  # fmt: skip


# --- render: late everywhere a verdict shows, the latency section -------------------------------


def test_late_has_a_color_and_a_place_in_both_verdict_charts() -> None:
    assert "late" in chart.VERDICT_COLORS
    assert "late" in chart.ALL_SERIES and "late" in chart.PROBLEM_SERIES
    colors = [c for name, c in chart.VERDICT_COLORS.items() if name != "late"]
    assert chart.VERDICT_COLORS["late"] not in colors
    html = _section(_view([_run(2, late=7), _run(1)]))
    late_bars = re.findall(r'<rect class="bar" data-verdict="late"[^>]*>', html)
    assert len(late_bars) == 2  # the run with 7 late, in each chart
    assert "late 7</title>" in html


def test_the_overview_counts_late_in_its_own_column() -> None:
    html = render.overview([_run(2, late=7, lost=1)], LINKS)
    assert '<th class="num">Late</th>' in html
    cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', html)
    heads = re.findall(r'<th class="num">([^<]*)</th>', html)
    assert dict(zip(heads, cells, strict=True))["Late"] == "7"
    assert '<td class="num bad">7</td>' in html


def test_the_latency_chart_shows_when_a_run_has_latency_rows() -> None:
    runs = [_run(2, late=1), _run(1), _run(0)]
    rows = [
        _lat("scheduled__r2", mx=2600, negative=3, timestamp_type="LogAppendTime"),
        _lat("scheduled__r0"),
    ]
    parts = [_lat("scheduled__r2", 0, mx=2600), _lat("scheduled__r2", 1, p99=900, mx=950)]
    html = _section(_view(runs, rows, parts))
    assert html.count('data-chart="latency"') == 1
    assert "Counted from the record&#x27;s LogAppendTime." in html
    assert len(re.findall(r"<circle ", html)) == 2 * 4  # r1 measured nothing
    assert "Newest measured run <code>scheduled__r2</code>" in html
    assert "max 2.6 s over 100 messages; bound 2 s." in html
    assert "3 of 100 negative" in html and "clock skew" in html
    # the partition table: the whole run first, then each partition; over the bound marked
    table = re.search(r'<table class="latency">.*?</table>', html)
    assert table is not None
    first_cells = re.findall(r"<tr><td>([^<]*)</td>", table[0])
    assert first_cells == ["all", "0", "1"]
    assert table[0].count('<td class="num bad">2,600</td>') == 2
    assert '<td class="num bad">950</td>' not in table[0]
    assert '<td class="num bad">3</td>' in table[0]  # negatives of the whole run


def test_no_latency_chart_without_latency_rows() -> None:
    html = _section(_view([_run(2), _run(1)]))
    assert "data-chart" not in html and 'class="latency"' not in html
    assert 'class="chart"' in html  # the verdict charts are still there
    # rows of runs the page does not show draw nothing either
    assert 'data-chart="latency"' not in _section(_view([_run(2)], [_lat("other")]))


def test_latency_values_from_the_database_are_escaped() -> None:
    evil_run = Run(
        pipeline="payments", run_id=EVIL, semantics="exactly_once", status="passed",
        started_at=T0, counts={"delivered": 1},
    )  # fmt: skip
    html = _section(_view([evil_run], [_lat(EVIL)], [_lat(EVIL, 0)]))
    assert 'data-chart="latency"' in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_whole_page_carries_the_latency_css() -> None:
    page = render.page([_run(1)], [_view([_run(1)], [_lat("scheduled__r1")])], LINKS, now=T0)
    assert latency.CSS.strip() in page


# --- hints: what to do about a late message -----------------------------------------------------


def test_the_late_hint_names_the_consumer_lag_and_the_bound() -> None:
    general = hints.VERDICT_HINTS["late"]
    assert "consumer" in general and "lag" in general and "latency.max_seconds" in general
    hint = hints.row_hint(_late_row(2500, 2000))
    assert hint.startswith("delivered 2,500 ms after its Kafka timestamp, 500 ms over the 2,000")
    assert "consumer lag of orders[1] around offset 17" in hint and "bound" in hint


def test_a_late_row_without_its_figures_still_gets_a_hint() -> None:
    row = Discrepancy(**{**_late_row().__dict__, "detail": "something else"})
    assert hints.row_hint(row) == (
        "delivered late: check the consumer lag of orders[1] around offset 17, or the bound"
    )


def test_what_to_do_lists_the_late_positions_in_the_page() -> None:
    html = _section(_view([_run(2, late=1)], discrepancies=[_late_row()]))
    todo = re.search(r'<ul class="todo">.*?</ul>', html)
    assert todo is not None and "data-verdict" not in todo[0]
    assert "late" in todo[0] and "orders[1] @ 17" in todo[0]
    table = re.search(r'<table class="discrepancies">.*?</table>', html)
    assert table is not None and "500 ms over the 2,000 ms bound" in table[0]
