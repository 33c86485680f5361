"""The local engine's verdicts (DuckDB) on the named scenarios of ``test_reconcile``.

Every scenario is judged by both engines: the local one must give the hand-computed rows, and
every column of every row (detail words, positions, keys) must equal what the Spark engine
gives; so must the ledger entries each engine writes from its results.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from engines_kit import duckdb_ledger, duckdb_reconcile, spark_ledger_next, spark_reconcile
from test_reconcile import _SCENARIOS, LEDGER_NO_POSITIONS, Scenario, frames

from recon.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.unit

POSITION = pa.struct([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())])
WINDOW = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
     ("message_id", pa.string()), ("invalid_reason", pa.string()),
     ("timestamp", pa.timestamp("us", tz="UTC"))]
)  # fmt: skip
SINK = pa.schema(
    [("sink_key", pa.string()), ("message_id", pa.string()), ("ingest_seq", pa.int64())]
)
LEDGER = pa.schema(
    [("message_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
     ("first_offset", pa.int64()), ("offsets", pa.list_(pa.int64())), ("sink_count", pa.int64()),
     ("first_run_id", pa.string()), ("verdict", pa.string())]
)  # fmt: skip
UNCOMMITTED = pa.schema(
    [("message_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
     ("offset", pa.int64())]
)  # fmt: skip


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    return pa.table([pa.array(list(c), f.type) for c, f in zip(columns, schema, strict=True)],
                    schema=schema)  # fmt: skip


def judge(s: Scenario) -> tuple[Any, str, str | None]:
    """The scenario judged by the local engine: (connection, results table, ledger name)."""
    import duckdb

    con = duckdb.connect()
    con.register("w", _table(s.window, WINDOW))
    con.register("s", _table(s.sinks, SINK))
    names: dict[str, str | None] = {"ledger": None, "pending": None, "uncommitted": None}
    if s.ledger is not None:
        con.register("l", _table(s.ledger, LEDGER))
        names["ledger"] = "l"
    if s.pending is not None:
        con.register("p", _table(s.pending, WINDOW))
        names["pending"] = "p"
    if s.uncommitted is not None:
        con.register("u", _table(s.uncommitted, UNCOMMITTED))
        names["uncommitted"] = "u"
    results, _ = duckdb_reconcile(
        con, window="w", sink_rows="s", unverifiable=s.unverifiable, partition_ends=s.ends,
        **names,
    )  # fmt: skip
    return con, results, names["ledger"]


def rows(con: Any, table: str) -> list[dict[str, Any]]:
    relation = con.execute(f"SELECT * FROM {table}")
    columns = [d[0] for d in relation.description]
    return [dict(zip(columns, r, strict=True)) for r in relation.fetchall()]


def as_tuple(row: dict[str, Any]) -> tuple:
    return (row["verdict"], row["message_id"], row["partition"], tuple(row["offsets"]),
            row["sink_count"], tuple(row["sink_keys"]), row["topic_duplicate"])  # fmt: skip


def _plain(value: Any) -> Any:
    """A Spark Row or a DuckDB value as plain Python, for comparing whole rows."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _as_read(entry: dict[str, Any]) -> dict[str, Any]:
    """A ledger entry as readers see it: a message at one position is stored without lists."""
    if entry["offsets"] is None:
        entry["offsets"] = [] if entry["first_offset"] is None else [entry["first_offset"]]
    if entry["positions"] is None:
        entry["positions"] = [
            {"topic": entry["topic"], "partition": entry["partition"], "offset": o}
            for o in entry["offsets"]
        ]
    return entry


def _key(row: dict[str, Any]) -> str:
    return repr(sorted(row.items()))


@pytest.mark.parametrize("name", list(_SCENARIOS))
def test_scenario_gives_the_hand_computed_rows(name: str) -> None:
    s = _SCENARIOS[name]()
    con, results, _ = judge(s)
    assert {as_tuple(r) for r in rows(con, results)} == s.expected


@pytest.mark.parametrize("name", list(_SCENARIOS))
def test_every_column_equals_the_spark_engine(spark: Any, name: str) -> None:
    s = _SCENARIOS[name]()
    con, results, _ = judge(s)
    local = sorted((_plain(r) for r in rows(con, results)), key=_key)
    theirs = sorted((_plain(r) for r in spark_reconcile(**frames(spark, s)).collect()), key=_key)
    assert local == theirs


@pytest.mark.parametrize("name", ["one_duplicate", "duplicate_in_later_run", "pending",
                                  "late_delivery", "rewind", "phantom"])  # fmt: skip
def test_ledger_entries_equal_the_spark_engine(spark: Any, name: str) -> None:
    s = _SCENARIOS[name]()
    con, _, _ = judge(s)
    local = sorted((_plain(r) for r in rows(con, duckdb_ledger(con, "run-2"))), key=_key)
    spark_reconcile(**frames(spark, s))
    theirs = spark_ledger_next(spark, "run-2").collect()
    assert local == sorted((_plain(r) for r in theirs), key=_key)


def test_counts_name_every_verdict() -> None:
    import duckdb

    s = _SCENARIOS["topic_duplicate"]()
    con = duckdb.connect()
    con.register("w", _table(s.window, WINDOW))
    con.register("s", _table(s.sinks, SINK))
    results, counts = duckdb_reconcile(con, window="w", sink_rows="s")
    assert set(counts) == set(ALL_VERDICTS)
    assert counts["topic_duplicate"] == sum(1 for r in rows(con, results) if r["topic_duplicate"])


def test_ledger_without_positions_schema_is_accepted() -> None:
    assert "positions" not in LEDGER_NO_POSITIONS
