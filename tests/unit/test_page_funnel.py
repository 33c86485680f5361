"""The reconciliation page and three-way runs: the "Source → topic → sink" funnel of the newest run
with a source (``recon.runs.funnel``) and the line naming its findings, ``/recon/api/funnel``, and
the verdict ``unpublished`` in the charts, the overview, "What to do" and the repair hints.

The database is a stand-in for the psycopg2 connection that answers each query with given rows
(and records it); the HTML is checked as the page renders it, with fake runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from fixtures.page_fakes import FakeConn, page_run

from recon.model import details
from recon_page import app, chart, data, funnel, hints, links, render
from recon_page.data import Discrepancy, Run

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = '<script>alert("x")</script>&'
#: The brief's example: 2 source messages never reached the topic, 1 record no source row names.
FUNNEL: dict[str, Any] = {
    "produced": 6, "published": 4, "committed": 5, "delivered": 5, "unsourced": 1,
    "source_invalid": 0, "source_duplicates": 0,
    "unsourced_sample": [{"message_id": "stray-9", "partition": 2, "offset": 40}],
}  # fmt: skip


def _run(i: int, found: dict[str, Any] | None = None, **counts: int) -> Run:
    return replace(
        page_run(i, "orders", "at_least_once", "unpublished", T0, **counts), funnel=found
    )


def _view(runs: list[Run], rows: list[Discrepancy] | None = None) -> render.PipelineView:
    return render.PipelineView(latest=runs[0], runs=runs, discrepancies=rows or [])


def _section(runs: list[Run], rows: list[Discrepancy] | None = None) -> str:
    return render.pipeline_section(_view(runs, rows), LINKS)


def _svg(html: str) -> str:
    found = re.search(r'<svg class="chart funnel".*?</svg>', html, re.DOTALL)
    assert found is not None, html
    return found[0]


def _stages(svg: str) -> list[tuple[str, int, float]]:
    """``(stage, data-count, width)`` of each bar, top to bottom."""
    return [
        (name, int(n), float(w))
        for name, n, w in re.findall(
            r'<rect class="stage" data-stage="(\w+)" data-count="(-?\d+)" [^>]*width="([\d.]+)"',
            svg,
        )
    ]


def _drops(svg: str) -> dict[str, tuple[str, str]]:
    """The label between a hop and the one above it, by the lower hop: ``(class, text)``."""
    return {
        stage: (css, text)
        for css, stage, text in re.findall(
            r'<text class="(drop[^"]*)" data-drop="(\w+)" [^>]*>([^<]*)<title>', svg
        )
    }


def _unpublished(message_id: str = "order-7", source_key: str = "outbox-17", rows: int = 1) -> Any:
    return Discrepancy(
        pipeline="orders", run_id="scheduled__r2", verdict="unpublished", message_id=message_id,
        topic=None, partition=None, offsets=[], sink_keys=[], sink_count=0,
        detail=details.UNPUBLISHED % (source_key, rows),
    )  # fmt: skip


# --- the chart ----------------------------------------------------------------------------------


def test_the_chart_draws_each_hop_with_its_count_and_labels_the_drops() -> None:
    svg = funnel.chart(funnel.read(_run(2, FUNNEL)))  # type: ignore[arg-type]
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'data-chart="funnel"' in svg and 'data-run="scheduled__r2"' in svg
    stages = _stages(svg)
    assert [(name, n) for name, n, _ in stages] == [
        ("produced", 6), ("published", 4), ("committed", 5), ("delivered", 5),
    ]  # fmt: skip
    # bar lengths follow the counts: the longest is the largest count
    widths = {name: w for name, _, w in stages}
    assert widths["produced"] > widths["committed"] == widths["delivered"] > widths["published"]
    assert widths["published"] == pytest.approx(widths["produced"] * 4 / 6, abs=0.2)
    # each bar labelled with its count
    assert re.findall(r'<text class="count" data-stage="\w+" [^>]*>([^<]*)</text>', svg) == [
        "6", "4", "5", "5",
    ]  # fmt: skip
    # the loss before the topic is labelled and marked; the window holding more is not a loss;
    # committed and delivered are equal: no label between them
    drops = _drops(svg)
    assert drops["published"] == ("drop bad", "2 unpublished")
    assert drops["committed"][0] == "drop" and drops["committed"][1].startswith("+1 more")
    assert "delivered" not in drops
    assert re.findall(r'data-drop="published" data-diff="(-?\d+)"', svg) == ["-2"]
    # the lost part of the hop is drawn, pale, on the published row only
    assert len(re.findall(r'<rect class="dropped"', svg)) == 1
    assert "<title>produced 6: source messages that settled in this run</title>" in svg


def test_a_loss_between_topic_and_sink_is_labelled_too() -> None:
    lost = {**FUNNEL, "published": 6, "committed": 6, "delivered": 4}
    drops = _drops(funnel.chart(funnel.read(_run(2, lost))))  # type: ignore[arg-type]
    assert drops == {"delivered": ("drop bad", "2 not delivered")}


def test_large_counts_are_grouped_and_a_zero_funnel_still_draws() -> None:
    big = {**FUNNEL, "produced": 1_250_000, "published": 1_249_998}
    svg = funnel.chart(funnel.read(_run(2, big)))  # type: ignore[arg-type]
    assert ">1,250,000</text>" in svg and ">2 unpublished<title>" in svg
    empty = {name: 0 for name in funnel.STAGES}
    svg = funnel.chart(funnel.read(_run(2, empty)))  # type: ignore[arg-type]
    assert [n for _, n, _ in _stages(svg)] == [0, 0, 0, 0] and 'class="drop' not in svg


# --- the section --------------------------------------------------------------------------------


def test_the_section_shows_the_newest_run_with_a_funnel_and_names_its_findings() -> None:
    older = {**FUNNEL, "produced": 99}
    newer = {
        **FUNNEL, "unsourced": 3, "source_invalid": 2, "source_duplicates": 1,
        "unsourced_sample": [
            {"message_id": "stray-9", "partition": 2, "offset": 40},
            {"message_id": "stray-12", "partition": 0, "offset": 7},
        ],
    }  # fmt: skip
    # the newest run has no funnel (a run before the source was declared, or one that failed)
    html = _section([_run(3), _run(2, newer, unpublished=2), _run(1, older)])
    assert html.count('data-chart="funnel"') == 1
    assert (
        "<h3>Source → topic → sink <small>(run <code>scheduled__r2</code>, "
        "the newest with a source)" in html
    )
    svg = _svg(html)
    assert 'data-run="scheduled__r2"' in svg and 'data-count="99"' not in svg
    note = re.search(r'<p class="funnel-note">.*?</p>', html)
    assert note is not None
    assert "3 unsourced" in note[0]
    assert (
        "<code>stray-9</code> at 2@40, <code>stray-12</code> at 0@7 "
        "(first 2 of 3, partition@offset)" in note[0]
    )
    assert "2 source rows without a message id" in note[0]
    assert "1 extra source row of ids held more than once" in note[0]
    # it sits after the verdict charts, before "What to do"
    assert html.index('class="charts"') < html.index('data-chart="funnel"')


def test_a_run_without_findings_says_so() -> None:
    clean = {**FUNNEL, "unsourced": 0, "unsourced_sample": []}
    note = funnel.findings(funnel.read(_run(2, clean)))  # type: ignore[arg-type]
    assert "no findings" in note and "unsourced" not in note


def test_no_section_when_no_run_has_a_funnel() -> None:
    html = _section([_run(2), _run(1)])
    assert 'data-chart="funnel"' not in html and "Source → topic → sink" not in html
    assert 'class="chart"' in html  # the verdict charts are still there
    assert funnel.section([]) == "" and funnel.newest([_run(2)]) is None


def test_a_hostile_message_id_in_the_unsourced_sample_is_escaped() -> None:
    hostile = {
        **FUNNEL,
        "unsourced_sample": [{"message_id": EVIL, "partition": 1, "offset": 3}],
    }
    evil_run = replace(_run(2, hostile), run_id=EVIL)
    html = _section([evil_run])
    assert 'data-chart="funnel"' in html
    assert "<script>" not in html and '"x")' not in html
    assert "<code>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;</code> at 1@3" in html
    assert 'data-run="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"' in html


def test_a_stored_funnel_of_another_shape_costs_its_figures_not_the_page() -> None:
    odd = {
        "produced": "many", "published": None, "committed": 3.0, "delivered": True,
        "unsourced": 2, "unsourced_sample": ["not an object", {"message_id": 17}],
    }  # fmt: skip
    found = funnel.read(_run(2, odd))
    assert found is not None
    assert [found.counts[s] for s in funnel.STAGES] == [0, 0, 3, 0]
    assert found.sample == [funnel.Unsourced("17", None, None)]
    html = _section([_run(2, odd)])
    assert "<code>17</code> (first 1 of 2)." in html  # no "None@None"
    assert "None" not in _svg(html)
    assert funnel.read(replace(_run(2), funnel=None)) is None


def test_the_whole_page_carries_the_funnel_css_and_no_script() -> None:
    page = render.page([_run(1, FUNNEL)], [_view([_run(1, FUNNEL)])], LINKS, now=T0)
    assert funnel.CSS.strip() in page
    assert "<script" not in page.lower()  # the page's CSP allows no script


# --- data: the column read with the run ---------------------------------------------------------


def _stored(run_id: str, found: object) -> tuple[Any, ...]:
    """A ``recon.runs`` row as :data:`recon_page.data._RUN_COLUMNS` selects it."""
    return ("orders", run_id, "at_least_once", "passed", T0, T0, {"delivered": 5}, True, [],
            None, [], [], 1.0, None, {}, {}, found)  # fmt: skip


def test_the_funnel_is_read_with_the_run() -> None:
    assert data._RUN_COLUMNS.rstrip().endswith("funnel")
    assert data._run(_stored("r1", FUNNEL)).funnel == FUNNEL
    assert data._run(_stored("r1", None)).funnel is None
    assert data._run(_stored("r1", ["not", "an", "object"])).funnel is None
    conn = FakeConn([_stored("r2", FUNNEL), _stored("r1", None)])
    runs = data.runs(conn, "orders")
    assert [r.funnel is not None for r in runs] == [True, False]
    assert "funnel" in conn.queries[0][0]


# --- the route ----------------------------------------------------------------------------------


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The app with a signed-in user who may read pipeline ``orders`` only, over a fake results
    database: each connection answers with the next rows the test put in ``answers``."""
    from fastapi.testclient import TestClient

    answers: list[Any] = []

    @contextmanager
    def fake_db() -> Iterator[FakeConn]:
        yield FakeConn(answers.pop(0)) if answers else FakeConn()

    monkeypatch.setattr(data, "results_db", fake_db)
    monkeypatch.setattr(app, "readable_pipelines", lambda user, names: set(names) & {"orders"})
    app.app.dependency_overrides[app.api_user] = lambda: "user"
    try:
        with TestClient(app.app, root_path="/recon") as c:
            c.answers = answers  # type: ignore[attr-defined]
            yield c
    finally:
        app.app.dependency_overrides.clear()


