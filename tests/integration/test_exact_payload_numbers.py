"""Payload numbers compare exactly by value on both engines (issue 70, item 4).

Spark judges the unit tier's pairs (``fixtures.payload_numbers``); then, on the real stack, our
own producer writes JSON values holding numbers a double cannot tell apart (20 digits, 23
significant digits, 2^53 + 1 inside a nested object, an exponent past a double's range), our own
writer puts a row per message into ``numeric`` columns, the group commits, and each engine's
verdicts equal the hand-made ones message by message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg2
import pytest
from confluent_kafka import Producer
from everyday_kit import ENGINES, Setup, commit_group, same
from fixtures.payload_numbers import expected, scenario
from fixtures.relations import judged_rows

from recon.config import load_pipelines

pytestmark = pytest.mark.integration

#: messageId: (the record value's JSON text, the sink row's amount and total, its verdict).
MESSAGES: dict[str, tuple[str, str, str, str]] = {
    "big": ('{"amount": 12345678901234567890, "order": {"total": 1}}',
            "12345678901234567891", "1", "mismatched"),
    "big-same": ('{"amount": 12345678901234567890, "order": {"total": 1}}',
                 "12345678901234567890.00", "1", "delivered"),
    "digits23": ('{"amount": 0.12345678901234567890123, "order": {"total": 1}}',
                 "0.12345678901234567890124", "1", "mismatched"),
    "digits23-same": ('{"amount": 0.12345678901234567890123, "order": {"total": 1}}',
                      "0.123456789012345678901230", "1", "delivered"),
    "nested": ('{"amount": 1, "order": {"total": 9007199254740993}}',
               "1", "9007199254740992", "mismatched"),
    "nested-same": ('{"amount": 1, "order": {"total": 9007199254740993}}',
                    "1", "9007199254740993", "delivered"),
    "nested-digits": ('{"amount": 1, "order": {"total": 1.000000000000000000001, "n": "a,1"}}',
                      "1", "1", "mismatched"),
    "tiny": ('{"amount": 1e-400, "order": {"total": 1}}', "0", "1", "mismatched"),
    "ten": ('{"amount": 10, "order": {"total": 1e1}}', "10.0", "10", "delivered"),
    "ten-exp": ('{"amount": 1E+1, "order": {"total": 10.000000000000000000}}',
                "10", "10.00", "delivered"),
    "price": ('{"amount": 12.50, "order": {"total": -0.0}}', "12.5", "0", "delivered"),
}  # fmt: skip

PAYLOAD = "    payload:\n      fields: {amount: amount, order.total: total}\n"


def test_spark_compares_numbers_exactly_by_value(spark: Any) -> None:
    verdicts = {r["message_id"]: r["verdict"] for r in judged_rows("spark", spark, scenario())}
    assert verdicts == expected()


def _with_payload(s: Setup) -> None:
    """Numeric ``amount`` and ``total`` columns in the sink, compared with the record's fields."""
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"ALTER TABLE {s.table} ADD COLUMN amount numeric, ADD COLUMN total numeric")
    pg.close()
    s.yaml_path.write_text(s.yaml_path.read_text() + PAYLOAD)
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    assert s.cfg.payload is not None


def _produce(kafka_config: dict[str, str], topic: str) -> dict[str, tuple[int, int]]:
    positions: dict[str, tuple[int, int]] = {}
    failures: list[str] = []

    def delivered(mid: str) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"{mid}: {err}")
            else:
                positions[mid] = (msg.partition(), msg.offset())

        return report

    producer = Producer({**kafka_config, "acks": "all"})
    for mid, (value, _, _, _) in MESSAGES.items():
        json.loads(value)  # each value is JSON
        producer.produce(topic, value=value.encode(), partition=0, on_delivery=delivered(mid),
                         headers=[("message_id", mid.encode())])  # fmt: skip
    assert producer.flush(30) == 0 and not failures, failures
    assert set(positions) == set(MESSAGES)
    return positions


def _write_rows(s: Setup, positions: dict[str, tuple[int, int]]) -> None:
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        for mid, (_, amount, total, _) in MESSAGES.items():
            partition, offset = positions[mid]
            cur.execute(
                f"INSERT INTO {s.table} (message_id, kafka_partition, kafka_offset, amount, total) "
                "VALUES (%s, %s, %s, %s::numeric, %s::numeric)",
                (mid, partition, offset, amount, total),
            )
    pg.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_numbers_beyond_a_double_are_compared_exactly(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = kit_setup(engine, "numbers")
    _with_payload(s)
    positions = _produce(kafka_config, s.topic)
    _write_rows(s, positions)
    commit_group(kafka_config, s.group, s.topic)
    s.run(spark, "run-1")
    want = {mid: verdict for mid, (_, _, _, verdict) in MESSAGES.items()}
    same(want, s.verdicts(spark, "run-1"), "run 1")
    details = {m: d for v, m, d in s.discrepancies("run-1") if v == "mismatched"}
    assert details["nested"] == "payload differs from its record's in: order.total"
    assert details["big"] == "payload differs from its record's in: amount"
