"""The workload's ground truth is itself true: every scenario runs for real against the stack, and
its ledger is checked against an independent read-back of Kafka (read_committed and
read_uncommitted, from the beginning) and of the sink table in PostgreSQL.

The read-back and the verdict rules below are written again on purpose, without the workload's
own helpers, so a bug there cannot confirm itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# RECON_WORKLOAD_SEED re-runs the whole file with other fault draws (the assertions hold for any).
SMALL = {"messages": 120, "partitions": 3, "seed": int(os.environ.get("RECON_WORKLOAD_SEED", "7"))}
EXACTLY_ONCE = (
    "exactly_once_idempotent_consumer",
    "exactly_once_transactional_sink",
    "exactly_once_read_process_write",
)


@pytest.fixture(scope="module")
def wl_kafka() -> dict[str, str]:
    """The ``kafka_default`` connection's client config, from the project's environment."""
    if "AIRFLOW_CONN_KAFKA_DEFAULT" not in os.environ:
        pytest.fail("run through scripts/with-env.sh (or make test)", pytrace=False)
    from recon.config.connections import kafka_connection

    conf = dict(kafka_connection("kafka_default").config)
    AdminClient(conf).list_topics(timeout=15)  # fails loudly when the broker is down
    return conf


@pytest.fixture(scope="module")
def wl_pg() -> dict[str, Any]:
    from recon.config.connections import postgres_connection

    return postgres_connection("postgres_sink").psycopg2_kwargs()


@pytest.fixture
def run_tag(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh run tag; the run's topics, groups, tables and ledger rows are removed afterwards."""
    from recon_workload import remove_run

    tag = "t" + uuid.uuid4().hex[:10]
    scenarios: list[str] = []
    request.node.wl_scenarios = scenarios  # the test appends what it ran
    yield tag
    for scenario in scenarios:
        remove_run(scenario, tag)


# --- independent read-back --------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    mid: str | None


def _mid(headers: list[tuple[str, bytes]] | None, value: bytes | None) -> str | None:
    for name, raw in headers or []:
        if name == "message_id" and raw:
            return raw.decode()
    try:
        doc = json.loads(value) if value else None
    except (UnicodeDecodeError, ValueError):
        return None
    return doc.get("id") if isinstance(doc, dict) and isinstance(doc.get("id"), str) else None


