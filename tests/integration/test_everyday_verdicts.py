"""Four everyday situations (issue 15), judged message by message on both engines.

Each test has its own topic, consumer group and sink table, and plays producer, consumer and sink
writer itself (confluent-kafka producers, offsets committed for the group with the AdminClient,
psycopg2 writers), then compares each run's verdicts with what really happened:

1. an idle pipeline: a window whose records were committed by the group but never written (the
   run's sink range is empty) is judged ``lost``; a run with nothing new is a normal run; the CLI's
   exit status and JSON; an unexpected failure is exit 2, one line, and an ``error`` run row;
2. a read_uncommitted consumer: sink rows of an open transaction and of committed records behind
   it are ``pending`` until the transaction ends, then ``aborted_read`` or ``delivered``;
3. two concurrent sink writers: a row that commits after a run passed its ingest sequence is found
   later, and the earlier ``lost`` is corrected;
4. retention: pending sink rows whose records were removed before they were read become
   ``unverifiable``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import psycopg2
import psycopg2.errors
import pytest
from everyday_kit import (
    ENGINES,
    EXIT_CONTRACT_BROKEN,
    EXIT_ERROR,
    EXIT_OK,
    OpenTransaction,
    Setup,
    commit_group,
    corrupt_ledger,
    delete_records,
    high_watermarks,
    ids,
    insert,
    no_traceback,
    parse_summary,
    produce,
    same,
    tail,
    write_rows,
)

pytestmark = pytest.mark.integration

engines = pytest.mark.parametrize("engine", ENGINES)


@pytest.fixture
def setup(kit_setup: Callable[..., Setup]) -> Callable[..., Setup]:
    """Makes one pipeline (topic, group, sink table) for the test; forgets and drops it after."""
    return kit_setup


# --- 1. an idle pipeline --------------------------------------------------------------------------


@engines
def test_idle_pipeline_judges_committed_records_without_sink_rows(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = setup(engine, "idle")
    first = ids("m", 0, 10)
    where = produce(kafka_config, s.topic, first)
    write_rows(s.pg_kwargs, s.table, first, where)
    commit_group(kafka_config, s.group, s.topic)
    summary = s.run(spark, "run-1")
    same(dict.fromkeys(first, "delivered"), s.verdicts(spark, "run-1"), "run 1")
    assert summary.contract_passed, summary.violations

    # The consumer commits m10..m14 and writes nothing: the run's sink range is empty. The CLI's
    # exit status does not depend on the engine: Spark runs in this process (a `recon run` of
    # its own costs a JVM start and a validation, about a minute).
    lost = ids("m", 10, 15)
    produce(kafka_config, s.topic, lost)
    assert commit_group(kafka_config, s.group, s.topic) == {0: 15}
    if engine == "local":
        result = s.cli("run-2")
        no_traceback(result, "run 2")
        assert result.returncode == EXIT_CONTRACT_BROKEN, (result.returncode, tail(result.stderr))
        summary2 = parse_summary(result, "run 2")
    else:
        summary2 = dataclasses.asdict(s.run(spark, "run-2"))
    assert summary2["run_id"] == "run-2" and summary2["contract_passed"] is False, summary2
    assert summary2["counts"].get("lost") == 5, summary2["counts"]
    same(dict.fromkeys(lost, "lost"), s.verdicts(spark, "run-2"), "run 2 (empty sink range)")
    lost_rows = sorted(m for v, m, _ in s.discrepancies("run-2") if v == "lost")
    assert lost_rows == lost, lost_rows
    assert s.run_row("run-2", "status, contract_passed") == ("failed", False)

    # Nothing new at all: a normal run, nothing judged. On Spark an empty window is
    # test_bad_input.py's empty topic, judged twice (a Spark run costs about 15 s of the
    # suite's budget).
    if engine == "spark":
        return
    result = s.cli("run-3")
    no_traceback(result, "run 3")
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    summary3 = parse_summary(result, "run 3")
    assert summary3["run_id"] == "run-3" and summary3["contract_passed"] is True, summary3
    assert not {v: n for v, n in summary3["counts"].items() if n}, summary3["counts"]
    same({}, s.verdicts(spark, "run-3"), "run 3 (nothing new)")
    assert s.discrepancies("run-3") == []
    assert s.run_row("run-3", "status") == ("passed",)


@engines
def test_unexpected_failure_exits_2_and_marks_the_run(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = setup(engine, "broken")
    first = ids("m", 0, 5)
    where = produce(kafka_config, s.topic, first)
    write_rows(s.pg_kwargs, s.table, first, where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(spark, "run-1")
    same(dict.fromkeys(first, "delivered"), s.verdicts(spark, "run-1"), "run 1")

    # Something to judge, and a ledger that cannot be read.
    more = ids("m", 5, 8)
    where = produce(kafka_config, s.topic, more)
    write_rows(s.pg_kwargs, s.table, more, where)
    commit_group(kafka_config, s.group, s.topic)
    corrupt_ledger(s.data_dir, s.name, s.ledger_path())

    result = s.cli("run-2")
    no_traceback(result, "run 2 (ledger unreadable)")
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stderr))
    assert result.stdout.strip() == "", f"no summary for a failed run: {tail(result.stdout)}"
    errors = [line for line in result.stderr.splitlines() if line.startswith("recon: error: ")]
    assert len(errors) == 1, f"one line 'recon: error: ...' on stderr: {tail(result.stderr)}"
    row = s.run_row("run-2", "status, error")
    assert row is not None, "run-2 has no row in recon.runs"
    status, error = row
    assert status == "error" and error, f"run-2 in recon.runs: {row}"


# --- 2. a read_uncommitted consumer ---------------------------------------------------------------


# Both engines read the open transaction's records the same way for either outcome; the abort
# adds the read_uncommitted pass over the gapped partition: Spark runs that one (a Spark pair of
# runs costs about 25 s of the suite's budget).
@pytest.mark.parametrize(
    ("engine", "outcome"),
    [("local", "abort"), ("local", "commit"), ("spark", "abort")],
    ids=["abort-local", "commit-local", "abort-spark"],
)
def test_rows_past_the_last_stable_offset_are_pending(
    engine: str, outcome: str, setup: Callable[..., Setup], kafka_config: dict[str, str],
    spark: Any,
) -> None:  # fmt: skip
    s = setup(engine, f"lso_{outcome}")
    c, a, b = ids("c", 0, 3), ids("a", 0, 3), ids("b", 0, 3)
    where = produce(kafka_config, s.topic, c)
    txn = OpenTransaction(kafka_config, s.topic, a)
    s.closers.append(txn.abort)
    where.update(txn.positions)
    where.update(produce(kafka_config, s.topic, b))  # committed records behind the open txn
    assert max(o for _, o in (where[m] for m in a)) < min(o for _, o in (where[m] for m in b))
    # A read_uncommitted consumer wrote every record it saw and committed the high watermark.
    write_rows(s.pg_kwargs, s.table, c + a + b, where)
    hw = commit_group(kafka_config, s.group, s.topic)
    assert hw[0] == 9, hw

    summary = s.run(spark, "run-1")
    want = {**dict.fromkeys(c, "delivered"), **dict.fromkeys(a + b, "pending")}
    same(want, s.verdicts(spark, "run-1"), "run 1 (transaction open)")
    assert summary.contract_passed, f"run 1 broke the contract: {summary.violations}"
    assert not any(v in ("phantom", "aborted_read") for v, _, _ in s.discrepancies("run-1"))

    if outcome == "abort":
        txn.abort()
        want2 = {**dict.fromkeys(a, "aborted_read"), **dict.fromkeys(b, "delivered")}
    else:
        txn.commit()
        want2 = dict.fromkeys(a + b, "delivered")
    assert high_watermarks(kafka_config, s.topic)[0] == 10  # the marker
    s.run(spark, "run-2")
    same(want2, s.verdicts(spark, "run-2"), f"run 2 (transaction {outcome}ed)")


# --- 3. two concurrent sink writers ---------------------------------------------------------------


@engines
def test_a_row_committed_late_corrects_the_lost_verdict(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any,
    pg_kwargs: dict[str, Any],
) -> None:  # fmt: skip
    s = setup(engine, "late")
    every = ids("m", 1, 21)
    where = produce(kafka_config, s.topic, every)
    commit_group(kafka_config, s.group, s.topic)
    writer_a = psycopg2.connect(**pg_kwargs)
    s.closers.append(writer_a.close)
    s.closers.append(writer_a.rollback)
    with writer_a.cursor() as cur:
        insert(cur, s.table, ["m1"], where)  # the lowest id; the transaction stays open
    write_rows(pg_kwargs, s.table, every[1:], where)  # writer B: m2..m20, committed

    s.run(spark, "run-1")
    same({"m1": "lost", **dict.fromkeys(every[1:], "delivered")}, s.verdicts(spark, "run-1"),
         "run 1 (writer A's transaction open)")  # fmt: skip

    writer_a.commit()
    s.run(spark, "run-2")
    same({"m1": "delivered"}, s.verdicts(spark, "run-2"), "run 2 (writer A committed)")
    rows2 = [(v, d) for v, m, d in s.discrepancies("run-2") if m == "m1"]
    assert len(rows2) == 1 and rows2[0][0] == "delivered", (
        f"run 2 reports the correction of m1 in recon.discrepancies: {rows2}")  # fmt: skip
    assert "lost" in (rows2[0][1] or ""), f"the detail says m1 was judged lost: {rows2}"
    try:
        corrected = s.discrepancies("run-1", "verdict, message_id, corrected_by_run")
        (corrections,) = s.run_row("run-1", "corrections") or (None,)
    except psycopg2.errors.UndefinedColumn as exc:
        pytest.fail(f"no correction recorded in the results database: {exc}".splitlines()[0])
    assert [r for r in corrected if r[1] == "m1"] == [("lost", "m1", "run-2")], corrected
    assert corrections == {"lost": 1}, f"recon.runs.corrections of run 1: {corrections!r}"

    s.run(spark, "run-3")
    same({}, s.verdicts(spark, "run-3"), "run 3 (nothing new)")
    assert s.discrepancies("run-3") == []


# --- 4. retention after a run saw pending sink rows -----------------------------------------------


# The group stuck on Spark is not run: its verdicts (pending rows, the window still ending below
# the new log start: unverifiable) are the named scenario pending_removed_by_retention, which
# test_engine_parity.py holds Spark to column by column; the offset snapshot that finds the log
# start moved is one step of both engines (group_stuck-local); Spark's run over a topic retention
# emptied is group_advances-spark (a Spark run costs about 10 s of the suite's budget).
@pytest.mark.parametrize(
    ("group_moves", "engine"),
    [(True, "spark"), (True, "local"), (False, "local")],
    ids=["group_advances-spark", "group_advances-local", "group_stuck-local"],
)
def test_pending_rows_whose_records_were_removed_become_unverifiable(
    engine: str, group_moves: bool, setup: Callable[..., Setup], kafka_config: dict[str, str],
    spark: Any,
) -> None:  # fmt: skip
    s = setup(engine, "retention" if group_moves else "retention_stuck")
    first = ids("m", 0, 10)
    where = produce(kafka_config, s.topic, first)
    commit_group(kafka_config, s.group, s.topic, {0: 5})
    write_rows(s.pg_kwargs, s.table, first, where)

    s.run(spark, "run-1")
    want1 = {**dict.fromkeys(first[:5], "delivered"), **dict.fromkeys(first[5:], "pending")}
    same(want1, s.verdicts(spark, "run-1"), "run 1 (m5..m9 past the committed offset)")

    assert delete_records(kafka_config, s.topic, 0, 10) == 10
    want2 = dict.fromkeys(first[5:], "unverifiable")
    if group_moves:
        more = ids("m", 10, 12)
        where = produce(kafka_config, s.topic, more)
        write_rows(s.pg_kwargs, s.table, more, where)
        assert commit_group(kafka_config, s.group, s.topic) == {0: 12}
        want2.update(dict.fromkeys(more, "delivered"))

    s.run(spark, "run-2")
    rows = s.result_rows(spark, "run-2")
    same(want2, s.verdicts(spark, "run-2"), "run 2 (records 0..9 removed by retention)")
    if group_moves:
        gaps = [(r.partition, r.first_offset, r.detail) for r in rows
                if r.message_id is None and r.verdict == "unverifiable"]  # fmt: skip
        assert len(gaps) == 1 and gaps[0][:2] == (0, 5) and "9" in (gaps[0][2] or ""), (
            f"the partition-level unverifiable row for offsets 5..9: {gaps}")  # fmt: skip
