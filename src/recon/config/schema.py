"""The schema of one pipeline's declaration, checked by pydantic.

Each model below is what one mapping of the YAML may hold; ``extra="forbid"`` refuses unknown
keys and ``strict=True`` refuses values of the wrong type (``"120"`` for a number, ``yes`` for a
count, ``1`` for a boolean) instead of converting them. Checks pydantic has no word for are
small validators on the reusable types of :mod:`recon.config.types` (``Text``,
``ConnectionId``, ``Ratio`` ...). Every error pydantic
reports keeps the key path it happened at; :mod:`recon.config.explain` words them.

A few checks read another key of the pipeline (a tolerance the claimed semantic forbids,
``latency`` without ``sink.time_column``, ``tolerances.max_late_ratio`` without ``latency``,
``tolerances.max_mismatched_ratio`` without ``payload``, ``max_out_of_order_ratio`` without
``order``):
:func:`recon.config.explain.validation_context` reads those keys from the raw declaration and
pydantic hands them to the validators, so each check runs even when other keys are wrong.

A valid declaration becomes the plain values of :mod:`recon.config.model`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from recon.config.checks import LatencyDecl, OrderDecl, PayloadDecl
from recon.config.diversions_decl import DivertedDecl, ExpectDecl
from recon.config.model import (
    INCREMENTAL_WAYS,
    NOTIFIERS,
    SINK_KINDS,
    AlertRoute,
    KafkaSource,
    PipelineConfig,
    SinkSpec,
    Tolerances,
)
from recon.config.problems import invalid, kind_of
from recon.config.repair_decl import RepairDecl
from recon.config.source_decl import SourceDecl
from recon.config.types import (
    PIPELINE_NAME_RE,
    ConnectionId,
    Count,
    Days,
    Declaration,
    Engine,
    MessageIdDecl,
    Notifier,
    Ratio,
    Schedule,
    Semantics,
    StartOffsets,
    Table,
    Tags,
    Text,
    Topic,
    context,
    mapping_not_null,
)

__all__ = [
    "PIPELINE_NAME_RE", "AlertRouteDecl", "KafkaDecl", "LatencyDecl", "MessageIdDecl",
    "OrderDecl", "PayloadDecl", "PipelineDecl", "SinkDecl", "TolerancesDecl",
]  # fmt: skip


class KafkaDecl(Declaration):
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


class SinkDecl(Declaration):
    """The ``sink:`` mapping. A null ``ingest_seq_column`` or ``time_column`` is the same as
    leaving it out. ``kind: kafka`` makes a topic the sink (``topic`` and ``message_id``, as
    ``kafka:`` has them, instead of ``table`` and ``message_id_column``); ``kind`` comes first,
    so the keys of each kind are checked against it."""

    kind: Text = "postgres"
    connection: ConnectionId
    table: Table | None = Field(default=None, validate_default=True)
    message_id_column: Text | None = Field(default=None, validate_default=True)
    ingest_seq_column: Text | None = None
    time_column: Text | None = None
    keep_first_by: Text | None = None
    incremental: Text | None = None
    topic: Topic | None = Field(default=None, validate_default=True)
    message_id: MessageIdDecl | None = Field(default=None, validate_default=True)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in SINK_KINDS:
            raise invalid(f"expected one of {', '.join(SINK_KINDS)}, got {value!r}")
        return value

    @field_validator("table", "message_id_column", "topic", "message_id")
    @classmethod
    def _key_of_its_kind(cls, value: Any, info: ValidationInfo) -> Any:
        # An unknown kind is reported at sink.kind alone.
        kind = info.data.get("kind")
        if kind is None:
            return value
        own = info.field_name in _SINK_KEYS[kind]
        if own and value is None:
            raise invalid(f"missing required key (a {kind} sink names its {info.field_name})")
        if not own and value is not None:
            other = "kafka" if kind == "postgres" else "postgres"
            raise invalid(
                f"belongs to a {other} sink (kind: {other}); this sink is kind: {kind}: "
                "remove it, or set the kind"
            )
        return value

    @field_validator("ingest_seq_column", "time_column", "keep_first_by", "incremental")
    @classmethod
    def _table_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("kind") == "kafka":
            raise invalid(
                "applies to a PostgreSQL table only: a kafka sink's records are read by their "
                "offsets and timestamps; remove it"
            )
        return value

    @field_validator("incremental")
    @classmethod
    def _incremental_way(cls, value: str | None, info: ValidationInfo) -> str | None:
        # One way per pipeline: a sequence says itself which rows are new.
        if value is None:
            return value
        if value not in INCREMENTAL_WAYS:
            raise invalid(f"expected one of {', '.join(INCREMENTAL_WAYS)}, got {value!r}")
        if info.data.get("ingest_seq_column") is not None:
            raise invalid(
                "applies only to a sink without ingest_seq_column (the sequence says which rows "
                "are new): remove one of them"
            )
        return value

    def spec(self) -> SinkSpec:
        """The validated value (a kafka sink's ``table`` and ``message_id_column`` empty)."""
        pg = self.model_dump(exclude={"table", "message_id_column", "message_id"})
        return SinkSpec(
            table=self.table or "",
            message_id_column=self.message_id_column or "",
            message_id=self.message_id.spec() if self.message_id is not None else None,
            **pg,
        )


#: The keys only one kind of sink has.
_SINK_KEYS = {
    "postgres": frozenset({"table", "message_id_column"}),
    "kafka": frozenset({"topic", "message_id"}),
}


#: How an error names what a ratio tolerates.
_RATIO_NOUNS = {
    "max_loss_ratio": "loss",
    "max_duplicate_ratio": "duplicates",
    "max_late_ratio": "late deliveries",
    "max_mismatched_ratio": "mismatched deliveries",
    "max_out_of_order_ratio": "stale overwrites",
    "max_unpublished_ratio": "unpublished messages",
    "max_diverted_ratio": "diverted messages",
}


#: The block a pipeline declares for a ratio's verdict to exist at all.
_RATIO_BLOCKS = {
    "max_mismatched_ratio": "payload",
    "max_out_of_order_ratio": "order",
    "max_unpublished_ratio": "source",
    "max_diverted_ratio": "diverted",
}


class TolerancesDecl(Declaration):
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
    max_out_of_order_ratio: Ratio = 0.0
    max_unpublished_ratio: Ratio = 0.0
    max_diverted_ratio: Ratio = 1.0

    @field_validator(
        "max_loss_ratio", "max_duplicate_ratio", "max_late_ratio", "max_mismatched_ratio",
        "max_out_of_order_ratio", "max_unpublished_ratio", "max_diverted_ratio",
    )  # fmt: skip
    @classmethod
    def _ratio_allowed(cls, value: float, info: ValidationInfo) -> float:
        # Which semantic may tolerate which ratio is the contract's to say (recon.contract.table).
        from recon.contract.table import CONTRACT, Allowance

        semantics = context(info).get("semantics")
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
        if value > 0 and context(info).get("latency") is False:
            raise invalid(
                "has no effect without latency: declare latency.max_seconds (with "
                "sink.time_column), or remove it"
            )
        return value

    @field_validator(
        "max_mismatched_ratio", "max_out_of_order_ratio", "max_unpublished_ratio",
        "max_diverted_ratio",
    )  # fmt: skip
    @classmethod
    def _needs_its_block(cls, value: float, info: ValidationInfo) -> float:
        # As for max_late_ratio: without the block that makes the verdict, no message ever has
        # it, and the ratio would silently allow nothing.
        block = _RATIO_BLOCKS[str(info.field_name)]
        if value > 0 and context(info).get(block) is False:
            raise invalid(f"has no effect without {block}: declare {block}, or remove it")
        return value

    def values(self) -> Tolerances:
        """The validated value."""
        return Tolerances(**self.model_dump())


class AlertRouteDecl(Declaration):
    """One item of the ``alerts:`` list: a notifier and the Airflow connection it sends
    through (never a URL or a token: those stay in the connection)."""

    notifier: Notifier = Field(description=f"one of {', '.join(NOTIFIERS)}")
    connection: ConnectionId = Field(
        description="the Airflow connection id the notifier sends through"
    )

    def route(self) -> AlertRoute:
        """The validated value."""
        return AlertRoute(self.notifier, self.connection)


_ROUTE_SHAPE = "{notifier: slack, connection: <connection id>}"


def _routes_shape(value: Any) -> Any:
    # An empty list would silence a pipeline's alerts without saying so, and null reads like
    # "the defaults" but is more likely a half-written list: both are refused, absence is not.
    if not isinstance(value, list):
        raise invalid(f"expected a list of {_ROUTE_SHAPE}, got {kind_of(value)}")
    if not value:
        raise invalid(
            f"expected at least one {_ROUTE_SHAPE}; leave alerts out for the default routes "
            "(webhook and email)"
        )
    return value


def _distinct_routes(routes: list[AlertRouteDecl]) -> list[AlertRouteDecl]:
    # Each route is one row of recon.alerts: the same route twice would be one delivery that
    # the file claims is two.
    first: dict[tuple[str, str], int] = {}
    for index, decl in enumerate(routes):
        key = (decl.notifier, decl.connection)
        if key in first:
            raise invalid(
                f"alerts[{index}] repeats alerts[{first[key]}] (notifier {key[0]}, connection "
                f"{key[1]}): declare each route once"
            )
        first[key] = index
    return routes


class PipelineDecl(Declaration):
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
    order: Annotated[OrderDecl | None, BeforeValidator(mapping_not_null)] = None
    idempotent_producer: bool = False
    catchup: bool = False
    retries: Count = 2
    retention_days: Days | None = Field(
        default=None, description="days a run is kept before the DAG's prune task removes it"
    )
    tags: Tags = ()
    alerts: Annotated[
        list[AlertRouteDecl] | None,
        BeforeValidator(_routes_shape),
        AfterValidator(_distinct_routes),
    ] = None
    repair: Annotated[RepairDecl | None, BeforeValidator(mapping_not_null)] = None
    source: Annotated[SourceDecl | None, BeforeValidator(mapping_not_null)] = None
    expect: Annotated[ExpectDecl | None, BeforeValidator(mapping_not_null)] = None
    diverted: Annotated[DivertedDecl | None, BeforeValidator(mapping_not_null)] = None
    flow: Text | None = Field(
        default=None, description="the flow this pipeline is a hop of (recon.config.flows)"
    )

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
            order=self.order.spec() if self.order is not None else None,
            idempotent_producer=self.idempotent_producer,
            catchup=self.catchup,
            retries=self.retries,
            retention_days=self.retention_days,
            tags=self.tags,
            engine=self.engine,
            alerts=tuple(r.route() for r in self.alerts or ()),
            repair=self.repair.spec() if self.repair is not None else None,
            source=(
                self.source.spec(self.kafka.message_id.spec()) if self.source is not None else None
            ),
            expect=self.expect.spec() if self.expect is not None else None,
            diverted=self.diverted.spec() if self.diverted is not None else None,
            flow=self.flow,
        )
