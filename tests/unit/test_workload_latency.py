"""The slow consumer's pure parts (issue 19, part 1): which messages it holds back, when a parked
record falls due, which offsets it may commit, and the ground truth of ``late`` the workload
measures and stores, on hand-made records and sink rows (no Kafka, no PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Message

from recon_workload import SCENARIOS, WorkloadError, latency, ledger, sink
from recon_workload.judges import judge_latency
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.latency import (
    HOLD_BACK_SECONDS,
    LATE_BOUND_SECONDS,
    LATE_MIN_SECONDS,
    ON_TIME_MAX_SECONDS,
    LatencyDesign,
    LatencyPlan,
)
from recon_workload.ledger import LedgerRow
from recon_workload.names import RunNames
from recon_workload.progress import Progress
from recon_workload.runner import Run, ScenarioResult
from recon_workload.scenarios_latency import slow_consumer
from recon_workload.slow_consumer import (
    ParkedRecords,
    SlowConsumer,
    SlowConsumerSpec,
    due_time,
    safe_offsets,
)

pytestmark = pytest.mark.unit

TOPIC = "wl-slow"
T0_MS = 1_764_000_000_000  # a Kafka timestamp (ms since the epoch)
T0 = datetime.fromtimestamp(T0_MS / 1000, UTC)
IDS = [f"run-{i:06d}" for i in range(300)]


def _pos(partition: int, offset: int) -> Position:
    return Position(TOPIC, partition, offset)


def _delivered(mid: str, *positions: Position, verdict: str | None = "delivered") -> LedgerRow:
    return LedgerRow(mid, mid, True, list(positions), [], 1, len(positions) > 1, verdict)


# --- which messages are held back --------------------------------------------------------------


def test_the_held_back_sample_is_seeded_and_keeps_the_message_order() -> None:
    held = latency.pick_held_back(IDS[:200], 0.1, seed=7)
    assert held == latency.pick_held_back(IDS[:200], 0.1, seed=7)
    assert len(held) == 20
    assert held == [m for m in IDS if m in set(held)]
    assert held != latency.pick_held_back(IDS[:200], 0.1, seed=8)
    assert held != IDS[:20], "a sample, not the first messages"


@pytest.mark.parametrize(
    ("count", "fraction", "expected"),
    [(10, 0.01, 1), (10, 0.99, 9), (2, 0.5, 1), (300, 0.25, 75)],
)
def test_the_sample_holds_at_least_one_back_and_never_all(
    count: int, fraction: float, expected: int
) -> None:
    assert len(latency.pick_held_back(IDS[:count], fraction, seed=0)) == expected


@pytest.mark.parametrize(("count", "fraction"), [(10, 0.0), (10, 1.0), (10, -0.1), (1, 0.5)])
def test_a_sample_that_cannot_have_both_kinds_is_refused(count: int, fraction: float) -> None:
    with pytest.raises(WorkloadError):
        latency.pick_held_back(IDS[:count], fraction, seed=0)


def _msg(partition: int, offset: int, mid: str | None, stamp_ms: int = T0_MS) -> Message:
    headers: list[tuple[str, str | bytes | None]] | None = (
        [("message_id", mid.encode())] if mid else None
    )
    return Message(
        topic=TOPIC,
        partition=partition,
        offset=offset,
        value=b"{}",
        headers=headers,
        timestamp=(1, stamp_ms),
    )


def test_the_consumer_parks_exactly_the_named_messages() -> None:
    spec = SlowConsumerSpec(TOPIC, 2, "g", "t", expect=4, delay_ids=["b", "d"], delay_seconds=4.5)
    consumer: Any = object.__new__(SlowConsumer)  # no Kafka, no PostgreSQL: only the sorting
    consumer.spec, consumer.delay = spec, set(spec.delay_ids)
    consumer.parked, consumer.consumed = ParkedRecords(), {}
    fresh = [_msg(0, 0, "a"), _msg(0, 1, "b"), _msg(1, 0, "c"), _msg(1, 1, "d"), _msg(1, 2, None)]
    now = [m.offset() for m in consumer._sort(fresh)]
    assert now == [0, 0, 2]  # a, c and the record without an id go at once
    assert sorted(consumer.parked.positions()) == [(TOPIC, 0, 1), (TOPIC, 1, 1)]
    assert consumer.consumed == {(TOPIC, 0): 2, (TOPIC, 1): 3}
    # Due HOLD seconds after their Kafka timestamp, not after they were read.
    assert consumer.parked.pop_due(T0_MS / 1000 + 4.4) == []
    assert len(consumer.parked.pop_due(T0_MS / 1000 + 4.5)) == 2


def test_a_parked_record_falls_due_after_its_kafka_timestamp() -> None:
    assert due_time((1, 10_000), 4.5, now=99.0) == pytest.approx(14.5)
    assert due_time((2, 10_000), 4.5, now=99.0) == pytest.approx(14.5)  # LogAppendTime too
    assert due_time((0, -1), 4.5, now=99.0) == pytest.approx(103.5)  # no timestamp: from now


def test_parked_records_come_out_oldest_due_first() -> None:
    parked = ParkedRecords()
    parked.park(3.0, _msg(0, 5, "x"))
    parked.park(1.0, _msg(1, 7, "y"))
    parked.park(1.0, _msg(0, 6, "z"))  # the same due time: no comparison of Message objects
    assert [m.offset() for m in parked.pop_due(2.0)] == [7, 6]
    assert len(parked) == 1
    assert [m.offset() for m in parked.pop_due(3.0)] == [5]


def test_the_committed_offset_never_passes_a_parked_record() -> None:
    consumed = {(TOPIC, 0): 50, (TOPIC, 1): 30}
    parked = [(TOPIC, 0, 12), (TOPIC, 0, 40), (TOPIC, 2, 3)]
    assert safe_offsets(consumed, parked) == {(TOPIC, 0): 12, (TOPIC, 1): 30, (TOPIC, 2): 3}
    assert safe_offsets(consumed, []) == consumed


# --- the truth: measured latency, judged against the bound ------------------------------------


def test_the_design_keeps_a_gap_around_the_bound() -> None:
    design = LatencyDesign()
    assert (design.bound, design.on_time_max, design.late_min) == (2.0, 1.0, 3.5)
    assert ON_TIME_MAX_SECONDS < LATE_BOUND_SECONDS < LATE_MIN_SECONDS < HOLD_BACK_SECONDS
    assert not design.is_late(2.0) and design.is_late(2.001)  # over the bound, as the product
    assert not design.in_gap(1.0) and design.in_gap(1.01) and design.in_gap(3.49)
    assert not design.in_gap(3.5) and not design.in_gap(-0.2)
    with pytest.raises(ValueError):
        LatencyDesign(bound=2.0, on_time_max=2.5, late_min=3.5)


def test_latency_is_the_row_time_minus_the_first_kafka_timestamp() -> None:
    entries = [
        _delivered("a", _pos(0, 0)),
        _delivered("b", _pos(0, 1), _pos(1, 4)),  # a producer retry: timed from its first copy
        _delivered("c", _pos(0, 2), verdict="duplicated"),
        _delivered("d", _pos(0, 3), verdict="lost"),
    ]
    stamps = {_pos(0, 0): T0_MS, _pos(0, 1): T0_MS + 100, _pos(1, 4): T0_MS + 900}
    stamps[_pos(0, 2)] = T0_MS
    written = {"a": T0 + timedelta(seconds=0.25), "b": T0 + timedelta(seconds=4.6)}
    written["c"] = T0 + timedelta(seconds=9)
    got = latency.latencies(entries, stamps, written)
    assert got == {"a": pytest.approx(0.25), "b": pytest.approx(4.5)}  # only delivered ones


def test_a_delivered_message_without_times_is_an_error_not_a_guess() -> None:
    with pytest.raises(WorkloadError, match="no record or sink time"):
        latency.latencies([_delivered("a", _pos(0, 0))], {_pos(0, 0): T0_MS}, {})


def _plan(*held: str) -> LatencyPlan:
    return LatencyPlan(LatencyDesign(), frozenset(held))


def test_late_messages_get_the_verdict_late_and_every_delivered_one_its_latency() -> None:
    entries = [_delivered("a", _pos(0, 0)), _delivered("b", _pos(0, 1))]
    entries.append(_delivered("c", _pos(0, 2), verdict="lost"))
    truth = latency.judge({"a": 0.04, "b": 4.6}, LatencyDesign())
    assert truth.late == {"b"} and truth.in_gap == set()
    latency.check_plan(truth, _plan("b"), {"a", "b"})
    latency.apply(entries, truth)
    got = [(e.message_id, e.expected_verdict, e.latency_seconds) for e in entries]
    assert got == [("a", "delivered", 0.04), ("b", "late", 4.6), ("c", "lost", None)]


@pytest.mark.parametrize(
    ("seconds", "held", "delivered", "problem"),
    [
        ({"a": 1.5, "b": 4.6}, {"b"}, {"a", "b"}, "too near the 2.0 s bound"),
        ({"a": 0.1, "b": 3.0}, {"b"}, {"a", "b"}, "too near"),
        ({"a": 5.0, "b": 4.6}, {"b"}, {"a", "b"}, "late though not held back: ['a']"),
        ({"a": 0.1, "b": 0.2}, {"b"}, {"a", "b"}, "held back, yet on time: ['b']"),
        ({"a": 0.1}, {"b"}, {"a"}, "held back, not delivered once: ['b']"),
    ],
)
def test_a_run_that_broke_its_margins_stores_no_truth(
    seconds: dict[str, float], held: set[str], delivered: set[str], problem: str
) -> None:
    truth = latency.judge(seconds, LatencyDesign())
    with pytest.raises(WorkloadError, match="missed its design") as caught:
        latency.check_plan(truth, _plan(*held), delivered)
    assert problem in str(caught.value)


def test_the_runner_measures_from_what_was_read_back() -> None:
    """Kafka timestamps and sink row times through ledger.build and the runner's judging."""
    records = [
        ReadRecord(_pos(0, i), mid, b"{}", T0_MS + 10 * i, "CreateTime")
        for i, mid in enumerate(["m0", "m1", "m2", "m3"])
    ]
    after = {"m0": 0.05, "m1": 4.7, "m2": 0.3, "m3": 4.52}
    rows = [
        sink.SinkRow(m, TOPIC, 0, i, None, T0 + timedelta(seconds=0.01 * i + after[m]))
        for i, m in enumerate(after)
    ]
    produced = [ledger.Produced(i, m, True) for i, m in enumerate(after)]
    entries = ledger.build(produced, records, records, rows, {0: 4})
    faults: dict[str, Any] = {}
    late = judge_latency(_plan("m1", "m3"), entries, records, rows, faults)
    assert late == {"m1", "m3"}
    verdicts = {e.message_id: e.expected_verdict for e in entries}
    assert verdicts == {"m0": "delivered", "m1": "late", "m2": "delivered", "m3": "late"}
    by_id = {e.message_id: e.latency_seconds for e in entries}
    assert by_id == {m: pytest.approx(s) for m, s in after.items()}
    assert faults["latency"]["timestamp_type"] == "CreateTime"
    assert faults["latency"]["slowest_on_time_seconds"] == pytest.approx(0.3)
    assert faults["latency"]["fastest_late_seconds"] == pytest.approx(4.52)
    summary = ledger.summarize(entries, 4, 4, 4, late_bound=2.0)
    assert summary.counts["late"] == 2 and summary.counts["delivered"] == 2
    assert "delivered=2 late=2 lost=0" in summary.line("slow_consumer-x")
    assert "(late: over 2 s)" in summary.line("slow_consumer-x")