def _read_topic(conf: dict[str, str], topic: str, partitions: int, isolation: str) -> list[Rec]:
    consumer = Consumer(
        {
            **conf,
            "group.id": f"test-wl-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Rec] = []
    ended: set[int] = set()
    try:
        while len(ended) < partitions:
            msg = consumer.poll(10)
            assert msg is not None, f"{topic}: no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                ended.add(msg.partition())
            else:
                out.append(Rec(msg.partition(), msg.offset(), _mid(msg.headers(), msg.value())))
    finally:
        consumer.close()
    return out


def _committed(conf: dict[str, str], group: str, topic: str, partitions: int) -> dict[int, int]:
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    admin = AdminClient(conf)  # must outlive the future, or the request is dropped with it
    res = admin.list_consumer_group_offsets([req], require_stable=True)[group]
    return {tp.partition: max(tp.offset, 0) for tp in res.result(30).topic_partitions}


def _query(pg: dict[str, Any], sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg2.connect(**pg) as db, db.cursor() as cur:
        cur.execute(sql, args)
        rows = cur.fetchall()
    db.close()
    return rows


def _pos(topic: str, recs: list[Rec]) -> list[dict[str, Any]]:
    return sorted(
        ({"topic": topic, "partition": r.partition, "offset": r.offset} for r in recs),
        key=lambda d: (d["partition"], d["offset"]),
    )


def _expected_verdict(
    committed: list[Rec], aborted: list[Rec], sink: int, offsets: dict[int, int]
) -> str | None:
    if committed:
        if not any(r.offset < offsets.get(r.partition, 0) for r in committed):
            return "pending"
        return {0: "lost", 1: "delivered"}.get(sink, "duplicated")
    if sink:
        return "aborted_read" if aborted else "phantom"
    return None


def check_ledger(
    conf: dict[str, str], pg: dict[str, Any], result: Any, partitions: int, produced: int
) -> dict[str, dict[str, Any]]:
    """Assert the run's ledger equals what Kafka and PostgreSQL hold; return it by key.

    :param produced: messages the run produced (ledger must have a row for each).
    """
    topic = result.topic
    rc = _read_topic(conf, topic, partitions, "read_committed")
    ru = _read_topic(conf, topic, partitions, "read_uncommitted")
    rc_at = {(r.partition, r.offset) for r in rc}
    aborted = [r for r in ru if (r.partition, r.offset) not in rc_at]
    offsets = _committed(conf, result.consumer_group, topic, partitions)
    schema, table = result.sink_table.split(".")
    sink = _query(pg, f'SELECT message_id, kafka_partition, kafka_offset FROM {schema}."{table}"')
    ledger = {
        row[0]: dict(
            zip(
                ("message_id", "positions", "aborted", "sink_rows", "dup", "verdict", "detail"),
                row[1:],
                strict=True,
            )
        )
        for row in _query(
            pg,
            "SELECT ledger_key, message_id, positions, aborted_positions, sink_rows,"
            " topic_duplicate, expected_verdict, detail FROM workload.ledger"
            " WHERE scenario_run = %s",
            (result.scenario_run,),
        )
    }

    by_id: dict[str, list[Rec]] = defaultdict(list)
    ab_id: dict[str, list[Rec]] = defaultdict(list)
    for r in rc:
        if r.mid is not None:
            by_id[r.mid].append(r)
    for r in aborted:
        if r.mid is not None:
            ab_id[r.mid].append(r)
    sink_ids = Counter(m for m, _, _ in sink if m is not None)
    sink_idless = Counter((p, o) for m, p, o in sink if m is None)

    with_id = {v["message_id"]: v for v in ledger.values() if v["message_id"] is not None}
    seen = set(by_id) | set(ab_id) | set(sink_ids)
    assert seen <= set(with_id), f"ids in Kafka/sink but not in the ledger: {seen - set(with_id)}"
    for mid, row in with_id.items():
        want = {
            "positions": _pos(topic, by_id.get(mid, [])),
            "aborted": _pos(topic, ab_id.get(mid, [])),
            "sink_rows": sink_ids.get(mid, 0),
            "dup": len(by_id.get(mid, [])) > 1,
            "verdict": _expected_verdict(
                by_id.get(mid, []), ab_id.get(mid, []), sink_ids.get(mid, 0), offsets
            ),
        }
        got = {k: row[k] for k in want}
        got["positions"] = sorted(got["positions"], key=lambda d: (d["partition"], d["offset"]))
        got["aborted"] = sorted(got["aborted"], key=lambda d: (d["partition"], d["offset"]))
        assert got == want, f"ledger row for {mid} disagrees with Kafka/PostgreSQL"

    idless = [r for r in rc if r.mid is None]
    invalid = {k: v for k, v in ledger.items() if v["message_id"] is None}
    assert {k for k in invalid} == {f"{topic}:{r.partition}:{r.offset}" for r in idless}
    for r in idless:
        row = invalid[f"{topic}:{r.partition}:{r.offset}"]
        assert row["verdict"] == "invalid"
        assert row["positions"] == _pos(topic, [r])
        assert row["sink_rows"] == sink_idless.get((r.partition, r.offset), 0)
    assert sum(sink_idless.values()) == sum(v["sink_rows"] for v in invalid.values())

    # One row per produced message, and the counts the run reported are the ledger's.
    assert len(with_id) == produced
    counts = Counter(v["verdict"] for v in ledger.values() if v["verdict"] is not None)
    assert {k: n for k, n in result.counts.items() if n} == dict(counts)
    assert result.committed_in_topic == len(rc)
    assert result.sink_rows == len(sink)
    assert result.topic_duplicates == sum(v["dup"] for v in ledger.values())
    (stored,) = _query(
        pg, "SELECT summary_line FROM workload.runs WHERE scenario_run = %s", (result.scenario_run,)
    )
    assert stored[0] == result.summary
    # The group's committed offset covers everything the consumer wrote.
    for _, p, o in sink:
        assert o < offsets.get(p, 0), f"sink row at {p}:{o} past the committed offset {offsets}"
    return ledger


def _run(request: pytest.FixtureRequest, scenario: str, tag: str, **params: Any) -> Any:
    from recon_workload import run_scenario

    request.node.wl_scenarios.append(scenario)
    return run_scenario(scenario, run_tag=tag, **{**SMALL, **params})


# --- the scenarios ----------------------------------------------------------------------------


# The scenario bounces the broker every test shares: it runs with the serial tests, alone.
@pytest.mark.serial
def test_at_most_once_loses(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "at_most_once", run_tag)
    # The broker was really bounced, and is back for everybody else.
    status = subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), "status"], check=False)
    assert status.returncode == 0
    assert result.faults["broker_bounce_seconds"] > 0
    check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    assert result.counts["lost"] >= 1
    assert result.counts["duplicated"] == result.counts["phantom"] == 0


def test_at_least_once_duplicates(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "at_least_once", run_tag)
    ledger = check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    assert result.faults["acks_dropped"] >= 1
    assert result.counts["duplicated"] >= 1
    assert sum(v["dup"] for v in ledger.values()) >= 1
    assert result.counts["lost"] == result.counts["phantom"] == 0


