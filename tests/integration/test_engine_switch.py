"""One pipeline moved between engines run by run: Spark, then local, then Spark again.

The three runs share the pipeline's state (watermarks, the ledger versions under one data dir):
each engine must read the ledger the other one wrote. Between runs more messages are produced
and written to the sink, some lost, one written twice, and late sink rows arrive for messages
judged by an earlier run (by the other engine): each late duplicate is ``duplicated`` with the
total sink count over all runs, a first row for a message lost earlier is a late ``delivered``,
and every other message of an earlier run is not judged again.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from fixtures.pipelines import WORKLOAD_PIPELINE
from fixtures.verdicts import actual_verdicts, assert_local_layout, expected_verdicts

from recon.config import PipelineConfig, load_pipelines
from recon.run.steps import RunSummary, results_db, results_path, run_pipeline
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario
from recon_workload.kafka_io import alter_offsets, base_config
from recon_workload.messages import good_message
from recon_workload.producers import send_all
from recon_workload.progress import Progress
from recon_workload.sink import SinkRow, insert_rows, transaction

pytestmark = pytest.mark.integration

SCENARIO = "at_least_once"
Verdicts = dict[str, tuple[str, bool]]
INGEST_SEQ = "      ingest_seq_column: id\n"
#: Sinks read by ingest sequence (only new rows) or whole (rows of ids whose count changed).
NEW_ROWS, FULL_SCAN = "new_rows", "full_scan"


def _pipeline(tmp_path: Path, name: str, truth: Any, engine: str, scan: str) -> PipelineConfig:
    text = WORKLOAD_PIPELINE.format(
        name=name, semantics="at_least_once", topic=truth.topic, group=truth.consumer_group,
        table=truth.sink_table, idempotent=json.dumps(False), engine=engine,
    )  # fmt: skip
    if scan == FULL_SCAN:
        assert INGEST_SEQ in text
        text = text.replace(INGEST_SEQ, "")
    path = tmp_path / f"{engine}.yaml"
    path.write_text(text)
    cfg = load_pipelines(path)[name]
    assert cfg.engine == engine
    return cfg


def _results(spark: Any, data_dir: str, name: str, run_id: str) -> dict[str, Any]:
    """The run's result rows with a messageId, by messageId (read with Spark)."""
    rows = spark.read.parquet(results_path(data_dir, name, run_id)).collect()
    return {r.message_id: r for r in rows if r.message_id is not None}


@dataclass(frozen=True)
class Batch:
    """Messages produced between two runs, and the verdicts the next run owes them."""

    ids: list[str]
    positions: dict[str, list[tuple[int, int]]]  # (partition, offset) in produce order
    verdicts: Verdicts
    sink_keys: dict[str, list[str]]  # every sink key of each message with a late row


def _produce(
    truth: Any, prefix: str, count: int, *, lost: Collection[int] = (),
    doubled: Collection[int] = (), retried: Collection[int] = (), late: Sequence[str] = (),
) -> Batch:  # fmt: skip
    """``count`` new messages written to the sink as a consumer would: no row for ``lost``, two
    rows for ``doubled``, and ``retried`` sent twice by the producer (two offsets, one row). Then
    one more sink row for each message of ``late``, and the group committed at the end of every
    partition."""
    rng = random.Random(7)
    messages = [good_message(prefix, seq, rng) for seq in range(count)]
    # A producer retry: the same message (same key, so the same partition) at a later offset.
    resent = [replace(messages[i], seq=count + j) for j, i in enumerate(sorted(retried))]
    conf = base_config()
    produced = send_all({**conf, "acks": "all", "enable.idempotence": True}, truth.topic,
                        messages + resent, Progress(prefix, enabled=False))  # fmt: skip
    positions: dict[str, list[tuple[int, int]]] = {}
    for p in produced:
        assert p.acked and p.position and p.message_id, f"not delivered: {p}"
        positions.setdefault(p.message_id, []).append((p.position.partition, p.position.offset))
    ids = [str(m.message_id) for m in messages]
    rows: list[SinkRow] = []
    verdicts: Verdicts = {}
    for i, m in enumerate(messages):
        mid = ids[i]
        verdicts[mid] = ("lost" if i in lost else "duplicated" if i in doubled else "delivered",
                         i in retried)  # fmt: skip
        if i not in lost:
            partition, offset = positions[mid][0]
            row = SinkRow.of(mid, truth.topic, partition, offset, m.value)
            rows.extend([row] * (2 if i in doubled else 1))
    # Rows written again long after the first (a replay); the product reads no position here.
    rows.extend(SinkRow(mid, truth.topic, -1, -1, None) for mid in late)
    with transaction() as cur:
        insert_rows(cur, truth.sink_table.split(".", 1)[1], rows)
        cur.execute(f"SELECT message_id, array_agg(id::text ORDER BY id) FROM {truth.sink_table} "
                    "WHERE message_id = ANY(%s) GROUP BY message_id", (list(late),))  # fmt: skip
        sink_keys = dict(cur.fetchall())

    consumer = Consumer({**conf, "group.id": f"switch-probe-{uuid.uuid4().hex[:8]}"})
    try:
        meta = consumer.list_topics(truth.topic, timeout=30).topics[truth.topic]
        ends = {
            (truth.topic, p): consumer.get_watermark_offsets(TopicPartition(truth.topic, p),
                                                             timeout=30)[1]
            for p in meta.partitions
        }  # fmt: skip
    finally:
        consumer.close()
    alter_offsets(conf, truth.consumer_group, ends)
    return Batch(ids, positions, verdicts, sink_keys)


