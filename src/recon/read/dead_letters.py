"""The records of a pipeline's dead-letter and retry topics (``diverted:``), read since the last
position into rows naming their originals: the rules' input ``dead_letters``
(``recon.rules.INPUT_COLUMNS``), which turns a lost message found there into ``diverted``.

Each run reads, per partition of each declared topic, ``[start, end)``: ``start`` where the
previous run stopped (first run, or a position retention passed: the log start), ``end`` its last
stable offset when the run reads it, read committed (a recoverer that publishes in the
consumer's transaction has its aborted attempts skipped). The topics are small (a consumer's
failures), so one consumer reads them on the run's own thread.

A record names its original by the headers of its convention (``recon.config.diversions``:
Spring's ``kafka_dlt-original-*``, Kafka Connect's ``__connect.errors.*``, or explicit names)
and, always, by the messageId it carries where the pipeline's records carry it (a recoverer
copies the value, the key and the headers). Spring writes the partition and offset as 4- and
8-byte big-endian integers, Connect as text: both are read (:func:`decode_number`). A header
that is neither leaves the coordinate null; the record is still matched by its messageId, or
reported as naming no record (``06_dead_letters_unknown.sql``), never dropped.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recon.config import MessageIdSpec
from recon.config.diversions import DivertedSpec
from recon.read.ranges import OffsetRange

if TYPE_CHECKING:
    import pyarrow as pa

#: A dead-letter topic's record as read: topic, partition, offset, key, value, headers.
RawDeadLetter = tuple[str, int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes]]]

#: Seconds a read may go without a record before it gives up (a broker gone).
STALL_SECONDS = 30.0


def dead_letters_schema() -> pa.Schema:
    """The rules' input ``dead_letters`` as Arrow."""
    import pyarrow as pa

    return pa.schema(
        [("message_id", pa.string()), ("dl_topic", pa.string()), ("dl_partition", pa.int32()),
         ("dl_offset", pa.int64()), ("orig_topic", pa.string()), ("orig_partition", pa.int32()),
         ("orig_offset", pa.int64()), ("error", pa.string())]
    )  # fmt: skip


def decode_number(raw: bytes | None) -> int | None:
    """A partition or offset header: decimal text (Connect), or a 4- or 8-byte big-endian
    integer (Spring); None when it is neither. Text is tried first: a binary partition whose
    four bytes are all ASCII digits would be above 800 million."""
    if raw is None:
        return None
    if raw.isascii() and raw.strip().lstrip(b"-").isdigit():
        return int(raw.strip())
    if len(raw) in (4, 8):
        return int.from_bytes(raw, "big", signed=True)
    return None


def _bytes(raw: Any) -> bytes | None:
    return raw if isinstance(raw, bytes) else None


def _text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def dead_letter_rows(
    records: Iterable[RawDeadLetter], spec: DivertedSpec, message_id: MessageIdSpec
) -> pa.Table:
    """Dead-letter records as ``dead_letters`` rows: where each is, its original's coordinates
    (from the headers of ``spec``'s convention; null without one) and error text, and the
    messageId it carries (extracted as the pipeline's records' are:
    ``recon.read.message_ids.extract_ids``; null when it has none usable).

    :param records: the records as read.
    :param spec: the pipeline's ``diverted`` declaration.
    :param message_id: where the pipeline's records carry their messageId.
    """
    import pyarrow as pa

    from recon.read.message_ids import extract_ids, raw_schema

    rows = list(records)
    names = spec.headers

    def first(headers: Sequence[tuple[str, bytes]], name: str | None) -> bytes | None:
        if name is None:
            return None
        return next((v for k, v in headers or () if k == name), None)

    id_header = message_id.name if message_id.kind == "header" else None
    raw = pa.table(
        [pa.array([r[0] for r in rows], pa.string()), pa.array([r[1] for r in rows], pa.int32()),
         pa.array([r[2] for r in rows], pa.int64()),
         pa.nulls(len(rows), pa.timestamp("ms", tz="UTC")),
         pa.array([r[3] for r in rows], pa.binary()), pa.array([r[4] for r in rows], pa.binary()),
         pa.array([first(r[5], id_header) for r in rows], pa.binary()),
         pa.nulls(len(rows), pa.binary())],
        schema=raw_schema(),
    )  # fmt: skip
    ids = extract_ids(raw, message_id)["message_id"] if rows else pa.array([], pa.string())
    orig_topic = [_text(first(r[5], names.topic if names else None)) for r in rows]
    orig_partition = [decode_number(first(r[5], names.partition if names else None)) for r in rows]
    orig_offset = [decode_number(first(r[5], names.offset if names else None)) for r in rows]
    error = [_text(first(r[5], names.error if names else None)) for r in rows]
    return pa.table(
        [ids, raw["topic"], raw["partition"], raw["offset"], pa.array(orig_topic, pa.string()),
         pa.array(orig_partition, pa.int32()), pa.array(orig_offset, pa.int64()),
         pa.array(error, pa.string())],
        schema=dead_letters_schema(),
    )  # fmt: skip


