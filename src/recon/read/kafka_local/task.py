"""What one reader process is asked to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.config.diversions import FieldRef
from recon.read.ranges import OffsetRange


@dataclass(frozen=True)
class ReadTask:
    """One worker's share of a read: its ranges, and the Parquet file it writes (None: the
    records are handed on, as a Spark task hands them to Spark)."""

    config: dict[str, Any]
    ranges: tuple[OffsetRange, ...]
    isolation_level: str
    spec: MessageIdSpec
    path: str | None = None
    #: read each record's Kafka timestamp (a pipeline that declares ``sink.time_column``);
    #: otherwise the column stays null, saving a tuple per record.
    with_time: bool = False
    #: what of each value the pipeline compares with its sink rows (``records.payload``).
    payload: PayloadSpec | None = None
    #: where each record's upsert key and position are (``records.order_*``).
    order: OrderSpec | None = None
    #: the fields the pipeline's ``expect`` reads (``records.expect_fields``).
    expect: tuple[FieldRef, ...] = ()


def payload_json(payload: PayloadSpec | None) -> list[Any] | None:
    """``payload`` as a reader process receives it on its standard input (JSON)."""
    if payload is None:
        return None
    return [[list(pair) for pair in payload.fields], payload.sha256_column]


def payload_from_json(value: list[Any] | None) -> PayloadSpec | None:
    """The reverse of :func:`payload_json`."""
    if value is None:
        return None
    fields, sha256_column = value
    return PayloadSpec(tuple((str(f), str(c)) for f, c in fields), sha256_column)


def expect_json(fields: tuple[FieldRef, ...]) -> list[list[str | None]]:
    """The fields an ``expect`` reads as a reader process receives them (JSON)."""
    return [[f.kind, f.name] for f in fields]


def expect_from_json(value: list[Any] | None) -> tuple[FieldRef, ...]:
    """The reverse of :func:`expect_json`."""
    return tuple(FieldRef(str(kind), name) for kind, name in value or ())


def order_json(order: OrderSpec | None) -> list[Any] | None:
    """``order`` as a reader process receives it on its standard input (JSON)."""
    if order is None:
        return None
    key = order.record_key
    return [[key.kind, key.name], order.key_column, order.position_column, order.version_field]


def order_from_json(value: list[Any] | None) -> OrderSpec | None:
    """The reverse of :func:`order_json`."""
    if value is None:
        return None
    (kind, name), key_column, position_column, version_field = value
    return OrderSpec(MessageIdSpec(kind, name), key_column, position_column, version_field)