@pytest.mark.parametrize("scenario", EXACTLY_ONCE)
def test_exactly_once_holds(
    request: pytest.FixtureRequest,
    run_tag: str,
    wl_kafka: dict[str, str],
    wl_pg: dict[str, Any],
    scenario: str,
) -> None:
    result = _run(request, scenario, run_tag)
    ledger = check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    # It held under real faults, not for lack of them.
    assert sum(result.faults["consumer_kills"]) >= 1
    for verdict in ("lost", "duplicated", "phantom", "aborted_read", "invalid", "pending"):
        assert result.counts[verdict] == 0, verdict
    assert result.counts["delivered"] == SMALL["messages"]
    assert not any(v["dup"] for v in ledger.values())
    if scenario == "exactly_once_read_process_write":
        assert result.faults["processor_kills_mid_transaction"] >= 1
        assert any(v["aborted"] for v in ledger.values()), "kills left no aborted records"


def test_broken_exactly_once_reads_aborted(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "broken_exactly_once", run_tag)
    check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    assert result.faults["aborted_transactions"] >= 1
    assert result.counts["aborted_read"] >= 1


def test_consumer_group_rewind_duplicates(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "consumer_group_rewind", run_tag)
    check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    assert result.faults["group_state_at_rewind"] == "empty"
    assert any(before > after for before, after in result.faults["rewound"].values())
    assert result.counts["duplicated"] >= 1
    assert result.counts["lost"] == result.counts["phantom"] == 0


def test_bad_records_are_invalid(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "bad_records", run_tag)
    ledger = check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    invalid = [v for v in ledger.values() if v["verdict"] == "invalid"]
    assert sorted(v["detail"] for v in invalid) == [
        "missing_id",
        "non_utf8",
        "oversize",
        "tombstone",
    ]
    assert all(v["message_id"] is None and v["sink_rows"] == 1 for v in invalid)
    assert result.counts["delivered"] == SMALL["messages"]


def test_concurrent_writers_commit_out_of_ingest_order(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    result = _run(request, "concurrent_writers", run_tag, hold_seconds=1)
    check_ledger(wl_kafka, wl_pg, result, SMALL["partitions"], SMALL["messages"])
    # At-least-once done right, no fault injected: every message exactly once.
    assert result.counts["delivered"] == SMALL["messages"]
    assert sum(n for v, n in result.counts.items() if v != "delivered") == 0
    # Two members of one group, each its own partitions, into one table.
    slow, fast = result.faults["members"]["slow"], result.faults["members"]["fast"]
    assert slow and fast and sorted(slow + fast) == list(range(SMALL["partitions"]))
    assert result.faults["consumer_starts"] == [1, 1]
    schema, table = result.sink_table.split(".")
    rows = _query(wl_pg, f'SELECT id, kafka_partition FROM {schema}."{table}"')
    slow_ids = [i for i, p in rows if p in slow]
    fast_ids = [i for i, p in rows if p in fast]
    assert slow_ids and fast_ids
    # While the slow member's first transaction was open, the fast member's rows were all
    # committed and visible, the slow member's not one, though its rows took lower ids.
    during = result.faults["visible_during_hold"]
    assert during["rows"] == len(fast_ids)
    assert set(during["partitions"]) <= set(fast)
    assert min(slow_ids) < min(fast_ids) <= max(fast_ids) == during["max_id"]
    assert result.faults["ingest_order_differs_from_commit_order"] is True
    assert result.faults["held_seconds"][0] >= 1


def test_concurrent_writers_rejects_one_partition(
    request: pytest.FixtureRequest, run_tag: str
) -> None:
    from recon_workload import WorkloadError

    with pytest.raises(WorkloadError, match="partitions must be 2 or more"):
        _run(request, "concurrent_writers", run_tag, partitions=1)


def test_cli_rerun_replaces_the_run(
    request: pytest.FixtureRequest, run_tag: str, wl_kafka: dict[str, str], wl_pg: dict[str, Any]
) -> None:
    request.node.wl_scenarios.append("bad_records")
    argv = ["run", "bad_records", "--messages", "20", "--partitions", "2", "--run-tag", run_tag]
    cmd = [sys.executable, "-m", "recon_workload.cli", *argv]
    first = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    assert first.stdout.startswith(f"bad_records-{run_tag}: produced=24 ")
    assert "invalid=4" in first.stdout
    second = subprocess.run(
        [*cmd, "--json", "--set", "kill_rate=0.5"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result = json.loads(second.stdout)
    assert result["counts"]["invalid"] == 4 and result["produced"] == 24
    (rows,) = _query(
        wl_pg,
        "SELECT count(*) FROM workload.ledger WHERE scenario_run = %s",
        (f"bad_records-{run_tag}",),
    )
    assert rows[0] == 24  # replaced, not appended to
    listing = subprocess.run(
        [sys.executable, "-m", "recon_workload.cli", "list"], capture_output=True, text=True
    )
    names = (*EXACTLY_ONCE, "bad_records", "at_most_once", "concurrent_writers")
    assert all(name in listing.stdout for name in names)
