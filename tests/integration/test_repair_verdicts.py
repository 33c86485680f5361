"""Repair on the real stack (issue 21), one test per verdict it mends: break a pipeline, plan,
dry-run, apply, run again.

Each test plays producer, consumer and sink writer itself (``everyday_kit``), so it knows which
messages are wrong; the runs use the local engine (the repair does not depend on the engine: it
reads the run's committed results, the sink and the topic). After the apply the test consumes
the replays as the pipeline's consumer would (read_committed, one sink row per record, offsets
committed), then runs again: the contract holds and the plan is ``verified``.

What a repair refuses, and how an apply that died is finished: ``test_repair.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from everyday_kit import (
    EXIT_OK,
    OpenTransaction,
    Setup,
    commit_group,
    ids,
    produce,
    tail,
    write_rows,
)
from kafka_ends import high_watermarks
from repair_kit import (
    apply,
    consume,
    declare_repair,
    plan_file,
    repair_cli,
    repair_row,
    sink_rows,
)

pytestmark = pytest.mark.integration


def counts(s: Setup, run_id: str) -> dict[str, int]:
    row = s.run_row(run_id, "counts")
    assert row is not None
    return {k: v for k, v in row[0].items() if v}


def settled(s: Setup, kafka_config: dict[str, str], path: str, plan: dict[str, Any],
            run_id: str, own_process: bool = False) -> None:  # fmt: skip
    """Dry run changes nothing; apply; a second apply changes nothing; the consumer takes the
    replays; the next run's contract holds and the plan is verified."""
    before_rows, before_ends = sink_rows(s), high_watermarks(kafka_config, s.topic)
    dry = apply(s, path, "--dry-run")
    assert dry.returncode == EXIT_OK, (dry.returncode, tail(dry.stderr))
    assert (sink_rows(s), high_watermarks(kafka_config, s.topic)) == (before_rows, before_ends)
    assert repair_row(plan["plan_id"])[0] == "planned"
    for d in plan["deletes"]:
        assert f"'{d['message_id']}'" in dry.stdout, f"dry run names {d}: {tail(dry.stdout)}"
    for r in plan["replays"]:
        assert r["message_id"] in dry.stdout, f"dry run shows the record of {r}"

    done = apply(s, path, own_process=own_process)
    assert done.returncode == EXIT_OK, (done.returncode, tail(done.stderr))
    status, deleted, replayed, by, _, _ = repair_row(plan["plan_id"])
    assert (status, deleted, len(replayed)) == (
        "applied",
        len(plan["deletes"]),
        len(plan["replays"]),
    ), repair_row(plan["plan_id"])
    assert by, "who applied is recorded"
    gone = {(d["message_id"], tuple(d["key"])) for d in plan["deletes"]}
    left = {(m, (str(k),)) for k, m in sink_rows(s)}
    assert not gone & left, f"planned deletes still in the sink: {gone & left}"

    after_rows, after_ends = sink_rows(s), high_watermarks(kafka_config, s.topic)
    again = apply(s, path)
    assert again.returncode == EXIT_OK and "nothing to do" in again.stdout, tail(again.stdout)
    assert (sink_rows(s), high_watermarks(kafka_config, s.topic)) == (after_rows, after_ends)

    replays = consume(s, kafka_config, before_ends)
    assert sorted(replays) == sorted(r["message_id"] for r in plan["replays"]), replays
    summary = s.run(None, run_id)
    assert summary.contract_passed, (summary.counts, summary.violations)
    status, _, _, _, verified_by, detail = repair_row(plan["plan_id"])
    assert (status, verified_by) == ("verified", run_id), (status, verified_by, detail)
    listed = repair_cli(s, "list", "--pipeline", s.name)
    assert listed.returncode == EXIT_OK, tail(listed.stderr)
    (line,) = [x for x in listed.stdout.splitlines() if plan["plan_id"] in x]
    assert "verified" in line and "replayed messages delivered once" in line, line


