"""The upsert consumer's pure parts (issue 19, part 3): the keyed messages it reads, which
accounts it leaves stale and which older record it replays for each, the upsert rows it writes,
and the ground truth of ``out_of_order`` the workload measures per key and stores, on hand-made
records and sink rows (no Kafka, no PostgreSQL)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Message

from recon_workload import (
    SCENARIOS,
    UPSERT_KEY_COLUMN,
    UPSERT_POSITION_COLUMN,
    WorkloadError,
    ledger,
    upsert_sink,
)
from recon_workload import order as od
from recon_workload.judges import judge_order
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.ledger import LedgerRow, Produced
from recon_workload.messages import HEADER, extract_id
from recon_workload.names import RunNames
from recon_workload.order import OrderPlan
from recon_workload.progress import Progress
from recon_workload.runner import Run, ScenarioResult
from recon_workload.scenarios_order import upsert_replay
from recon_workload.upsert import UpsertSpec, decode_key, retries_of, rows_for
from recon_workload.upsert_sink import UpsertRow

pytestmark = pytest.mark.unit

TOPIC = "wl-upsert"


# --- the keyed messages ------------------------------------------------------------------------


def test_messages_are_keyed_by_account_round_robin_with_their_id_three_ways_and_key_twice() -> None:
    messages = od.plan_keyed("tag", 10, 3, seed=4)
    assert len(messages) == 10
    accounts = [m.key.decode() for m in messages if m.key is not None]
    # 10 // 3 = 3 accounts, in turn: each gets its updates interleaved with the others'.
    assert accounts == ["tag-acct0000", "tag-acct0001", "tag-acct0002"] * 3 + ["tag-acct0000"]
    assert Counter(accounts) == {"tag-acct0000": 4, "tag-acct0001": 3, "tag-acct0002": 3}
    for m in messages:
        doc = json.loads(m.value or b"")
        assert set(doc) == {"id", "account", "seq", "payload"}
        assert (doc["id"], doc["seq"]) == (m.message_id, m.seq) == (f"tag-{m.seq:06d}", m.seq)
        assert m.key is not None and doc["account"] == m.key.decode()
        # The account in a header too, for a pipeline that reads the upsert key from one.
        assert m.headers == [(HEADER, doc["id"].encode()), ("account", m.key)]
        assert extract_id(m.headers, m.value) == m.message_id
        assert len(doc["payload"]) == 32
    assert messages == od.plan_keyed("tag", 10, 3, seed=4)
    assert [m.value for m in messages] != [m.value for m in od.plan_keyed("tag", 10, 3, 5)]


@pytest.mark.parametrize(
    ("count", "per_account", "said"),
    [(10, 1, "messages_per_account=1"), (10, 6, "make 1 account(s) of 6"), (3, 2, "of 2")],
)
def test_too_few_accounts_or_updates_are_refused(count: int, per_account: int, said: str) -> None:
    with pytest.raises(WorkloadError, match=r"use 2 or more|need at least two") as err:
        od.plan_keyed("tag", count, per_account, seed=0)
    assert said in str(err.value)


# --- which accounts go stale, and the record replayed --------------------------------------------


def test_the_stale_accounts_are_seeded_and_each_replays_an_older_record_of_its_own() -> None:
    messages = od.plan_keyed("tag", 300, 4, seed=1)
    stale = od.pick_stale(messages, 0.1, seed=1)
    assert stale == od.pick_stale(messages, 0.1, seed=1)
    assert stale != od.pick_stale(messages, 0.1, seed=2)
    assert len(stale) == round(75 * 0.1)  # 75 accounts
    assert list(stale) == sorted(stale)
    by_account: dict[str, list[str]] = {}
    for m in messages:
        assert m.key is not None and m.message_id is not None
        by_account.setdefault(m.key.decode(), []).append(m.message_id)
    for account, replayed in stale.items():
        assert replayed in by_account[account][:-1], "an older record of the account, not its last"
    # Not always the same place in the account's history.
    assert len({by_account[a].index(r) for a, r in stale.items()}) > 1


@pytest.mark.parametrize(("count", "fraction"), [(30, 0.0), (30, 1.0), (30, -0.2), (6, 0.5)])
def test_a_run_without_both_kinds_of_account_is_refused(count: int, fraction: float) -> None:
    # (6 messages of 2: 3 accounts, half stale leaves 1 clean; a run needs two.)
    with pytest.raises(WorkloadError, match="stale_fraction"):
        od.pick_stale(od.plan_keyed("tag", count, 2, seed=0), fraction, seed=0)


def test_at_least_one_account_goes_stale_and_two_stay_clean() -> None:
    stale = od.pick_stale(od.plan_keyed("tag", 9, 3, seed=0), 0.01, seed=0)
    assert len(stale) == 1


# --- the consumer's rows -----------------------------------------------------------------------


def _msg(partition: int, offset: int, key: bytes | None, mid: str, seq: int = 0) -> Message:
    value = json.dumps({"id": mid, "account": "x", "seq": seq, "payload": f"p-{mid}"}).encode()
    return Message(
        topic=TOPIC, partition=partition, offset=offset, key=key, value=value,
        headers=[(HEADER, mid.encode())],
    )  # fmt: skip


def test_each_record_upserts_its_accounts_row_in_the_order_read() -> None:
    batch = [_msg(0, 5, b"a", "m1", 1), _msg(1, 2, b"b", "m2", 2), _msg(0, 6, b"a", "m3", 3)]
    rows = rows_for(batch)
    assert [(r.account, r.message_id, r.partition, r.applied_offset) for r in rows] == [
        ("a", "m1", 0, 5), ("b", "m2", 1, 2), ("a", "m3", 0, 6)
    ]  # fmt: skip
    assert (rows[2].seq, rows[2].payload, rows[2].written_at) == (3, "p-m3", None)
    assert retries_of(rows, {"m1", "zz"}) == [rows[0]]
    assert retries_of(rows, set()) == []


@pytest.mark.parametrize("key", [None, b"\xff\xfe"])
def test_a_record_without_a_usable_key_has_no_row_to_upsert(key: bytes | None) -> None:
    with pytest.raises(ValueError, match="no UTF-8 key"):
        rows_for([_msg(0, 0, key, "m1")])


def test_keys_read_as_text() -> None:
    assert (decode_key(b"acct"), decode_key("acct"), decode_key(None)) == ("acct", "acct", None)
    assert decode_key(b"\xc3\x28") is None


def test_the_spec_travels_as_json() -> None:
    spec = UpsertSpec("t", 3, "g", "wl_x", ["m1", "m2"], batch_size=7)
    assert UpsertSpec.from_json(spec.to_json()) == spec


def test_an_upsert_row_counts_as_one_sink_row_of_its_message_at_its_position() -> None:
    row = UpsertRow.of("a", "m1", 2, 40, b'{"seq": 4, "payload": "p"}')
    assert (row.seq, row.payload) == (4, "p")
    sink_row = row.as_sink_row(TOPIC)
    assert (sink_row.message_id, sink_row.topic, sink_row.partition, sink_row.offset) == (
        "m1", TOPIC, 2, 40
    )  # fmt: skip
    assert (sink_row.seq, sink_row.payload, sink_row.payload_sha256) == (4, "p", None)


class _Recorder:
    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, statement: Any, *_: Any) -> None:
        parts = getattr(statement, "seq", [statement])
        self.statements.append("".join(getattr(p, "string", "") for p in parts))


def test_the_upsert_sink_has_one_row_per_account_with_its_position() -> None:
    cur = _Recorder()
    upsert_sink.create_table(cur, "wl_t")
    drop, create = cur.statements
    assert drop.startswith("DROP TABLE IF EXISTS")
    assert "account text PRIMARY KEY, message_id text," in create
    assert "applied_offset bigint NOT NULL" in create
    assert "written_at timestamptz NOT NULL DEFAULT clock_timestamp()" in create
    assert "id bigserial" not in create, "an upsert sink has no ingest sequence"
    assert (UPSERT_KEY_COLUMN, UPSERT_POSITION_COLUMN) == ("account", "applied_offset")


# --- the truth, per key ------------------------------------------------------------------------


def _value(mid: str, account: str) -> bytes:
    return json.dumps({"id": mid, "account": account, "seq": 0, "payload": "p"}).encode()


#: (partition, offset, messageId, account) of every record of the hand-made run: account a
#: (partition 0) has records at 0, 2, 5; b (partition 1) at 0, 1; c (partition 0) at 1, 3, 4.
RECORDS = [
    (0, 0, "a0", "a"), (0, 2, "a2", "a"), (0, 5, "a5", "a"),
    (1, 0, "b0", "b"), (1, 1, "b1", "b"),
    (0, 1, "c1", "c"), (0, 3, "c3", "c"), (0, 4, "c4", "c"),
]  # fmt: skip


def _records(spec: list[tuple[int, int, str, str]] = RECORDS) -> list[ReadRecord]:
    return [ReadRecord(Position(TOPIC, p, o), m, _value(m, a)) for p, o, m, a in spec]


def _keys(records: list[ReadRecord]) -> dict[Position, str | None]:
    return {r.position: json.loads(r.value or b"")["account"] for r in records}


def _row(account: str, mid: str, partition: int, offset: int) -> UpsertRow:
    return UpsertRow(account, mid, partition, offset)


def _good_rows() -> list[UpsertRow]:
    """a's row stale (holds a2, the newest is a5); b's and c's hold their newest."""
    return [_row("a", "a2", 0, 2), _row("b", "b1", 1, 1), _row("c", "c4", 0, 4)]


