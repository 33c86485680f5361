"""The verdict ``out_of_order`` on the real stack (issue 19, part 3): the upsert consumer's
workload run (a keyed topic, one sink row per account, a seeded few rows left stale by a late
retry of an older record), reconciled by each engine with
``order: {key_column: account, position_column: applied_offset}`` (the record's key is its Kafka
key, or the header that holds it too; its position its offset); every verdict equals the ground
truth message by message, each out_of_order row's detail names its key and both positions, and
each record its account's row overwrote says it was superseded, naming the position the row
holds."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from fixtures.kafka_read import read_topic
from fixtures.pipelines import ORDER_PIPELINE
from fixtures.verdicts import actual_verdicts, assert_same_verdicts, expected_verdicts

from recon.config import load_pipelines
from recon.model.details import OUT_OF_ORDER, SUPERSEDED
from recon.run.steps import results_db, results_path, run_pipeline
from recon.store import forget_pipeline
from recon_workload import ScenarioResult, remove_run, run_scenario

pytestmark = pytest.mark.integration

SCENARIO = "upsert_replay"
MESSAGES = 300


@pytest.fixture(scope="module")
def truth() -> Iterator[ScenarioResult]:
    tag = uuid.uuid4().hex[:6]
    result = run_scenario(SCENARIO, messages=MESSAGES, partitions=3, seed=13, run_tag=tag,
                          progress=False)  # fmt: skip
    try:
        # Else nothing is stale: the test would pass on a product that never says out_of_order;
        # and with fewer than two clean accounts, one that says it for every key.
        assert result.stale_keys, result.summary
        assert result.faults["accounts"] - len(result.stale_keys) >= 2, result.summary
        yield result
    finally:
        remove_run(SCENARIO, tag)


@pytest.fixture(scope="module")
def held(
    truth: ScenarioResult, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> dict[str, tuple[str, int | None, str | None]]:
    """Per messageId of the run: its key (the account its value names, its Kafka key too:
    test_workload_upsert checks they agree), and the position and messageId its key's sink
    row holds, read from Kafka and PostgreSQL."""
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT account, applied_offset, message_id FROM {truth.sink_table}")
        rows = {account: (offset, mid) for account, offset, mid in cur.fetchall()}
    out = {}
    for r in read_topic(kafka_config, truth.topic):
        assert r.message_id is not None and r.value is not None
        key = json.loads(r.value)["account"]
        out[r.message_id] = (key, *rows.get(key, (None, None)))
    assert len(out) == MESSAGES
    return out


def _write_yaml(tmp_path: Path, name: str, engine: str, truth: ScenarioResult,
                record_key: str | None) -> Path:  # fmt: skip
    path = tmp_path / "pipelines.yaml"
    text = ORDER_PIPELINE.format(
        name=name, engine=engine, semantics="at_least_once", idempotent="true",
        topic=truth.topic, group=truth.consumer_group, table=truth.sink_table,
    )  # fmt: skip
    if record_key is not None:
        line = "      position_column: applied_offset\n"
        assert line in text
        text = text.replace(line, f"{line}      record_key: {record_key}\n")
    path.write_text(text)
    return path


#: The record's upsert key: its Kafka key (the default) on both engines; the header that holds
#: the same account, on the engine whose run is cheap (both read records with one reader).
KEYS = [("spark", None), ("local", None), ("local", "{header: account}")]


@pytest.mark.parametrize(("engine", "record_key"), KEYS)
def test_out_of_order_verdicts_and_details_equal_the_ground_truth(
    engine: str,
    record_key: str | None,
    truth: ScenarioResult,
    held: dict[str, tuple[str, int | None, str | None]],
    spark: Any,
    pg_kwargs: dict[str, Any],
    tmp_path: Path,
) -> None:
    name = f"ord_{engine}_{uuid.uuid4().hex[:6]}"
    cfg = load_pipelines(_write_yaml(tmp_path, name, engine, truth, record_key))[name]
    assert cfg.order is not None and cfg.engine == engine
    assert cfg.order.record_key.kind == ("header" if record_key else "key")
    assert (cfg.order.key_column, cfg.order.position_column) == (
        truth.order_columns["key"], truth.order_columns["position"]
    )  # fmt: skip
    assert cfg.sink.ingest_seq_column is None, "an upsert sink is read whole"
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        expected = expected_verdicts(pg_kwargs, truth.scenario_run)
        assert len(expected) == MESSAGES
        actual, invalid_sink = actual_verdicts(
            spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table
        )
        assert not invalid_sink
        assert_same_verdicts(expected, actual)
        out_of_order = sorted(k for k, (verdict, _) in actual.items() if verdict == "out_of_order")
        assert out_of_order == truth.out_of_order_ids
        stale = len(truth.stale_keys)
        assert {v: n for v, n in summary.counts.items() if n} == {
            "delivered": MESSAGES - stale,
            "out_of_order": stale,
        }
        assert summary.contract_passed, summary.violations  # the ratio tolerated up to 1
        # Every record has a key and every row a key and position: all take part.
        assert summary.unordered == {"records": 0, "sink_rows": 0, "shared_keys": 0}
        assert summary.unchecked == {}
        with results_db() as pg, pg.cursor() as cur:
            cur.execute("SELECT unchecked FROM recon.runs WHERE pipeline = %s AND run_id = 'run-1'",
                        (name,))  # fmt: skip
            assert cur.fetchone() == ({},)

        details = {
            r.message_id: r.detail or ""
            for r in spark.read.parquet(results_path(data_dir, name, "run-1")).collect()
        }
        for key, s in truth.stale_keys.items():
            detail = details[s["newest_id"]]
            # Its key and both positions, each a whole number of its own, the held one first.
            assert key in detail, detail
            assert re.search(rf"\b{s['held']}\b.*\b{s['newest']}\b", detail), detail
            assert OUT_OF_ORDER % (key, s["held"], s["newest"]) in detail.split("; "), detail
        for mid, (key, position, holder) in held.items():
            if mid == holder or mid in truth.out_of_order_ids:
                assert "superseded" not in details[mid], (mid, details[mid])
            else:
                assert SUPERSEDED % (key, position) in details[mid].split("; "), (mid, details[mid])
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)
