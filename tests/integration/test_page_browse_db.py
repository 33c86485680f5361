"""A pipeline's page over the real results database (``recon_page.app`` with a signed-in user):
one run's discrepancies filtered, sorted and paged by PostgreSQL, downloaded as CSV and Parquet,
user data escaped; a bad filter is a 400 naming it, another run id a 404."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytestmark = pytest.mark.integration

EVIL = "<script>alert(1)</script>"
T0 = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)


@pytest.fixture
def client(results_pg: Any, pipeline: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from recon_page import app

    with results_pg.cursor() as cur:
        for i, run_id in enumerate(("r-old", "r-new")):
            cur.execute(
                "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
                "counts, contract_passed) VALUES (%s, %s, 'exactly_once', 'failed', %s, "
                '\'{"lost": 30, "duplicated": 1}\', false)',
                (pipeline, run_id, T0 + timedelta(minutes=i)),
            )
        for n in range(30):  # the newest run: 30 lost over 3 partitions
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset) VALUES (%s, 'r-new', 'lost', %s, 'orders', "
                "%s, %s, %s)",
                (pipeline, EVIL if n == 7 else f"m-{n:03d}", n % 3, [n], n),
            )
        cur.execute(
            "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
            "partition, offsets, first_offset, sink_keys, sink_count) VALUES (%s, 'r-new', "
            "'duplicated', '=1+1', 'orders', 0, '{99}', 99, '{a,b}', 2)",
            (pipeline,),
        )
        cur.execute(
            "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
            "partition, offsets, first_offset) VALUES (%s, 'r-old', 'lost', 'old-1', 'orders', "
            "0, '{1}', 1)",
            (pipeline,),
        )
    results_pg.commit()
    monkeypatch.setattr(app, "readable_pipelines", lambda user, names: set(names))
    app.app.dependency_overrides[app.browser_user] = lambda: "user"
    try:
        with TestClient(app.app, root_path="/recon") as c:
            yield c
    finally:
        app.app.dependency_overrides.clear()


def test_one_runs_discrepancies_filtered_sorted_paged_and_downloaded(
    client: Any, pipeline: str
) -> None:
    import pyarrow.parquet as pq

    page = client.get("/", params={"pipeline": pipeline, "per_page": "25"})
    assert page.status_code == 200, page.text
    assert "form-action 'self'" in page.headers["content-security-policy"]
    assert "rows 1–25 of 31 (page 1 of 2)" in page.text  # the newest run's rows only
    assert "old-1" not in page.text and "<script>alert" not in page.text
    # severity first: the lost rows, then the duplicated one on page 2
    second = client.get("/", params={"pipeline": pipeline, "per_page": "25", "page": "2"})
    assert "rows 26–31 of 31" in second.text and "=1+1" in second.text
    # text (the hostile id, found as typed and shown as text), verdict, partition, sort
    found = client.get("/", params={"pipeline": pipeline, "q": EVIL})
    assert "rows 1–1 of 1" in found.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in found.text
    part = client.get("/", params={"pipeline": pipeline, "partition": "1", "verdict": "lost"})
    assert "rows 1–10 of 10" in part.text
    older = client.get("/", params={"pipeline": pipeline, "run": "r-old"})
    assert "rows 1–1 of 1" in older.text and "old-1" in older.text
    desc = client.get(
        "/", params={"pipeline": pipeline, "sort": "message_id", "dir": "desc", "per_page": "25"}
    )
    assert desc.text.index("m-029") < desc.text.index("m-028")

    csv = client.get("/discrepancies.csv", params={"pipeline": pipeline, "run": "r-new",
                                                  "verdict": "duplicated"})  # fmt: skip
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv.headers["content-disposition"]
    assert csv.text.splitlines()[1].startswith("r-new,duplicated,'=1+1,orders,0,99,a b,2,")
    parquet = client.get("/discrepancies.parquet", params={"pipeline": pipeline, "run": "r-new"})
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.num_rows == 31 and EVIL in table.column("message_id").to_pylist()

    bad = client.get("/", params={"pipeline": pipeline, "verdict": "nope"})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("verdict must be one of")
    assert client.get("/", params={"pipeline": pipeline, "run": "r-x"}).status_code == 404
    assert client.get("/discrepancies.csv", params={"pipeline": pipeline}).status_code == 400
