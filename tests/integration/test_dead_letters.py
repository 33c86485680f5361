"""Records that leave a pipeline on purpose, on the real stack with the local engine (issue 72):
a consumer that writes only ``type: order`` records and sends the 5 of 100 it cannot process to
``<topic>.DLT`` with Spring's headers (one of them written too, reprocessed). The pipeline that
declares its ``expect`` and its dead-letter topic gets ``diverted=5``, ``excluded`` for the
others and no false alert; a dead-letter record naming no record is reported by the next run; a
predicate naming no field is one line at load time. One topic set-up serves the file (the runs
build on each other: run-2 reads the dead-letter topic from where run-1 stopped). Spark's rules
are held to these by the parity test's named scenarios."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from everyday_kit import Setup, commit_group, create_sink, ids, write_rows
from fixtures.pipelines import WORKLOAD_PIPELINE
from kafka_ends import high_watermarks

from recon.config import load_pipelines
from recon.errors import ConfigError
from recon.model import details

pytestmark = pytest.mark.integration

ORDERS = ids("o", 0, 95)
REFUNDS = ids("r", 0, 5)
POISON = ORDERS[:5]  # sent to the dead-letter topic, never written
REPROCESSED = ORDERS[5]  # sent there too, and written after all
WRONGLY_WRITTEN = REFUNDS[0]  # outside expect, yet written
ERROR = "org.springframework.kafka.listener.ListenerExecutionFailedException: bad amount"

DECLARED = """    expect: {{json_field: type, in: [order]}}
    diverted:
      topics: [{dlt}]
      original: spring