def dead_letter_ranges(
    config: Mapping[str, Any],
    spec: DivertedSpec,
    positions: Mapping[tuple[str, int], int],
    timeout: float = 15.0,
) -> list[OffsetRange]:
    """What a run reads of each dead-letter topic: per partition, from ``positions`` (where the
    previous run stopped; a partition it does not name, or a position retention passed, from the
    log start) to the last stable offset now.

    :param config: the librdkafka settings of the topics' connection.
    :raises recon.snapshot.offsets.KafkaSnapshotError: a topic does not exist, or Kafka did not
        answer.
    """
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec as _OffsetSpec  # type: ignore[attr-defined]

    from recon.snapshot.offsets import admin_client, list_offsets, topic_partitions

    OffsetSpec: Any = _OffsetSpec  # untyped in confluent-kafka's stubs
    admin = admin_client(config)
    ranges: list[OffsetRange] = []
    for topic in spec.topics:
        partitions = topic_partitions(admin, topic, timeout)
        starts = list_offsets(admin, topic, partitions, OffsetSpec.earliest(), timeout, timeout)
        ends = list_offsets(
            admin, topic, partitions, OffsetSpec.latest(), timeout, timeout,
            isolation_level=IsolationLevel.READ_COMMITTED,
        )  # fmt: skip
        for p in partitions:
            start = max(positions.get((topic, p), starts[p]), starts[p])
            ranges.append(OffsetRange(topic, p, start, max(start, ends[p])))
    return ranges


def read_dead_letters(
    config: Mapping[str, Any],
    ranges: Sequence[OffsetRange],
    spec: DivertedSpec,
    message_id: MessageIdSpec,
    stall_seconds: float = STALL_SECONDS,
) -> pa.Table:
    """The records of ``ranges`` (:func:`dead_letter_ranges`) as ``dead_letters`` rows
    (:func:`dead_letter_rows`), read committed.

    :raises recon.read.kafka_local.reader.KafkaReadFailed: nothing arrived for
        ``stall_seconds`` before every range was read, or the broker refused the read.
    """
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from recon.read.kafka_local.reader import KafkaReadFailed
    from recon.snapshot.offsets import _QuietLog, without_callbacks

    wanted = {(r.topic, r.partition): r for r in ranges if r.end > r.start}
    records: list[RawDeadLetter] = []
    if not wanted:
        return dead_letter_rows(records, spec, message_id)
    consumer = Consumer(
        {
            **without_callbacks(config),
            "group.id": "recon-dead-letters",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        },
        logger=_QuietLog(),
    )
    try:
        consumer.assign([TopicPartition(t, p, r.start) for (t, p), r in wanted.items()])
        remaining = set(wanted)
        last = time.monotonic()
        while remaining:
            batch = consumer.consume(500, 1.0)
            if not batch and time.monotonic() - last > stall_seconds:
                missing = ", ".join(f"{t}/{p}" for t, p in sorted(remaining))
                raise KafkaReadFailed(f"dead-letter topics: nothing arrived from {missing}")
            for m in batch:
                last = time.monotonic()
                where = (str(m.topic()), int(m.partition() or 0))
                offset = int(m.offset() or 0)
                err = m.error()
                if err is not None:
                    # The end of a partition: read committed, the last offsets below the end
                    # may be transaction markers that never arrive.
                    if err.code() == KafkaError._PARTITION_EOF and where in wanted:
                        if offset >= wanted[where].end:
                            remaining.discard(where)
                        continue
                    raise KafkaReadFailed(f"dead-letter topic {where[0]}/{where[1]}: {err}")
                if where not in wanted or offset >= wanted[where].end:
                    remaining.discard(where)
                    continue
                pairs: list[Any] = list(m.headers() or ())
                headers = [(str(k), v) for k, v in pairs if isinstance(v, bytes)]
                records.append(
                    (where[0], where[1], offset, _bytes(m.key()), _bytes(m.value()), headers)
                )
                if offset >= wanted[where].end - 1:
                    remaining.discard(where)
    finally:
        consumer.close()
    return dead_letter_rows(records, spec, message_id)


