"""The reconciliation page and repair plans (issue 21): each pipeline's "Repairs" list read from
``recon.repairs``, and a read-only view of one plan (its summary and its JSON). No write action:
no form, no button, only links.

The database is a stand-in for the psycopg2 connection that answers each query with given rows
(and records it); the HTML is checked as the page renders it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fixtures.page_fakes import FakeConn, page_run
from fixtures.repair_plans import repair_row, sample_plan, sample_plan_dict
from psycopg2 import errors

from recon_page import app, data, links, render, repairs

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = '<script>alert("x")</script>&'
#: What a page that can change nothing must not hold.
WRITE_MARKUP = re.compile(r"<\s*(form|button|input|textarea|select)\b|formaction|method=", re.I)


def _rows() -> list[repairs.Repair]:
    conn = FakeConn(
        [
            repair_row(
                "p2", "verified", created_at=T0 + timedelta(minutes=5),
                applied_by="airflow:recon_repair_payments/manual__2026-11-20T08:06",
                applied_at=T0 + timedelta(minutes=6), verified_by_run="scheduled__r3",
                detail="1 replayed messages delivered once, 1 deleted rows gone",
            ),
            repair_row("p1", "planned", created_at=T0),
        ]
    )  # fmt: skip
    return repairs.list_repairs(conn, "payments")


def _section(rows: list[repairs.Repair]) -> str:
    return repairs.section("payments", rows, LINKS)


# --- data: reading recon.repairs ----------------------------------------------------------------


def test_the_list_reads_the_pipelines_plans_newest_first_without_their_content() -> None:
    conn = FakeConn([repair_row("p1", "applied", applied_by="ops@host", detail="password=hunter2")])
    (row,) = repairs.list_repairs(conn, "payments", limit=500)
    assert (row.plan_id, row.status, row.applied_by, row.deleted) == (
        "p1",
        "applied",
        "ops@host",
        1,
    )
    assert (row.planned_replays, row.planned_deletes, row.not_replayable) == (1, 1, 1)
    assert row.plan is None and row.detail == "password=***"  # details are redacted, as runs'
    sql, params = conn.queries[0]
    assert "recon.repairs" in sql and "ORDER BY created_at DESC" in sql
    assert ", plan FROM" not in sql  # a list never reads the plans themselves
    assert params == ("payments", repairs.MAX_REPAIRS)


def test_no_repairs_table_yet_is_no_plans() -> None:
    missing = errors.UndefinedTable('relation "recon.repairs" does not exist')
    assert repairs.list_repairs(FakeConn(missing), "payments") == []
    assert repairs.find_repair(FakeConn(missing), "p1") is None


def test_one_plan_is_read_with_its_content() -> None:
    plan = sample_plan_dict()
    conn = FakeConn([repair_row(plan["plan_id"], plan=plan)])
    found = repairs.find_repair(conn, plan["plan_id"])
    assert found is not None and found.plan == plan and found.status == "planned"
    assert conn.queries[0][1] == (plan["plan_id"],)
    assert repairs.find_repair(FakeConn([]), "nope") is None


# --- the "Repairs" section of a pipeline --------------------------------------------------------


def test_the_section_lists_each_plan_with_its_state() -> None:
    html = _section(_rows())
    assert "<h3" in html and "Repairs" in html and "2 shown" in html
    body = re.search(r'<table class="repairs">.*?</table>', html)
    assert body is not None
    cells = re.findall(r"<tr>(.*?)</tr>", body[0])[1:]
    assert len(cells) == 2
    newest = cells[0]
    assert 'href="/recon/repairs/p2"' in newest  # the plan's read-only view
    assert 'href="/dags/recon_payments/runs/scheduled__r2"' in newest  # the run it repairs
    assert "status-verified" in newest and "2026-11-20 08:05:00" in newest
    # applied by a repair DAG run: a link to that run in Airflow
    assert 'href="/dags/recon_repair_payments/runs/manual__2026-11-20T08%3A06"' in newest
    assert 'href="/dags/recon_payments/runs/scheduled__r3"' in newest  # verified by
    assert "1 deleted, 1 replayed" in newest and "deleted rows gone" in newest
    assert "status-planned" in cells[1] and "1 replays, 1 deletes, 1 not replayable" in cells[1]
    # how to apply: a command and a link to the repair DAG, not an action of the page
    assert "recon repair apply" in html and 'href="/dags/recon_repair_payments"' in html


def test_a_pipeline_without_plans_says_so() -> None:
    html = _section([])
    assert "No repair plans" in html and "recon repair plan --pipeline payments" in html


def test_the_section_has_no_write_action() -> None:
    assert not WRITE_MARKUP.search(_section(_rows()))
    assert not WRITE_MARKUP.search(_section([]))


def test_the_section_escapes_what_the_database_holds() -> None:
    conn = FakeConn(
        [repair_row(EVIL, "failed", run_id=EVIL, applied_by=EVIL, verified_by_run=EVIL,
                    detail=EVIL, applied_at=T0)]
    )  # fmt: skip
    html = repairs.section(EVIL, repairs.list_repairs(conn, EVIL), LINKS)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert not WRITE_MARKUP.search(html)


def test_the_pipeline_section_shows_its_repairs(monkeypatch: pytest.MonkeyPatch) -> None:
    run = page_run(2, "payments", "exactly_once", "lost", T0, lost=1)
    monkeypatch.setattr(data, "runs", lambda conn, p: [run])
    monkeypatch.setattr(data, "discrepancies", lambda conn, p: [])
    monkeypatch.setattr(data, "latency", lambda conn, p: [])
    listed = _rows()
    monkeypatch.setattr(repairs, "list_repairs", lambda conn, p: listed)
    view = app._view(object(), run)
    assert [r.plan_id for r in view.repairs] == ["p2", "p1"]
    page = render.page([run], [view], LINKS, now=T0)
    assert '<table class="repairs">' in page
    assert page.index("Latest discrepancies") < page.index("Repairs") < page.index("<summary>Runs")
    assert not WRITE_MARKUP.search(page)


# --- the view of one plan -----------------------------------------------------------------------


def _plan_page(**kw: Any) -> str:
    plan = sample_plan_dict(**kw)
    row = repair_row(plan["plan_id"], "applied", applied_by="ops@host", applied_at=T0, plan=plan)
    found = repairs.find_repair(FakeConn([row]), plan["plan_id"])
    assert found is not None
    return render.document(repairs.plan_view(found, LINKS), render.now_shown(T0), title="x")


def test_the_plan_view_shows_its_summary_and_its_json() -> None:
    plan = sample_plan()
    html = _plan_page()
    assert html.startswith("<!doctype html>") and f"Repair plan <code>{plan.plan_id}</code>" in html
    summary = re.search(r'<pre class="plan">(.*?)</pre>', html, re.S)
    assert summary is not None
    assert f"repair plan {plan.plan_id} for pipeline payments" in summary[0]
    assert "replay 1 lost records" in summary[0] and "m-1 at 0@17" in summary[0]
    assert "not replayable: m-9: removed by retention" in summary[0]
    body = re.search(r'<pre class="plan json">(.*?)</pre>', html, re.S)
    assert body is not None and "&quot;plan_id&quot;: &quot;" + plan.plan_id in body[0]
    assert "status-applied" in html and "ops@host" in html
    assert 'href="/recon/?pipeline=payments"' in html  # back to the pipeline
    assert not WRITE_MARKUP.search(html)


def test_the_plan_view_escapes_a_hostile_message_id() -> None:
    html = _plan_page(message_id=EVIL, run_id=EVIL)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert not WRITE_MARKUP.search(html)


def test_a_stored_plan_that_no_longer_matches_its_id_is_shown_not_summarised() -> None:
    plan = {**sample_plan_dict(), "topic": "edited"}
    row = repair_row(plan["plan_id"], plan=plan)
    found = repairs.find_repair(FakeConn([row]), plan["plan_id"])
    assert found is not None
    html = repairs.plan_view(found, LINKS)
    assert '<pre class="error">' in html and "does not match its id" in html
    assert "&quot;edited&quot;" in html  # the JSON is still there to read
    broken = repairs.plan_view(repairs.Repair("p", "payments", "r", "planned", plan={}), LINKS)
    assert "not a repair plan" in broken


def test_a_long_plan_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repairs, "MAX_PLAN_CHARS", 100)
    html = repairs.plan_json(sample_plan_dict())
    assert "Cut at 100 characters" in html


# --- the routes ---------------------------------------------------------------------------------


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The app with a signed-in user who may read pipeline ``payments`` only, over a fake
    results database: each connection answers with the next rows the test put in ``answers``."""
    from fastapi.testclient import TestClient

    answers: list[Any] = []

    @contextmanager
    def fake_db() -> Iterator[FakeConn]:
        yield FakeConn(answers.pop(0)) if answers else FakeConn()

    monkeypatch.setattr(data, "results_db", fake_db)
    monkeypatch.setattr(app, "readable_pipelines", lambda user, names: set(names) & {"payments"})
    app.app.dependency_overrides[app.browser_user] = lambda: "user"
    app.app.dependency_overrides[app.api_user] = lambda: "user"
    try:
        with TestClient(app.app, root_path="/recon") as c:
            c.answers = answers  # type: ignore[attr-defined]
            yield c
    finally:
        app.app.dependency_overrides.clear()


