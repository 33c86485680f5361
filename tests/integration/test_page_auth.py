"""The reconciliation page behind Airflow's login, against the running api-server.

Airflow does not authenticate plugin apps, so the page checks the token itself: every route must
refuse a request without a token, with a bad, forged or expired one, and serve a good one.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import psycopg2
import pytest

# Serial: the page is served a stand-in Data Docs file in the shared GX site's validations/ folder,
# and a Great Expectations checkpoint running beside it (another worker's run) rebuilds that site,
# parses every file there as a validation key and fails on this one (IndexError in
# ValidationResultIdentifier.from_tuple; CI of 6e8a073, test_run_killed). After Airflow's start:
# the page is served by its api-server.
pytestmark = [pytest.mark.integration, pytest.mark.serial, pytest.mark.after_airflow]

PORT = os.environ.get("RECON_AIRFLOW_PORT", "23080")
BASE = f"http://127.0.0.1:{PORT}"
N_RUNS = 55  # more than the page shows (50)
N_DISCREPANCIES = 105  # more than the page shows (100)
EVIL_ID = '<script>alert("x")</script>&'


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(base_url=BASE, timeout=30, follow_redirects=False) as c:
        problem = None
        try:
            c.get("/api/v2/monitor/health").raise_for_status()
        except httpx.HTTPError as exc:
            problem = str(exc)
        if problem is not None:
            pytest.fail(
                f"Airflow is not running at {BASE} ({problem}): start it with "
                "`scripts/airflow.sh start` (or `make up`)",
                pytrace=False,
            )
        yield c


@pytest.fixture(scope="module")
def token(client: httpx.Client) -> str:
    password = os.environ.get("RECON_AIRFLOW_ADMIN_PASSWORD")
    if not password:
        pytest.fail("RECON_AIRFLOW_ADMIN_PASSWORD is not set: run via scripts/with-env.sh")
    r = client.post("/auth/token", json={"username": "admin", "password": password})
    assert r.status_code in (200, 201), r.text
    tok = str(r.json()["access_token"])
    plugins = client.get("/api/v2/plugins", headers={"Authorization": f"Bearer {tok}"}).json()
    apps = [a for p in plugins["plugins"] for a in p["fastapi_apps"] if a["url_prefix"] == "/recon"]
    if not apps:
        pytest.fail(
            "the recon_page plugin is not loaded by the running api-server: restart Airflow "
            "(`scripts/airflow.sh stop && scripts/airflow.sh start`)",
            pytrace=False,
        )
    return tok


@pytest.fixture(scope="module")
def docs_page() -> Iterator[Path]:
    """A uniquely named page inside the Data Docs site folder, removed afterwards."""
    state = Path(os.environ.get("RECON_STATE") or Path(__file__).resolve().parents[2] / ".state")
    site = state / "gx" / "uncommitted" / "data_docs" / "local_site"
    missing = [p for p in (site, *site.parents) if not p.exists()]
    page = site / "validations" / f"recon-page-test-{uuid.uuid4().hex[:8]}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("<html><body>recon page test data docs</body></html>")
    yield page
    page.unlink(missing_ok=True)
    for folder in [page.parent, *sorted(missing, key=lambda p: len(p.parts), reverse=True)]:
        if folder.exists() and not any(folder.iterdir()):
            folder.rmdir()


@pytest.fixture(scope="module")
def seeded(docs_page: Path) -> Iterator[dict[str, Any]]:
    """A unique pipeline with 55 runs; the latest failed with 105 discrepancies."""
    from recon.config.connections import postgres_connection
    from recon.store import ensure_schema

    pipeline = f"pagetest_{uuid.uuid4().hex[:8]}"
    pg = psycopg2.connect(**postgres_connection("postgres_recon").psycopg2_kwargs())
    now = datetime.now(UTC)
    run_ids = [
        f"scheduled__{(now - timedelta(minutes=N_RUNS - i)).isoformat()}" for i in range(N_RUNS)
    ]
    try:
        ensure_schema(pg)
        with pg.cursor() as cur:
            for i, run_id in enumerate(run_ids):
                last = i == N_RUNS - 1
                counts = {"delivered": 500 + i, "lost": 100 if last else 0, "duplicated": 5 * last}
                cur.execute(
                    "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
                    "finished_at, counts, contract_passed, validation_url, error) "
                    "VALUES (%s, %s, 'exactly_once', %s, %s, %s, %s, %s, %s, %s)",
                    (
                        pipeline, run_id, "failed" if last else "passed",
                        now - timedelta(minutes=N_RUNS - i),
                        now - timedelta(minutes=N_RUNS - i - 1),
                        json.dumps(counts), not last, str(docs_page) if last else None,
                        "jdbc failed: postgresql://recon:hunter2@db/x password=hunter2"
                        if i == 0 else None,
                    ),
                )  # fmt: skip
            for n in range(N_DISCREPANCIES):
                lost = n < 100
                cur.execute(
                    "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, "
                    "topic, partition, offsets, first_offset, sink_keys, sink_count) "
                    "VALUES (%s, %s, %s, %s, 'orders', %s, %s, %s, %s, %s)",
                    (
                        pipeline, run_ids[-1], "lost" if lost else "duplicated",
                        EVIL_ID if n == 0 else f"m-{n:04d}", n % 4, [1000 + n], 1000 + n,
                        [] if lost else [f"k{n}", f"k{n}-dup"], 0 if lost else 2,
                    ),
                )  # fmt: skip
        pg.commit()
        yield {"pipeline": pipeline, "run_ids": run_ids, "docs": docs_page}
    finally:
        pg.rollback()
        with pg.cursor() as cur:
            cur.execute("DELETE FROM recon.discrepancies WHERE pipeline = %s", (pipeline,))
            cur.execute("DELETE FROM recon.runs WHERE pipeline = %s", (pipeline,))
        pg.commit()
        pg.close()


def _routes(seeded: dict[str, Any]) -> list[str]:
    p = quote(seeded["pipeline"])
    docs = seeded["docs"]
    return [
        "/recon/",
        f"/recon/?pipeline={p}",
        "/recon/api/pipelines",
        f"/recon/api/runs?pipeline={p}",
        "/recon/api/runs",
        f"/recon/api/discrepancies?pipeline={p}",
        f"/recon/api/repairs?pipeline={p}",
        "/recon/repairs/0123456789abcdef",
        "/recon/docs/index.html",
        f"/recon/docs/validations/{docs.name}",
    ]


def _assert_refused(r: httpx.Response, pipeline: str) -> None:
    if r.status_code == 307:  # a browser is sent to Airflow's login page
        assert "/auth/login" in r.headers["location"], r.headers["location"]
    else:
        assert r.status_code == 401, (r.request.url, r.status_code, r.text[:200])
    assert pipeline not in r.text
    assert "recon page test data docs" not in r.text


def _forged(secret: str, **claims: Any) -> str:
    payload = {"sub": "admin", "role": "admin", "aud": "apache-airflow", "jti": uuid.uuid4().hex}
    now = int(time.time())
    payload |= {"iat": now, "nbf": now, "exp": now + 3600} | claims
    return jwt.encode(payload, secret, algorithm="HS512")


def test_no_token_is_refused_on_every_route(
    client: httpx.Client, token: str, seeded: dict[str, Any]
) -> None:
    for route in _routes(seeded):
        _assert_refused(client.get(route), seeded["pipeline"])
    # The page sends a browser to Airflow's login and back.
    r = client.get("/recon/")
    assert r.status_code == 307 and "next=" in r.headers["location"]


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_bad_tokens_are_refused(client: httpx.Client, token: str, seeded: dict[str, Any]) -> None:
    secret = os.environ.get("AIRFLOW__API_AUTH__JWT_SECRET", "")
    bad = {
        "garbage": "not-a-jwt",
        "tampered": token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"),
        "wrong key": _forged("not-the-secret-" + uuid.uuid4().hex),
        "no signature": jwt.encode({"sub": "admin", "role": "admin"}, None, algorithm="none"),
    }
    if secret:
        # Control: signed with Airflow's key and otherwise valid, the forged token is accepted,
        # so the refusals below are for the expiry and the audience alone.
        good = client.get(
            "/recon/api/pipelines", headers={"Authorization": f"Bearer {_forged(secret)}"}
        )
        assert good.status_code == 200, good.text[:200]
        bad["expired"] = _forged(secret, exp=int(time.time()) - 3600, iat=int(time.time()) - 7200)
        bad["wrong audience"] = _forged(secret, aud="someone-else")
    for name, value in bad.items():
        for route in _routes(seeded):
            r = client.get(route, headers={"Authorization": f"Bearer {value}"})
            assert r.status_code == 401, (name, route, r.status_code)
            _assert_refused(r, seeded["pipeline"])
            _assert_refused(client.get(route, cookies={"_token": value}), seeded["pipeline"])
    r = client.get("/recon/api/pipelines", headers={"Authorization": f"Basic {token}"})
    assert r.status_code == 401


def test_good_token_gets_the_page_with_the_seeded_runs(
    client: httpx.Client, token: str, seeded: dict[str, Any]
) -> None:
    pipeline, run_ids = seeded["pipeline"], seeded["run_ids"]
    auth = {"Authorization": f"Bearer {token}"}
    r = client.get("/recon/", params={"pipeline": pipeline}, headers=auth)
    assert r.status_code == 200, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    html = r.text
    assert "<h1>Delivery reconciliation</h1>" in html
    assert pipeline in html and "exactly_once" in html and "failed" in html
    assert f"/dags/recon_{pipeline}/runs/{quote(run_ids[-1], safe='')}" in html
    assert f"/recon/docs/validations/{seeded['docs'].name}" in html
    assert '<svg class="chart"' in html and 'class="bar"' in html
    assert "replay offset 1000" in html  # a repair hint naming the position
    # Bounded: 50 runs (the oldest 5 are not shown), the latest run's discrepancies a page of
    # 50 rows at a time (paged by the database).
    assert run_ids[-50] in html and run_ids[4] not in html
    table = html.split('<table class="discrepancies browse">', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r"<tr>", table)) == 1 + 50
    assert f"rows 1–50 of {N_DISCREPANCIES:,} (page 1 of 3)" in html
    # Escaped, never interpreted; no credentials.
    assert EVIL_ID not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html
    assert "hunter2" not in html
    password = os.environ.get("RECON_PG_PASSWORD")
    assert not password or password not in html

    # The cookie the Airflow UI sets at login works the same way.
    r = client.get("/recon/", cookies={"_token": token})
    assert r.status_code == 200 and pipeline in r.text
    # An unknown pipeline is a 404, not an empty page.
    r = client.get("/recon/", params={"pipeline": f"nope_{uuid.uuid4().hex}"}, headers=auth)
    assert r.status_code == 404


def test_json_api(client: httpx.Client, token: str, seeded: dict[str, Any]) -> None:
    pipeline, run_ids = seeded["pipeline"], seeded["run_ids"]
    auth = {"Authorization": f"Bearer {token}"}
    listed = client.get("/recon/api/pipelines", headers=auth).json()["pipelines"]
    mine = next(p for p in listed if p["pipeline"] == pipeline)
    assert mine["dag_id"] == f"recon_{pipeline}"
    assert mine["latest_run"]["run_id"] == run_ids[-1]
    assert mine["latest_run"]["counts"]["lost"] == 100

    runs = client.get("/recon/api/runs", params={"pipeline": pipeline}, headers=auth).json()
    assert [r["run_id"] for r in runs["runs"]] == run_ids[::-1][:50]
    assert runs["runs"][0]["links"]["data_docs"].endswith(seeded["docs"].name)
    assert "hunter2" not in json.dumps(runs) and "validation_url" not in runs["runs"][0]

    rows = client.get(
        "/recon/api/discrepancies", params={"pipeline": pipeline}, headers=auth
    ).json()["discrepancies"]
    assert len(rows) == 100 and rows[0]["verdict"] == "lost" and rows[0]["offsets"] == [1000]
    r = client.get("/recon/api/runs", params={"pipeline": f"nope_{uuid.uuid4().hex}"}, headers=auth)
    assert r.status_code == 404


def test_data_docs_are_served_inside_their_folder_only(
    client: httpx.Client, token: str, seeded: dict[str, Any]
) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    r = client.get(f"/recon/docs/validations/{seeded['docs'].name}", headers=auth)
    assert r.status_code == 200 and "recon page test data docs" in r.text
    assert "sandbox" in r.headers["content-security-policy"]
    for escape in (
        "/recon/docs/%2e%2e/%2e%2e/%2e%2e/%2e%2e/secrets.env",
        "/recon/docs/..%2f..%2f..%2f..%2fsecrets.env",
        "/recon/docs/%2fetc%2fpasswd",
        "/recon/docs/validations/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    ):
        r = client.get(escape, headers=auth)
        assert r.status_code == 404, (escape, r.status_code)
        assert "RECON_PG_PASSWORD" not in r.text and "root:" not in r.text
