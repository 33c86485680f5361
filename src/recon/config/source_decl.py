"""The ``source:`` declaration: what the messages were before they reached the pipeline's topic,
the third party of a three-way reconciliation. Either the table the application writes each
message to before it is published (a transactional outbox), or an upstream Kafka topic."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from recon.config.model import MessageIdSpec, SourceSpec
from recon.config.problems import invalid
from recon.config.types import (
    ConnectionId,
    Declaration,
    MessageIdDecl,
    Seconds,
    Table,
    Text,
    Topic,
)

#: The keys only a table source takes, the ones it needs, and the one only a topic source takes.
_TABLE_KEYS = ("table", "message_id_column", "time_column", "key_column")
_TABLE_NEEDS = ("table", "message_id_column", "time_column")
_TOPIC_KEYS = ("topic", "message_id")


class SourceDecl(Declaration):
    """The ``source:`` mapping: ``table`` with its columns, or ``topic``."""

    connection: ConnectionId = Field(
        description="the Airflow connection id of the source's database (table) or Kafka "
        "cluster (topic)"
    )
    table: Table | None = Field(default=None, description="the outbox table: schema.table or table")
    message_id_column: Text | None = Field(
        default=None, description="the table's column holding the messageId"
    )
    time_column: Text | None = Field(
        default=None,
        description="when the row was written (timestamp or timestamptz): rows younger than "
        "settle_seconds wait for the next run",
    )
    key_column: Text | None = Field(
        default=None, description="what names a row in findings (default: the messageId)"
    )
    topic: Topic | None = Field(
        default=None, description="an upstream topic a stage copies to the pipeline's topic"
    )
    message_id: MessageIdDecl | None = Field(
        default=None,
        description="where the upstream topic's records carry the messageId (default: "
        "kafka.message_id)",
    )
    horizon_hours: Seconds = Field(
        default=168.0,
        description="how many hours back each run reads the source (at least the topic's "
        "retention; for a topic source, at most that topic's retention)",
    )

    @model_validator(mode="before")
    @classmethod
    def _table_or_topic(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "topic" in data:
            wrong = [k for k in _TABLE_KEYS if k in data]
            if wrong:
                raise invalid(
                    f"declares topic and {', '.join(wrong)}: a source is an upstream topic "
                    "(topic, message_id) or an outbox table (table, message_id_column, "
                    "time_column, key_column), not both"
                )
            return data
        wrong = [k for k in _TOPIC_KEYS if k in data]
        if wrong:
            raise invalid(f"{', '.join(wrong)}: only for a topic source (declare topic)")
        missing = [k for k in _TABLE_NEEDS if k not in data]
        if missing:
            raise invalid(
                f"missing required key(s) {', '.join(missing)}: a source is an outbox table "
                "(table, message_id_column, time_column) or an upstream topic (topic)"
            )
        return data

    def spec(self, pipeline_message_id: MessageIdSpec) -> SourceSpec:
        """The validated value.

        :param pipeline_message_id: the pipeline's ``kafka.message_id``: a topic source's
            records carry the messageId there unless it declares its own.
        """
        if self.topic is not None:
            found = self.message_id.spec() if self.message_id is not None else pipeline_message_id
            return SourceSpec(
                self.connection, horizon_hours=self.horizon_hours, topic=self.topic,
                message_id=found,
            )  # fmt: skip
        return SourceSpec(
            self.connection, self.table, self.message_id_column, self.time_column,
            self.key_column, self.horizon_hours,
        )  # fmt: skip