"""


def _spring_headers(topic: str, partition: int, offset: int, mid: str) -> list[tuple[str, bytes]]:
    """What Spring Kafka's DeadLetterPublishingRecoverer adds to the original's headers."""
    return [
        ("message_id", mid.encode()),
        ("kafka_dlt-original-topic", topic.encode()),
        ("kafka_dlt-original-partition", partition.to_bytes(4, "big")),
        ("kafka_dlt-original-offset", offset.to_bytes(8, "big")),
        ("kafka_dlt-exception-message", ERROR.encode()),
    ]


def _produce(kafka_config: dict[str, str], topic: str, records: list[tuple[Any, ...]]) -> dict:
    """``(key, value, headers)`` records, flushed; ``(partition, offset)`` by key."""
    at: dict[str, tuple[int, int]] = {}
    producer = Producer({**kafka_config, "acks": "all", "enable.idempotence": True})

    def report(err: Any, msg: Any) -> None:
        assert err is None, err
        at[msg.key().decode()] = (msg.partition(), msg.offset())

    for key, value, headers in records:
        producer.produce(topic, key=key.encode(), value=value, headers=headers, on_delivery=report)
    assert producer.flush(30) == 0
    return at


@pytest.fixture(scope="module")
def setup(
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Setup]:
    tag = uuid.uuid4().hex[:8]
    topic, dlt = f"dl-{tag}", f"dl-{tag}.DLT"
    admin = AdminClient(dict(kafka_config))
    for future in admin.create_topics([NewTopic(topic, 2), NewTopic(dlt, 1)]).values():
        future.result(timeout=30)
    tmp = tmp_path_factory.mktemp("dead_letters")
    name, group, table = f"it_dead_letters_{tag}", f"dl-group-{tag}", create_sink(pg_kwargs)
    yaml_path = tmp / "pipelines.yaml"
    yaml_path.write_text(
        WORKLOAD_PIPELINE.format(
            name=name, engine="local", semantics="exactly_once", topic=topic, group=group,
            table=table, idempotent="true",
        )
        + DECLARED.format(dlt=dlt)
    )  # fmt: skip
    cfg = load_pipelines(yaml_path)[name]
    s = Setup("local", name, topic, group, table, yaml_path, cfg, str(tmp / "data"), pg_kwargs)
    s.closers.append(lambda: [f.result(30) for f in admin.delete_topics([topic, dlt]).values()])
    try:
        # The producer: 95 orders and 5 refunds, the id in the header, the type in the value.
        records = [
            (m, json.dumps({"id": m, "type": kind}).encode(), [("message_id", m.encode())])
            for kind, batch in (("order", ORDERS), ("refund", REFUNDS))
            for m in batch
        ]
        at = _produce(kafka_config, topic, records)
        # The consumer: orders only, the poison ones (and the reprocessed one) to the DLT with
        # Spring's headers, one refund written by mistake; then it commits past everything.
        dead = [
            (m, json.dumps({"id": m, "type": "order"}).encode(), _spring_headers(topic, *at[m], m))
            for m in [*POISON, REPROCESSED]
        ]
        _produce(kafka_config, dlt, dead)
        written = [m for m in ORDERS if m not in POISON] + [WRONGLY_WRITTEN]
        write_rows(pg_kwargs, table, written, at)
        commit_group(kafka_config, group, topic, high_watermarks(kafka_config, topic))
        yield s
    finally:
        s.close()


def test_five_of_a_hundred_in_the_dead_letter_topic_are_diverted_not_lost(setup: Setup) -> None:
    summary = setup.run(None, "run-1")
    counts = {v: n for v, n in summary.counts.items() if n}
    assert counts == {"delivered": 90, "diverted": 5, "excluded": 5}, counts
    assert summary.contract_passed, summary.violations
    rows = {m: (v, d) for v, m, d in setup.discrepancies("run-1")}
    for mid in POISON:
        verdict, detail = rows[mid]
        assert verdict == "diverted"
        assert detail.startswith(f"in {setup.topic}.DLT/0@") and detail.endswith(ERROR), detail
    # diverted and written: delivered (a plain delivery is not kept as a discrepancy)
    assert REPROCESSED not in rows
    assert rows[WRONGLY_WRITTEN] == ("excluded", details.EXCLUDED_WRITTEN % 1)
    assert rows[REFUNDS[1]] == ("excluded", details.EXCLUDED)
    assert setup.run_row("run-1", "status")[0] == "passed"
    with_alerts = setup.run_row(
        "run-1",
        "(SELECT count(*) FROM recon.alerts a "
        "WHERE a.pipeline = runs.pipeline AND a.run_id = runs.run_id)",
    )
    assert with_alerts == (0,)


def test_a_dead_letter_record_naming_no_record_is_reported(
    setup: Setup, kafka_config: dict[str, str]
) -> None:
    ghost = _spring_headers(setup.topic, 0, 999_999, "ghost")
    _produce(kafka_config, f"{setup.topic}.DLT", [("ghost", b'{"id": "ghost"}', ghost)])
    summary = setup.run(None, "run-2")
    counts = {v: n for v, n in summary.counts.items() if n}
    assert counts == {"unverifiable": 1}, counts  # run-1's dead letters are not read again
    ((verdict, mid, detail),) = setup.discrepancies("run-2")
    assert (verdict, mid) == ("unverifiable", "ghost")
    assert detail == (f"{details.DEAD_LETTER_UNKNOWN} (original {setup.topic}/0@999999): {ERROR}")
    assert not summary.contract_passed  # max_unverifiable is 0: reported, never silent


def test_a_dead_letter_topic_on_another_kafka_connection(
    setup: Setup, kafka_config: dict[str, str]
) -> None:
    """The same consumer's dead-letter topic on the replica cluster (``kafka_replica``): a
    pipeline of its own over the same topic, group and table reads it there."""
    from recon.config.connections import kafka_connection
    from recon.store import forget_pipeline

    replica = dict(kafka_connection("kafka_replica").config)
    dlt = f"{setup.topic}.DLT"  # the same name, another cluster
    admin = AdminClient(replica)
    admin.create_topics([NewTopic(dlt, 1)])[dlt].result(timeout=30)
    name = f"{setup.name}_replica"
    try:
        at = {m: (0, 0) for m in POISON}  # matched by the messageId they carry
        dead = [(m, b"{}", _spring_headers(setup.topic, *at[m], m)[:1]) for m in POISON]
        _produce(replica, dlt, dead)
        text = setup.yaml_path.read_text().replace(setup.name, name)
        text = text.replace("      original: spring\n", "      original: message_id\n"
                            "      connection: kafka_replica\n")  # fmt: skip
        path = setup.yaml_path.with_name("replica.yaml")
        path.write_text(text)
        cfg = load_pipelines(path)[name]
        assert cfg.diverted is not None and cfg.diverted.connection == "kafka_replica"
        other = Setup("local", name, setup.topic, setup.group, setup.table, path, cfg,
                      setup.data_dir, setup.pg_kwargs)  # fmt: skip
        summary = other.run(None, "run-1")
        counts = {v: n for v, n in summary.counts.items() if n}
        assert counts == {"delivered": 90, "diverted": 5, "excluded": 5}, counts
    finally:
        from recon.run.services import results_db

        with results_db() as pg:
            forget_pipeline(pg, name)
        admin.delete_topics([dlt])[dlt].result(timeout=30)


def test_a_predicate_naming_no_field_is_one_line_at_load_time(tmp_path: Path) -> None:
    path = tmp_path / "pipelines.yaml"
    text = WORKLOAD_PIPELINE.format(
        name="p", engine="local", semantics="exactly_once", topic="t", group="g", table="s",
        idempotent="true",
    )  # fmt: skip
    path.write_text(text + "    expect: {in: [order]}\n")
    with pytest.raises(ConfigError) as info:
        load_pipelines(path)
    assert info.value.errors == [
        f"{path}: pipeline 'p': expect: names no field: add json_field: <name>, header: "
        "<name> or key: true"
    ]