def _windows_follow(before: RunSummary, after: RunSummary) -> None:
    """``after`` starts each partition where ``before`` stopped."""
    stopped = {w["partition"]: w["window_to"] for w in before.windows}
    started = {w["partition"]: w["window_from"] for w in after.windows}
    assert started == stopped, (stopped, started)


def _judged(summary: RunSummary) -> dict[str, int]:
    return {v: n for v, n in summary.counts.items() if n and v != "topic_duplicate"}


def _same(want: Verdicts, got: Verdicts) -> None:
    wrong = {
        k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k)
    }
    assert not wrong, f"(expected, actual) by messageId: {dict(sorted(wrong.items())[:10])}"


@pytest.mark.parametrize("scan", [NEW_ROWS, FULL_SCAN])
def test_spark_local_spark_share_the_ledger(
    scan: str, spark: Any, pg_kwargs: dict[str, Any], tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(SCENARIO, messages=100, partitions=3, seed=5, run_tag=tag, progress=False)
    name = f"switch_{tag}"
    on_spark = _pipeline(tmp_path, name, truth, "spark", scan)
    on_local = _pipeline(tmp_path, name, truth, "local", scan)
    data_dir = str(tmp_path / "data")
    table = truth.sink_table
    try:
        # Run 1, Spark: the workload's messages (its ground truth) and 20 of ours, one written
        # twice (b), one sent twice by the producer (d).
        one = _produce(truth, f"{tag}_r1", 20, doubled={4}, retried={7})
        a, b, d = one.ids[0], one.ids[4], one.ids[7]
        first = run_pipeline(on_spark, "run-1", spark, data_dir=data_dir)
        want1 = {**expected_verdicts(pg_kwargs, truth.scenario_run), **one.verdicts}
        got1, invalid_sink_rows = actual_verdicts(spark, data_dir, name, "run-1", pg_kwargs, table)
        _same(want1, got1)
        assert not invalid_sink_rows
        run1 = _results(spark, data_dir, name, "run-1")
        assert [run1[m].sink_count for m in (a, b, d)] == [1, 2, 1]

        # Run 2, local: 40 new messages (2 lost, 1 written twice, 1 sent twice), and late rows
        # for a, b and d, which Spark judged in run 1.
        two = _produce(truth, f"{tag}_r2", 40, lost={5, 17}, doubled={9}, retried={12},
                       late=[a, b, d])  # fmt: skip
        second = run_pipeline(on_local, "run-2", spark, data_dir=data_dir)
        assert_local_layout(data_dir, name, "run-2")
        _windows_follow(first, second)
        want2 = {**two.verdicts, a: ("duplicated", False), b: ("duplicated", False),
                 d: ("duplicated", True)}  # fmt: skip
        _same(want2, actual_verdicts(spark, data_dir, name, "run-2", pg_kwargs, table)[0])
        assert _judged(second) == {"delivered": 37, "lost": 2, "duplicated": 4}

        # Run 3, Spark again: 30 new messages, late rows for messages the local engine judged:
        # delivered (c), lost, sent twice (e), and one more row each for a and d.
        c, lost, e = two.ids[0], two.ids[5], two.ids[12]
        three = _produce(truth, f"{tag}_r3", 30, late=[c, lost, e, a, d])
        third = run_pipeline(on_spark, "run-3", spark, data_dir=data_dir)
        _windows_follow(second, third)
        want3 = {
            **three.verdicts,
            c: ("duplicated", False),
            lost: ("delivered", False),
            e: ("duplicated", True),
            a: ("duplicated", False),
            d: ("duplicated", True),
        }
        _same(want3, actual_verdicts(spark, data_dir, name, "run-3", pg_kwargs, table)[0])
        assert _judged(third) == {"delivered": 31, "duplicated": 4}

        # Each late row: the total sink count over all runs, this run's key, the message's own
        # positions (carried by the ledger the other engine wrote).
        run2 = _results(spark, data_dir, name, "run-2")
        run3 = _results(spark, data_dir, name, "run-3")
        positions = {**one.positions, **two.positions}
        for rows, batch, late in ((run2, two, {a: 2, b: 3, d: 2}),
                                  (run3, three, {c: 2, lost: 1, e: 2, a: 3, d: 3})):  # fmt: skip
            for mid, total in late.items():
                row = rows[mid]
                assert row.sink_count == total, (mid, total, row)
                # A full scan passes every row of a message whose count changed again.
                keys = batch.sink_keys[mid] if scan == FULL_SCAN else batch.sink_keys[mid][-1:]
                assert sorted(row.sink_keys, key=int) == keys, (scan, row)
                where = sorted((row.partition, o) for o in row.offsets)
                assert where == sorted(positions[mid]), (mid, positions[mid], row)
                assert row.first_offset == min(o for _, o in positions[mid]), row

        # Nothing judged twice: only the messages with late rows appear in more than one run.
        seen: dict[str, int] = {}
        for judged in (run1, run2, run3):
            for mid in judged:
                seen[mid] = seen.get(mid, 0) + 1
        assert {m for m, n in seen.items() if n > 1} == {a, b, c, d, e, lost}
        assert seen[a] == seen[d] == 3
    finally:
        remove_run(SCENARIO, tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
