"""The messageId of each record read, or why it has none: :func:`extract_ids`, once for both
engines: the one reader (``recon.read.kafka_local.reader.read_tables``) calls it on each chunk,
in a local engine's reader process or a Spark task (``recon.read.kafka_spark.read_window``).

:func:`extract_ids` is pure (an Arrow table of raw records in, ``recon.model.schemas.WINDOW``
rows out) and is where bad input is quarantined: a record keeps its position and gets an
``invalid_reason`` instead of being dropped when its value is a tombstone, or its id is missing,
not UTF-8, a JSON object or array, empty or blank, longer than the limit, or holds a NUL
character (which PostgreSQL cannot store: the run's commit would refuse it, run after run).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.config.diversions import FieldRef
from recon.engines.duckdb_connection import connect
from recon.read.json_numbers import exact_fields

if TYPE_CHECKING:
    import pyarrow as pa

#: Longer ids are quarantined, a record's (here) and a sink row's (``01_checked_sink_rows.sql``)
#: alike: an id is a key, not a payload.
MAX_MESSAGE_ID_LENGTH = 512


def raw_schema() -> pa.Schema:
    """What a worker collects per record before extraction. A pipeline whose ``expect`` reads
    headers adds the column ``expect_headers`` (``list<binary>``: each header
    :func:`expect_headers` names, its first occurrence, or null)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("id_header", pa.binary()),  # the first header named as the id, when the id is one
            # the first header named as the upsert key, when the order check reads one
            ("key_header", pa.binary()),
        ]
    )


def window_schema() -> pa.Schema:
    """``recon.model.schemas.WINDOW`` as Arrow."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("message_id", pa.string()),
            ("invalid_reason", pa.string()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("payload", pa.list_(pa.string())),
            ("order_key", pa.string()),
            ("order_position", pa.int64()),
            ("expect_fields", pa.list_(pa.string())),
        ]
    )


def write_empty_part(directory: str) -> None:
    """A window part without records: ``directory`` (replaced if it exists) holding one Parquet
    file of :func:`window_schema` and no row, written without a reader or a Spark job."""
    import shutil

    import pyarrow.parquet as pq

    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    pq.write_table(window_schema().empty_table(), os.path.join(directory, "part-0.parquet"))


class _Fields:
    """The JSON fields of the value a record's extraction reads: the value is parsed once, for
    all of them (``json_extract_string`` with a list of paths), and each is one slot of the
    list ``fields`` (NULL when the value is no JSON, the field is absent or a JSON null)."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def slot(self, name: str | None) -> str:
        self.paths.append(_literal_path(name))
        return f"fields[{len(self.paths)}]"

    def sql(self, value_text: str) -> str:
        if not self.paths:
            return "CAST(NULL AS VARCHAR[])"
        return f"TRY(json_extract_string({value_text}, [{', '.join(self.paths)}]))"


def _payload_sql(payload: PayloadSpec | None, fields: _Fields) -> str:
    """The record's compared content (``records.payload``): each declared JSON field of the value
    as text (JSON null or absent: NULL; a value that is no JSON object: every field NULL, so a
    sink row holding them differs), or the hex SHA-256 of the raw value bytes; NULL when the
    pipeline declares no ``payload``. A number keeps every digit the value wrote
    (``recon.read.json_numbers``)."""
    if payload is None:
        return "CAST(NULL AS VARCHAR[])"
    if payload.sha256_column is not None:
        return "CASE WHEN value IS NULL THEN NULL ELSE [sha256(value)] END"
    slots = [fields.slot(f) for f, _ in payload.fields]
    paths = [_literal_path(f) for f, _ in payload.fields]
    exact = exact_fields(paths, slots, "TRY(decode(value))")
    return f"CASE WHEN value IS NULL THEN NULL ELSE {exact} END"


def _order_sql(order: OrderSpec | None, fields: _Fields) -> tuple[str, str]:
    """The record's upsert key and position (``records.order_key``, ``order_position``): the
    Kafka key or a header as text, or a JSON field of the value; the offset or an integer
    version field (a version that is no whole number is NULL: that record takes no part in the
    order check). A key that is not UTF-8 is NULL too."""
    if order is None:
        return "CAST(NULL AS VARCHAR)", "CAST(NULL AS BIGINT)"
    raw = _order_columns(order)
    key = f"TRY(decode({raw[0]}))" if raw else fields.slot(order.record_key.name)
    if order.version_field is None:
        return key, '"offset"'
    return key, f"TRY_CAST({fields.slot(order.version_field)} AS BIGINT)"


