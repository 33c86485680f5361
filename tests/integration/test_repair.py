"""Repair on the real stack (issue 21): break a pipeline, plan, dry-run, apply, run again.

Each test plays producer, consumer and sink writer itself (``everyday_kit``), so it knows which
messages are wrong; the runs use the local engine (the repair does not depend on the engine: it
reads the run's committed results, the sink and the topic). After the apply the test consumes
the replays as the pipeline's consumer would (read_committed, one sink row per record, offsets
committed), then runs again: the contract holds and the plan is ``verified``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import psycopg2
import pytest
from everyday_kit import (
    EXIT_ERROR,
    EXIT_OK,
    REPO,
    OpenTransaction,
    Setup,
    commit_group,
    consume_into_sink,
    delete_records,
    high_watermarks,
    ids,
    no_traceback,
    produce,
    tail,
    write_rows,
)

from recon.engine import results_db

pytestmark = pytest.mark.integration


@pytest.fixture
def setup(kit_setup: Callable[..., Setup]) -> Callable[..., Setup]:
    """``make(prefix, semantics, idempotent)``: a local-engine pipeline of the kit."""
    return functools.partial(kit_setup, "local")


# --- playing the rest of the pipeline -------------------------------------------------------------


def consume(s: Setup, kafka_config: dict[str, str], since: dict[int, int]) -> list[str]:
    """The pipeline's consumer takes every committed record from ``since`` to the end."""
    return consume_into_sink(kafka_config, s.topic, s.group, s.pg_kwargs, s.table, since)


def sink_rows(s: Setup) -> list[tuple[int, str]]:
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT id, message_id FROM {s.table} ORDER BY id")
        rows = list(cur.fetchall())
    pg.close()
    return rows


def repair_cli(s: Setup, *args: str, own_process: bool = False) -> subprocess.CompletedProcess[str]:
    """``recon repair ARGS`` with the test's pipeline file: in this process (``recon.cli.main``,
    the command's own code, its output captured), or as its own process (``own_process``: the
    command line end to end, once per test file is enough; each costs an interpreter start)."""
    argv = ["--pipelines", str(s.yaml_path), "repair", *args]
    if own_process:
        return subprocess.run([sys.executable, "-m", "recon.cli", *argv], capture_output=True,
                              text=True, timeout=300, cwd=REPO, env=os.environ.copy())  # fmt: skip
    from recon.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def plan_file(s: Setup, run_id: str, own_process: bool = False) -> tuple[str, dict[str, Any]]:
    out = os.path.join(s.data_dir, f"plan-{run_id}.json")
    result = repair_cli(s, "plan", "--pipeline", s.name, "--run-id", run_id, "--out", out,
                        own_process=own_process)  # fmt: skip
    no_traceback(result, "repair plan")
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    with open(out, encoding="utf-8") as fh:
        return out, json.load(fh)


def apply(s: Setup, path: str, *flags: str, own_process: bool = False
          ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    result = repair_cli(s, "apply", path, *flags, own_process=own_process)
    no_traceback(result, f"repair apply {' '.join(flags)}")
    return result


def repair_row(plan_id: str) -> tuple[Any, ...]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT status, deleted, replayed, applied_by, verified_by_run, detail "
                    "FROM recon.repairs WHERE plan_id = %s", (plan_id,))  # fmt: skip
        row = cur.fetchone()
    assert row is not None, f"plan {plan_id} not in recon.repairs"
    return tuple(row)


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


# --- one test per verdict ---------------------------------------------------------------------


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


# --- safety ------------------------------------------------------------------------------------


