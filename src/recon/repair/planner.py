"""Making a plan from a run's results (``recon repair plan``).

- ``lost``: the record at its first committed position is replayed, if the topic still holds
  it (its offset at or above the partition's log start); otherwise it is listed as not
  replayable, with the log start that passed it.
- ``duplicated``: every sink row of the message but the first (by ``sink.keep_first_by``, else
  the ingest sequence when the pipeline declares one, else the primary key) is deleted.
- ``phantom`` / ``aborted_read``: every sink row of the message is deleted (no committed record
  has that messageId, so no copy of a delivered message goes).

The plan keeps the state of the sink rows of every message it touches, before and after its
deletes (:func:`recon.repair.sink_rows.state_of`): an apply finds the sink as planned (it
deletes), as the plan leaves it (an earlier apply's transaction committed: it only replays), or
anything else (refused: the sink changed).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from recon.config import PipelineConfig
from recon.config.connections import kafka_connection
from recon.errors import ReconError
from recon.repair.plan_model import (
    Delete,
    NotReplayable,
    RepairPlan,
    Replay,
    SinkTarget,
)
from recon.repair.replay import watermarks
from recon.repair.sink_rows import (
    RepairRefused,
    affected_rows,
    column_names,
    key_columns,
    state_of,
)
from recon.run.services import results_db, sink_db
from recon.store import ensure_schema, find_run
from recon.store.repairs import DELETED_VERDICTS, latest_judged_run, repairable


class NothingToRepair(ReconError):
    """The run has no rows a plan repairs (kept apart so the CLI can say so and exit 0)."""


def make_plan(
    cfg: PipelineConfig, run_id: str | None = None, replay_topic: str | None = None,
    *, write_sink: bool = False,
) -> RepairPlan:  # fmt: skip
    """The plan that repairs ``run_id``'s results (default: the newest judged run).

    :param cfg: the pipeline, as declared now.
    :param replay_topic: where replays go (default: the pipeline's own topic, each record to its
        own partition); a repair topic the consumer also reads, by key.
    :param write_sink: write lost messages' sink rows directly from their records (by the
        pipeline's ``repair.sink_columns``) instead of producing the records again.
    :raises RepairRefused: the sink has no primary key, or the run is another pipeline's.
    :raises NothingToRepair: the run has nothing a plan repairs.
    """
    declared = cfg.repair is not None and bool(cfg.repair.sink_columns)
    if write_sink and (not declared or replay_topic):
        raise RepairRefused(
            f"pipeline '{cfg.name}': writing lost rows to the sink needs repair.sink_columns "
            "declared (which record field each sink column gets)"
            if not declared else "a plan writes lost rows to the sink or replays them to "
            "a topic, not both: drop --replay-topic or --write-sink"
        )  # fmt: skip
    with results_db() as pg:
        ensure_schema(pg)
        run_id = run_id or latest_judged_run(pg, cfg.name)
        if run_id is None or find_run(pg, cfg.name, run_id) is None:
            raise ReconError(f"pipeline '{cfg.name}': no judged run "
                             + (f"'{run_id}'" if run_id else "yet") + " to repair")  # fmt: skip
        rows = repairable(pg, cfg.name, run_id)
    if not rows:
        raise NothingToRepair(f"pipeline '{cfg.name}': run '{run_id}' has no lost, duplicated, "
                              "phantom or aborted_read messages to repair")  # fmt: skip
    with sink_db(cfg) as sink:
        keys, types = key_columns(sink, cfg.sink.table)
        if not keys:
            raise RepairRefused(
                f"pipeline '{cfg.name}': sink.table {cfg.sink.table} has no primary key: a repair "
                "deletes rows only by primary key; add one (for example a bigserial id)"
            )
        target = SinkTarget(cfg.sink.connection, cfg.sink.table, cfg.sink.message_id_column,
                            keys, types)  # fmt: skip
        if write_sink:
            check_sink_columns(cfg, column_names(sink, cfg.sink.table))
        before_rows = affected_rows(sink, target, sorted({r[1] for r in rows if r[0] in
                                    DELETED_VERDICTS}), cfg.sink.keep_order)  # fmt: skip
        arrived = {m for m, _ in affected_rows(sink, target, sorted(
            {r[1] for r in rows if r[0] not in DELETED_VERDICTS}), None)}  # fmt: skip
        sink.rollback()
    replays, not_replayable = _replays(cfg, [r for r in rows if r[1] not in arrived])
    not_replayable += [
        NotReplayable(r[0], r[1], r[3], r[4], "has a sink row now (it committed after the run): "
                      "nothing to replay")
        for r in rows if r[1] in arrived
    ]  # fmt: skip
    deletes, kept = _deletes(rows, before_rows)
    deleted = {(d.message_id, d.key) for d in deletes}
    plan = RepairPlan(
        pipeline=cfg.name, run_id=run_id, semantics=cfg.semantics,
        kafka_connection=cfg.kafka.connection, topic=cfg.kafka.topic,
        replay_topic=replay_topic or cfg.kafka.topic, sink=target,
        before=state_of(before_rows),
        after=state_of(r for r in before_rows if r not in deleted),
        replays=tuple(replays), not_replayable=tuple(not_replayable), deletes=tuple(deletes),
        kept=kept, kept_by=cfg.sink.keep_order or "primary key",
        replay_mode="sink" if write_sink else "topic",
        sink_columns=cfg.repair.sink_columns if write_sink and cfg.repair else (),
    )  # fmt: skip
    made = datetime.now(UTC).isoformat(timespec="seconds")
    return dataclasses.replace(plan, plan_id=plan.content_id(), created_at=made)


def save_plan(plan: RepairPlan, path: str | None = None, data_dir: str | None = None) -> str:
    """Write the plan file (default: ``DATA_DIR/repairs/PIPELINE/PLAN_ID.json``) and record the
    plan in ``recon.repairs`` as ``planned`` (kept as it is if already there).
    :returns: the file's path."""
    import os

    from recon.repair.plan_model import plan_to_dict, plan_to_json
    from recon.run.paths import REPAIRS
    from recon.run.services import default_data_dir
    from recon.store.repairs import record_plan

    path = path or os.path.join(data_dir or default_data_dir(), REPAIRS, plan.pipeline,
                                f"{plan.plan_id}.json")  # fmt: skip
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(plan_to_json(plan))
    os.replace(path + ".tmp", path)
    with results_db() as pg:
        record_plan(pg, plan_to_dict(plan))
    return path