def expect_headers(fields: tuple[FieldRef, ...]) -> list[str]:
    """The headers the pipeline's ``expect`` reads, in the order a reader collects them into
    the raw column ``expect_headers``."""
    return list(dict.fromkeys(str(f.name) for f in fields if f.kind == "header"))


def _expect_sql(fields: tuple[FieldRef, ...], slots: _Fields) -> str:
    """The record's ``expect_fields``: the text of each field the pipeline's ``expect`` reads,
    in its order (``recon.config.diversions.Predicate.fields``): a JSON field of the value as
    ``json_extract_string`` gives it (a number or boolean as written; absent or JSON null:
    NULL), a header or the key decoded as UTF-8 (absent or not UTF-8: NULL). NULL when the
    pipeline declares no ``expect``."""
    if not fields:
        return "CAST(NULL AS VARCHAR[])"
    headers = expect_headers(fields)
    texts = []
    for f in fields:
        if f.kind == "json_field":
            texts.append(slots.slot(f.name))
        elif f.kind == "header":
            texts.append(f"TRY(decode(expect_headers[{headers.index(str(f.name)) + 1}]))")
        else:
            texts.append("TRY(decode(key))")
    return f"[{', '.join(texts)}]"


def _order_columns(order: OrderSpec | None) -> list[str]:
    """The raw columns the record's upsert key is read from (none: a JSON field, or no check)."""
    kind = order.record_key.kind if order is not None else None
    return {"key": ["key"], "header": ["key_header"]}.get(str(kind), [])


def read_columns(
    spec: MessageIdSpec, order: OrderSpec | None, expect: tuple[FieldRef, ...] = ()
) -> list[str]:
    """The raw columns besides the value and the offset that extraction needs: ``key`` (the id,
    the upsert key or a field of ``expect`` is the Kafka key), ``id_header``, ``key_header``,
    ``expect_headers``. A reader collects only these (a key or a header costs a Python object
    per record)."""
    wanted = {"key": spec.kind == "key", "id_header": spec.kind == "header"}
    for column in _order_columns(order):
        wanted[column] = True
    wanted["key"] = wanted["key"] or any(f.kind == "key" for f in expect)
    wanted["expect_headers"] = bool(expect_headers(expect))
    columns = ("key", "id_header", "key_header", "expect_headers")
    return [column for column in columns if wanted.get(column)]


def key_header(order: OrderSpec | None) -> str | None:
    """The header the order check reads the upsert key from (None: it reads none)."""
    if order is None or order.record_key.kind != "header":
        return None
    return order.record_key.name


def _literal_path(name: str | None) -> str:
    return "'" + _json_path(str(name)).replace("'", "''") + "'"


def _json_path(name: str) -> str:
    return "$." + name


def _blank(column: str) -> str:
    """Empty or only spaces (what Spark's ``trim`` removes). A CASE, so that only what starts
    with a space is trimmed: an OR or AND computes both sides for every row."""
    return (
        f"(CASE WHEN {column} = '' THEN true WHEN starts_with({column}, ' ') "
        f"THEN trim({column}) = '' ELSE false END)"
    )