def next_positions(
    ranges: Sequence[OffsetRange], restarts: Mapping[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """Where the next run reads each dead-letter partition from: this run's end, or an earlier
    offset holding a record of a message still pending
    (``recon.rules.readouts.dead_letter_restarts``), read again once the window reaches its
    original.

    :param ranges: what this run read (:func:`dead_letter_ranges`).
    :param restarts: the first offset to read again, per partition.
    """
    return {
        (r.topic, r.partition): min(r.end, restarts.get((r.topic, r.partition), r.end))
        for r in ranges
    }


#: A run's dead-letter ranges as its plan records them: ``(topic, partition, start, end)``.
RangeRow = tuple[str, int, int, int]


def planned_ranges(
    spec: DivertedSpec,
    positions: Mapping[tuple[str, int], int],
    pipeline_config: Mapping[str, Any],
) -> tuple[RangeRow, ...]:
    """What step 1 records of the dead-letter topics (``recon.read.catalog.Catalog``), so that a
    re-run of the run id reads the same records: :func:`dead_letter_ranges` as rows.

    :param positions: where the previous run stopped per dead-letter partition (its
        ``recon.watermarks`` rows of these topics).
    :param pipeline_config: the librdkafka settings of the pipeline's topic (the dead-letter
        topics' own connection instead, when declared: :func:`topics_config`).
    """
    own = {(t, p): o for (t, p), o in positions.items() if t in spec.topics}
    config = topics_config(spec, pipeline_config)
    return tuple(
        (r.topic, r.partition, r.start, r.end) for r in dead_letter_ranges(config, spec, own)
    )


def write_part(
    rows: Sequence[RangeRow],
    spec: DivertedSpec,
    message_id: MessageIdSpec,
    config: Mapping[str, Any],
    directory: str,
) -> int:
    """Read the run's dead-letter ranges into ``directory`` (replaced) as one Parquet file of
    :func:`dead_letters_schema`: the window part ``dead_letters`` both engines read in step 3.

    :returns: how many dead-letter records were read.
    """
    import os
    import shutil

    import pyarrow.parquet as pq

    ranges = [OffsetRange(*r) for r in rows]
    table = read_dead_letters(config, ranges, spec, message_id)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    pq.write_table(table, os.path.join(directory, "part-0.parquet"))
    return int(table.num_rows)


def topics_config(spec: DivertedSpec, pipeline_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The librdkafka settings of the dead-letter topics' cluster: their own connection's, or
    the pipeline's (``diverted.connection`` not declared)."""
    if spec.connection is None:
        return pipeline_config
    from recon.config.connections import kafka_connection

    return kafka_connection(spec.connection).config
