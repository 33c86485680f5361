"""Repair on the real stack (issue 77): what an apply may trust and do. Replays of records
without a key are found again after an apply died; two applies of one plan at once replay once; a
plan file is checked against ``recon.repairs``, ``recon.discrepancies`` and the catalog, and
nothing of it enters SQL text; a plan deleting more than its pipeline's bound is applied only by a
person with ``--allow-over-bound``.

Each test plays producer, consumer and sink writer itself (``everyday_kit``, ``repair_kit``);
the runs use the local engine.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any

import psycopg2
import pytest
from everyday_kit import EXIT_ERROR, EXIT_OK, Setup, commit_group, ids, produce, tail, write_rows
from kafka_ends import high_watermarks
from repair_kit import (
    apply,
    consume,
    declare_repair,
    plan_file,
    produce_unkeyed,
    repair_row,
    sink_rows,
)

pytestmark = pytest.mark.integration


def _one_lost(s: Setup, kafka_config: dict[str, str], *, keyed: bool = True) -> tuple[str, Any]:
    """m0..m5 produced, m3 never written to the sink: run 1 and its plan (one replay)."""
    every = ids("m", 0, 6)
    if keyed:
        where = produce(kafka_config, s.topic, every)
    else:
        where = produce_unkeyed(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [m for m in every if m != "m3"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    path, plan = plan_file(s, "run-1")
    assert [r["message_id"] for r in plan["replays"]] == ["m3"] and not plan["deletes"], plan
    return path, plan


def test_replays_of_records_without_a_key_are_found_after_an_apply_died(
    setup: Callable[..., Setup], kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.repair import applier
    from recon.repair.plan_model import read_plan

    s = setup("nullkey", semantics="at_least_once")
    path, plan = _one_lost(s, kafka_config, keyed=False)
    start = high_watermarks(kafka_config, s.topic)

    class Crash(Exception):
        pass

    def boom(*_: Any, **__: Any) -> Any:
        raise Crash

    with monkeypatch.context() as m:  # the replay is produced, its record in recon.repairs lost
        m.setattr(applier.store, "mark_applied", boom)
        with pytest.raises(Crash):
            applier.apply_plan(read_plan(path), s.cfg, say=lambda _: None)
    assert repair_row(plan["plan_id"])[0] == "applying"
    assert consume(s, kafka_config, start) == ["m3"]  # the consumer took the replay meanwhile

    result = apply(s, path)
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    assert high_watermarks(kafka_config, s.topic)[0] - start[0] == 1, "one replay in all"
    assert repair_row(plan["plan_id"])[:3] == ("applied", 0, [
        {"message_id": "m3", "partition": 0, "offset": start[0]}])  # fmt: skip
    summary = s.run(None, "run-2")
    assert summary.contract_passed, (summary.counts, summary.violations)
    assert repair_row(plan["plan_id"])[0] == "verified"


def test_two_applies_of_one_plan_at_once_replay_once(
    setup: Callable[..., Setup], kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.repair import applier
    from recon.repair.plan_model import read_plan

    s = setup("twoapplies", semantics="at_least_once")
    path, plan = _one_lost(s, kafka_config)
    start = high_watermarks(kafka_config, s.topic)
    inside, go_on = threading.Event(), threading.Event()
    real_produce = applier.produce

    def held(*args: Any, **kwargs: Any) -> Any:
        inside.set()
        assert go_on.wait(120), "the test never let the first apply go on"
        return real_produce(*args, **kwargs)

    results: list[Any] = []
    monkeypatch.setattr(applier, "produce", held)
    first = threading.Thread(target=lambda: results.append(
        applier.apply_plan(read_plan(path), s.cfg, say=lambda _: None)))  # fmt: skip
    first.start()
    try:
        assert inside.wait(120), "the first apply never reached its replays"
        second = apply(s, path, own_process=True)  # a person, while the DAG's apply runs
    finally:
        go_on.set()
        first.join(120)
    assert second.returncode == EXIT_ERROR, (second.returncode, tail(second.stdout))
    (line,) = second.stderr.strip().splitlines()
    assert plan["plan_id"] in line and "being applied" in line and "nothing was changed" in line
    assert [r.status for r in results] == ["applied"], results
    assert high_watermarks(kafka_config, s.topic)[0] - start[0] == 1, "one replay in all"
    assert repair_row(plan["plan_id"])[0] == "applied"


def _write(path: str, plan: Any) -> str:
    from recon.repair.plan_model import plan_to_json

    with open(path, "w", encoding="utf-8") as fh:
        fh.write(plan_to_json(plan))
    return path


def test_a_forged_plan_is_refused_and_nothing_of_it_enters_sql(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    from recon.repair.plan_model import Delete, SinkTarget
    from recon.repair.planner import make_plan, save_plan
    from recon.repair.sink_rows import state_of

    s = setup("forged", semantics="at_most_once")
    every = ids("m", 0, 20)
    where = produce(kafka_config, s.topic, every)
    write_rows(s.pg_kwargs, s.table, [*every, "m1"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    honest = make_plan(s.cfg, "run-1")
    assert [d.message_id for d in honest.deletes] == ["m1"], honest
    rows = sink_rows(s)

    def signed(plan: Any) -> Any:  # the id is a hash of the content: anyone can recompute it
        return dataclasses.replace(plan, plan_id=plan.content_id())

    # Delete m0 too (delivered once: its only row) with a state and id made to match.
    (m0,) = [(m, (str(k),)) for k, m in rows if m == "m0"]
    both = [(m, (str(k),)) for k, m in rows if m in ("m0", "m1")]
    deletes = (*honest.deletes, Delete("phantom", "m0", m0[1]))
    gone = {(d.message_id, d.key) for d in deletes}
    forged = signed(dataclasses.replace(
        honest, deletes=deletes, before=state_of(both),
        after=state_of(r for r in both if r not in gone)))  # fmt: skip
    path = _write(os.path.join(s.data_dir, "forged.json"), forged)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    assert "not recorded in recon.repairs" in result.stderr, tail(result.stderr)
    assert sink_rows(s) == rows

    save_plan(forged, path)  # recorded as a plan, as by someone who may write recon.repairs
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    assert "recon.discrepancies" in result.stderr and "'m0'" in result.stderr, tail(
        result.stderr)  # fmt: skip
    assert sink_rows(s) == rows

    # Key types are SQL text where the DELETE casts its keys: a plan's own never get there.
    sequence = f"{s.table}_id_seq"
    hostile = f"bigint[], ARRAY[]::text[])); SELECT setval('{sequence}', 424242); --"
    target = dataclasses.replace(honest.sink, key_types=(hostile,))
    assert isinstance(target, SinkTarget)
    injected = signed(dataclasses.replace(honest, sink=target))
    save_plan(injected, path)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    assert "primary key" in result.stderr and "catalog" in result.stderr, tail(result.stderr)
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT last_value FROM {sequence}")
        assert cur.fetchone()[0] < 424242, "the plan's text ran as SQL"
    pg.close()
    assert sink_rows(s) == rows

    save_plan(honest, path)
    result = apply(s, path)
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    assert sorted(m for _, m in sink_rows(s)) == sorted(every)


def test_a_plan_above_the_delete_bound_needs_a_person_and_a_flag(
    setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = setup("bound", semantics="at_most_once")
    every = ids("m", 0, 5)
    where = produce(kafka_config, s.topic, every)
    # A mis-declared messageId column would look like this: half the table is phantom.
    write_rows(s.pg_kwargs, s.table, [*every, *ids("x", 0, 5)], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(None, "run-1")
    path, plan = plan_file(s, "run-1")
    assert len(plan["deletes"]) == 5, plan
    rows = sink_rows(s)

    dry = apply(s, path, "--dry-run")
    assert dry.returncode == EXIT_OK and "above the bound" in dry.stdout, tail(dry.stdout)
    result = apply(s, path)  # the default bound: 10% of the table, 1000 rows
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stdout))
    (line,) = result.stderr.strip().splitlines()
    assert f"pipeline '{s.name}'" in line and "repair.max_delete_ratio" in line, line
    assert "5 of 10 rows" in line and "--allow-over-bound" in line, line
    assert sink_rows(s) == rows and repair_row(plan["plan_id"])[0] == "planned"

    declare_repair(s, max_delete_ratio=1.0, max_deletes=4)
    result = apply(s, path)
    assert result.returncode == EXIT_ERROR and "repair.max_deletes" in result.stderr, tail(
        result.stderr)  # fmt: skip
    assert sink_rows(s) == rows and repair_row(plan["plan_id"])[0] == "planned"

    result = apply(s, path, "--allow-over-bound")
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    assert "over the pipeline's bound" in result.stdout, tail(result.stdout)
    assert sorted(m for _, m in sink_rows(s)) == every
    assert repair_row(plan["plan_id"])[:2] == ("applied", 5)
