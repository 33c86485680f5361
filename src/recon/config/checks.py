"""The declarations of the optional checks a pipeline may add to delivery: ``latency`` (the
verdict ``late``), ``payload`` (``mismatched``) and ``order`` (``out_of_order``)."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, model_validator

from recon.config.model import LatencySpec, MessageIdSpec, OrderSpec, PayloadSpec
from recon.config.problems import invalid
from recon.config.types import Declaration, IdName, MessageIdDecl, Seconds, Text, context


class LatencyDecl(Declaration):
    """The ``latency:`` mapping: the bound past which a delivered message is ``late``. It is
    measured from ``sink.time_column``, so it is refused without one (it would judge nothing)."""

    max_seconds: Seconds = Field(
        description="the bound in seconds: a message delivered later than this is late"
    )

    @model_validator(mode="after")
    def _needs_time_column(self, info: ValidationInfo) -> LatencyDecl:
        # Only a time column known to be absent is refused: None means the sink mapping itself
        # is wrong, and that is reported at 'sink'.
        if context(info).get("time_column") is False:
            raise invalid(
                "needs sink.time_column (the sink column that holds when the consumer wrote "
                "each row): without it there is no latency to bound"
            )
        return self

    def spec(self) -> LatencySpec:
        """The validated value."""
        return LatencySpec(self.max_seconds)


class PayloadDecl(Declaration):
    """The ``payload:`` mapping: how a delivered message's content is compared with its sink row,
    exactly one of ``fields`` (``{json field of the record value: sink column}``) and
    ``sha256_column`` (the sink column where the consumer wrote the hex SHA-256 of the record's
    raw value bytes)."""

    fields: dict[Text, Text] | None = Field(
        default=None, description="JSON fields of the record value and their sink columns"
    )
    sha256_column: Text | None = Field(
        default=None, description="the sink column holding the hex SHA-256 of the raw value"
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> PayloadDecl:
        if (self.fields is None) == (self.sha256_column is None):
            raise invalid(
                "expected exactly one of fields ({json field: sink column}) and sha256_column"
            )
        if self.fields is not None and not self.fields:
            raise invalid("fields: expected at least one {json field: sink column}")
        return self

    def spec(self) -> PayloadSpec:
        """The validated value."""
        return PayloadSpec(tuple((self.fields or {}).items()), self.sha256_column)


class OrderDecl(Declaration):
    """The ``order:`` mapping: an upsert sink and where each side keeps a key's order. The
    record's key defaults to the Kafka record key; its position to its Kafka offset."""

    record_key: MessageIdDecl | None = Field(
        default=None,
        description="where a record's upsert key is: {json_field: name}, {header: name} or "
        "{key: true}",
    )
    key_column: Text = Field(description="the sink column holding the key (one row per key)")
    position_column: Text = Field(
        description="the sink column holding the position of the record the row was written from"
    )
    version_field: IdName = Field(
        default=None,
        description="a JSON field of the value holding the record's version (default: its offset)",
    )

    def spec(self) -> OrderSpec:
        """The validated value."""
        key = self.record_key.spec() if self.record_key is not None else MessageIdSpec("key")
        return OrderSpec(key, self.key_column, self.position_column, self.version_field)