def test_runs_without_a_bound_keep_their_summary_line() -> None:
    rows = [_delivered("a", _pos(0, 0))]
    line = ledger.summarize(rows, 1, 1, 1).line("at_least_once-x")
    assert "late" not in line and "delivered=1 lost=0" in line
    assert ledger.summarize(rows, 1, 1, 1).counts["late"] == 0  # every verdict counted


# --- the scenario and the sink it writes -------------------------------------------------------


def test_the_sink_table_has_a_per_row_write_time() -> None:
    class Recorder:
        statements: list[str] = []

        def execute(self, statement: Any, *_: Any) -> None:
            parts = getattr(statement, "seq", [statement])
            self.statements.append("".join(getattr(p, "string", "") for p in parts))

    cur = Recorder()
    sink.create_tables(cur, "wl_t")
    (create,) = [s for s in cur.statements if s.startswith("CREATE TABLE")]
    assert f"{sink.TIME_COLUMN} timestamptz NOT NULL DEFAULT clock_timestamp()" in create
    assert "ingested_at timestamptz NOT NULL DEFAULT now()" in create  # kept for existing users


def test_slow_consumer_is_a_named_scenario_designed_around_the_bound() -> None:
    scenario = SCENARIOS["slow_consumer"]
    assert scenario.defaults == {"late_fraction": 0.1, "hold_seconds": HOLD_BACK_SECONDS}
    assert not scenario.takes_hold
    assert "late" in scenario.description
    plain = ScenarioResult("r", "s", "t", "public.t", "g", {}, "line")
    assert plain.late_bound_seconds is None and plain.late_ids == []
    assert plain.time_column == "written_at"


def test_a_hold_too_short_for_the_margin_is_refused_before_anything_runs() -> None:
    run = Run(
        RunNames("slow_consumer", "unit"),
        messages=20,
        partitions=1,
        seed=0,
        rates={"late_fraction": 0.1, "hold_seconds": LATE_MIN_SECONDS - 0.5},
        conf={"bootstrap.servers": "127.0.0.1:1"},  # never contacted
        progress=Progress("slow_consumer-unit", enabled=False),
    )
    with pytest.raises(WorkloadError, match="hold_seconds=3 must be at least 3.5"):
        slow_consumer(run)
