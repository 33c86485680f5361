"""The reconciliation page in a real browser: log into Airflow's UI, open the page, see the data.

Headless Chromium (Debian's package) driven by Node's playwright-core (``ui_check.mjs``); the
screenshots land in ``test-artifacts/`` at the repository root.

The seeded pipeline's runs also get delivery-latency rows (``recon.latency``, issue 19) and one
``late`` discrepancy, inserted here: the page must draw the latency chart and show the verdict;
a repair plan (``recon.repairs``, issue 21): listed, and shown on its own view; and the way from
source to sink of a three-way run (``recon.runs.funnel``) with one ``unpublished`` discrepancy:
the page must draw the funnel, name its findings (a hostile messageId among them, shown as text)
and give the verdict its hint.

The layout (issue 76): the overview is one row per pipeline, each pipeline has its own page, and
at 1024, 1280 and 1920 px no element of either is wider than the viewport (screenshots at 1280
and 1920 in ``test-artifacts/recon-{overview,pipeline}-{1280,1920}.png``). The discrepancies of
the pipeline's page: a messageId that is markup found by the text filter and shown as text, the
downloads offered, and an alert's link landing on its run's rows of its verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SCREENSHOT = ARTIFACTS / "recon-page.png"
SCREENSHOT_FULL = ARTIFACTS / "recon-page-full.png"
SCREENSHOT_FUNNEL = ARTIFACTS / "recon-page-funnel.png"
WIDTH_SHOTS = [ARTIFACTS / f"recon-{page}-{w}.png" for page in ("overview", "pipeline")
               for w in (1280, 1920)]  # fmt: skip
#: A messageId that is markup, among the newest run's discrepancies.
SCRIPT_ID = "<script>alert(1)</script>"

#: The seeded run without latency figures (the second oldest): a gap in the chart's lines.
UNMEASURED = 1
BOUND_MS = 2000
PARTITIONS = 3
#: The funnel of the newest seeded run: 2 source messages never reached the topic, 2 committed
#: records no source row names (one with a messageId that is markup).
HOSTILE = '<img src=x onerror="document.title=1">'
FUNNEL = {
    "produced": 6, "published": 4, "committed": 5, "delivered": 5, "unsourced": 2,
    "source_invalid": 1, "source_duplicates": 0,
    "unsourced_sample": [
        {"message_id": "stray-00009", "partition": 2, "offset": 40},
        {"message_id": HOSTILE, "partition": 0, "offset": 7},
    ],
}  # fmt: skip


def _latency_row(pipeline: str, run_id: str, partition: int, i: int) -> tuple[Any, ...]:
    # messages, negative, min, p50, p95, p99, max, bound (ms): the newest run breaks the bound
    p50 = 300 + 20 * i
    return (pipeline, run_id, partition, 1000, 0, 5, p50, 3 * p50, 4 * p50, 5 * p50, BOUND_MS)


@pytest.fixture
def latency_rows(seeded_pipeline: tuple[str, list[str]]) -> Iterator[int]:
    """Latency rows for the seeded runs (whole run; the newest also per partition) and one
    ``late`` discrepancy in the newest run; yields how many runs got figures. The seeding
    fixture deletes the runs and discrepancies, this one its latency rows."""
    import psycopg2

    from recon.config.connections import postgres_connection
    from recon.model import details

    pipeline, run_ids = seeded_pipeline
    pg = psycopg2.connect(**postgres_connection("postgres_recon").psycopg2_kwargs())
    try:
        with pg.cursor() as cur:
            measured = [r for i, r in enumerate(run_ids) if i != UNMEASURED]
            for i, run_id in enumerate(run_ids):
                if i == UNMEASURED:
                    continue
                parts = [-1, *range(PARTITIONS)] if run_id == run_ids[-1] else [-1]
                for partition in parts:
                    cur.execute(
                        "INSERT INTO recon.latency (pipeline, run_id, partition, messages, "
                        "negative, min_ms, p50_ms, p95_ms, p99_ms, max_ms, bound_ms) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        _latency_row(pipeline, run_id, partition, i),
                    )
            cur.execute(
                "UPDATE recon.runs SET counts = counts || '{\"late\": 1}'::jsonb "
                "WHERE pipeline = %s AND run_id = %s",
                (pipeline, run_ids[-1]),
            )
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset, sink_keys, sink_count, detail) "
                "VALUES (%s, %s, 'late', 'slow-00001', %s, 0, %s, 500, %s, 1, %s)",
                (pipeline, run_ids[-1], f"{pipeline}-topic", [500], ["500"],
                 details.LATE % (2500, BOUND_MS)),
            )  # fmt: skip
        pg.commit()
        yield len(measured)
    finally:
        pg.rollback()
        with pg.cursor() as cur:
            cur.execute("DELETE FROM recon.latency WHERE pipeline = %s", (pipeline,))
        pg.commit()
        pg.close()


@pytest.fixture
def funnel_run(seeded_pipeline: tuple[str, list[str]]) -> Iterator[str]:
    """The newest seeded run as a three-way run: its funnel (:data:`FUNNEL`; an older run gets
    another, which the page must not draw), 2 ``unpublished`` in its counts and one such
    discrepancy (no topic, partition or offset); yields its run id. The seeding fixture deletes
    the runs and discrepancies."""
    import psycopg2

    from recon.config.connections import postgres_connection
    from recon.model import details

    pipeline, run_ids = seeded_pipeline
    pg = psycopg2.connect(**postgres_connection("postgres_recon").psycopg2_kwargs())
    try:
        with pg.cursor() as cur:
            for run_id, funnel in (
                (run_ids[-1], FUNNEL),
                (run_ids[-2], {**FUNNEL, "produced": 99}),
            ):
                cur.execute(
                    "UPDATE recon.runs SET funnel = %s WHERE pipeline = %s AND run_id = %s",
                    (json.dumps(funnel), pipeline, run_id),
                )
            cur.execute(
                "UPDATE recon.runs SET counts = counts || '{\"unpublished\": 2}'::jsonb "
                "WHERE pipeline = %s AND run_id = %s",
                (pipeline, run_ids[-1]),
            )
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset, sink_keys, sink_count, detail) "
                "VALUES (%s, %s, 'unpublished', 'order-00007', NULL, NULL, '{}', NULL, '{}', 0, "
                "%s)",
                (pipeline, run_ids[-1], details.UNPUBLISHED % ("outbox-7", 1)),
            )
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset) VALUES (%s, %s, 'lost', %s, %s, 1, '{77}', 77)",
                (pipeline, run_ids[-1], SCRIPT_ID, f"{pipeline}-topic"),
            )
        pg.commit()
        yield run_ids[-1]
    finally:
        pg.close()


@pytest.fixture
def repair_plan(seeded_pipeline: tuple[str, list[str]]) -> Iterator[str]:
    """A repair plan of the seeded pipeline's newest run in ``recon.repairs`` (as ``recon repair
    plan`` records it); yields its id. The seeding fixture forgets the pipeline after."""
    from fixtures.repair_plans import sample_plan_dict

    from recon.run.steps import results_db
    from recon.store.repairs import record_plan

    pipeline, run_ids = seeded_pipeline
    plan = sample_plan_dict(pipeline, run_id=run_ids[-1])
    with results_db() as pg:
        record_plan(pg, plan)
    yield str(plan["plan_id"])


def test_reconciliation_page_in_the_airflow_ui(
    airflow_url: str,
    browser_deps: dict[str, str],
    seeded_pipeline: tuple[str, list[str]],
    latency_rows: int,
    repair_plan: str,
    funnel_run: str,
) -> None:
    from recon.alert.content import page_url

    pipeline, run_ids = seeded_pipeline
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in (SCREENSHOT, SCREENSHOT_FULL, SCREENSHOT_FUNNEL, *WIDTH_SHOTS):
        shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="recon-chromium-") as profile:
        env = {
            **os.environ,
            "RECON_UI_BASE_URL": airflow_url,
            "RECON_UI_USER": "admin",
            "RECON_UI_PASSWORD": os.environ.get("RECON_AIRFLOW_ADMIN_PASSWORD", ""),
            "RECON_UI_PIPELINE": pipeline,
            "RECON_UI_PLAN_ID": repair_plan,
            "RECON_UI_SCREENSHOT": str(SCREENSHOT),
            "RECON_UI_SCREENSHOT_FULL": str(SCREENSHOT_FULL),
            "RECON_UI_SCREENSHOT_FUNNEL": str(SCREENSHOT_FUNNEL),
            "RECON_UI_ARTIFACTS": str(ARTIFACTS),
            "RECON_UI_HOSTILE_ID": SCRIPT_ID,
            # an alert's link to the run's late rows, from the root
            "RECON_UI_ALERT_LINK": str(page_url(pipeline, run_ids[-1], "late")).removeprefix(
                airflow_url
            ),
            "RECON_UI_USER_DATA_DIR": profile,
            "RECON_NODE_DIR": browser_deps["node_dir"],
            "CHROMIUM": browser_deps["chromium"],
        }
        done = subprocess.run(
            ["node", str(Path(__file__).with_name("ui_check.mjs"))],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"ui_check.mjs printed no result (exit {done.returncode}):\n{done.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result["ok"], f"browser check failed at step {result['step']!r}: {result.get('error')}"

    assert result["cookie"], "the login form did not set Airflow's _token cookie"
    assert "/plugin/recon" in result["ui_url"]
    # the overview: one row per pipeline, no pipeline's details; its latest run emitted no event
    assert result["overview_rows"] == result["overview_pipelines"] >= 1, result
    assert result["overview_sections"] == 0, result
    assert result["overview_asset"] == "none: contract broken", result
    assert pipeline in result["heading"] and "failed" in result["heading"].lower()
    # 8 runs: delivered and pending in every bar of the first chart, lost/duplicated on top.
    assert result["bars"] >= 8 * 2, result
    assert {"delivered", "lost", "duplicated", "pending"} <= set(result["verdicts"]), result
    assert result["legend_items"] >= 8, result
    # the seeded 12, the late one, the unpublished one and the one with a markup messageId
    assert result["discrepancy_rows"] == 15, result
    assert result["late_rows"] == 1 and "late" in result["verdicts"], result
    assert result["direct_bars"] == result["bars"], result
    # the latency chart: a point per measured run and percentile, the bound drawn
    assert result["latency_charts"] == 1, result
    assert result["latency_series"] == ["p50", "p95", "p99", "max"], result
    assert result["latency_points"] == latency_rows * 4, result
    assert result["latency_bound_ms"] == str(BOUND_MS), result
    assert result["latency_partition_rows"] == 1 + PARTITIONS, result
    assert result["latency_chart_height"] > 100, result  # rendered, not collapsed
    # the repair plan (issue 21): listed in the pipeline's Repairs section, and its own view
    assert result["repair_rows"] == 1 and result["repair_links"] == 1, result
    assert f"repair plan {repair_plan} for pipeline {pipeline}" in result["plan_summary"], result
    assert "replay 1 lost records" in result["plan_summary"], result
    assert result["plan_forms"] == 0, "the plan view has no write action"
    # the three-way funnel: the newest run with one, a bar per hop with its count, the drops
    assert result["funnel_charts"] == 1, result
    assert result["funnel_run"] == funnel_run, result
    assert result["funnel_stages"] == [
        ["produced", 6], ["published", 4], ["committed", 5], ["delivered", 5],
    ], result  # fmt: skip
    assert result["funnel_counts"] == ["6", "4", "5", "5"], result
    assert result["funnel_drops"][0] == "2 unpublished", result
    assert result["funnel_bad_drops"] == ["published"], result
    assert result["funnel_chart_height"] > 100, result  # rendered, not collapsed
    # its findings: the unsourced records where they sit, the hostile id as text, no markup
    note = result["funnel_note"]
    assert "2 unsourced" in note and "stray-00009 at 2@40" in note, result
    assert f"{HOSTILE} at 0@7" in note and "1 source row without a message id" in note, result
    assert result["funnel_markup"] == 0 and result["title_after"] != "1", result
    # the unpublished verdict: its bars, its row (no topic, partition or offset to print) and hint
    assert "unpublished" in result["verdicts"], result
    assert len(result["unpublished_rows"]) == 1, result
    row = result["unpublished_rows"][0]
    assert "order-00007" in row and "None" not in row, result
    assert "publish messageId order-00007 again from source row outbox-7" in row, result
    # the markup messageId: found by the text filter, shown as text, no element made of it
    assert result["hostile_rows"] == [SCRIPT_ID] and result["hostile_scripts"] == 0, result
    assert [h.split("?")[0] for h in result["downloads"]] == [
        "/recon/discrepancies.csv", "/recon/discrepancies.parquet",
    ], result  # fmt: skip
    # the alert's link: its run's rows of its verdict, the filter showing which
    assert result["alert_link_rows"] == ["late"] and result["alert_link_verdict"] == "late", result
    # no element wider than the viewport from 1280 to 1920 px; at 1024 the page itself still
    # fits (a table wider than that scrolls in its own box)
    for name, seen in result["widths"].items():
        assert seen["scroll"] <= seen["viewport"] and not seen["outside"], (name, seen)
        assert name.endswith("@1024") or not seen["wide"], (name, seen)
    assert all(shot.stat().st_size > 10_000 for shot in WIDTH_SHOTS)
    assert SCREENSHOT_FUNNEL.stat().st_size > 5_000
    assert SCREENSHOT.stat().st_size > 10_000
    assert SCREENSHOT_FULL.stat().st_size > 10_000
