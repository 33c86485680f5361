"""The mangling consumer's pure parts (issue 19, part 2): which messages it mangles, what the
mangling does to a value, the sink row's ``seq``/``payload``/``payload_sha256`` taken from the
value written, and the ground truth of ``mismatched`` the workload measures both ways and stores,
on hand-made records and sink rows (no Kafka, no PostgreSQL)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from confluent_kafka import Message

from recon_workload import (
    PAYLOAD_COLUMNS,
    SCENARIOS,
    SHA256_COLUMN,
    WorkloadError,
    ledger,
    ledger_store,
    sink,
)
from recon_workload import payload as pl
from recon_workload.judges import judge_payload
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.ledger import LedgerRow, Produced
from recon_workload.mangler import next_offsets, rows_for
from recon_workload.names import RunNames
from recon_workload.payload import PayloadDiff, PayloadPlan
from recon_workload.progress import Progress
from recon_workload.runner import Run, ScenarioResult
from recon_workload.scenarios_payload import mangling_consumer

pytestmark = pytest.mark.unit

TOPIC = "wl-mangle"
IDS = [f"run-{i:06d}" for i in range(300)]


def _value(mid: str, seq: int, payload: str = "abcdefgh12345678") -> bytes:
    """A good message's value, serialised as the workload's producer does."""
    return json.dumps({"id": mid, "seq": seq, "payload": payload}).encode()


def _sha(value: bytes) -> str:
    return hashlib.sha256(value).hexdigest()


# --- which messages are mangled ----------------------------------------------------------------


def test_the_mangled_sample_is_seeded_in_message_order_and_apart_from_the_copies() -> None:
    mangled, copies = pl.pick_mangled(IDS[:200], 0.05, 0.02, seed=7)
    assert (mangled, copies) == pl.pick_mangled(IDS[:200], 0.05, 0.02, seed=7)
    assert (len(mangled), len(copies)) == (10, 4)
    assert mangled == [m for m in IDS if m in set(mangled)]
    assert copies == [m for m in IDS if m in set(copies)]
    assert not set(mangled) & set(copies), "a message is mangled one way only"
    assert mangled != pl.pick_mangled(IDS[:200], 0.05, 0.02, seed=8)[0]
    assert mangled != IDS[:10], "a sample, not the first messages"


def test_the_mangled_sample_does_not_depend_on_the_copies() -> None:
    # Adding (or dropping) the copies never moves which messages are mangled once.
    with_copies, _ = pl.pick_mangled(IDS[:200], 0.05, 0.02, seed=3)
    without, none = pl.pick_mangled(IDS[:200], 0.05, 0.0, seed=3)
    assert with_copies == without and none == []


@pytest.mark.parametrize(
    ("count", "fraction", "expected"),
    [(10, 0.01, 1), (10, 0.99, 9), (2, 0.5, 1), (300, 0.05, 15)],
)
def test_at_least_one_is_mangled_and_never_all(count: int, fraction: float, expected: int) -> None:
    mangled, _ = pl.pick_mangled(IDS[:count], fraction, 0.0, seed=0)
    assert len(mangled) == expected


@pytest.mark.parametrize(("count", "fraction"), [(10, 0.0), (10, 1.0), (10, -0.1), (1, 0.5)])
def test_a_mangle_fraction_that_cannot_have_both_kinds_is_refused(
    count: int, fraction: float
) -> None:
    with pytest.raises(WorkloadError):
        pl.pick_mangled(IDS[:count], fraction, 0.0, seed=0)


def test_a_copy_fraction_of_one_or_more_is_refused() -> None:
    with pytest.raises(WorkloadError, match="fraction 1"):
        pl.pick_mangled(IDS[:20], 0.1, 1.0, seed=0)


# --- what the mangling does --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "a", "ab", "\ufffd", "a\ufffd", "x" * 48, "ünïcödé text", "0" * 7]
)
def test_mangling_always_changes_the_text(text: str) -> None:
    mangled = pl.mangle_text(text)
    assert mangled != text
    assert mangled.endswith(pl.REPLACEMENT)


def test_mangling_cuts_the_payload_and_keeps_every_other_field() -> None:
    value = _value("m1", 5, "abcdefgh12345678")
    out = json.loads(pl.mangle_value(value))
    assert out == {"id": "m1", "seq": 5, "payload": "abcdefgh\ufffd"}
    assert _sha(pl.mangle_value(value)) != _sha(value)


@pytest.mark.parametrize(
    "value", [None, b"", b"not json", b"[1, 2]", b'{"id": "m1", "payload": 3}', b"\xff\xfe"]
)
def test_only_a_json_object_with_a_text_payload_is_mangled(value: bytes | None) -> None:
    with pytest.raises(ValueError):
        pl.mangle_value(value)


# --- the sink row: seq, payload and hash of the value written ----------------------------------


def test_a_sink_row_keeps_the_values_seq_payload_and_hash() -> None:
    value = _value("m1", 41, "hello")
    row = sink.SinkRow.of("m1", TOPIC, 2, 9, value)
    assert (row.seq, row.payload, row.payload_sha256) == (41, "hello", _sha(value))
    assert row.written_at is None
    assert (sink.SHA256_COLUMN, sink.PAYLOAD_COLUMNS) == (SHA256_COLUMN, PAYLOAD_COLUMNS)
    assert PAYLOAD_COLUMNS == {"seq": "seq", "payload": "payload"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, (None, None)),  # a tombstone
        (b"", (None, None)),
        (b"\xff\xfe\xfa not utf-8", (None, None)),
        (b"not json", (None, None)),
        (b"[1, 2]", (None, None)),
        (b'{"seq": 3}', (3, None)),  # the missing_id bad record keeps both; this one has no payload
        (b'{"seq": true, "payload": 5}', (None, None)),  # a bool is no seq, a number no text
        (b'{"seq": 1.5, "payload": "a\\u0000b"}', (None, None)),  # no fraction; no NUL in text
        (b'{"seq": 99999999999999999999, "payload": "p"}', (None, "p")),  # beyond a bigint
        (b'{"seq": -4, "payload": ""}', (-4, "")),
    ],
)
def test_the_columns_are_null_unless_the_value_holds_them_as_the_sink_can(
    value: bytes | None, expected: tuple[int | None, str | None]
) -> None:
    assert sink.value_fields(value) == expected


def test_the_sink_table_has_the_payload_columns() -> None:
    class Recorder:
        statements: list[str] = []

        def execute(self, statement: Any, *_: Any) -> None:
            parts = getattr(statement, "seq", [statement])
            self.statements.append("".join(getattr(p, "string", "") for p in parts))

    cur = Recorder()
    sink.create_tables(cur, "wl_t")
    (create,) = [s for s in cur.statements if s.startswith("CREATE TABLE")]
    assert "payload_sha256 text, seq bigint, payload text," in create


def _msg(partition: int, offset: int, mid: str | None, value: bytes | None) -> Message:
    headers: list[tuple[str, str | bytes | None]] | None = (
        [("message_id", mid.encode())] if mid else None
    )
    return Message(topic=TOPIC, partition=partition, offset=offset, value=value, headers=headers)


def test_the_consumer_mangles_the_named_rows_and_copies_the_others_later() -> None:
    values = {m: _value(m, i, f"payload-of-{m}") for i, m in enumerate(["a", "b", "c"])}
    batch = [_msg(0, 0, "a", values["a"]), _msg(0, 1, "b", values["b"]),
             _msg(1, 0, "c", values["c"]), _msg(1, 1, None, b"\xff")]  # fmt: skip
    rows, later = rows_for(batch, mangle={"b"}, copy={"c"})
    assert [(r.message_id, r.partition, r.offset) for r in rows] == [
        ("a", 0, 0), ("b", 0, 1), ("c", 1, 0), (None, 1, 1)
    ]  # fmt: skip
    a, b, c, bad = rows
    assert (a.payload, a.payload_sha256) == ("payload-of-a", _sha(values["a"]))
    assert b.payload == pl.mangle_text("payload-of-b") and b.seq == 1
    assert b.payload_sha256 == _sha(pl.mangle_value(values["b"]))  # the bytes it wrote
    assert (c.payload, c.payload_sha256) == ("payload-of-c", _sha(values["c"]))
    assert (bad.seq, bad.payload, bad.payload_sha256) == (None, None, _sha(b"\xff"))
    (copy,) = later
    assert (copy.message_id, copy.partition, copy.offset) == ("c", 1, 0)
    assert copy.payload == pl.mangle_text("payload-of-c")
    assert copy.payload_sha256 == _sha(pl.mangle_value(values["c"]))
    assert next_offsets(batch) == {(TOPIC, 0): 2, (TOPIC, 1): 2}


# --- the truth: compared both ways -------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "column", "equal"),
    [
        (12.5, 12.5, True),
        (12, 12.0, True),  # numbers as numbers
        ("12", 12, False),  # a text is no number
        (True, 1, False),  # nor a boolean
        ("abc", "abc", True),
        ("abc", "abd", False),
        (None, None, True),  # a missing field equals NULL
        (None, "x", False),
        ("x", None, False),
        (5, "5", True),  # a text column compares the field's text
        ({"a": 1}, '{"a": 1}', True),
    ],
)
def test_a_field_compares_by_the_columns_type(field: Any, column: Any, equal: bool) -> None:
    assert pl.same(field, column) is equal


def _row(mid: str | None, offset: int, value: bytes | None, **changes: Any) -> sink.SinkRow:
    row = sink.SinkRow.of(mid, TOPIC, 0, offset, value)
    return sink.SinkRow(**{**row.__dict__, **changes})


def test_the_difference_is_counted_both_ways_per_row_in_the_declared_order() -> None:
    value = _value("m", 3, "original")
    intact = _row("m", 0, value)
    mangled = _row("m", 0, pl.mangle_value(value))
    upper = _row("m", 0, value, payload_sha256=_sha(value).upper())  # either case of hex
    assert pl.diff(value, [intact, upper], PAYLOAD_COLUMNS) == PayloadDiff((), 0, 0)
    assert pl.diff(value, [intact, mangled], PAYLOAD_COLUMNS) == PayloadDiff(("payload",), 1, 1)
    both = _row("m", 0, value, seq=4, payload="x", payload_sha256=None)
    reordered = {"payload": "payload", "seq": "seq"}
    assert pl.diff(value, [both], reordered) == PayloadDiff(("payload", "seq"), 1, 1)
    # Another field of the value changed: the hash sees it, the compared fields do not.
    other = json.dumps({"id": "m", "seq": 3, "payload": "original", "x": 1}).encode()
    found = pl.diff(value, [_row("m", 0, other)], PAYLOAD_COLUMNS)
    assert found == PayloadDiff((), 0, 1) and not found.ways_agree and found.differs


def _records(*ids: str) -> list[ReadRecord]:
    return [ReadRecord(Position(TOPIC, 0, i), m, _value(m, i)) for i, m in enumerate(ids)]


def _entries(
    records: list[ReadRecord], rows: list[sink.SinkRow], committed: int | None = None
) -> list[LedgerRow]:
    produced = [Produced(i, r.message_id, True) for i, r in enumerate(records)]
    end = len(records) if committed is None else committed
    return ledger.build(produced, records, records, rows, {0: end})


def _good_run() -> tuple[list[ReadRecord], list[sink.SinkRow], PayloadPlan]:
    """m0 and m3 intact, m1 mangled, m2 written twice (its second copy mangled)."""
    records = _records("m0", "m1", "m2", "m3")
    v = {r.message_id: r.value for r in records}
    rows = [
        _row("m0", 0, v["m0"]),
        _row("m1", 1, pl.mangle_value(v["m1"])),
        _row("m2", 2, v["m2"]),
        _row("m3", 3, v["m3"]),
        _row("m2", 2, pl.mangle_value(v["m2"])),
    ]
    return records, rows, PayloadPlan(frozenset({"m1"}), frozenset({"m2"}))


def test_the_runner_judges_mismatched_from_what_was_read_back() -> None:
    records, rows, plan = _good_run()
    entries = _entries(records, rows)
    faults: dict[str, Any] = {}
    assert judge_payload(plan, entries, records, rows, faults) == ["m1"]
    verdicts = {e.message_id: e.expected_verdict for e in entries}
    assert verdicts == {"m0": "delivered", "m1": "mismatched", "m2": "duplicated",
                        "m3": "delivered"}  # fmt: skip
    diffs = {e.message_id: e.payload_diff for e in entries}
    one = {"fields": ["payload"], "field_rows": 1, "value_rows": 1}
    none = {"fields": [], "field_rows": 0, "value_rows": 0}
    assert diffs == {"m0": none, "m1": one, "m2": one, "m3": none}
    assert faults["payload"] == {
        "fields": {"seq": "seq", "payload": "payload"},
        "sha256_column": "payload_sha256",
        "mismatched": 1,
        "mangled_copies": 1,
    }
    summary = ledger.summarize(entries, 4, 4, 5, payload_fields=list(plan.fields))
    assert summary.counts["mismatched"] == 1 and summary.counts["duplicated"] == 1
    line = summary.line("mangling_consumer-x")
    assert "delivered=2 mismatched=1 lost=0 duplicated=1" in line
    assert "(mismatched: in seq, payload or the value's hash)" in line
    assert summary.as_json()["payload_fields"] == ["seq", "payload"]


def test_runs_that_compare_no_payload_keep_their_summary_line() -> None:
    records, rows, _ = _good_run()
    entries = _entries(records, rows)  # not judged: m1 stays delivered
    summary = ledger.summarize(entries, 4, 4, 5)
    assert summary.counts == {**{v: 0 for v in ledger.VERDICTS}, "delivered": 3, "duplicated": 1}
    assert "mismatched" not in summary.line("at_least_once-x")
    assert summary.as_json()["payload_fields"] is None


def test_the_first_committed_record_is_the_one_compared_and_only_judged_messages_are() -> None:
    records = _records("m0", "m1", "m2")
    # m0 again at a later offset, with another value (the first one counts); m2 never written.
    records.append(ReadRecord(Position(TOPIC, 0, 3), "m0", _value("m0", 99)))
    rows = [_row("m0", 0, records[0].value), _row("m1", 1, records[1].value)]
    entries = _entries(records, rows)
    assert {e.message_id: e.expected_verdict for e in entries}["m2"] == "lost"
    diffs = pl.measure(entries, records, rows, PAYLOAD_COLUMNS)
    assert diffs == {"m0": PayloadDiff(), "m1": PayloadDiff()}


def _broken(change: str) -> tuple[list[LedgerRow], dict[str, PayloadDiff], PayloadPlan]:
    records, rows, plan = _good_run()
    v = {r.message_id: r.value for r in records}
    if change == "mangled row intact":
        rows[1] = _row("m1", 1, v["m1"])
    elif change == "intact row mangled":
        rows[3] = _row("m3", 3, pl.mangle_value(v["m3"]))
    elif change == "copy never written":
        rows.pop()
    elif change == "a message lost":
        rows.pop(0)
    elif change == "ways disagree":
        rows[3] = _row("m3", 3, v["m3"], payload_sha256="00" * 32)
    elif change == "seq mangled too":
        rows[1] = _row("m1", 1, pl.mangle_value(v["m1"]), seq=7)
    entries = _entries(records, rows)
    return entries, pl.measure(entries, records, rows, PAYLOAD_COLUMNS), plan


def test_a_run_that_kept_the_design_passes_the_check() -> None:
    pl.check_plan(*_broken("nothing"))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("mangled row intact", "not differing in exactly its payload, in one row: ['m1']"),
        ("intact row mangled", "never mangled, yet differing: ['m3']"),
        ("copy never written", "not written twice though copied: ['m2']"),
        ("a message lost", "not delivered once: ['m0']"),
        ("ways disagree", "the two ways of comparing disagree: ['m3']"),
        ("seq mangled too", "not differing in exactly its payload, in one row: ['m1']"),
    ],
)
def test_a_run_that_missed_the_design_stores_no_truth(change: str, said: str) -> None:
    with pytest.raises(WorkloadError, match="the mangling consumer missed its design") as err:
        pl.check_plan(*_broken(change))
    assert said in str(err.value)


def test_ledger_gains_the_payload_column_in_place() -> None:
    class Cursor:
        def __init__(self, columns: list[str]) -> None:
            self.columns, self.statements = columns, []

        def execute(self, statement: str, *_: Any) -> None:
            self.statements.append(statement)

        def fetchall(self) -> list[tuple[str]]:
            return [(c,) for c in self.columns]

    old = Cursor(["ledger_key", "latency_seconds"])
    ledger_store.ensure_schema(old)
    assert [s for s in old.statements if s.startswith("ALTER")] == [
        "ALTER TABLE workload.ledger ADD COLUMN payload_diff jsonb"
    ]
    current = Cursor(["ledger_key", "latency_seconds", "payload_diff"])
    ledger_store.ensure_schema(current)
    assert not [s for s in current.statements if s.startswith("ALTER")]
    assert "payload_diff jsonb" in old.statements[1]  # a new ledger has it from the start


# --- the scenario ------------------------------------------------------------------------------


def test_mangling_consumer_is_a_named_scenario() -> None:
    scenario = SCENARIOS["mangling_consumer"]
    assert scenario.defaults == {"mangle_fraction": 0.05, "mangled_copy_fraction": 0.02}
    assert not scenario.takes_hold
    assert "mismatched" in scenario.description and "duplicated" in scenario.description
    plain = ScenarioResult("r", "s", "t", "public.t", "g", {}, "line")
    assert plain.payload_fields == {} and plain.mismatched_ids == []
    assert plain.mangled_copy_ids == [] and plain.sha256_column == "payload_sha256"
    assert "mismatched" in ledger.VERDICTS


def test_a_mangle_fraction_of_zero_is_refused_before_anything_runs() -> None:
    run = Run(
        RunNames("mangling_consumer", "unit"),
        messages=20,
        partitions=1,
        seed=0,
        rates={"mangle_fraction": 0.0, "mangled_copy_fraction": 0.0},
        conf={"bootstrap.servers": "127.0.0.1:1"},  # never contacted
        progress=Progress("mangling_consumer-unit", enabled=False),
    )
    with pytest.raises(WorkloadError, match="mangle_fraction=0.0"):
        mangling_consumer(run)
