"""What a declared pipeline is once validated: plain frozen values the rest of the package reads.

These classes know nothing about YAML or validation (that is :mod:`recon.config.schema`); code
and tests may build them directly, and ``dataclasses.replace`` works on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from recon.config.diversions import DivertedSpec, Predicate

#: ``spark`` (any size, any cluster) or ``local`` (one machine, no JVM:
#: ``recon.engines.local_run``).
ENGINES: tuple[str, ...] = ("spark", "local")
#: Where a record's messageId may live.
MESSAGE_ID_KINDS: tuple[str, ...] = ("header", "json_field", "key")
#: Where an alert may go (``recon.alert.transport`` sends each): a Slack incoming webhook, a
#: generic webhook (Slack-compatible JSON), an email.
NOTIFIERS: tuple[str, ...] = ("slack", "webhook", "email")
#: How a sink without an ingest sequence may be read each run (``sink.incremental``).
INCREMENTAL_WAYS: tuple[str, ...] = ("xmin", "full")
#: What a sink may be (``sink.kind``): a PostgreSQL table, or a Kafka topic (a hop's target).
SINK_KINDS: tuple[str, ...] = ("postgres", "kafka")


def split_table(table: str) -> tuple[str, str]:
    """``(schema, table)`` of a declared table (``public`` when it names none)."""
    if "." in table:
        schema, name = table.split(".", 1)
        return schema, name
    return "public", table


@dataclass(frozen=True)
class MessageIdSpec:
    """Where a record's messageId lives: a header, a top-level JSON field of the value, or the key.

    :param kind: ``header``, ``json_field`` or ``key``.
    :param name: the header or field name; ``None`` for ``key``.
    """

    kind: str
    name: str | None = None


@dataclass(frozen=True)
class KafkaSource:
    """The topic side: which connection, topic and consumer group, and how to find the id.

    ``start_offsets`` applies to the first run only: ``None`` or ``"earliest"`` (log start), or a
    read-only ``{partition: offset}`` mapping; partitions it does not name start at log start.
    """

    connection: str
    topic: str
    consumer_group: str
    message_id: MessageIdSpec
    start_offsets: str | Mapping[int, int] | None = None


@dataclass(frozen=True)
class SinkSpec:
    """The PostgreSQL side. Identifiers are quoted when used, so any non-empty name is allowed.

    A Kafka topic as the sink (``kind: kafka``, issue 73: a MirrorMaker 2 replica, a stream
    processor's output) has ``topic`` and ``message_id`` instead, and ``table`` and
    ``message_id_column`` empty: its records are the sink's rows.
    """

    connection: str
    table: str
    message_id_column: str
    ingest_seq_column: str | None = None
    #: When the consumer wrote the row (``timestamp``/``timestamptz``): with ``latency`` declared,
    #: each delivered message's latency is this minus the record's Kafka timestamp.
    time_column: str | None = None
    #: Which of a duplicated message's sink rows a repair keeps: the first by this column
    #: (default: ``ingest_seq_column``, else the primary key).
    keep_first_by: str | None = None
    #: How a sink without ``ingest_seq_column`` is read each run: ``xmin`` (the rows written
    #: since the previous run's snapshot), ``full`` (the whole table); None: the default
    #: (``recon.read.sink_copy.read_way``).
    incremental: str | None = None
    #: ``postgres`` (a table) or ``kafka`` (a topic: :data:`SINK_KINDS`).
    kind: str = "postgres"
    #: The target topic of a ``kafka`` sink, on the cluster of ``connection``.
    topic: str | None = None
    #: Where a ``kafka`` sink's records carry their messageId (as ``kafka.message_id``).
    message_id: MessageIdSpec | None = None

    @property
    def is_kafka(self) -> bool:
        """The sink is a Kafka topic (its records are the rows)."""
        return self.kind == "kafka"

    @property
    def keep_order(self) -> str | None:
        """The column a repair orders a message's rows by to keep the first (None: the key)."""
        return self.keep_first_by or self.ingest_seq_column

    @property
    def table_parts(self) -> tuple[str, str]:
        """``("schema", "table")`` (:func:`split_table`), ready for ``psycopg2.sql.Identifier``."""
        return split_table(self.table)


@dataclass(frozen=True)
class Tolerances:
    """What the contract lets pass: ratios of judged messages, absolute counts for the rest."""

    max_loss_ratio: float = 0.0
    max_duplicate_ratio: float = 0.0
    max_unverifiable: int = 0
    max_invalid: int = 0
    max_late_ratio: float = 0.0
    max_mismatched_ratio: float = 0.0
    max_out_of_order_ratio: float = 0.0
    max_unpublished_ratio: float = 0.0
    #: Records found in a dead-letter or retry topic and not in the sink (``diverted:``
    #: declared): 1 (any share) unless set; a lower ratio turns a flood of them into an alert.
    max_diverted_ratio: float = 1.0


@dataclass(frozen=True)
class LatencySpec:
    """The delivery-latency bound: a delivered message whose sink row came later than
    ``max_seconds`` after its record's Kafka timestamp is ``late``. Needs ``sink.time_column``."""

    max_seconds: float

    @property
    def max_ms(self) -> int:
        """The bound in whole milliseconds, as the rules compare it."""
        return round(self.max_seconds * 1000)


#: The hash a ``payload.sha256_column`` holds, as the detail of a ``mismatched`` row names it.
SHA256_FIELD = "value (SHA-256)"


@dataclass(frozen=True)
class PayloadSpec:
    """How a delivered message's content is compared with its sink row: each named JSON field of
    the record value with the sink column it lands in, or the hex SHA-256 of the record's raw
    value bytes with the sink column the consumer wrote it to. Exactly one of the two.

    :param fields: ``(json field, sink column)`` pairs, in the order the detail lists them.
    :param sha256_column: the sink column holding the hex SHA-256 of the raw value.
    """

    fields: tuple[tuple[str, str], ...] = ()
    sha256_column: str | None = None

    @property
    def compared(self) -> tuple[str, ...]:
        """What a ``mismatched`` row's detail names: the JSON fields, or the hashed value."""
        return (SHA256_FIELD,) if self.sha256_column else tuple(f for f, _ in self.fields)

    @property
    def columns(self) -> tuple[str, ...]:
        """The sink columns compared, in the order of :attr:`compared`."""
        return (self.sha256_column,) if self.sha256_column else tuple(c for _, c in self.fields)


@dataclass(frozen=True)
class OrderSpec:
    """An upsert sink (one row per key, rewritten on update) and where each side keeps the
    order of a key's records: the newest committed record of a key must be the one its sink row
    holds; an older one there is a stale overwrite (``out_of_order``).

    :param record_key: where a record's upsert key is (a JSON field of the value, a header, or
        the key).
    :param key_column: the sink column holding the key (one row per key).
    :param position_column: the sink column holding the position of the record the row was
        written from (an integer).
    :param version_field: the JSON field of the value holding the record's position (a version
        the producer set); None: the record's Kafka offset is its position.
    """

    record_key: MessageIdSpec
    key_column: str
    position_column: str
    version_field: str | None = None


@dataclass(frozen=True)
class SourceSpec:
    """The source side of a three-way reconciliation: what the messages were before they reached
    the pipeline's topic. Either a PostgreSQL table the application writes each message's row to
    before it is published (a transactional outbox), or an upstream Kafka topic a stage copies
    to the pipeline's topic (a mirror, a stream processor). A settled source message that no
    committed record of the topic carries is ``unpublished``.

    :param connection: the Airflow connection id of the source's database (a table) or Kafka
        cluster (a topic).
    :param table: ``schema.table`` or ``table`` (None: a topic source).
    :param message_id_column: the table's column holding the messageId.
    :param time_column: when the row was written (``timestamp``/``timestamptz``): a row is
        judged once it is older than the pipeline's ``settle_seconds``, and read while it is
        younger than ``horizon_hours``. A topic's records are timed by their Kafka timestamp.
    :param key_column: what names a row in findings (an ingest sequence or the primary key;
        default: the messageId). A topic's record is named ``topic/partition@offset``.
    :param horizon_hours: how far back each run reads the source: at least the longest a record
        may wait in the topic before the consumer group commits it (its retention); for a topic
        source, at most that topic's retention.
    :param topic: the upstream topic (None: a table source).
    :param message_id: where the upstream topic's records carry the messageId (for a topic
        source; the pipeline's ``kafka.message_id`` unless declared).
    """

    connection: str
    table: str | None = None
    message_id_column: str | None = None
    time_column: str | None = None
    key_column: str | None = None
    horizon_hours: float = 168.0
    topic: str | None = None
    message_id: MessageIdSpec | None = None

    @property
    def is_topic(self) -> bool:
        """Whether the source is an upstream Kafka topic (else an outbox table)."""
        return self.topic is not None

    @property
    def table_parts(self) -> tuple[str, str]:
        """``("schema", "table")`` (:func:`split_table`), ready for ``psycopg2.sql.Identifier``."""
        assert self.table is not None, "a topic source has no table"
        return split_table(self.table)

    @property
    def name(self) -> str:
        """How progress lines name the source: its table, or ``topic <name>``."""
        return f"topic {self.topic}" if self.topic is not None else str(self.table)


#: What of a record a sink column may get when a repair writes a lost message's row itself.
RECORD_FIELDS: tuple[str, ...] = (
    "message_id", "topic", "partition", "offset", "timestamp", "key", "value",
)  # fmt: skip


#: A repair plan deleting more sink rows than this, or a larger share of the sink table, is
#: applied only by a person (``recon repair apply --allow-over-bound``), never by the repair DAG.
DEFAULT_MAX_DELETES = 1000
DEFAULT_MAX_DELETE_RATIO = 0.1


@dataclass(frozen=True)
class RepairSpec:
    """How a repair writes a lost message's sink row from its record, and how much it may delete.

    :param sink_columns: ``(sink column, source, name)``: the source one of
        :data:`RECORD_FIELDS` (name None), or ``json_field`` / ``header`` with its name; empty:
        a repair replays records only.
    :param max_deletes: the most sink rows a plan deletes without a person's flag.
    :param max_delete_ratio: the largest share of the sink table it deletes without one.
    """

    sink_columns: tuple[tuple[str, str, str | None], ...] = ()
    max_deletes: int = DEFAULT_MAX_DELETES
    max_delete_ratio: float = DEFAULT_MAX_DELETE_RATIO


@dataclass(frozen=True)
class AlertRoute:
    """One place a pipeline's alerts go: a notifier and the Airflow connection it sends through
    (resolved when the alert is sent, so the file holds no credential).

    :param notifier: one of :data:`NOTIFIERS`.
    :param connection: the Airflow connection id.
    """

    notifier: str
    connection: str


@dataclass(frozen=True)
class PipelineConfig:
    """One declared pipeline; becomes one DAG and one reconciliation per scheduled run."""

    name: str
    semantics: str
    schedule: str | None
    settle_seconds: int
    kafka: KafkaSource
    sink: SinkSpec
    tolerances: Tolerances = field(default_factory=Tolerances)
    latency: LatencySpec | None = None
    payload: PayloadSpec | None = None
    order: OrderSpec | None = None
    idempotent_producer: bool = False
    catchup: bool = False
    retries: int = 2
    #: Runs that ended more than this many days ago are removed by the DAG's ``prune`` task
    #: (``recon.prune``); None: the DAG has no such task, ``recon prune`` does it by hand.
    retention_days: int | None = None
    tags: tuple[str, ...] = ()
    #: ``spark`` (any size, any cluster) or ``local`` (one machine, no JVM:
    #: ``recon.engines.local_run``).
    engine: str = "spark"
    #: Where a failed run's alerts go; empty: the default routes (``webhook`` and ``email`` on
    #: the connections of ``recon.settings``).
    alerts: tuple[AlertRoute, ...] = ()
    #: How a repair may write lost messages' sink rows itself, and how much it may delete
    #: (None: ``repair:`` not declared: replays only, the default bound).
    repair: RepairSpec | None = None
    #: The source the topic is fed from (None: a two-way reconciliation, topic and sink).
    source: SourceSpec | None = None
    #: Which records the sink is expected to hold (None: every one); the others are ``excluded``.
    expect: Predicate | None = None
    #: Where the consumer sends the records it does not write (None: nowhere); a record found
    #: there and not in the sink is ``diverted``.
    diverted: DivertedSpec | None = None
    #: The flow this pipeline is a hop of (``recon.config.flows``: the hops chain by topic).
    flow: str | None = None
