"""The shapes of the reconciler's inputs and outputs, as Spark ``StructType`` definitions.

Writers (the snapshot job, the sink scan, the ledger store) produce these; the engines check the
column names and cast to the rules' input types (``recon.rules.INPUT_COLUMNS``), so an ``int``
offset from a test or a ``decimal`` key from JDBC still fits. Nullability here is documentation:
Spark does not enforce it on computed frames.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# One place of a record in Kafka. Kept with the topic so that a producer retry that landed in
# another partition is still reported exactly.
# Nested types stay nullable: Spark refuses to cast a nullable element to a non-nullable one.
POSITION = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
    ]
)
POSITIONS = ArrayType(POSITION)

# Records read read_committed from the run's window [from, to); pending records (at/after `to`,
# or younger than the settle time) have the same shape. invalid_reason is set when the id is
# missing or unparseable (and for tombstones); message_id may then hold the raw value or null.
WINDOW = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("message_id", StringType(), True),
        StructField("invalid_reason", StringType(), True),
        StructField("timestamp", TimestampType(), True),
        # the compared content (payload.fields as text, or the value's SHA-256); null when the
        # pipeline declares no payload
        StructField("payload", ArrayType(StringType()), True),
        # the upsert key and position (order declared), else null
        StructField("order_key", StringType(), True),
        StructField("order_position", LongType(), True),
        # the texts of the fields the pipeline's expect reads (recon.rules.expect), else null
        StructField("expect_fields", ArrayType(StringType()), True),
    ]
)
PENDING = WINDOW

# Sink rows added since the previous run; sink_key is the row's primary key rendered as text;
# sink_time is sink.time_column (null when the pipeline declares none).
SINK_ROWS = StructType(
    [
        StructField("sink_key", StringType(), False),
        StructField("message_id", StringType(), True),
        StructField("ingest_seq", LongType(), True),
        StructField("sink_time", TimestampType(), True),
        # payload's sink columns as text, in its order (null when it declares none)
        StructField("payload", ArrayType(StringType()), True),
        # order.key_column as text and order.position_column (order declared), else null
        StructField("order_key", StringType(), True),
        StructField("order_position", LongType(), True),
    ]
)

# Messages reconciled in earlier runs. `positions` is optional on input (derived from topic,
# partition and offsets when absent) and always written by ledger_update.
LEDGER = StructType(
    [
        StructField("message_id", StringType(), False),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("first_offset", LongType(), True),
        StructField("offsets", ArrayType(LongType()), False),
        StructField("sink_count", LongType(), False),
        StructField("first_run_id", StringType(), False),
        StructField("verdict", StringType(), False),
        StructField("positions", POSITIONS, False),
        # a lost message's record time and a pending one's first sink row time (RESULT's
        # record_time_ms and sink_time_ms); optional on input
        StructField("record_time_ms", LongType(), True),
        StructField("sink_time_ms", LongType(), True),
        # a pending message a run read as a committed record (below the last stable offset):
        # once that record is gone (compacted away), it is judged from that read; optional on
        # input (RESULT's committed_seen)
        StructField("committed_seen", BooleanType(), True),
    ]
)

# Records seen only by a read_uncommitted pass over the window: aborted transactions.
UNCOMMITTED = StructType(
    [
        StructField("message_id", StringType(), True),
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
    ]
)

# Records of the pipeline's dead-letter and retry topics (diverted: declared), as
# recon.read.dead_letters reads them: where each is, its original's coordinates from its headers
# (null without them) and error text, and the messageId it carries.
DEAD_LETTERS = StructType(
    [
        StructField("message_id", StringType(), True),
        StructField("dl_topic", StringType(), False),
        StructField("dl_partition", IntegerType(), False),
        StructField("dl_offset", LongType(), False),
        StructField("orig_topic", StringType(), True),
        StructField("orig_partition", IntegerType(), True),
        StructField("orig_offset", LongType(), True),
        StructField("error", StringType(), True),
    ]
)

# Partitions whose window starts below the log-start offset: [from_offset, log_start_offset)
# is gone.
UNVERIFIABLE = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("from_offset", LongType(), False),
        StructField("log_start_offset", LongType(), False),
    ]
)

# One row per message (or per invalid record / sink row, or per unverifiable partition).
RESULT = StructType(
    [
        StructField("verdict", StringType(), False),
        StructField("message_id", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offsets", ArrayType(LongType()), False),
        StructField("first_offset", LongType(), True),
        StructField("sink_count", LongType(), False),
        StructField("sink_keys", ArrayType(StringType()), False),
        StructField("topic_duplicate", BooleanType(), False),
        StructField("detail", StringType(), True),
        # only for a message at more than one position (they may span partitions); null when
        # topic, partition and offsets say where the message is
        StructField("positions", POSITIONS, True),
        # sink row time minus record timestamp, when the run knows both (sink.time_column)
        StructField("latency_ms", LongType(), True),
        # a lost message's record timestamp, and a pending message's first sink row time (ms
        # since the epoch; sink.time_column declared): kept in the ledger, so that the run that
        # judges the message with its sink row, or with its record, measures its latency
        StructField("record_time_ms", LongType(), True),
        StructField("sink_time_ms", LongType(), True),
        # a pending message: a run read a committed record of it (kept in the ledger)
        StructField("committed_seen", BooleanType(), True),
    ]
)

COUNTS = StructType(
    [
        StructField("verdict", StringType(), False),
        StructField("count", LongType(), False),
    ]
)
