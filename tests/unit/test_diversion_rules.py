"""Records that leave a pipeline on purpose (issue 72), on tiny relations judged by DuckDB: the
``expect`` predicate as SQL, ``excluded`` and ``diverted`` verdicts with their details, a
message both diverted and written, a dead-letter record naming no record, and the ledger
entries the run leaves. Spark's rows of the named scenarios ``excluded_by_expect`` and
``diverted_to_dlt`` are held to DuckDB's by ``tests/integration/test_engine_parity.py``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from fixtures.relations import ARROW_LEDGER, ARROW_SINK, ARROW_WINDOW, arrow_table, rows

from recon.config.diversions import FieldRef, Predicate
from recon.engines.duckdb import DuckDBRules
from recon.model import details
from recon.read.dead_letters import next_positions
from recon.read.ranges import OffsetRange
from recon.rules.expect import expected_sql
from recon.rules.judging import Judging
from recon.rules.readouts import dead_letter_restarts
from recon.rules.render import for_dialect
from recon.rules.run import judge_inputs, next_ledger

pytestmark = pytest.mark.unit

T = "orders"
TS = datetime(2026, 1, 1, tzinfo=UTC)
TYPE = FieldRef("json_field", "type")
ORDERS_ONLY = Predicate("in", TYPE, ("order",))
WINDOW = ARROW_WINDOW
DEAD_LETTERS = pa.schema(
    [("message_id", pa.string()), ("dl_topic", pa.string()), ("dl_partition", pa.int32()),
     ("dl_offset", pa.int64()), ("orig_topic", pa.string()), ("orig_partition", pa.int32()),
     ("orig_offset", pa.int64()), ("error", pa.string())]
)  # fmt: skip


def rec(offset: int, mid: str, kind: str | None = "order") -> tuple:
    return (T, 0, offset, mid, None, TS, None, None, None, [kind])


def sink(key: str, mid: str) -> tuple:
    return (key, mid, None, None, None, None, None)


def dead(offset: int, mid: str | None, orig: int | None, error: str = "poison") -> tuple:
    return (mid, f"{T}.DLT", 0, offset, T if orig is not None else None,
            0 if orig is not None else None, orig, error)  # fmt: skip


def run(
    window: list[tuple],
    sinks: list[tuple],
    judging: Judging,
    dead_letters: list[tuple] | None = None,
    ledger: list[tuple] | None = None,
    pending: list[tuple] | None = None,
) -> tuple[Any, dict[str, dict[str, Any]], dict[str, int]]:
    con = duckdb.connect()
    con.register("w", arrow_table(window, WINDOW))
    con.register("s", arrow_table(sinks, ARROW_SINK))
    inputs: dict[str, str | None] = {"records": "w", "sink_rows": "s"}
    if dead_letters is not None:
        con.register("d", arrow_table(dead_letters, DEAD_LETTERS))
        inputs["dead_letters"] = "d"
    if ledger is not None:
        con.register("l", arrow_table(ledger, ARROW_LEDGER))
        inputs["ledger"] = "l"
    if pending is not None:
        con.register("p", arrow_table(pending, WINDOW))
        inputs["pending"] = "p"
    counts = judge_inputs(DuckDBRules(con), inputs, None, [(0, 1000, 0)], judging)
    found = rows(con, "results")
    by_id = {r["message_id"] or f"@{r['topic']}/{r['first_offset']}": r for r in found}
    assert len(by_id) == len(found)
    return con, by_id, counts


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (ORDERS_ONLY, [True, False, False]),
        (Predicate("not_in", TYPE, ("refund",)), [True, False, True]),
        (Predicate("present", TYPE), [True, True, False]),
        (Predicate("absent", TYPE), [False, False, True]),
        (Predicate("not", items=(ORDERS_ONLY,)), [False, True, True]),
        (
            Predicate("any", items=(ORDERS_ONLY, Predicate("absent", TYPE))),
            [True, False, True],
        ),
        (
            Predicate(
                "all",
                items=(Predicate("present", TYPE), Predicate("in", FieldRef("key"), ("k1", "k3"))),
            ),
            [True, False, False],
        ),
    ],
)
def test_a_predicate_is_true_or_false_for_every_record_never_null(
    predicate: Predicate, expected: list[bool]
) -> None:
    # three records: type order (key k1), type refund (key k2), no type (key k3)
    fields = {ORDERS_ONLY.field: 0, FieldRef("key"): 1}
    values = [("order", "k1"), ("refund", "k2"), (None, "k3")]
    slots = [f for f in predicate.fields()]
    lists = [[v[fields[f]] for f in slots] for v in values]
    con = duckdb.connect()
    con.register("r", pa.table({"n": [0, 1, 2], "expect_fields": lists}))
    sql = f"SELECT {expected_sql(predicate)} FROM r ORDER BY n"
    assert [r[0] for r in con.execute(sql).fetchall()] == expected
    # the same text renders for Spark (a short list gives NULL there too: try_element_at)
    spark = for_dialect(f"SELECT {expected_sql(predicate)} FROM r", "spark")
    assert "try_element_at(expect_fields, 1)" in spark.lower()


def test_a_value_is_a_literal_never_spliced_sql() -> None:
    odd = Predicate("in", TYPE, ("o'rder", "x') OR true --"))
    con = duckdb.connect()
    con.register("r", pa.table({"expect_fields": [["o'rder"], ["order"]]}))
    got = con.execute(f"SELECT {expected_sql(odd)} FROM r").fetchall()
    assert [r[0] for r in got] == [True, False]


def test_records_outside_expect_are_excluded_never_lost() -> None:
    window = [rec(0, "a1"), rec(1, "a2"), rec(2, "b1", "refund"), rec(3, "b2", "refund"),
              rec(4, "c1", None), rec(5, "b3", "refund"), rec(6, "b3", "refund")]  # fmt: skip
    sinks = [sink("s1", "a1"), sink("s2", "b2")]
    con, found, counts = run(window, sinks, Judging(expect=ORDERS_ONLY))
    verdicts = {m: r["verdict"] for m, r in found.items()}
    assert verdicts == {
        "a1": "delivered", "a2": "lost", "b1": "excluded", "b2": "excluded", "c1": "excluded",
        "b3": "excluded",  # at two offsets: the general path
    }  # fmt: skip
    assert found["b1"]["detail"] == details.EXCLUDED
    assert found["b2"]["detail"] == details.EXCLUDED_WRITTEN % 1
    assert found["b2"]["sink_keys"] == ["s2"]
    assert counts["excluded"] == 4 and counts["lost"] == 1
    next_ledger(DuckDBRules(con), "run-1")
    kept = {r["message_id"]: r["verdict"] for r in rows(con, "ledger_next")}
    assert kept["b1"] == "excluded" and kept["b3"] == "excluded"


def test_a_sink_row_arriving_later_for_an_excluded_message_is_shown_as_such() -> None:
    ledger = [("b1", T, 0, 2, None, 0, "run-1", "excluded", None, None)]
    _, found, counts = run([], [sink("s9", "b1")], Judging(expect=ORDERS_ONLY), ledger=ledger)
    assert found["b1"]["verdict"] == "excluded"
    assert found["b1"]["detail"] == details.EXCLUDED_WRITTEN % 1
    assert counts["phantom"] == 0


def test_lost_records_in_a_dead_letter_topic_are_diverted_with_where_and_why() -> None:
    window = [rec(i, f"m{i}") for i in range(10)] + [rec(10, "m3")]  # m3 also at 10: general
    sinks = [sink(f"s{i}", f"m{i}") for i in range(10) if i not in (2, 3, 4, 5)]
    sinks.append(sink("s5", "m5"))  # m5: diverted and written (reprocessed): delivered
    dead_letters = [
        dead(0, None, 2, "NumberFormatException: x"),  # by its original's position
        dead(1, "m3", None),  # by messageId only
        dead(2, "m5", 5),
        dead(3, None, 999, "gone"),  # names no record seen: reported
        dead(4, "zz", None),  # neither
    ]
    con, found, counts = run(window, sinks, Judging(diverted=True), dead_letters)
    assert found["m2"]["verdict"] == "diverted"
    assert found["m2"]["detail"] == f"in {T}.DLT/0@0: NumberFormatException: x"
    assert found["m3"]["verdict"] == "diverted"
    assert found["m3"]["detail"] == f"in {T}.DLT/0@1: poison"
    assert found["m4"]["verdict"] == "lost"
    assert found["m5"]["verdict"] == "delivered"
    unknown = found[f"@{T}.DLT/3"]
    assert unknown["verdict"] == "unverifiable"
    assert unknown["detail"] == f"{details.DEAD_LETTER_UNKNOWN} (original {T}/0@999): gone"
    assert found["zz"]["verdict"] == "unverifiable" and found["zz"]["offsets"] == [4]
    assert (counts["diverted"], counts["lost"], counts["unverifiable"]) == (2, 1, 2)
    next_ledger(DuckDBRules(con), "run-1")
    kept = {r["message_id"]: r for r in rows(con, "ledger_next")}
    assert kept["m2"]["verdict"] == "diverted" and kept["m2"]["record_time_ms"] is not None
    assert kept["m3"]["verdict"] == "diverted"


def test_a_diverted_message_written_later_is_delivered_with_its_latency() -> None:
    record_ms = int(TS.timestamp() * 1000)
    ledger = [("m2", T, 0, 2, None, 0, "run-1", "diverted", record_ms, None)]
    later = (*sink("s2", "m2")[:3], datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC), None, None, None)
    _, found, counts = run([], [later], Judging(late_after_ms=60_000, diverted=True), [], ledger)
    assert found["m2"]["verdict"] == "delivered"
    assert found["m2"]["latency_ms"] == 3000
    assert f"{details.DIVERTED_DELIVERY}run-1)" in found["m2"]["detail"]
    assert counts["diverted"] == 0


def test_without_declarations_nothing_is_excluded_or_diverted() -> None:
    window = [rec(0, "a1", "refund")]
    _, found, counts = run(window, [], Judging())
    assert found["a1"]["verdict"] == "lost"
    assert counts["excluded"] == counts["diverted"] == 0


def test_the_reader_extracts_the_fields_expect_reads() -> None:
    from fixtures.raw_records import raw_rows

    from recon.config import MessageIdSpec
    from recon.read.message_ids import extract_ids

    raw = raw_rows(
        [
            (0, b"k0", b'{"id": "a", "type": "order", "n": 7}', [("region", b"eu")]),
            (1, b"k1", b'{"id": "b", "type": null}', [("region", b"us"), ("region", b"eu")]),
            (2, None, b"not json", []),
        ],
        header=None,
    )
    headers = [[b"eu"], [b"us"], [None]]  # the first of each, as a reader collects them
    raw = raw.append_column("expect_headers", pa.array(headers, pa.list_(pa.binary())))
    fields = (TYPE, FieldRef("header", "region"), FieldRef("key"), FieldRef("json_field", "n"))
    out = extract_ids(raw, MessageIdSpec("json_field", "id"), expect=fields)
    assert out["expect_fields"].to_pylist() == [
        ["order", "eu", "k0", "7"],
        [None, "us", "k1", None],
        [None, None, None, None],
    ]
    plain = extract_ids(raw, MessageIdSpec("json_field", "id"))
    assert plain["expect_fields"].to_pylist() == [None, None, None]


def test_a_dead_letter_of_a_pending_message_is_read_again_by_the_next_run() -> None:
    # m7's original is past the window's end (the group has not committed past it yet): the
    # dead-letter partition restarts at its record, so the run that judges m7 finds it there
    dead_letters = [dead(0, "m1", None), dead(1, None, 7), dead(2, "m8", None)]
    con, found, counts = run(
        [rec(1, "m1")], [], Judging(diverted=True), dead_letters,
        pending=[rec(7, "m7"), rec(8, "m8")],
    )  # fmt: skip
    assert found["m1"]["verdict"] == "diverted" and found["m7"]["verdict"] == "pending"
    assert counts["unverifiable"] == 0  # a pending message is a record the run has seen
    restarts = dead_letter_restarts(DuckDBRules(con))
    assert restarts == {(f"{T}.DLT", 0): 1}
    read = [OffsetRange(f"{T}.DLT", 0, 0, 3), OffsetRange(f"{T}.DLT", 1, 4, 9)]
    assert next_positions(read, restarts) == {(f"{T}.DLT", 0): 1, (f"{T}.DLT", 1): 9}