def _extraction_sql(
    spec: MessageIdSpec,
    max_length: int,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
    expect: tuple[FieldRef, ...] = (),
) -> str:
    """The extraction rules in DuckDB SQL over ``raw`` (what :func:`extract_ids` runs)."""
    fields = _Fields()
    if spec.kind == "json_field":
        path = _json_path(str(spec.name)).replace("'", "''")
        source = "value"
        # Not JSON at all, no such field, or a JSON null: missing, as get_json_object says. Only
        # a value that looks like an object or array is parsed again to tell it from a string
        # such as "[a" (CASE evaluates lazily).
        found = fields.slot(spec.name)
        nested = (
            "CASE WHEN starts_with(found, '{') OR starts_with(found, '[') "
            "OR starts_with(found, ' ') THEN (CASE WHEN left(ltrim(found), 1) IN ('{', '[') "
            f"THEN json_type(json_extract(text, '{path}')) IN ('OBJECT', 'ARRAY') ELSE false END) "
            "ELSE false END"
        )
        not_utf8_reason = "value_not_utf8"
    elif spec.kind in ("header", "key"):
        source = "id_header" if spec.kind == "header" else "key"
        found = "text"
        nested = "false"
        not_utf8_reason = "message_id_not_utf8"
    else:  # pragma: no cover - config validation rejects other kinds
        raise ValueError(f"unknown message_id kind {spec.kind!r}")
    compared = _payload_sql(payload, fields)
    order_key, order_position = _order_sql(order, fields)
    expected = _expect_sql(expect, fields)
    raw_extra = [c for c in read_columns(spec, order, expect) if c in ("key", "expect_headers")]
    keyed = "".join(f", {c}" for c in dict.fromkeys([*_order_columns(order), *raw_extra]))
    # The value is decoded once (as the id's source, or for its fields only) and parsed once.
    value_text = "text" if source == "value" else "TRY(decode(value))"
    return f"""
        WITH decoded AS (
            SELECT value IS NULL AS tombstone, {source} IS NOT NULL AS has_source,
                   TRY(decode({source})) AS text, value, "offset"{keyed}
            FROM raw
        ), parsed AS (
            SELECT *, {fields.sql(value_text)} AS fields FROM decoded
        ), found AS (
            SELECT tombstone, text, has_source AND text IS NULL AS not_utf8, {found} AS found,
                   {compared} AS payload, {order_key} AS order_key,
                   {order_position} AS order_position, {expected} AS expect_fields
            FROM parsed
        ), judged AS (
            SELECT found, payload, order_key, order_position, expect_fields, CASE
                WHEN tombstone THEN 'tombstone'
                WHEN not_utf8 THEN '{not_utf8_reason}'
                WHEN found IS NULL THEN 'message_id_missing'
                WHEN {nested} THEN 'message_id_not_scalar'
                WHEN {_blank("found")} THEN 'message_id_empty'
                WHEN (CASE WHEN strlen(found) > {int(max_length)}
                      THEN length(found) > {int(max_length)} ELSE false END)
                    THEN 'message_id_oversize'
                WHEN contains(found, chr(0)) THEN 'message_id_has_nul'
            END AS invalid_reason
            FROM found
        )
        SELECT CASE WHEN invalid_reason IS NULL THEN found END AS message_id, invalid_reason,
               payload, order_key, order_position, expect_fields
        FROM judged
    """


def extract_ids(
    raw: pa.Table,
    spec: MessageIdSpec,
    max_length: int = MAX_MESSAGE_ID_LENGTH,
    con: Any = None,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
    expect: tuple[FieldRef, ...] = (),
) -> pa.Table:
    """Raw records (:func:`raw_schema`) to one row per record with its id or why it has none.

    :param raw: the records, as a worker collects them.
    :param spec: where the id lives: a header, a JSON field of the value, or the key.
    :param max_length: ids longer than this (in characters) are quarantined as oversize.
    :param con: a DuckDB connection to reuse (a worker keeps one).
    :param payload: what of the value the pipeline compares with its sink rows (None: nothing;
        the ``payload`` column stays null).
    :param order: where the pipeline's upsert key and position are (None: the ``order_*``
        columns stay null).
    :param expect: the fields the pipeline's ``expect`` reads (none: ``expect_fields`` stays
        null).
    """
    import pyarrow as pa

    db = con if con is not None else connect()
    # Only the column the id is in goes through DuckDB (which copies every string it reads);
    # positions are put back beside the ids in the same order.
    db.register("raw", raw.select(["value", "offset", *read_columns(spec, order, expect)]))
    try:
        sql = _extraction_sql(spec, max_length, payload, order, expect)
        ids = db.execute(sql).to_arrow_table()
    finally:
        db.unregister("raw")
    schema = window_schema()
    return pa.table(
        [raw["topic"], raw["partition"], raw["offset"], ids["message_id"], ids["invalid_reason"],
         raw["timestamp"].cast(schema.field("timestamp").type),
         ids["payload"].cast(schema.field("payload").type),
         ids["order_key"].cast(pa.string()), ids["order_position"].cast(pa.int64()),
         ids["expect_fields"].cast(schema.field("expect_fields").type)],
        schema=schema,
    )  # fmt: skip