def test_the_plan_route_shows_a_readable_plan_and_hides_the_rest(client: Any) -> None:
    plan = sample_plan_dict()
    client.answers.append([repair_row(plan["plan_id"], plan=plan)])
    r = client.get(f"/repairs/{plan['plan_id']}")
    assert r.status_code == 200 and plan["plan_id"] in r.text
    assert "form-action 'none'" in r.headers["content-security-policy"]
    assert not WRITE_MARKUP.search(r.text)
    # another pipeline's plan is no plan at all for this user, like an unknown one
    other = sample_plan_dict("secret_pipeline")
    client.answers.append([repair_row(other["plan_id"], pipeline="secret_pipeline", plan=other)])
    r = client.get(f"/repairs/{other['plan_id']}")
    assert r.status_code == 404 and "secret_pipeline" not in r.text
    assert client.get("/repairs/nope").status_code == 404


def test_the_repairs_api_lists_plans_without_their_content(client: Any) -> None:
    client.answers.append([repair_row("p1", "planned", created_at=T0)])
    r = client.get("/api/repairs", params={"pipeline": "payments"})
    assert r.status_code == 200
    (row,) = r.json()["repairs"]
    assert row["plan_id"] == "p1" and "plan" not in row
    assert client.get("/api/repairs", params={"pipeline": "secret_pipeline"}).status_code == 404


def test_the_app_has_no_route_that_writes() -> None:
    methods = {m for route in app.app.routes for m in getattr(route, "methods", set())}
    assert methods <= {"GET", "HEAD"}
