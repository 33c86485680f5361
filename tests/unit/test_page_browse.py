"""A pipeline's page, its discrepancy part (``recon_page.browse``): filters read from query
parameters (a bad one named), the links that give them back, the escaping of user data in the
form and table, the downloads' formats, and the overview's one row per pipeline."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import pytest
from fixtures.page_fakes import page_run

from recon_page import browse, links, render
from recon_page.data import Discrepancy

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = "<script>alert(1)</script>"


def _row(message_id: str = EVIL, verdict: str = "lost") -> Discrepancy:
    return Discrepancy("p", "r1", verdict, message_id, "t", 2, [7], [f"{EVIL}k"], 0,
                       detail=f"x {EVIL}", detected_at=T0)  # fmt: skip


def test_filter_parameters_round_trip_and_bad_ones_are_named() -> None:
    params = {"run": "r 1&x", "verdict": "lost", "topic": "t", "partition": "2", "q": "a%b",
              "sort": "position", "dir": "desc", "page": "3", "per_page": "100"}  # fmt: skip
    f = browse.Filter.parse(params)
    assert (f.run_id, f.partition, f.desc, f.page, f.per_page) == ("r 1&x", 2, True, 3, 100)
    assert f.params() == params
    assert browse.Filter.parse({"verdict": "", "partition": " "}) == browse.Filter()
    assert browse.Filter().query("p") == "pipeline=p"
    for bad, name in (({"verdict": "nope"}, "verdict"), ({"partition": "-1"}, "partition"),
                      ({"sort": "x;drop"}, "sort"), ({"per_page": "7"}, "per_page"),
                      ({"q": "x" * 201}, "q"), ({"page": "9" * 12}, "page")):  # fmt: skip
        with pytest.raises(browse.BadFilter, match=f"^{name} "):
            browse.Filter.parse(bad)


def test_alert_and_run_links_land_on_the_filtered_view() -> None:
    assert LINKS.discrepancies("pay ments", "run/1", "lost") == (
        "/recon/?pipeline=pay+ments&run=run%2F1&verdict=lost#discrepancies"
    )
    f = browse.Filter.parse({"run": "run/1", "verdict": "lost"})
    assert f == browse.Filter(run_id="run/1", verdict="lost")


def test_user_data_is_escaped_in_the_form_the_table_and_the_pager() -> None:
    f = browse.Filter(run_id=EVIL, text=EVIL, topic=EVIL)
    page = browse.Page("p", EVIL, f, total=120, rows=[_row()], partitions=[(EVIL, 0)])
    html = (
        browse.form(page, [(EVIL, EVIL)], "/recon/")
        + browse.table(page)
        + browse.pager(page, "/recon/")
    )
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "rows 1–1 of 120 (page 1 of 3)" in html and 'rel="next"' in html
    assert 'rel="prev"' not in html
    assert 'href="/recon/discrepancies.csv?pipeline=p&amp;run=%3Cscript%3E' in html


def test_csv_guards_formulas_and_parquet_keeps_types() -> None:
    import pyarrow.parquet as pq

    rows = [_row("=HYPERLINK(1)"), _row("plain", "duplicated")]
    text = browse.to_csv(rows).decode()
    lines = text.splitlines()
    assert lines[0].split(",") == list(browse.EXPORT_COLUMNS)
    assert lines[1].startswith("r1,lost,'=HYPERLINK(1),t,2,7,")
    table = pq.read_table(io.BytesIO(browse.to_parquet(rows)))
    assert table.column("message_id").to_pylist() == ["=HYPERLINK(1)", "plain"]
    assert table.column("offsets").to_pylist() == [[7], [7]]
    assert table.column("detected_at").to_pylist()[0] == T0


def test_the_overview_is_one_row_per_pipeline_with_the_columns_that_matter() -> None:
    runs = [
        page_run(1, "a", "exactly_once", "lost", T0, lost=2),
        page_run(2, "b", "at_least_once", "lost", T0),
    ]
    runs[0] = runs[0].__class__(**{**runs[0].__dict__, "contract_passed": False})
    runs[1] = runs[1].__class__(**{**runs[1].__dict__, "contract_passed": True})
    html = render.overview(runs, LINKS)
    assert len(re.findall(r"<tbody>.*?</tbody>", html)) == 1 and html.count("<tr>") == 3
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert heads == ["Pipeline", "Latest run", "Started (UTC)", "Delivered", "Lost", "Pending",
                     "Asset event", ""]  # fmt: skip
    assert ">none: contract broken</td>" in html and ">emitted</td>" in html
    assert 'href="/recon/?pipeline=a"' in html
    # the pipeline's page: its section only, and the way back
    page = render.page(runs, [], LINKS, selected="a", now=T0)
    assert "All pipelines" in page and '<table class="overview">' not in page


def test_an_alerts_link_opens_the_runs_rows_of_its_broken_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fastapi.testclient import TestClient

    from recon.alert.content import build_alert, page_url
    from recon.validation import ValidationOutcome
    from recon_page import app

    monkeypatch.setenv("RECON_AIRFLOW_BASE_URL", "http://af.test/")
    failures = [{"rule": "lost_forbidden", "verdict": "lost", "observed": 2, "allowed": 0}]
    outcome = ValidationOutcome(
        passed=False, failures=failures, data_docs_path="/x.html", validation_id="v"
    )
    run_id = "manual__2026-12-06T08:00:00+00:00"
    summary = {"counts": {"lost": 2}, "samples": {}}
    alert = build_alert(
        pipeline="pay&ments", semantics="exactly_once", run_id=run_id, summary=summary,
        outcome=outcome,
    )  # fmt: skip
    assert alert.page_url == (
        "http://af.test/recon/runs/pay%26ments/manual__2026-12-06T08%3A00%3A00%2B00%3A00"
        "?verdict=lost"
    )
    assert f"Discrepancies: {alert.page_url}" in alert.text()
    assert page_url("p", "r") == "http://af.test/recon/runs/p/r"
    # the page sends the link on to the filtered view of that run and verdict
    app.app.dependency_overrides[app.browser_user] = lambda: "user"
    try:
        with TestClient(app.app, root_path="/recon") as client:
            path = alert.page_url.removeprefix("http://af.test/recon")
            r = client.get(path, follow_redirects=False)
            assert r.status_code == 307
            assert r.headers["location"] == LINKS.discrepancies("pay&ments", run_id, "lost")
            assert client.get("/runs/p/r?verdict=nope", follow_redirects=False).status_code == 400
    finally:
        app.app.dependency_overrides.clear()
    monkeypatch.delenv("RECON_AIRFLOW_BASE_URL")
    assert page_url("p", "r") is None
