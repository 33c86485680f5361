"""The mangling consumer's ground truth is itself true (issue 19, part 2): the scenario runs
against the real Kafka and PostgreSQL, and its claim (a seeded few messages written once with
their payload cut short, a few written twice with the second copy cut short, every other one
written once as it was) is checked against the records read back with confluent-kafka and the
sink rows read with psycopg2; the mangled content and its SHA-256 are computed here, not by the
workload's own helpers.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures.kafka_read import read_topic
from fixtures.workload_runs import fresh_run, query

pytestmark = pytest.mark.integration

MESSAGES, PARTITIONS, SEED = 200, 3, 5
SCENARIO = "mangling_consumer"


@pytest.fixture
def run_tag(kafka_config: dict[str, str], pg_kwargs: dict[str, Any]) -> Iterator[str]:
    with fresh_run(SCENARIO) as tag:
        yield tag


def _cut(value: bytes) -> tuple[str, str]:
    """The payload the buggy transformation writes for a record, and the SHA-256 of the value
    it writes: the payload cut at half its length and ended with U+FFFD, the rest unchanged."""
    doc = json.loads(value)
    text = doc["payload"]
    mangled = text[: len(text) // 2] + "\ufffd"
    assert mangled != text
    written = json.dumps({**doc, "payload": mangled}).encode()
    return mangled, hashlib.sha256(written).hexdigest()


def test_the_sink_holds_exactly_what_the_ledger_says(
    run_tag: str, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    from recon_workload import PAYLOAD_COLUMNS, SHA256_COLUMN, run_scenario

    result = run_scenario(
        SCENARIO,
        messages=MESSAGES,
        partitions=PARTITIONS,
        seed=SEED,
        run_tag=run_tag,
        progress=False,
    )
    assert result.payload_fields == PAYLOAD_COLUMNS == {"seq": "seq", "payload": "payload"}
    assert result.sha256_column == SHA256_COLUMN == "payload_sha256"
    mismatched, copied = set(result.mismatched_ids), set(result.mangled_copy_ids)
    assert len(mismatched) == result.faults["mangled"] == round(MESSAGES * 0.05)
    assert len(copied) == result.faults["mangled_copies"] == round(MESSAGES * 0.02)
    assert not mismatched & copied

    # Kafka: every message once, its value a JSON object with its seq and payload.
    records = {r.message_id: r for r in read_topic(kafka_config, result.topic)}
    assert len(records) == MESSAGES and None not in records
    assert mismatched | copied <= set(records)

    # PostgreSQL: every row at its record's position; its columns what was written.
    schema, table = result.sink_table.split(".")
    rows = query(
        pg_kwargs,
        "SELECT message_id, kafka_partition, kafka_offset, seq, payload, payload_sha256"
        f' FROM {schema}."{table}" ORDER BY id',
    )
    by_id: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for mid, partition, offset, seq, payload, digest in rows:
        record = records[mid]
        assert (partition, offset) == (record.partition, record.offset), mid
        by_id[mid].append((seq, payload, digest))
    assert set(by_id) == set(records), "a row for every message, none for anything else"
    assert len(rows) == MESSAGES + len(copied)

    found_mismatched, found_copied = set(), set()
    for mid, written in by_id.items():
        value = records[mid].value
        assert value is not None
        doc = json.loads(value)
        intact = (doc["seq"], doc["payload"], hashlib.sha256(value).hexdigest())
        cut = (doc["seq"], *_cut(value))
        if written == [intact]:
            continue
        if written == [cut]:
            found_mismatched.add(mid)
        elif written == [intact, cut]:  # the second copy, later by ingest sequence, cut short
            found_copied.add(mid)
        else:
            pytest.fail(f"{mid}: rows {written}, record {intact}")
    assert found_mismatched == mismatched
    assert found_copied == copied

    # The ledger says the same, message by message, with what differs.
    ledger = query(
        pg_kwargs,
        "SELECT message_id, expected_verdict, sink_rows, topic_duplicate, payload_diff"
        " FROM workload.ledger WHERE scenario_run = %s",
        (result.scenario_run,),
    )
    assert len(ledger) == MESSAGES
    differs = {"fields": ["payload"], "field_rows": 1, "value_rows": 1}
    same = {"fields": [], "field_rows": 0, "value_rows": 0}
    for mid, verdict, sink_rows, topic_duplicate, diff in ledger:
        assert not topic_duplicate, mid  # the idempotent producer wrote each record once
        if mid in mismatched:
            assert (verdict, sink_rows, diff) == ("mismatched", 1, differs), mid
        elif mid in copied:
            assert (verdict, sink_rows, diff) == ("duplicated", 2, differs), mid
        else:
            assert (verdict, sink_rows, diff) == ("delivered", 1, same), mid
    assert {v: n for v, n in result.counts.items() if n} == {
        "delivered": MESSAGES - len(mismatched) - len(copied),
        "mismatched": len(mismatched),
        "duplicated": len(copied),
    }
    assert f"mismatched={len(mismatched)}" in result.summary
    assert result.unseen_by_product == 0 and result.topic_duplicates == 0

    # The consumer's group committed past everything (nothing left pending).
    committed = result.faults["group_committed_offsets"]
    for partition in range(PARTITIONS):
        ends = [r.offset for r in records.values() if r.partition == partition]
        assert committed[str(partition)] == (max(ends) + 1 if ends else None)
