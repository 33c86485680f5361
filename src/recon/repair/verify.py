"""Judging applied repairs after a run (:func:`verify_repairs`): every applied plan of the
pipeline is checked against the sink as the run left it.

- every replayed message has exactly one sink row (none yet while the consumer group has not
  committed past its replay: the plan waits for a later run; none after that: ``failed``); a
  row the plan wrote itself (``--write-sink``) is still there;
- every duplicated message has exactly one row, and the rows the plan kept are there;
- no phantom or aborted_read message has a row any more, and no deleted key is back.

All true: ``verified``; any false: ``failed``, with what was found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from recon.config import PipelineConfig
from recon.repair.plan_model import RepairPlan, plan_from_dict
from recon.repair.sink_rows import affected_rows
from recon.run.services import Progress, noop, results_db, sink_db
from recon.store import RunRecord
from recon.store import repairs as store


def judge(plan: RepairPlan, replayed: Sequence[Mapping[str, Any]],
          rows: list[tuple[str, tuple[str, ...]]],
          committed: Mapping[int, int | None] | None) -> tuple[str, str]:  # fmt: skip
    """``(status, detail)`` for one plan: ``verified``, ``failed`` or ``applied`` (waiting).

    :param replayed: where each replay landed (``recon.repairs.replayed``).
    :param rows: the sink rows of every message the plan touched, as they are now.
    :param committed: the consumer group's committed offset per partition of the replay topic
        (None: not known, a repair topic: a replay without a row is waited for).
    """
    count = Counter(m for m, _ in rows)
    keys = {(m, k) for m, k in rows}
    problems: list[str] = []
    waiting = 0
    back = sum((d.message_id, d.key) in keys for d in plan.deletes)
    if back:
        problems.append(f"{back} deleted rows are back")
    dup = [m for m in plan.kept if count[m] != 1 or (m, plan.kept[m]) not in keys]
    if dup:
        problems.append(f"{len(dup)} duplicated messages do not have exactly their kept row")
    phantoms = {d.message_id for d in plan.deletes if d.verdict != "duplicated"}
    if any(count[m] for m in phantoms):
        problems.append(f"{sum(1 for m in phantoms if count[m])} phantom messages have rows")
    positions = {r["message_id"]: r for r in replayed}
    for r in plan.replays:
        n = count[r.message_id]
        if n > 1:
            problems.append(f"replayed {r.message_id} has {n} sink rows")
        elif plan.replay_mode == "sink":
            written = positions.get(r.message_id, {}).get("sink_key")
            if written is not None and (r.message_id, tuple(written)) not in keys:
                problems.append(f"the row written for {r.message_id} is gone")
        elif n == 0:
            where = positions.get(r.message_id)
            consumed = (
                committed is not None and where is not None
                and (committed.get(where["partition"]) or -1) > where["offset"]
            )  # fmt: skip
            if consumed:
                problems.append(f"replayed {r.message_id} was consumed and has no sink row")
            else:
                waiting += 1
    if problems:
        return "failed", "; ".join(problems[:10])
    if waiting:
        return "applied", f"{waiting} replayed messages not consumed yet"
    return "verified", (f"{len(plan.replays)} replayed messages delivered once, "
                        f"{len(plan.deletes)} deleted rows gone")  # fmt: skip


def verify_repairs(
    cfg: PipelineConfig, run: RunRecord, progress: Progress = noop
) -> dict[str, str]:
    """Judge every applied plan of the pipeline after ``run`` committed.

    :param run: the run's record (its windows: the group's commits at its snapshot).
    :returns: plan id -> its status now."""
    run_id = run.run_id
    with results_db() as pg:
        applied = store.list_repairs(pg, cfg.name, ("applied",))
    if not applied:
        return {}
    committed_here = {w.partition: w.committed_offset for w in run.windows}
    judged: dict[str, str] = {}
    with sink_db(cfg) as sink:
        for row in applied:
            plan = plan_from_dict(row.plan)
            ids = sorted({*plan.state_ids(), *(r.message_id for r in plan.replays)})
            rows = affected_rows(sink, plan.sink, ids, None)
            sink.rollback()
            committed = committed_here if plan.replay_topic == plan.topic else None
            status, detail = judge(plan, row.replayed, rows, committed)
            with results_db() as pg:
                if status == "applied":
                    store.note_waiting(pg, row.plan_id, detail)
                else:
                    store.mark_judged(pg, row.plan_id, status, run_id, detail)
            progress(f"repair {row.plan_id}: {status} ({detail})")
            judged[row.plan_id] = status
    return judged
