"""The schema of one pipeline's declaration, checked by pydantic.

Each model below is what one mapping of the YAML may hold; ``extra="forbid"`` refuses unknown
keys and ``strict=True`` refuses values of the wrong type (``"120"`` for a number, ``yes`` for a
count, ``1`` for a boolean) instead of converting them. Checks pydantic has no word for are
small validators on reusable types (``Text``, ``ConnectionId``, ``Ratio`` ...); they raise
:func:`~recon.config.problems.invalid` with the message the user reads. Every error pydantic
reports keeps the key path it happened at; :mod:`recon.config.explain` words them.

A few checks read another key of the pipeline (a tolerance the claimed semantic forbids,
``latency`` without ``sink.time_column``, ``tolerances.max_late_ratio`` without ``latency``):
:func:`recon.config.explain.validation_context` reads those keys from the raw declaration and
pydantic hands them to the validators, so each check runs even when other keys are wrong.

A valid declaration becomes the plain values of :mod:`recon.config.model`.
"""

from __future__ import annotations

import math
import re
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
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
    ENGINES,
    MESSAGE_ID_KINDS,
    KafkaSource,
    LatencySpec,
    MessageIdSpec,
    PipelineConfig,
    SinkSpec,
    Tolerances,
)
from recon.config.problems import invalid, kind_of
from recon.config.schedule import cron_problem
from recon.verdicts import SEMANTICS

# Airflow's own rule for connection ids and DAG ids (pipelines become DAGs).
ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,250}$")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
#: A pipeline name is a DAG id and a directory name under the data directory (its windows,
#: results and ledger): Airflow's rule, and no leading '.', so that '.' and '..' never name a
#: directory outside the pipeline's own.
PIPELINE_NAME_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,249}$")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise invalid("must not be empty")
    return value


def _connection_id(value: str) -> str:
    if not ID_RE.match(value):
        raise invalid(
            "expected an Airflow connection id (letters, digits, '_', '.', '-'), "
            "not a URI or credentials"
        )
    return value


def _topic(value: str) -> str:
    if not _TOPIC_RE.match(value):
        raise invalid("not a Kafka topic name (letters, digits, '.', '_', '-')")
    return value


def _table(value: str) -> str:
    # The dot always separates schema from table; each part is quoted later, so only emptiness
    # (which no quoting can rescue) is refused here.
    if value.count(".") > 1 or "" in value.split("."):
        raise invalid(f"expected 'table' or 'schema.table', got {value!r}")
    return value


def _one_of(allowed: tuple[str, ...]) -> BeforeValidator:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise invalid(f"expected one of {', '.join(allowed)}, got {value!r}")
        return value

    return BeforeValidator(check)


def _ratio(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"expected a number between 0 and 1, got {kind_of(value)}")
    if not 0 <= value <= 1:
        raise invalid(f"must be between 0 and 1, got {value}")
    return float(value)


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"expected a positive number of seconds, got {kind_of(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not 0 < seconds < math.inf:  # NaN and infinity too: no clock ever breaks such a bound
        raise invalid(f"must be a positive, finite number of seconds, got {value}")
    return seconds


def _mapping_not_null(value: Any) -> Any:
    # Applied before the nullable type: an explicit null is refused as for ``tolerances``,
    # absence is not.
    if value is None:
        raise invalid("expected a mapping, got null")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise invalid("expected a list of non-empty strings")
    return tuple(value)


def _schedule(value: str | None) -> str | None:
    problem = cron_problem(value) if value is not None else None
    if problem:
        raise invalid(problem)
    return value


def _name_not_null(value: Any) -> Any:
    # Applied before the nullable type so that an explicit null is refused, absence is not.
    if value is None:
        raise invalid("expected a string, got null")
    return value


def _record_key(value: Any) -> Any:
    if value is not True:
        raise invalid(f"expected true (the record key is the id), got {value!r}")
    return value


def _partition(value: Any) -> Any:
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid("a partition number must be a whole number, 0 or more")
    return value


def _offset(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"an offset must be a whole number, 0 or more, got {value!r}")
    return value


def _offsets_shape(value: Any) -> Any:
    if value is not None and (not isinstance(value, dict) or not value):
        raise invalid("expected 'earliest' or a mapping {partition: offset}")
    return value


#: A non-empty string (blank counts as empty).
Text = Annotated[str, AfterValidator(_not_blank)]
ConnectionId = Annotated[Text, AfterValidator(_connection_id)]
Topic = Annotated[Text, AfterValidator(_topic)]
Table = Annotated[Text, AfterValidator(_table)]
#: A whole number, 0 or more (a boolean or ``3.0`` is not one).
Count = Annotated[int, Field(ge=0)]
Ratio = Annotated[float, BeforeValidator(_ratio)]
#: A number of seconds, more than 0 and finite (a boolean or a string is not one).
Seconds = Annotated[float, BeforeValidator(_seconds)]
Semantics = Annotated[str, _one_of(SEMANTICS)]
Engine = Annotated[str, _one_of(ENGINES)]
Tags = Annotated[tuple[str, ...], BeforeValidator(_tags)]
Schedule = Annotated[str | None, AfterValidator(_schedule)]
IdName = Annotated[Text | None, BeforeValidator(_name_not_null)]
RecordKey = Annotated[bool | None, BeforeValidator(_record_key)]
Partition = Annotated[int, BeforeValidator(_partition)]
Offset = Annotated[int, BeforeValidator(_offset)]
StartOffsets = Annotated[dict[Partition, Offset] | None, BeforeValidator(_offsets_shape)]


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


#: How an error names what a ratio tolerates.
_RATIO_NOUNS = {
    "max_loss_ratio": "loss",
    "max_duplicate_ratio": "duplicates",
    "max_late_ratio": "late deliveries",
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

    @field_validator("max_loss_ratio", "max_duplicate_ratio", "max_late_ratio")
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
    latency: Annotated[LatencyDecl | None, BeforeValidator(_mapping_not_null)] = None
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
            idempotent_producer=self.idempotent_producer,
            catchup=self.catchup,
            retries=self.retries,
            tags=self.tags,
            engine=self.engine,
        )