def test_a_plan_is_refused_once_the_sink_changed(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup("stale", semantics="at_most_once")
    every = ids("m", 0, 4)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [*every, "m1"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    path, plan = plan_file(s, "run-1")
    write_rows(s.pg_kwargs, s.table, ["m1"], where)  # the consumer wrote m1 a third time
    rows = sink_rows(s)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    assert "changed since plan" in result.stderr and "nothing was changed" in result.stderr, (
        tail(result.stderr))  # fmt: skip
    assert sink_rows(s) == rows
    status, *_, detail = repair_row(plan["plan_id"])
    assert status == "refused" and "changed since plan" in detail, (status, detail)
    again = apply(s, path)
    assert again.returncode == EXIT_OK and "already refused" in again.stdout, tail(again.stdout)
    assert sink_rows(s) == rows

    edited = dict(plan, topic="another")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(edited, fh)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR and "edited" in result.stderr, tail(result.stderr)


def test_a_sink_without_a_primary_key_is_refused(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup("nokey", semantics="at_most_once")
    where = produce(kafka_config, s.topic, ["m0"])
    write_rows(s.pg_kwargs, s.table, ["m0", "m0"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"ALTER TABLE {s.table} DROP CONSTRAINT {s.table.split('.')[1]}_pkey")
    pg.close()
    result = repair_cli(s, "plan", "--pipeline", s.name, "--run-id", "run-1")
    no_traceback(result, "plan without a key")
    assert result.returncode == EXIT_ERROR and "no primary key" in result.stderr, (
        tail(result.stderr))  # fmt: skip


@pytest.mark.parametrize("crash", ["before_replay", "before_record"])
def test_a_crash_mid_apply_is_finished_by_a_second_apply(
    crash: str, setup: Callable[..., Setup], kafka_config: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from recon.repair import applier
    from recon.repair.plan_model import read_plan

    s = setup(f"crash{crash.split('_')[1]}", semantics="at_least_once")
    every = ids("m", 0, 6)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [*[m for m in every if m != "m3"], "m1"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    path, plan = plan_file(s, "run-1")
    assert len(plan["deletes"]) == 1 and len(plan["replays"]) == 1, plan
    start = high_watermarks(kafka_config, s.topic)

    class Crash(Exception):
        pass

    def boom(*_: Any, **__: Any) -> Any:
        raise Crash(crash)

    with monkeypatch.context() as m:
        if crash == "before_replay":
            m.setattr(applier, "produce", boom)
        else:
            m.setattr(applier.store, "mark_applied", boom)
        with pytest.raises(Crash):
            applier.apply_plan(read_plan(path), s.cfg, say=lambda _: None)
    assert repair_row(plan["plan_id"])[0] == "applying"
    assert sorted(m for _, m in sink_rows(s)) == ["m0", "m1", "m2", "m4", "m5"]  # one m1 gone
    replayed_once = high_watermarks(kafka_config, s.topic)[0] - start[0]
    assert replayed_once == (0 if crash == "before_replay" else 1), replayed_once

    result = apply(s, path)
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    assert high_watermarks(kafka_config, s.topic)[0] - start[0] == 1, "one replay in all"
    assert repair_row(plan["plan_id"])[:3] == ("applied", 1, [
        {"message_id": "m3", "partition": 0, "offset": start[0]}])  # fmt: skip
    assert consume(s, kafka_config, start) == ["m3"]
    summary = s.run(None, "run-2")
    assert summary.contract_passed, (summary.counts, summary.violations)
    assert repair_row(plan["plan_id"])[0] == "verified"


def test_records_removed_by_retention_are_not_replayable(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup("retention", semantics="at_least_once")
    every = ids("m", 0, 6)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [m for m in every if m not in ("m1", "m4")], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    assert delete_records(kafka_config, s.topic, 0, where["m3"][1]) == where["m3"][1]
    path, plan = plan_file(s, "run-1")
    assert [r["message_id"] for r in plan["replays"]] == ["m4"]
    (gone,) = plan["not_replayable"]
    assert (gone["message_id"], gone["offset"]) == ("m1", where["m1"][1])
    assert "removed by retention" in gone["reason"] and str(where["m3"][1]) in gone["reason"]
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert s.pg_kwargs["password"] not in text, "the plan file holds no credential"


def test_a_plan_that_would_delete_a_last_copy_is_refused(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    from recon.repair.plan_model import Delete, plan_to_json
    from recon.repair.planner import make_plan
    from recon.repair.sink_rows import state_of

    s = setup("lastcopy", semantics="at_most_once")
    where = produce(kafka_config, s.topic, ["m0", "m1"])
    write_rows(s.pg_kwargs, s.table, ["m0", "m1", "m1"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    plan = make_plan(s.cfg, "run-1")
    # A plan (made by hand, with a consistent id) that deletes the kept row as well.
    (kept,) = plan.kept.values()
    deletes = (*plan.deletes, Delete("duplicated", "m1", kept))
    bad = dataclasses.replace(plan, deletes=deletes, after=state_of([]))
    bad = dataclasses.replace(bad, plan_id=bad.content_id())
    path = os.path.join(s.data_dir, "bad-plan.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(plan_to_json(bad))
    rows = sink_rows(s)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    assert "last row" in result.stderr and "nothing was changed" in result.stderr, tail(
        result.stderr)  # fmt: skip
    assert sink_rows(s) == rows


def test_a_plan_for_another_sink_or_topic_is_refused(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    from recon.repair.applier import apply_plan
    from recon.repair.planner import make_plan
    from recon.repair.sink_rows import RepairRefused

    s = setup("moved", semantics="at_most_once")
    where = produce(kafka_config, s.topic, ["m0"])
    write_rows(s.pg_kwargs, s.table, ["m0", "m0"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    plan = make_plan(s.cfg, "run-1")
    rows = sink_rows(s)
    moved = dataclasses.replace(s.cfg, sink=dataclasses.replace(s.cfg.sink, table="public.other"))
    with pytest.raises(RepairRefused, match=r"sink.table: plan '.*', pipeline 'public.other'"):
        apply_plan(plan, moved, say=lambda _: None)
    renamed = dataclasses.replace(s.cfg, kafka=dataclasses.replace(s.cfg.kafka, topic="t2"))
    with pytest.raises(RepairRefused, match="kafka.topic"):
        apply_plan(plan, renamed, say=lambda _: None)
    assert sink_rows(s) == rows


def test_lost_rows_written_to_the_sink_from_their_records(
    setup: Callable[..., Setup], kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.config import load_pipelines
    from recon.repair import applier
    from recon.repair.plan_model import read_plan

    s = setup("direct", semantics="at_least_once")
    s.yaml_path.write_text(
        s.yaml_path.read_text() + "    repair:\n      sink_columns: {message_id: message_id, "
        "kafka_partition: partition, kafka_offset: offset}\n"
    )
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    every = ids("m", 0, 6)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [*[m for m in every if m != "m2"], "m4"], where)
    ends = commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    out = os.path.join(s.data_dir, "direct.json")
    result = repair_cli(s, "plan", "--pipeline", s.name, "--run-id", "run-1", "--write-sink",
                        "--out", out)  # fmt: skip
    assert result.returncode == EXIT_OK, tail(result.stderr)
    assert "write the sink rows of 1 lost records" in result.stdout, result.stdout
    plan = read_plan(out)
    assert (plan.replay_mode, [r.message_id for r in plan.replays]) == ("sink", ["m2"])
    assert [d.message_id for d in plan.deletes] == ["m4"]

    rows = sink_rows(s)
    dry = apply(s, out, "--dry-run")
    assert dry.returncode == EXIT_OK, tail(dry.stderr)
    assert "DELETE FROM" in dry.stdout and "INSERT INTO" in dry.stdout, dry.stdout
    assert f"('m2', 0, {where['m2'][1]})" in dry.stdout, dry.stdout
    assert sink_rows(s) == rows

    class Crash(Exception):
        pass

    def boom(*_: Any, **__: Any) -> Any:
        raise Crash

    with monkeypatch.context() as m:  # the sink transaction commits, its record does not
        m.setattr(applier.store, "mark_applied", boom)
        with pytest.raises(Crash):
            applier.apply_plan(plan, s.cfg, say=lambda _: None)
    done = apply(s, out)
    assert done.returncode == EXIT_OK and "earlier apply" in done.stdout, tail(done.stdout)
    assert sorted(m for _, m in sink_rows(s)) == every
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT id, kafka_partition, kafka_offset FROM {s.table} "
                    "WHERE message_id = 'm2'")  # fmt: skip
        (key, partition, offset) = cur.fetchone()
    pg.close()
    assert (partition, offset) == where["m2"]
    status, deleted, replayed, *_ = repair_row(plan.plan_id)
    assert (status, deleted, replayed) == ("applied", 1, [
        {"message_id": "m2", "sink_key": [str(key)]}])  # fmt: skip
    assert high_watermarks(kafka_config, s.topic) == ends, "nothing was produced"
    assert "nothing to do" in apply(s, out).stdout

    summary = s.run(None, "run-2")
    assert summary.contract_passed, (summary.counts, summary.violations)
    assert repair_row(plan.plan_id)[0] == "verified"
    assert s.discrepancies("run-1", "verdict, message_id, corrected_by_run") == [
        ("duplicated", "m4", None), ("lost", "m2", "run-2")]  # fmt: skip


def test_a_repair_column_the_sink_lacks_is_named_before_any_run(
    setup: Callable[..., Setup],
) -> None:
    from recon.config import load_pipelines
    from recon.preflight import check_pipeline
    from recon.repair.sink_rows import RepairRefused

    s = setup("nocolumn")
    s.yaml_path.write_text(s.yaml_path.read_text() + "    repair:\n      sink_columns: "
                           "{message_id: message_id, amount: {json_field: amount}}\n")  # fmt: skip
    cfg = load_pipelines(s.yaml_path)[s.name]
    with pytest.raises(RepairRefused, match=rf"pipeline '{s.name}': repair.sink_columns.amount"):
        check_pipeline(cfg)
    result = repair_cli(s, "plan", "--pipeline", s.name, "--write-sink")
    assert result.returncode == EXIT_ERROR and "repair.sink_columns.amount" in result.stderr, (
        tail(result.stderr))  # fmt: skip


def test_a_write_sink_apply_that_died_before_its_commit_is_done_by_the_next(
    setup: Callable[..., Setup], kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.config import load_pipelines
    from recon.repair import applier
    from recon.repair.planner import make_plan

    s = setup("uncommitted", semantics="at_least_once")
    s.yaml_path.write_text(s.yaml_path.read_text() + "    repair:\n      sink_columns: "
                           "{message_id: message_id, kafka_offset: offset}\n")  # fmt: skip
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    where = produce(kafka_config, s.topic, ["m0", "m1"])
    write_rows(s.pg_kwargs, s.table, ["m0"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    plan = make_plan(s.cfg, "run-1", write_sink=True)
    assert not plan.deletes and [r.message_id for r in plan.replays] == ["m1"]

    class Crash(Exception):
        pass

    def boom(*_: Any, **__: Any) -> Any:
        raise Crash

    with monkeypatch.context() as m:  # dies inside the sink transaction: nothing committed
        m.setattr(applier, "insert_rows", boom)
        with pytest.raises(Crash):
            applier.apply_plan(plan, s.cfg, say=lambda _: None)
    assert repair_row(plan.plan_id)[0] == "applying"
    assert [m for _, m in sink_rows(s)] == ["m0"]
    result = applier.apply_plan(plan, s.cfg, say=lambda _: None)
    assert (result.status, result.replayed) == ("applied", 1)
    assert sorted(m for _, m in sink_rows(s)) == ["m0", "m1"]
