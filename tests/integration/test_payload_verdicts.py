"""The verdict ``mismatched`` on the real stack (issue 19, part 2): the mangling consumer's
workload run, reconciled by each engine with each way of declaring a payload (``payload.fields``
over the sink's ``seq`` and ``payload`` columns, ``payload.sha256_column`` over its
``payload_sha256``); every verdict equals the ground truth message by message, and each row whose
content differs says which field in its ``detail``, and never the content itself."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from fixtures.kafka_read import read_topic
from fixtures.pipelines import PAYLOAD_FIELDS_PIPELINE, PAYLOAD_SHA256_PIPELINE, WORKLOAD_PIPELINE
from fixtures.verdicts import actual_verdicts, assert_same_verdicts, expected_verdicts

from recon.config import load_pipelines
from recon.config.model import SHA256_FIELD
from recon.model.details import DUPLICATE_COPIES_DIFFER, MISMATCHED
from recon.run.steps import results_db, results_path, run_pipeline
from recon.store import forget_pipeline
from recon_workload import ScenarioResult, remove_run, run_scenario

pytestmark = pytest.mark.integration

SCENARIO = "mangling_consumer"
#: Each way of declaring the payload: its template, and what a detail names for a cut payload.
MODES = {
    "fields": (PAYLOAD_FIELDS_PIPELINE, "payload"),
    "sha256": (PAYLOAD_SHA256_PIPELINE, SHA256_FIELD),
}


@pytest.fixture(scope="module")
def truth() -> Iterator[ScenarioResult]:
    tag = uuid.uuid4().hex[:6]
    result = run_scenario(SCENARIO, messages=300, partitions=3, seed=13, run_tag=tag,
                          progress=False)  # fmt: skip
    try:
        # Else nothing differs: the test would pass on a product that never says mismatched.
        assert result.mismatched_ids and result.mangled_copy_ids, result.summary
        yield result
    finally:
        remove_run(SCENARIO, tag)


@pytest.fixture(scope="module")
def secrets(
    truth: ScenarioResult, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> dict[str, set[str]]:
    """Per messageId whose content differs: the texts a detail must never show (the record's
    payload and every payload and hash its sink rows hold), read from Kafka and PostgreSQL."""
    differing = set(truth.mismatched_ids) | set(truth.mangled_copy_ids)
    out: dict[str, set[str]] = {m: set() for m in differing}
    for r in read_topic(kafka_config, truth.topic):
        if r.message_id in out and r.value is not None:
            digest = hashlib.sha256(r.value).hexdigest()
            out[r.message_id] |= {json.loads(r.value)["payload"], digest}
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(
            f"SELECT message_id, payload, payload_sha256 FROM {truth.sink_table}"
            " WHERE message_id = ANY(%s)",
            (sorted(differing),),
        )
        for mid, payload, digest in cur.fetchall():
            out[mid] |= {payload, digest}
    # Also any long enough piece of a payload: a detail quoting a prefix still leaks it.
    return {m: texts | {t[:12] for t in texts} for m, texts in out.items()}


def _write_yaml(
    tmp_path: Path, template: str, name: str, engine: str, truth: ScenarioResult
) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(
        template.format(
            name=name, engine=engine, semantics="at_least_once", idempotent="true",
            topic=truth.topic, group=truth.consumer_group, table=truth.sink_table,
        )
    )  # fmt: skip
    return path


# Spark once: the engines judge alike by construction (one rule set, a parity test per named
# scenario); what differs is how each reads the sink, and the fields mode reads the most of it.
@pytest.mark.parametrize(
    ("engine", "mode"), [("spark", "fields"), ("local", "fields"), ("local", "sha256")]
)
def test_mismatched_verdicts_and_details_equal_the_ground_truth(
    engine: str,
    mode: str,
    truth: ScenarioResult,
    secrets: dict[str, set[str]],
    spark: Any,
    pg_kwargs: dict[str, Any],
    tmp_path: Path,
) -> None:
    template, named = MODES[mode]
    name = f"pay_{engine}_{mode}_{uuid.uuid4().hex[:6]}"
    cfg = load_pipelines(_write_yaml(tmp_path, template, name, engine, truth))[name]
    assert cfg.payload is not None and cfg.engine == engine
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        expected = expected_verdicts(pg_kwargs, truth.scenario_run)
        actual, _ = actual_verdicts(spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table)
        assert_same_verdicts(expected, actual)
        mismatched = sorted(k for k, (verdict, _) in actual.items() if verdict == "mismatched")
        assert mismatched == truth.mismatched_ids
        counts = {v: n for v, n in summary.counts.items() if n}
        assert counts == {
            "delivered": 300 - len(truth.mismatched_ids) - len(truth.mangled_copy_ids),
            "mismatched": len(truth.mismatched_ids),
            "duplicated": len(truth.mangled_copy_ids),
        }
        assert summary.contract_passed, summary.violations  # both ratios tolerated up to 1

        details = {
            r.message_id: r.detail
            for r in spark.read.parquet(results_path(data_dir, name, "run-1")).collect()
        }
        for mid in truth.mismatched_ids:
            assert details[mid] == MISMATCHED % named, mid
        for mid in truth.mangled_copy_ids:
            # One of its two new rows (the later copy) differs from the record: one of the
            # "; "-joined parts of its detail says so (another counts its rows).
            parts = (details[mid] or "").split("; ")
            assert DUPLICATE_COPIES_DIFFER % (1, named) in parts, (mid, details[mid])
        for mid, texts in secrets.items():
            leaked = sorted(t for t in texts if t and t in (details[mid] or ""))
            assert not leaked, f"{mid}: its detail shows content: {details[mid]!r}"
        differing = set(truth.mismatched_ids) | set(truth.mangled_copy_ids)
        said = sorted(m for m, d in details.items() if m not in differing and "differ" in (d or ""))
        assert not said, f"intact messages said to differ: {said[:5]}"
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)


def test_a_pipeline_without_payload_says_delivered_for_the_mangled_messages(
    truth: ScenarioResult, spark: Any, pg_kwargs: dict[str, Any], tmp_path: Path
) -> None:
    """The same run, no ``payload`` declared (local engine): content is not compared, so the
    mismatched messages are delivered, and nothing else changes."""
    template = WORKLOAD_PIPELINE + "    tolerances: {{max_duplicate_ratio: 1.0}}\n"
    name = f"pay_none_{uuid.uuid4().hex[:6]}"
    cfg = load_pipelines(_write_yaml(tmp_path, template, name, "local", truth))[name]
    assert cfg.payload is None
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        expected = {
            k: ("delivered" if v == "mismatched" else v, dup)
            for k, (v, dup) in expected_verdicts(pg_kwargs, truth.scenario_run).items()
        }
        actual, _ = actual_verdicts(spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table)
        assert actual == expected
        assert summary.counts["mismatched"] == 0
        assert summary.counts["duplicated"] == len(truth.mangled_copy_ids)
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)
