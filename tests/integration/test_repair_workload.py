"""Repair of pipelines broken by the fault-injecting workload, checked against its ground truth
message by message (issue 21): the plan replays exactly the lost messages and deletes exactly
the surplus rows of the duplicated and aborted ones; after the apply and the consumer taking the
replays, the next run holds the claimed contract and verifies the plan."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from everyday_kit import consume_into_sink
from fixtures.pipelines import WORKLOAD_PIPELINE
from fixtures.verdicts import expected_verdicts
from kafka_ends import high_watermarks

from recon.config import load_pipelines
from recon.repair.applier import apply_plan
from recon.repair.planner import make_plan, save_plan
from recon.run.steps import results_db, run_pipeline
from recon.store import forget_pipeline
from recon.store.repairs import find_repair
from recon_workload import remove_run, run_scenario

pytestmark = pytest.mark.integration

#: scenario -> (claimed semantics, idempotent producer), as the engine-vs-workload test claims
SCENARIOS = {
    "broken_exactly_once": ("exactly_once", True),  # lost and aborted_read
    "at_least_once": ("at_least_once", False),  # duplicated
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_workload_break_is_repaired_message_by_message(
    scenario: str, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    semantics, idempotent = SCENARIOS[scenario]
    name = f"rpw_{scenario}_{tag}"
    try:
        truth = run_scenario(scenario, messages=150, partitions=3, seed=11, run_tag=tag,
                             progress=False)  # fmt: skip
        yaml_path = tmp_path / "pipelines.yaml"
        yaml_path.write_text(WORKLOAD_PIPELINE.format(
            name=name, semantics=semantics, topic=truth.topic, group=truth.consumer_group,
            table=truth.sink_table, idempotent=json.dumps(idempotent), engine="local",
        ) + "    repair: {max_delete_ratio: 1.0}\n")  # faults touch many of the rows  # fmt: skip
        cfg = load_pipelines(yaml_path)[name]
        data_dir = str(tmp_path / "data")
        first = run_pipeline(cfg, "run-1", None, data_dir=data_dir)
        assert not first.contract_passed, first.counts

        expected = expected_verdicts(pg_kwargs, truth.scenario_run)
        by_verdict: dict[str, set[str]] = {}
        for key, (verdict, _) in expected.items():
            by_verdict.setdefault(verdict, set()).add(key)
        plan = make_plan(cfg, "run-1")
        assert {r.message_id for r in plan.replays} == by_verdict.get("lost", set())
        assert not plan.not_replayable, plan.not_replayable
        deleted_from = {d.message_id for d in plan.deletes}
        surplus = by_verdict.get("duplicated", set()) | by_verdict.get("aborted_read", set())
        assert deleted_from == surplus, plan.counts()
        assert plan.replays or plan.deletes, f"{scenario} broke nothing: {first.counts}"
        assert set(plan.kept) == by_verdict.get("duplicated", set())

        save_plan(plan, str(tmp_path / "plan.json"))  # an apply takes only a recorded plan
        since = high_watermarks(kafka_config, truth.topic)
        result = apply_plan(plan, cfg, say=lambda _: None)
        assert (result.deleted, result.replayed) == (len(plan.deletes), len(plan.replays))
        taken = consume_into_sink(kafka_config, truth.topic, truth.consumer_group, pg_kwargs,
                                  truth.sink_table, since)  # fmt: skip
        assert sorted(taken) == sorted(r.message_id for r in plan.replays)

        second = run_pipeline(cfg, "run-2", None, data_dir=data_dir)
        assert second.contract_passed, (second.counts, second.violations)
        with results_db() as pg:
            row = find_repair(pg, plan.plan_id)
        assert row is not None and (row.status, row.verified_by_run) == ("verified", "run-2"), (
            row)  # fmt: skip
    finally:
        remove_run(scenario, tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
