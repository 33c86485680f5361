"""The ``source:`` declaration: the table the application writes each message to before it is
published (a transactional outbox), the third party of a three-way reconciliation."""

from __future__ import annotations

from pydantic import Field

from recon.config.model import SourceSpec
from recon.config.types import ConnectionId, Declaration, Seconds, Table, Text


class SourceDecl(Declaration):
    """The ``source:`` mapping."""

    connection: ConnectionId = Field(
        description="the Airflow connection id of the source's database"
    )
    table: Table = Field(description="the outbox table: schema.table or table")
    message_id_column: Text = Field(description="the column holding the messageId")
    time_column: Text = Field(
        description="when the row was written (timestamp or timestamptz): rows younger than "
        "settle_seconds wait for the next run"
    )
    key_column: Text | None = Field(
        default=None, description="what names a row in findings (default: the messageId)"
    )
    horizon_hours: Seconds = Field(
        default=168.0,
        description="how many hours back each run reads the source (at least the topic's "
        "retention)",
    )

    def spec(self) -> SourceSpec:
        """The validated value."""
        return SourceSpec(**self.model_dump())