def _entries(
    records: list[ReadRecord], rows: list[UpsertRow], committed: dict[int, int] | None = None
) -> list[LedgerRow]:
    produced = [Produced(i, r.message_id, True) for i, r in enumerate(records)]
    sink_rows = [r.as_sink_row(TOPIC) for r in rows]
    return ledger.build(produced, records, records, sink_rows, committed or {0: 6, 1: 2})


def _judged(rows: list[UpsertRow]) -> tuple[list[LedgerRow], od.OrderTruth]:
    records = _records()
    entries = _entries(records, rows)
    truth = od.measure(entries, records, _keys(records), rows)
    od.apply(entries, truth)
    return entries, truth


def test_the_newest_record_of_a_stale_key_is_out_of_order_and_every_other_delivered() -> None:
    entries, truth = _judged(_good_rows())
    verdicts = {e.message_id: e.expected_verdict for e in entries}
    assert verdicts == {"a0": "delivered", "a2": "delivered", "a5": "out_of_order",
                        "b0": "delivered", "b1": "delivered",
                        "c1": "delivered", "c3": "delivered", "c4": "delivered"}  # fmt: skip
    details = {e.message_id: e.detail for e in entries}
    assert details["a5"] == "key a: the sink row holds position 2, the newest is 5"
    assert details["a0"] == "superseded: key a holds position 2"
    assert details["c1"] == "superseded: key c holds position 4"
    assert details["a2"] is None and details["c4"] is None  # the rows' own records
    assert list(truth.stale) == ["a"]
    assert truth.keys["a"].as_json() == {"newest": 5, "newest_id": "a5", "held": 2,
                                         "held_id": "a2"}  # fmt: skip
    # What the sink holds is counted as measured: one row for each record a row names.
    assert {e.message_id: e.sink_rows for e in entries if e.sink_rows} == {"a2": 1, "b1": 1,
                                                                          "c4": 1}  # fmt: skip


