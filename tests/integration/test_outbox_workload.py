"""The outbox scenarios' ground truth is itself true (three-way reconciliation, the workload
side): each runs for real, and its ledger is checked against the outbox table in PostgreSQL and
an independent read_committed read-back of the topic: ``outbox_relay`` loses nothing. (That
``outbox_fire_and_forget`` leaves ``unpublished`` exactly what the topic lacks is checked where
its workload runs anyway, with both engines: ``test_engine_vs_workload.py``; it bounces the
broker, so one run of it is enough.)"""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.kafka_read import read_topic
from fixtures.workload_runs import fresh_run, query

from recon_workload import ScenarioResult, run_scenario
from recon_workload.names import RunNames
from recon_workload.producers import plan

pytestmark = pytest.mark.integration

MESSAGES, PARTITIONS, SEED = 200, 2, 11


def _run(scenario: str, tag: str, messages: int = MESSAGES) -> ScenarioResult:
    return run_scenario(
        scenario, messages=messages, partitions=PARTITIONS, seed=SEED, run_tag=tag, progress=False
    )


def _check_outbox(
    pg: dict[str, Any], result: ScenarioResult, tag: str, messages: int = MESSAGES
) -> list[str]:
    """The outbox holds one row per planned id, in plan order; returns those ids."""
    scenario = result.scenario
    assert result.source_table == RunNames(scenario, tag).qualified_outbox_table
    assert result.source_table == f"{result.sink_table}_outbox"
    planned = [m.message_id for m in plan(tag, messages, SEED) if m.message_id]
    rows = query(pg, f"SELECT message_id FROM {result.source_table} ORDER BY seq")
    assert [mid for (mid,) in rows] == planned
    (stored,) = query(
        pg,
        "SELECT summary->>'source_table', summary_line FROM workload.runs WHERE scenario_run = %s",
        (result.scenario_run,),
    )
    assert stored == (result.source_table, result.summary)
    return planned


def _stored(pg: dict[str, Any], result: ScenarioResult, verdict: str) -> list[str]:
    rows = query(
        pg,
        "SELECT message_id FROM workload.ledger WHERE scenario_run = %s AND expected_verdict = %s"
        " ORDER BY message_id",
        (result.scenario_run, verdict),
    )
    return [mid for (mid,) in rows]


def _nonzero(result: ScenarioResult) -> dict[str, int]:
    return {v: n for v, n in result.counts.items() if n}


def test_relay_publishes_every_outbox_row_and_everything_is_delivered(
    kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    scenario = "outbox_relay"
    with fresh_run(scenario) as tag:
        result = _run(scenario, tag)
        planned = _check_outbox(pg_kwargs, result, tag)
        committed = [r.message_id for r in read_topic(kafka_config, result.topic)]
        assert sorted(committed) == sorted(planned)
        assert result.unpublished_ids == [] == _stored(pg_kwargs, result, "unpublished")
        assert _nonzero(result) == {"delivered": len(planned)}
        assert result.unseen_by_product == 0
        assert "unpublished=0" in result.summary
