"""The schema of one pipeline's declaration, checked by pydantic.

Each model below is what one mapping of the YAML may hold; ``extra="forbid"`` refuses unknown
keys and ``strict=True`` refuses values of the wrong type (``"120"`` for a number, ``yes`` for a
count, ``1`` for a boolean) instead of converting them. Checks pydantic has no word for are
small validators on the reusable types of :mod:`recon.config.types` (``Text``,
``ConnectionId``, ``Ratio`` ...). Every error pydantic
reports keeps the key path it happened at; :mod:`recon.config.explain` words them.

A few checks read another key of the pipeline (a tolerance the claimed semantic forbids,
``latency`` without ``sink.time_column``, ``tolerances.max_late_ratio`` without ``latency``,
``tolerances.max_mismatched_ratio`` without ``payload``):
:func:`recon.config.explain.validation_context` reads those keys from the raw declaration and
pydantic hands them to the validators, so each check runs even when other keys are wrong.

A valid declaration becomes the plain values of :mod:`recon.config.model`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from recon.config.model import (
    MESSAGE_ID_KINDS,
    KafkaSource,
    LatencySpec,
    MessageIdSpec,
    PayloadSpec,
    PipelineConfig,
    SinkSpec,
    Tolerances,
)
from recon.config.problems import invalid
from recon.config.types import (
    PIPELINE_NAME_RE,
    ConnectionId,
    Count,
    Engine,
    IdName,
    Ratio,
    RecordKey,
    Schedule,
    Seconds,
    Semantics,
    StartOffsets,
    Table,
    Tags,
    Text,
    Topic,
    mapping_not_null,
)

__all__ = ["PIPELINE_NAME_RE", "PipelineDecl"]


class _Declaration(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class MessageIdDecl(_Declaration):
    """``{header: name}``, ``{json_field: name}`` or ``{key: true}``: exactly one of them."""

    header: IdName = None
    json_field: IdName = None
    key: RecordKey = None

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        expected = f"expected one of {', '.join(MESSAGE_ID_KINDS)}"
        if not isinstance(data, dict) or not data:
            raise invalid(f"{expected}, as a mapping such as {{header: message_id}}")
        unknown = [str(k) for k in data if k not in MESSAGE_ID_KINDS]
        if unknown:
            raise invalid(f"{expected}, got {', '.join(unknown)}")
        if len(data) > 1:
            raise invalid(f"{expected} (exactly one), got {', '.join(map(str, data))}")
        return data

    def spec(self) -> MessageIdSpec:
        """The validated value."""
        if self.key:
            return MessageIdSpec("key", None)
        if self.header is not None:
            return MessageIdSpec("header", self.header)
        return MessageIdSpec("json_field", self.json_field)


class KafkaDecl(_Declaration):
    """The ``kafka:`` mapping. ``start_offsets: earliest`` is kept as the word it is."""

    connection: ConnectionId
    topic: Topic
    consumer_group: Text
    message_id: MessageIdDecl
    start_offsets: StartOffsets = None
    _earliest: bool = PrivateAttr(default=False)

    @model_validator(mode="wrap")
    @classmethod
    def _earliest_by_name(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> KafkaDecl:
        earliest = isinstance(data, dict) and data.get("start_offsets") == "earliest"
        decl: KafkaDecl = handler({**data, "start_offsets": None} if earliest else data)
        decl._earliest = earliest
        return decl

    def source(self) -> KafkaSource:
        """The validated value."""
        start: str | MappingProxyType[int, int] | None = None
        if self._earliest:
            start = "earliest"
        elif self.start_offsets is not None:
            start = MappingProxyType(self.start_offsets)
        return KafkaSource(
            self.connection, self.topic, self.consumer_group, self.message_id.spec(), start
        )


def _context(info: ValidationInfo) -> dict[str, Any]:
    return info.context if isinstance(info.context, dict) else {}


class SinkDecl(_Declaration):
    """The ``sink:`` mapping. A null ``ingest_seq_column`` or ``time_column`` is the same as
    leaving it out."""

    connection: ConnectionId
    table: Table
    message_id_column: Text
    ingest_seq_column: Text | None = None
    time_column: Text | None = None

    def spec(self) -> SinkSpec:
        """The validated value."""
        return SinkSpec(**self.model_dump())


class LatencyDecl(_Declaration):
    """The ``latency:`` mapping: the bound past which a delivered message is ``late``. It is
    measured from ``sink.time_column``, so it is refused without one (it would judge nothing)."""

    max_seconds: Seconds = Field(
        description="the bound in seconds: a message delivered later than this is late"
    )

    @model_validator(mode="after")
    def _needs_time_column(self, info: ValidationInfo) -> LatencyDecl:
        # Only a time column known to be absent is refused: None means the sink mapping itself
        # is wrong, and that is reported at 'sink'.
        if _context(info).get("time_column") is False:
            raise invalid(
                "needs sink.time_column (the sink column that holds when the consumer wrote "
                "each row): without it there is no latency to bound"
            )
        return self

    def spec(self) -> LatencySpec:
        """The validated value."""
        return LatencySpec(self.max_seconds)


class PayloadDecl(_Declaration):
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


#: How an error names what a ratio tolerates.
_RATIO_NOUNS = {
    "max_loss_ratio": "loss",
    "max_duplicate_ratio": "duplicates",
    "max_late_ratio": "late deliveries",
    "max_mismatched_ratio": "mismatched deliveries",
}


class TolerancesDecl(_Declaration):
    """The ``tolerances:`` mapping. A tolerance the claimed semantic forbids is refused: the
    contract would ignore it, which is a misunderstanding worth stopping for. The semantic comes
    in the validation context (``{"semantics": ...}``), so the check runs even when other keys of
    the pipeline are wrong."""

    max_loss_ratio: Ratio = 0.0
    max_duplicate_ratio: Ratio = 0.0
    max_unverifiable: Count = 0
    max_invalid: Count = 0
    max_late_ratio: Ratio = 0.0
    max_mismatched_ratio: Ratio = 0.0

    @field_validator(
        "max_loss_ratio", "max_duplicate_ratio", "max_late_ratio", "max_mismatched_ratio"
    )
    @classmethod
    def _ratio_allowed(cls, value: float, info: ValidationInfo) -> float:
        # Which semantic may tolerate which ratio is the contract's to say (recon.contract.table).
        from recon.contract.table import CONTRACT, Allowance

        semantics = _context(info).get("semantics")
        if value <= 0 or semantics not in CONTRACT:
            return value
        field = info.field_name
        may = [
            name for name, rules in CONTRACT.items()
            if any(r.allowance is Allowance.RATIO and r.tolerance == field for r in rules.values())
        ]  # fmt: skip
        if semantics not in may:
            what = _RATIO_NOUNS.get(str(field), str(field))
            # A tolerance no semantic has a ratio for must still say so, not "only  may".
            others = f"only {' or '.join(may)} may" if may else "no semantic tolerates it"
            raise invalid(f"{semantics} forbids {what}: {others}")
        return value

    @field_validator("max_late_ratio")
    @classmethod
    def _late_needs_latency(cls, value: float, info: ValidationInfo) -> float:
        # Without a bound no message is ever late: the ratio would silently allow nothing. 0 is
        # what leaving it out means, so it is not refused (a shared YAML anchor may carry it).
        if value > 0 and _context(info).get("latency") is False:
            raise invalid(
                "has no effect without latency: declare latency.max_seconds (with "
                "sink.time_column), or remove it"
            )
        return value

    @field_validator("max_mismatched_ratio")
    @classmethod
    def _mismatched_needs_payload(cls, value: float, info: ValidationInfo) -> float:
        # As for max_late_ratio: without a comparison no message is ever mismatched.
        if value > 0 and _context(info).get("payload") is False:
            raise invalid("has no effect without payload: declare payload, or remove it")
        return value

    def values(self) -> Tolerances:
        """The validated value."""
        return Tolerances(**self.model_dump())


class PipelineDecl(_Declaration):
    """One entry under ``pipelines:``; its key order is the order error messages list them."""

    engine: Engine = "spark"
    semantics: Semantics
    schedule: Schedule = Field(description="a cron expression, a preset, or null")
    settle_seconds: Count
    kafka: KafkaDecl
    sink: SinkDecl
    tolerances: TolerancesDecl = Field(default_factory=TolerancesDecl)
    latency: Annotated[LatencyDecl | None, BeforeValidator(mapping_not_null)] = None
    payload: Annotated[PayloadDecl | None, BeforeValidator(mapping_not_null)] = None
    idempotent_producer: bool = False
    catchup: bool = False
    retries: Count = 2
    tags: Tags = ()

    def config(self, name: str) -> PipelineConfig:
        """The validated pipeline.

        :param name: its name (the key under ``pipelines:``).
        """
        return PipelineConfig(
            name=name,
            semantics=self.semantics,
            schedule=self.schedule,
            settle_seconds=self.settle_seconds,
            kafka=self.kafka.source(),
            sink=self.sink.spec(),
            tolerances=self.tolerances.values(),
            latency=self.latency.spec() if self.latency is not None else None,
            payload=self.payload.spec() if self.payload is not None else None,
            idempotent_producer=self.idempotent_producer,
            catchup=self.catchup,
            retries=self.retries,
            tags=self.tags,
            engine=self.engine,
        )