def test_a_key_without_a_row_loses_all_its_records() -> None:
    entries, truth = _judged(_good_rows()[:2])  # c has no row
    lost = {e.message_id: e.detail for e in entries if e.expected_verdict == "lost"}
    assert lost == {m: "key c: no sink row" for m in ("c1", "c3", "c4")}
    assert truth.keys["c"].held is None and not truth.keys["c"].stale


def test_records_past_the_committed_offset_are_outside_the_window() -> None:
    # Only a0..a2 and c1 are below partition 0's committed offset 3: a's newest is then a2,
    # which its row holds; c's window is c1, overwritten by c4 (not committed, so not judged).
    records = _records()
    rows = _good_rows()
    entries = _entries(records, rows, {0: 3, 1: 2})
    truth = od.measure(entries, records, _keys(records), rows)
    od.apply(entries, truth)
    verdicts = {e.message_id: e.expected_verdict for e in entries}
    assert verdicts["a2"] == "delivered" and verdicts["a0"] == "delivered"
    assert {m: verdicts[m] for m in ("a5", "c3", "c4")} == dict.fromkeys(
        ("a5", "c3", "c4"), "pending"
    )
    assert truth.stale == {}


def test_a_windowed_record_without_a_key_cannot_be_judged() -> None:
    records = _records()
    keys = {**_keys(records), records[0].position: None}
    rows = _good_rows()
    with pytest.raises(WorkloadError, match="a0: the record at .* has no key"):
        od.measure(_entries(records, rows), records, keys, rows)


def test_the_runner_judges_out_of_order_from_what_was_read_back() -> None:
    records, rows = _records(), _good_rows()
    entries = _entries(records, rows)
    faults: dict[str, Any] = {}
    stale = judge_order(OrderPlan({"a": "a2"}), entries, records, _keys(records), rows, faults)
    assert stale == {"a": {"newest": 5, "newest_id": "a5", "held": 2, "held_id": "a2"}}
    assert faults["order"] == {"key_column": "account", "position_column": "applied_offset",
                               "keys": 3, "stale_keys": 1, "superseded": 4}  # fmt: skip
    summary = ledger.summarize(entries, 8, 8, 3, order_columns=("account", "applied_offset"))
    assert summary.counts["out_of_order"] == 1 and summary.counts["delivered"] == 7
    line = summary.line("upsert_replay-x")
    assert "delivered=7 out_of_order=1 lost=0" in line
    assert "(out_of_order: a row per account holding an older applied_offset)" in line
    assert summary.as_json()["order_columns"] == ["account", "applied_offset"]


