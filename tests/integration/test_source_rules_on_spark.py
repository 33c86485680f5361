"""Three-way reconciliation (issue 20) on tiny relations, on both engines: a settled source
message no committed record carries is ``unpublished``; the funnel counts the way from source
to sink, with the window's messages no source row names (``unsourced``). Here, not in the unit
tier, because the Spark half needs a JVM (``tests/unit/test_source_rules.py`` holds what needs
DuckDB only)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.relations import (
    ARROW_LEDGER,
    ARROW_SINK,
    ARROW_WINDOW,
    ENGINES,
    arrow_table,
    rows,
)
from fixtures.scenarios import LEDGER_NO_POSITIONS, led, rec, sink

from recon.model.details import UNPUBLISHED
from recon.rules.readouts import FUNNEL_FIELDS, funnel
from recon.rules.run import next_ledger

pytestmark = pytest.mark.integration

SOURCE_SCHEMA = "message_id string, source_key string, judge boolean"


def _judge(
    engine: str,
    spark: Any,
    *,
    window: list[tuple],
    sinks: list[tuple],
    source: list[tuple],
    known: tuple[str, ...] = (),
    pending: list[tuple] | None = None,
    ledger: list[tuple] | None = None,
    named_once: bool = False,
) -> tuple[dict[str | None, dict[str, Any]], dict[str, int], list[dict[str, Any]], Any]:
    """Result rows by messageId, the funnel, its unsourced sample, and the engine's rules.

    :param named_once: judge as a source whose catalog proves each id is named once."""
    if engine == "duckdb":
        import duckdb
        import pyarrow as pa

        from recon.engines.duckdb import reconcile

        con = duckdb.connect()
        con.register("w", arrow_table(window, ARROW_WINDOW))
        con.register("s", arrow_table(sinks, ARROW_SINK))
        src = pa.schema([("message_id", pa.string()), ("source_key", pa.string()),
                         ("judge", pa.bool_())])  # fmt: skip
        con.register("src", arrow_table(source, src))
        ids = pa.schema([("message_id", pa.string())])
        con.register("known", arrow_table([(k,) for k in known], ids))
        names: dict[str, Any] = {}
        if pending is not None:
            con.register("p", arrow_table(pending, ARROW_WINDOW))
            names["pending"] = "p"
        if ledger is not None:
            con.register("l", arrow_table(ledger, ARROW_LEDGER))
            names["ledger"] = "l"
        rules, _ = reconcile(con, window="w", sink_rows="s", source_rows="src",
                             source_known="known", named_once=named_once, **names)  # fmt: skip
        found = rows(con, "results")
    else:
        from recon.engines.spark import reconcile
        from recon.model import schemas

        def df(data: list[tuple] | None, schema: Any) -> Any:
            return None if data is None else spark.createDataFrame(data, schema)

        rules, _ = reconcile(
            spark, spark.createDataFrame(window, schemas.WINDOW),
            spark.createDataFrame(sinks, schemas.SINK_ROWS), df(ledger, LEDGER_NO_POSITIONS),
            df(pending, schemas.PENDING),
            source_rows=spark.createDataFrame(source, SOURCE_SCHEMA),
            source_known=spark.createDataFrame([(k,) for k in known], "message_id string"),
            named_once=named_once,
        )  # fmt: skip
        found = [r.asDict(recursive=True) for r in rules.relation("results").collect()]
    counts, sample = funnel(rules, 5)
    return {r["message_id"]: r for r in found}, counts, sample, rules


@pytest.mark.parametrize("engine", ENGINES)
def test_a_settled_source_message_the_topic_never_got_is_unpublished(
    spark: Any, engine: str
) -> None:
    got, counts, sample, rules = _judge(
        engine, spark,
        window=[rec(0, "m1"), rec(1, "m2")],
        sinks=[sink("k1", "m1"), sink("k2", "m2")],
        source=[("m1", "1", True), ("m2", "2", True), ("m3", "3", True), ("m4", "4", False)],
        # Each id once, as a unique index on the outbox's messageId proves: not searched for
        # ids named twice, and the same verdicts and funnel.
        named_once=True,
    )  # fmt: skip
    assert {m: r["verdict"] for m, r in got.items()} == {
        "m1": "delivered", "m2": "delivered", "m3": "unpublished",
    }  # fmt: skip
    m3 = got["m3"]
    assert (m3["topic"], m3["partition"], m3["offsets"], m3["sink_count"]) == (None, None, [], 0)
    assert m3["detail"] == (
        "source row 3 (of 1 naming it) settled; no committed record of the topic carries it"
    )
    # m4 has not settled: a later run judges it.
    assert counts == dict(zip(FUNNEL_FIELDS, (3, 2, 2, 2, 0, 0, 0), strict=True))
    assert sample == []
    next_ledger(rules, "run-2")
    ledger = _rows(engine, rules, "ledger_next")
    assert {e["message_id"]: e["verdict"] for e in ledger}["m3"] == "unpublished"


@pytest.mark.parametrize("engine", ENGINES)
def test_a_record_met_before_or_past_the_window_is_published(spark: Any, engine: str) -> None:
    got, counts, _, _ = _judge(
        engine, spark,
        window=[rec(0, "m1")],
        sinks=[sink("k1", "m1")],
        # m2: pending (past the window's end); m3: an earlier run met its record (ledger).
        pending=[rec(5, "m2")],
        ledger=[led("m3", [0], 1)],
        source=[("m1", "1", True), ("m2", "2", True), ("m3", "3", True)],
        known=("m3",),
        named_once=True,
    )  # fmt: skip
    assert "unpublished" not in {r["verdict"] for r in got.values()}
    assert (counts["produced"], counts["published"]) == (3, 3)


@pytest.mark.parametrize("engine", ENGINES)
def test_unsourced_records_are_counted_and_named_not_judged(spark: Any, engine: str) -> None:
    got, counts, sample, _ = _judge(
        engine, spark,
        window=[rec(0, "m1"), rec(1, "x1", partition=1), rec(2, "x2", partition=1)],
        sinks=[sink("k1", "m1"), sink("k2", "x1"), sink("k3", "x2")],
        source=[("m1", "1", False)],
    )  # fmt: skip
    # An extra producer's records are still delivered: unsourced is a finding, not a loss.
    assert {m: r["verdict"] for m, r in got.items()} == {
        "m1": "delivered", "x1": "delivered", "x2": "delivered",
    }  # fmt: skip
    assert (counts["unsourced"], counts["produced"]) == (2, 0)
    assert sample == [{"message_id": "x1", "partition": 1, "offset": 1},
                      {"message_id": "x2", "partition": 1, "offset": 2}]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_source_rows_without_an_id_or_twice_are_counted(spark: Any, engine: str) -> None:
    got, counts, _, _ = _judge(
        engine, spark,
        window=[rec(0, "m1")],
        sinks=[sink("k1", "m1"), sink("k9", "m9")],
        # row 7 has no id; m1 twice; m9 only in the sink (a phantom, whatever the source says)
        source=[(None, "7", True), ("m1", "1", True), ("m1", "1b", True), ("  ", "8", False),
                ("m9", "9", True)],
    )  # fmt: skip
    invalid = [r for r in got.values() if r["verdict"] == "invalid"]
    assert [r["detail"] for r in invalid] == ["source row 7 without a message id"]
    assert got["m9"]["verdict"] == "phantom"
    assert "unpublished" not in {r["verdict"] for r in got.values()}
    assert (counts["source_invalid"], counts["source_duplicates"], counts["produced"]) == (1, 1, 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_ids_named_twice_are_produced_once_whatever_they_meet(spark: Any, engine: str) -> None:
    got, counts, _, _ = _judge(
        engine, spark,
        window=[rec(0, "m1")],
        # m1 delivered twice: two joined rows meet its two source rows
        sinks=[sink("k1", "m1"), sink("k1b", "m1")],
        source=[("m1", "1", True), ("m1", "1b", True),
                # u1: unpublished, two settled rows; u2: one settled row, one read only
                ("u1", "3", True), ("u1", "2", True), ("u2", "5", False), ("u2", "6", True),
                # r1: read, judged by another run
                ("r1", "4", False)],
    )  # fmt: skip
    unpublished = {m: r["detail"] for m, r in got.items() if r["verdict"] == "unpublished"}
    assert unpublished == {
        "u1": UNPUBLISHED % ("2", 2), "u2": UNPUBLISHED % ("6", 1),
    }  # fmt: skip
    assert got["m1"]["verdict"] == "duplicated"
    assert {k: counts[k] for k in ("produced", "published", "source_duplicates", "unsourced")} == {
        "produced": 3, "published": 1, "source_duplicates": 2, "unsourced": 0,
    }  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_the_funnel_counts_each_committed_message_once_on_either_path(
    spark: Any, engine: str
) -> None:
    """committed and delivered are counted from what the verdict steps kept: a message on the
    general path (m1, in the topic twice; m3, with two sink rows) counts once, like one on the
    fast path; a quarantined record that still names its messageId (m5) published it."""
    got, counts, _, _ = _judge(
        engine, spark,
        window=[rec(0, "m1"), rec(1, "m1"), rec(2, "m2"), rec(3, "m3"), rec(4, "m4"),
                rec(5, "m5", invalid="value is not JSON")],
        sinks=[sink("k1", "m1"), sink("k3", "m3"), sink("k3b", "m3"), sink("k4", "m4"),
               sink("k9", "m9")],
        source=[("m1", "1", True), ("m2", "2", True), ("m3", "3", True), ("m4", "4", True),
                ("m5", "5", True), ("m6", "6", True)],
    )  # fmt: skip
    assert {m: r["verdict"] for m, r in got.items() if r["verdict"] != "invalid"} == {
        "m1": "delivered", "m2": "lost", "m3": "duplicated", "m4": "delivered",
        "m9": "phantom", "m6": "unpublished",
    }  # fmt: skip
    assert got["m1"]["topic_duplicate"]
    # produced 6; published 5 (all but m6); committed m1..m4 (m5's record is not usable);
    # delivered m1, m3, m4; every committed message has a source row: nothing unsourced.
    assert counts == dict(zip(FUNNEL_FIELDS, (6, 5, 4, 3, 0, 0, 0), strict=True))


def _rows(engine: str, rules: Any, name: str) -> list[dict[str, Any]]:
    if engine == "duckdb":
        return rows(rules.con, name)
    return [r.asDict(recursive=True) for r in rules.relation(name).collect()]