def test_the_funnel_api_lists_the_latest_runs_that_have_one(client: Any) -> None:
    client.answers.append([_stored("r3", None), _stored("r2", FUNNEL), _stored("r1", FUNNEL)])
    r = client.get("/api/funnel", params={"pipeline": "orders", "limit": 3})
    assert r.status_code == 200
    body = r.json()
    assert body["pipeline"] == "orders"
    assert [f["run_id"] for f in body["funnels"]] == ["r2", "r1"]
    assert body["funnels"][0]["funnel"] == FUNNEL  # as stored: the run summary's object
    assert body["funnels"][0]["status"] == "passed" and body["funnels"][0]["started_at"]
    # a pipeline the user may not read is no pipeline; the limit is the runs route's
    assert client.get("/api/funnel", params={"pipeline": "secret"}).status_code == 404
    assert client.get("/api/funnel", params={"pipeline": "orders", "limit": 0}).status_code == 422
    assert client.get("/api/funnel", params={"pipeline": "orders", "limit": 51}).status_code == 422


def test_the_funnel_api_asks_for_the_airflow_token_like_the_latency_api() -> None:
    from fastapi.testclient import TestClient

    with TestClient(app.app, root_path="/recon") as c:
        for route in ("/api/funnel", "/api/latency"):
            r = c.get(route, params={"pipeline": "orders"})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            bad = c.get(route, params={"pipeline": "orders"}, headers={"Authorization": "Basic x"})
            assert bad.status_code == 401
    assert "``/recon/api/funnel?pipeline=P``" in (app.__doc__ or "")