def check_sink_columns(cfg: PipelineConfig, columns: set[str]) -> None:
    """:raises RepairRefused: a column of ``repair.sink_columns`` is not in the sink table."""
    for column, _, _ in cfg.repair.sink_columns if cfg.repair else ():
        if column not in columns:
            raise RepairRefused(
                f"pipeline '{cfg.name}': repair.sink_columns.{column}: table {cfg.sink.table} "
                "has no such column"
            )


def _replays(
    cfg: PipelineConfig, rows: list[tuple[str, str, str, int, int]]
) -> tuple[list[Replay], list[NotReplayable]]:
    lost = [r for r in rows if r[0] not in DELETED_VERDICTS]
    if not lost:
        return [], []
    marks = watermarks(kafka_connection(cfg.kafka.connection).config, cfg.kafka.topic)
    replays: list[Replay] = []
    gone: list[NotReplayable] = []
    for verdict, mid, _topic, partition, offset in lost:
        low = marks.get(partition, (None, None))[0]
        if partition is None or offset is None:
            gone.append(NotReplayable(verdict, mid, partition, offset, "no position recorded"))
        elif low is None:
            gone.append(NotReplayable(verdict, mid, partition, offset,
                                      f"partition {partition} no longer exists"))  # fmt: skip
        elif offset < low:
            gone.append(NotReplayable(
                verdict, mid, partition, offset,
                f"removed by retention or compaction: partition {partition} starts at {low}",
            ))  # fmt: skip
        else:
            replays.append(Replay(verdict, mid, partition, offset))
    return replays, gone


def _deletes(
    rows: list[tuple[str, str, str, int, int]], sink_rows: list[tuple[str, tuple[str, ...]]]
) -> tuple[list[Delete], dict[str, tuple[str, ...]]]:
    verdict_of = {r[1]: r[0] for r in rows if r[0] in DELETED_VERDICTS}
    deletes: list[Delete] = []
    kept: dict[str, tuple[str, ...]] = {}
    for mid, key in sink_rows:  # oldest first per message
        verdict = verdict_of.get(mid)
        if verdict is None:
            continue
        if verdict == "duplicated" and mid not in kept:
            kept[mid] = key
            continue
        deletes.append(Delete(verdict, mid, key))
    return deletes, kept