def test_lost_messages_are_replayed_and_delivered_once(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    # An idempotent producer: a second position of a message fails the contract, unless it is
    # a repair's replay.
    s = setup("lost", idempotent=True)
    assert s.cfg.idempotent_producer
    every = ids("m", 0, 8)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [m for m in every if m not in ("m2", "m5")], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    assert counts(s, "run-1").get("lost") == 2, counts(s, "run-1")
    path, plan = plan_file(s, "run-1", own_process=True)
    assert [(r["message_id"], r["offset"]) for r in plan["replays"]] == [
        ("m2", where["m2"][1]), ("m5", where["m5"][1])]  # fmt: skip
    assert plan["deletes"] == [] and plan["not_replayable"] == []
    settled(s, kafka_config, path, plan, "run-2", own_process=True)
    assert [m for _, m in sink_rows(s)].count("m2") == 1
    # The replays are the same messages at new offsets: delivered now, not a producer's topic
    # duplicate (recon.repairs knows the replays' positions), and run 1's lost rows corrected.
    replayed = {r["message_id"]: r["offset"] for r in repair_row(plan["plan_id"])[2]}
    assert s.discrepancies("run-2", "verdict, message_id, offsets, topic_duplicate") == [
        ("delivered", m, [where[m][1], replayed[m]], False) for m in ("m2", "m5")]  # fmt: skip
    assert all("replays by a repair" in d for _, _, d in s.discrepancies("run-2"))
    assert s.discrepancies("run-1", "verdict, message_id, corrected_by_run") == [
        ("lost", "m2", "run-2"), ("lost", "m5", "run-2")]  # fmt: skip


def test_duplicated_rows_are_deleted_keeping_the_first(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup("dup", semantics="at_most_once")
    declare_repair(s, max_delete_ratio=0.5)  # a third of the rows: above the default bound
    every = ids("m", 0, 6)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, every, where)
    write_rows(s.pg_kwargs, s.table, ["m1", "m1", "m4"], where)  # a rewind wrote them again
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    assert counts(s, "run-1").get("duplicated") == 2, counts(s, "run-1")
    first = {m: k for k, m in reversed(sink_rows(s))}
    path, plan = plan_file(s, "run-1")
    assert sorted(d["message_id"] for d in plan["deletes"]) == ["m1", "m1", "m4"]
    assert plan["kept"] == {"m1": [str(first["m1"])], "m4": [str(first["m4"])]}
    assert plan["kept_by"] == "id"  # the ingest sequence: the first row written
    settled(s, kafka_config, path, plan, "run-2")
    assert sorted(m for _, m in sink_rows(s)) == every


@pytest.mark.parametrize("kind", ["phantom", "aborted_read"])
def test_phantom_and_aborted_rows_are_deleted(
    kind: str, setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup(kind.replace("_", ""))
    declare_repair(s, max_delete_ratio=0.5)
    every = ids("m", 0, 4)
    where = produce(kafka_config, s.topic, every)
    if kind == "aborted_read":
        txn = OpenTransaction(kafka_config, s.topic, ["x0", "x1"])
        where.update(txn.positions)
        write_rows(s.pg_kwargs, s.table, ["x0", "x1"], where)  # a read_uncommitted consumer
        txn.abort()
    else:
        write_rows(s.pg_kwargs, s.table, ["x0", "x1"])  # rows no record produced
    write_rows(s.pg_kwargs, s.table, every, where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    assert counts(s, "run-1").get(kind) == 2, counts(s, "run-1")
    path, plan = plan_file(s, "run-1")
    assert sorted((d["verdict"], d["message_id"]) for d in plan["deletes"]) == [
        (kind, "x0"), (kind, "x1")]  # fmt: skip
    settled(s, kafka_config, path, plan, "run-2")
    assert sorted(m for _, m in sink_rows(s)) == every
