"""The upsert consumer's ground truth is itself true (issue 19, part 3): the scenario runs against
the real Kafka and PostgreSQL, and its claim (a keyed topic, one sink row per account, each row
holding its account's newest record except for a seeded few accounts whose row a late retry put
an older record back into) is checked against the records read back here with confluent-kafka
(keys included) and the sink rows read with psycopg2; which record is an account's newest, and
which rows are stale, is worked out here, not by the workload's own helpers.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from fixtures.workload_runs import fresh_run, query

pytestmark = pytest.mark.integration

MESSAGES, PARTITIONS, SEED = 300, 3, 7
SCENARIO = "upsert_replay"


@dataclass(frozen=True)
class Keyed:
    """A record as read back here: position, key, messageId header and value."""

    partition: int
    offset: int
    key: str
    message_id: str
    value: dict[str, Any]


def _read_keyed(kafka_config: Mapping[str, str], topic: str) -> list[Keyed]:
    """Every committed record of ``topic``, its key decoded (``fixtures.kafka_read`` keeps no
    keys); a fresh group that commits nothing, to the end each partition reports."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            **kafka_config,
            "group.id": f"test-keys-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        out: list[Keyed] = []
        ended: set[int] = set()
        while len(ended) < PARTITIONS:
            msg = consumer.poll(10)
            assert msg is not None, f"{topic}: no record and no end of partition in 10 s"
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                ended.add(int(msg.partition() or 0))
                continue
            key, value, headers = msg.key(), msg.value(), dict(msg.headers() or [])
            assert isinstance(key, bytes) and value is not None, msg.offset()
            assert headers["account"] == key, msg.offset()  # a pipeline may read it from there
            out.append(
                Keyed(
                    int(msg.partition() or 0),
                    int(msg.offset() or 0),
                    key.decode(),
                    headers["message_id"].decode(),
                    json.loads(value),
                )
            )
        return out
    finally:
        consumer.close()


@pytest.fixture
def run_tag(kafka_config: dict[str, str], pg_kwargs: dict[str, Any]) -> Iterator[str]:
    with fresh_run(SCENARIO) as tag:
        yield tag


def test_the_sink_holds_exactly_what_the_ledger_says(
    run_tag: str, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    from recon_workload import UPSERT_KEY_COLUMN, UPSERT_POSITION_COLUMN, run_scenario

    result = run_scenario(
        SCENARIO,
        messages=MESSAGES,
        partitions=PARTITIONS,
        seed=SEED,
        run_tag=run_tag,
        progress=False,
    )
    assert result.order_columns == {"key": UPSERT_KEY_COLUMN, "position": UPSERT_POSITION_COLUMN}
    assert (UPSERT_KEY_COLUMN, UPSERT_POSITION_COLUMN) == ("account", "applied_offset")

    # Kafka: every message once, keyed by the account its value names; several per account,
    # each account's records in one partition.
    records = _read_keyed(kafka_config, result.topic)
    assert len(records) == MESSAGES
    by_id = {r.message_id: r for r in records}
    assert len(by_id) == MESSAGES
    by_account: dict[str, list[Keyed]] = defaultdict(list)
    for r in records:
        assert r.value["id"] == r.message_id and r.value["account"] == r.key, r
        assert set(r.value) == {"id", "account", "seq", "payload"}
        by_account[r.key].append(r)
    assert len(by_account) == MESSAGES // 4 == result.faults["accounts"]
    for account, recs in by_account.items():
        assert len({r.partition for r in recs}) == 1, account
        assert len(recs) >= 2, account
    newest = {a: max(recs, key=lambda r: r.offset) for a, recs in by_account.items()}

    # PostgreSQL: one row per account, no ingest sequence; each row one of its account's
    # records, written as that record says.
    schema, table = result.sink_table.split(".")
    columns = query(
        pg_kwargs,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = %s"
        " AND table_name = %s ORDER BY ordinal_position",
        (schema, table),
    )
    assert [c for (c,) in columns] == [
        "account", "message_id", "kafka_partition", "applied_offset", "seq", "payload",
        "written_at",
    ]  # fmt: skip
    rows = query(
        pg_kwargs,
        "SELECT account, message_id, kafka_partition, applied_offset, seq, payload, written_at"
        f' FROM {schema}."{table}"',
    )
    assert sorted(a for a, *_ in rows) == sorted(by_account), "one row per account, no other"
    stale: dict[str, tuple[Keyed, Keyed]] = {}  # account -> (record held, newest record)
    written: dict[str, Any] = {}
    for account, mid, partition, offset, seq, payload, written_at in rows:
        held = by_id[mid]
        assert (held.key, held.partition, held.offset) == (account, partition, offset), mid
        assert (seq, payload) == (held.value["seq"], held.value["payload"]), mid
        written[account] = written_at
        if held != newest[account]:
            assert held.offset < newest[account].offset, account
            stale[account] = (held, newest[account])
    assert stale, "no stale row: the run proves nothing about out_of_order"
    assert len(by_account) - len(stale) >= 2, "fewer than two clean accounts"
    assert len(stale) == result.faults["replayed"] == round(len(by_account) * 0.1)
    # The late retries came after every other write.
    clean_times = [t for a, t in written.items() if a not in stale]
    assert min(written[a] for a in stale) > max(clean_times)

    # The result says the same.
    assert result.stale_keys == {
        a: {"newest": n.offset, "newest_id": n.message_id, "held": h.offset,
            "held_id": h.message_id}
        for a, (h, n) in stale.items()
    }  # fmt: skip
    out_of_order = sorted(n.message_id for _, n in stale.values())
    assert result.out_of_order_ids == out_of_order

    # The ledger says the same, message by message.
    ledger = query(
        pg_kwargs,
        "SELECT message_id, expected_verdict, sink_rows, topic_duplicate, detail"
        " FROM workload.ledger WHERE scenario_run = %s",
        (result.scenario_run,),
    )
    assert len(ledger) == MESSAGES
    held_ids = {mid for _, mid, *_ in rows}
    for mid, verdict, sink_rows, topic_duplicate, detail in ledger:
        assert not topic_duplicate, mid  # the idempotent producer wrote each record once
        assert sink_rows == (1 if mid in held_ids else 0), mid
        account = by_id[mid].key
        if mid in out_of_order:
            held, new = stale[account]
            assert verdict == "out_of_order", mid
            assert account in detail, detail
            assert re.search(rf"\b{held.offset}\b.*\b{new.offset}\b", detail), detail
        else:
            assert verdict == "delivered", mid
    assert {v: n for v, n in result.counts.items() if n} == {
        "delivered": MESSAGES - len(stale),
        "out_of_order": len(stale),
    }
    assert f"out_of_order={len(stale)}" in result.summary
    assert result.unseen_by_product == 0 and result.topic_duplicates == 0

    # The consumer's group committed past everything (nothing left pending).
    committed = result.faults["group_committed_offsets"]
    for partition in range(PARTITIONS):
        ends = [r.offset for r in records if r.partition == partition]
        assert committed[str(partition)] == (max(ends) + 1 if ends else None)
