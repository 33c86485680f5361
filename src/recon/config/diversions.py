"""Records that leave a pipeline on purpose, as declared: which records the sink is expected to
hold (``expect:``, a predicate; the others are ``excluded``) and where the consumer sends the
records it does not write (``diverted:``, dead-letter and retry topics; a record found there and
not in the sink is ``diverted``, not ``lost``).

Plain frozen values, like :mod:`recon.config.model` (which holds them on
``PipelineConfig``); :mod:`recon.config.diversions_decl` validates the YAML into them. This module
imports nothing of ``recon``, so the model may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Where a predicate reads a record's value from.
FIELD_KINDS: tuple[str, ...] = ("json_field", "header", "key")
#: A leaf of a predicate: the field's value is one of ``values`` (``in``), none of them
#: (``not_in``), or the field is there at all (``present``, ``absent``).
LEAF_OPS: tuple[str, ...] = ("in", "not_in", "present", "absent")
#: A predicate made of others.
GROUP_OPS: tuple[str, ...] = ("all", "any", "not")


@dataclass(frozen=True)
class FieldRef:
    """A value of a record a predicate reads: a top-level JSON field of the value, a header
    (its first occurrence), or the Kafka key; as text (a JSON number or boolean as it is
    written, a header or key decoded as UTF-8).

    :param kind: one of :data:`FIELD_KINDS`.
    :param name: the field or header name; None for the key.
    """

    kind: str
    name: str | None = None

    @property
    def label(self) -> str:
        """How a detail or an error names it: ``type``, ``header region``, ``key``."""
        if self.kind == "key":
            return "key"
        return f"header {self.name}" if self.kind == "header" else str(self.name)


@dataclass(frozen=True)
class Predicate:
    """Which records the pipeline's sink is expected to hold. A leaf compares one field
    (:data:`LEAF_OPS`); a group combines predicates (:data:`GROUP_OPS`; ``not`` has one item).

    An absent field (no such JSON field, a JSON null, a value that is no JSON object, no such
    header, a null key) is in no list: ``in`` is false for it, ``not_in`` true.

    :param op: one of :data:`LEAF_OPS` or :data:`GROUP_OPS`.
    :param field: the field a leaf reads.
    :param values: the texts an ``in`` / ``not_in`` leaf compares with.
    :param items: a group's predicates.
    """

    op: str
    field: FieldRef | None = None
    values: tuple[str, ...] = ()
    items: tuple[Predicate, ...] = ()

    def fields(self) -> tuple[FieldRef, ...]:
        """Every field the predicate reads, once each, in the order it names them: the order
        of ``records.expect_fields``."""
        found: list[FieldRef] = []

        def walk(p: Predicate) -> None:
            if p.field is not None and p.field not in found:
                found.append(p.field)
            for item in p.items:
                walk(item)

        walk(self)
        return tuple(found)


#: How a dead-letter record names its original, by convention: the headers holding the
#: original's topic, partition, offset and the error text. Spring Kafka's
#: ``DeadLetterPublishingRecoverer`` writes the first (partition and offset as 4- and 8-byte
#: big-endian integers); Kafka Connect's ``errors.deadletterqueue.context.headers.enable``
#: the second (as text).
PRESETS: dict[str, tuple[str, str, str, str]] = {
    "spring": (
        "kafka_dlt-original-topic",
        "kafka_dlt-original-partition",
        "kafka_dlt-original-offset",
        "kafka_dlt-exception-message",
    ),
    "connect": (
        "__connect.errors.topic",
        "__connect.errors.partition",
        "__connect.errors.offset",
        "__connect.errors.exception.message",
    ),
}
#: The naming without headers: the dead-letter record carries the original's messageId where
#: the original does (``kafka.message_id``).
BY_MESSAGE_ID = "message_id"


@dataclass(frozen=True)
class OriginalHeaders:
    """The headers of a dead-letter record that name its original record.

    :param topic: the original's topic.
    :param partition: its partition (text, or a 4-byte big-endian integer).
    :param offset: its offset (text, or an 8-byte big-endian integer).
    :param error: the error text (None: none kept).
    """

    topic: str
    partition: str
    offset: str
    error: str | None = None


@dataclass(frozen=True)
class DivertedSpec:
    """The topics a consumer sends the records it does not write to (dead-letter topics, retry
    topics), and how their records name the originals.

    :param topics: the dead-letter and retry topics, in the order declared.
    :param connection: the Airflow connection of their Kafka cluster (None: ``kafka.connection``).
    :param naming: the preset or way a record names its original (``spring``, ``connect``,
        ``headers``, ``message_id``).
    :param headers: the headers naming the original (None: by messageId only).
    """

    topics: tuple[str, ...]
    connection: str | None = None
    naming: str = "spring"
    headers: OriginalHeaders | None = None