def test_runs_over_other_sinks_keep_their_summary_line() -> None:
    entries = _entries(_records(), _good_rows())  # not judged per key
    summary = ledger.summarize(entries, 8, 8, 3)
    assert "out_of_order" not in summary.line("at_least_once-x")
    assert summary.counts["out_of_order"] == 0 and summary.as_json()["order_columns"] is None
    assert "out_of_order" in ledger.VERDICTS


def _broken(change: str) -> tuple[list[LedgerRow], od.OrderTruth, OrderPlan]:
    spec, rows, plan = list(RECORDS), _good_rows(), OrderPlan({"a": "a2"})
    committed = {0: 6, 1: 2}
    if change == "replayed, yet clean":
        rows[0] = _row("a", "a5", 0, 5)
    elif change == "clean, yet stale":
        rows[2] = _row("c", "c1", 0, 1)
    elif change == "another record held":
        rows[0] = _row("a", "a0", 0, 0)
    elif change == "no row":
        rows.pop(1)
    elif change == "row at a wrong position":
        rows[1] = _row("b", "b1", 1, 0)
    elif change == "keyed off its account":
        spec[3] = (1, 0, "b0", "c")  # the value says c; the key (below) still says b
    elif change == "a topic duplicate":
        spec.append((1, 2, "b1", "b"))  # a producer retry's copy of b1
        committed = {0: 6, 1: 3}
    elif change == "a pending record":
        committed = {0: 6, 1: 1}
    elif change == "too few clean":
        plan = OrderPlan({"a": "a2", "c": "c1"})
        rows[2] = _row("c", "c1", 0, 1)
    records = _records(spec)
    keys = {r.position: a for r, (_, _, _, a) in zip(records, RECORDS + spec[8:], strict=True)}
    entries = _entries(records, rows, committed)
    return entries, od.measure(entries, records, keys, rows), plan


def test_a_run_that_kept_the_design_passes_the_check() -> None:
    od.check_plan(*_broken("nothing"))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("replayed, yet clean", "replayed, yet not stale: ['a']"),
        ("clean, yet stale", "stale, yet never replayed: ['c']"),
        ("another record held", "stale, holding another record than the replayed one: ['a']"),
        ("no row", "without a sink row: ['b']"),
        ("row at a wrong position", "a row naming no record of its key at its position: ['b']"),
        ("keyed off its account", "keyed by another account than its value's"),
        ("a pending record", "not committed and claimed: ['b1']"),
        ("a topic duplicate", "in the topic twice: ['b1']"),
        ("too few clean", "2 stale and 1 clean accounts: need 1 and 2 at least"),
    ],
)
def test_a_run_that_missed_the_design_stores_no_truth(change: str, said: str) -> None:
    with pytest.raises(WorkloadError, match="the upsert consumer missed its design") as err:
        od.check_plan(*_broken(change))
    assert said in str(err.value)


# --- the scenario ------------------------------------------------------------------------------


def test_upsert_replay_is_a_named_scenario() -> None:
    scenario = SCENARIOS["upsert_replay"]
    assert scenario.defaults == {"stale_fraction": 0.1, "messages_per_account": 4}
    assert not scenario.takes_hold
    assert "out_of_order" in scenario.description and "delivered" in scenario.description
    plain = ScenarioResult("r", "s", "t", "public.t", "g", {}, "line")
    assert plain.order_columns == {} and plain.out_of_order_ids == [] and plain.stale_keys == {}


@pytest.mark.parametrize(
    ("rates", "said"),
    [
        ({"stale_fraction": 0.0, "messages_per_account": 4}, "stale_fraction=0.0"),
        ({"stale_fraction": 0.1, "messages_per_account": 2.5}, "messages_per_account=2.5"),
        ({"stale_fraction": 0.1, "messages_per_account": 1}, "messages_per_account=1"),
    ],
)
def test_a_scenario_that_cannot_go_stale_is_refused_before_anything_runs(
    rates: dict[str, float], said: str
) -> None:
    run = Run(
        RunNames("upsert_replay", "unit"),
        messages=40,
        partitions=1,
        seed=0,
        rates=rates,
        conf={"bootstrap.servers": "127.0.0.1:1"},  # never contacted
        progress=Progress("upsert_replay-unit", enabled=False),
    )
    with pytest.raises(WorkloadError, match=said):
        upsert_replay(run)
