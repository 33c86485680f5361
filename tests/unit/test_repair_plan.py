"""Repair plans without services: the plan file, which rows go, and how an applied plan is
judged, on tiny hand-made inputs (the real stack: tests/integration/test_repair.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from recon.repair.commands import summary_lines
from recon.repair.plan_model import (
    Delete,
    RepairPlan,
    RepairPlanInvalid,
    Replay,
    SinkTarget,
    plan_from_dict,
    plan_to_json,
    read_plan,
)
from recon.repair.planner import _deletes
from recon.repair.sink_rows import state_of
from recon.repair.verify import judge

pytestmark = pytest.mark.unit

TARGET = SinkTarget("postgres_sink", "public.orders", "message_id", ("id",), ("bigint",))

#: the sink of a run: m1 twice (ids 1, 4), p1 a phantom (id 2), m2 once (id 3)
ROWS = [("m1", ("1",)), ("m1", ("4",)), ("m2", ("3",)), ("p1", ("2",))]
JUDGED = [
    ("duplicated", "m1", "orders", 0, 10),
    ("phantom", "p1", None, None, None),
    ("lost", "m9", "orders", 0, 19),
]


def one_of_each() -> RepairPlan:
    deletes, kept = _deletes(JUDGED, ROWS)  # type: ignore[arg-type]
    deleted = {(d.message_id, d.key) for d in deletes}
    plan = RepairPlan(
        pipeline="orders", run_id="run-1", semantics="exactly_once",
        kafka_connection="kafka_default", topic="orders", replay_topic="orders", sink=TARGET,
        before=state_of(r for r in ROWS if r[0] != "m2"),
        after=state_of(r for r in ROWS if r[0] != "m2" and r not in deleted),
        replays=(Replay("lost", "m9", 0, 19),), deletes=tuple(deletes), kept=kept,
    )  # fmt: skip
    return dataclasses.replace(plan, plan_id=plan.content_id(), created_at="2026-11-26T00:00:00")


def test_duplicates_keep_their_first_row_and_phantoms_lose_all() -> None:
    deletes, kept = _deletes(JUDGED, ROWS)  # type: ignore[arg-type]
    assert deletes == [Delete("duplicated", "m1", ("4",)), Delete("phantom", "p1", ("2",))]
    assert kept == {"m1": ("1",)}


def test_the_state_ignores_row_order_and_sees_a_changed_key() -> None:
    assert state_of(ROWS) == state_of(list(reversed(ROWS)))
    assert state_of(ROWS).rows == 4
    moved = [("m1", ("1",)), ("m1", ("5",)), ("m2", ("3",)), ("p1", ("2",))]
    assert state_of(moved).rows == 4 and state_of(moved) != state_of(ROWS)


def test_the_plan_file_round_trips_and_holds_no_secret(tmp_path: Path) -> None:
    plan = one_of_each()
    path = tmp_path / "plan.json"
    path.write_text(plan_to_json(plan))
    assert read_plan(str(path)) == plan
    text = path.read_text()
    assert "password" not in text.lower() and "postgres_sink" in text
    assert plan.state_ids() == ["m1", "p1"]
    assert plan.counts() == {"replay lost": 1, "delete duplicated": 1, "delete phantom": 1}


def test_an_edited_plan_is_refused(tmp_path: Path) -> None:
    data = json.loads(plan_to_json(one_of_each()))
    data["deletes"].append({"verdict": "phantom", "message_id": "m2", "key": ["3"]})
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RepairPlanInvalid, match="does not match its id"):
        read_plan(str(path))
    with pytest.raises(RepairPlanInvalid, match="not a repair plan"):
        plan_from_dict({"format": "something else"})
    path.write_text("{not json")
    with pytest.raises(RepairPlanInvalid, match="not JSON"):
        read_plan(str(path))
    with pytest.raises(RepairPlanInvalid, match="No such file"):
        read_plan(str(tmp_path / "missing.json"))


def test_the_same_run_and_sink_give_the_same_plan_id() -> None:
    a, b = one_of_each(), dataclasses.replace(one_of_each(), created_at="later")
    assert a.content_id() == b.content_id() == a.plan_id


REPLAYED = [{"message_id": "m9", "partition": 0, "offset": 30}]
REPAIRED = [("m1", ("1",)), ("m9", ("7",))]


@pytest.mark.parametrize(
    ("rows", "committed", "status", "said"),
    [
        (REPAIRED, {0: 31}, "verified", "1 replayed messages delivered once, 2 deleted rows gone"),
        ([("m1", ("1",))], {0: 30}, "applied", "1 replayed messages not consumed yet"),
        ([("m1", ("1",))], None, "applied", "not consumed yet"),
        ([("m1", ("1",))], {0: 31}, "failed", "replayed m9 was consumed and has no sink row"),
        ([*REPAIRED, ("m9", ("8",))], {0: 31}, "failed", "replayed m9 has 2 sink rows"),
        ([*REPAIRED, ("m1", ("4",))], {0: 31}, "failed", "1 deleted rows are back"),
        ([("m1", ("4",)), ("m9", ("7",))], {0: 31}, "failed", "do not have exactly their kept"),
        ([*REPAIRED, ("p1", ("9",))], {0: 31}, "failed", "1 phantom messages have rows"),
    ],
    ids=[
        "verified",
        "waiting",
        "repair-topic",
        "lost-again",
        "replayed-twice",
        "deleted-back",
        "kept-gone",
        "phantom-back",
    ],  # fmt: skip
)
def test_an_applied_plan_is_judged_by_the_sink(
    rows: list[tuple[str, tuple[str, ...]]], committed: dict[int, int] | None, status: str,
    said: str,
) -> None:  # fmt: skip
    got, detail = judge(one_of_each(), REPLAYED, rows, committed)
    assert (got, said in detail) == (status, True), (got, detail)


def test_the_summary_escapes_what_comes_from_the_data() -> None:
    plan = dataclasses.replace(one_of_each(), deletes=(Delete("phantom", "\x1b[31mred", ("2",)),))
    text = "\n".join(summary_lines(plan))
    assert "\x1b" not in text and "delete 1 sink rows of public.orders by (id)" in text
    assert "replay 1 lost records from orders to orders" in text


class _Msg:
    def __init__(self, partition: int, offset: int, eof: bool = False) -> None:
        self._p, self._o, self._eof = partition, offset, eof

    def error(self) -> object | None:
        if not self._eof:
            return None
        from confluent_kafka import KafkaError

        return KafkaError(KafkaError._PARTITION_EOF)

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def topic(self) -> str:
        return "orders"

    def key(self) -> bytes:
        return f"m{self._o}".encode()

    def value(self) -> bytes:
        return b"{}"

    def headers(self) -> list[tuple[str, bytes]]:
        return [("message_id", f"m{self._o}".encode())]

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000)


class _Log:
    """A partition log with offsets ``present`` (compaction and markers leave gaps)."""

    def __init__(self, present: list[int]) -> None:
        self.present, self.at, self.seeks = sorted(present), 0, 0

    def assign(self, tps: list) -> None:  # type: ignore[type-arg]
        self.seeks += 1
        self.at = tps[0].offset

    def poll(self, timeout: float) -> _Msg:
        later = [o for o in self.present if o >= self.at]
        if not later:
            return _Msg(0, self.at, eof=True)
        self.at = later[0] + 1
        return _Msg(0, later[0])

    def close(self) -> None:
        pass


def test_originals_are_read_forward_and_gaps_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.config import MessageIdSpec
    from recon.repair import replay

    log = _Log([*range(0, 10), *range(12, 20), 5000, 5001])
    monkeypatch.setattr(replay, "_consumer", lambda config: log)
    wanted = [Replay("lost", f"m{o}", 0, o) for o in (3, 4, 10, 15, 5001, 6000)]
    found, gone = replay.read_originals({}, "orders", MessageIdSpec("header", "message_id"), wanted)
    assert [o.replay.offset for o in found] == [3, 4, 15, 5001]
    assert [(r.offset, "no longer in orders/0" in why) for r, why in gone] == [
        (10, True), (6000, True)]  # fmt: skip
    assert log.seeks == 2  # read forward from 3 to 15, one seek over the gap to 5001
    assert found[0].headers == (("message_id", b"m3"),) and found[0].timestamp_ms