def test_the_database_not_answering_is_a_503(client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def down() -> Iterator[Any]:
        raise data.ResultsUnavailable("password=hunter2 refused")
        yield  # pragma: no cover

    monkeypatch.setattr(data, "results_db", down)
    r = client.get("/api/funnel", params={"pipeline": "orders"})
    assert r.status_code == 503 and "hunter2" not in r.text


# --- the verdict unpublished wherever the page names verdicts -----------------------------------


def test_unpublished_has_its_own_color_and_a_place_in_both_verdict_charts() -> None:
    colors = [c for name, c in chart.VERDICT_COLORS.items() if name != "unpublished"]
    assert chart.VERDICT_COLORS["unpublished"] not in colors
    assert "unpublished" in chart.ALL_SERIES and "unpublished" in chart.PROBLEM_SERIES
    html = _section([_run(2, unpublished=2), _run(1)])
    assert len(re.findall(r'<rect class="bar" data-verdict="unpublished"', html)) == 2
    assert "unpublished 2</title>" in html


def test_unpublished_sorts_with_the_missing_messages_and_has_an_overview_column() -> None:
    order = data.VERDICT_ORDER
    assert order.index("lost") < order.index("unpublished") < order.index("duplicated")
    html = render.overview([_run(2, unpublished=2, lost=1)], LINKS)
    heads = re.findall(r'<th class="num">([^<]*)</th>', html)
    cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', html)
    assert dict(zip(heads, cells, strict=True))["Unpublished"] == "2"


def test_the_unpublished_hints_say_to_publish_again_from_the_source() -> None:
    general = hints.VERDICT_HINTS["unpublished"]
    assert "source" in general and "outbox relay" in general
    assert "acks" in general and "retries" in general
    assert hints.row_hint(_unpublished()) == (
        "publish messageId order-7 again from source row outbox-17: re-run the outbox relay for "
        "it; check the producer's acks and retries"
    )
    assert "(the source holds it 2 times)" in hints.row_hint(_unpublished(rows=2))
    # a detail that is not the reconciler's wording still gets a hint
    bare = replace(_unpublished(), detail="something else")
    assert hints.row_hint(bare).startswith("publish messageId order-7 again from the source:")


def test_what_to_do_and_the_table_name_the_ids_and_source_rows_not_none() -> None:
    rows = [_unpublished(), _unpublished("order-8", "outbox-18")]
    html = _section([_run(2, FUNNEL, unpublished=2)], rows)
    todo = re.search(r'<ul class="todo">.*?</ul>', html)
    assert todo is not None and "unpublished" in todo[0]
    assert "messageIds order-7, order-8; source rows outbox-17, outbox-18" in todo[0]
    table = re.search(r'<table class="discrepancies">.*?</table>', html)
    assert table is not None
    assert "None" not in table[0] and "?[" not in table[0]
    assert "again from source row outbox-18" in table[0]


def test_a_source_row_without_an_id_is_named_by_its_source_key() -> None:
    row = Discrepancy(
        pipeline="orders", run_id="scheduled__r2", verdict="invalid", message_id=None,
        topic=None, partition=None, detail=details.SOURCE_WITHOUT_ID % "outbox-3",
    )  # fmt: skip
    assert hints.row_hint(row) == "give source row outbox-3 a messageId"
    html = _section([_run(2, FUNNEL, invalid=1)], [row])
    todo = re.search(r'<ul class="todo">.*?</ul>', html)
    assert todo is not None and "source rows outbox-3" in todo[0]
    # an invalid record keeps its own hint
    record = replace(row, topic="orders", partition=0, offsets=[5], detail=None)
    assert hints.row_hint(record) == "fix the messageId at offset 5"


def test_source_keys_are_escaped_in_the_page() -> None:
    html = _section([_run(2, FUNNEL, unpublished=1)], [_unpublished(source_key=EVIL)])
    assert "<script>" not in html
    assert "from source row &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;:" in html
