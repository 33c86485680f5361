"""A run's rows in ``recon.runs`` and ``recon.offset_snapshots``, and where the pipeline stands.

A run's snapshot is recorded before it computes (:func:`record_snapshot`), read back by each later
step (:func:`find_run`), marked running or failed on the way; :func:`load_state` is what the last
committed run left (``recon.pipeline_state`` and ``recon.watermarks``), written by
:func:`recon.store.commit.commit_run`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recon.errors import ReconError
from recon.snapshot.sink_position import SinkPosition, SinkRange
from recon.snapshot.window import PartitionWindow, Watermark
from recon.snapshot.window import rewinds as window_rewinds


class RunNotFound(ReconError):
    """A step of a run was asked for before the run's snapshot exists."""


@dataclass(frozen=True)
class PipelineState:
    """Where the pipeline stands: the last committed run and what it left."""

    run_id: str | None
    sink_seq: int | None
    ledger_path: str | None
    watermarks: dict[tuple[str, int], Watermark] = field(default_factory=dict)
    sink_snapshot: str | None = None
    sink_floor: int | None = None

    @property
    def sink_position(self) -> SinkPosition | None:
        """Where the last committed run left the sink (None: no run recorded a snapshot)."""
        if self.sink_snapshot is None:
            return None
        return SinkPosition(self.sink_seq, self.sink_snapshot, self.sink_floor)


@dataclass(frozen=True)
class RunRecord:
    """A run's snapshot and what it started from, as stored."""

    pipeline: str
    run_id: str
    status: str
    snapshot_at: datetime
    windows: list[PartitionWindow]
    base_run_id: str | None
    base_ledger_path: str | None
    sink_seq_from: int | None
    sink_seq_to: int | None
    #: results of this run id were committed at least once (a re-run replaces them)
    committed: bool = False
    sink_snapshot_from: str | None = None
    sink_snapshot_to: str | None = None
    sink_floor_from: int | None = None
    sink_floor_to: int | None = None
    #: what the catalogs said at step 1 (``recon.engines.plan.Catalog``, as JSON); None for a
    #: run recorded before runs kept it.
    catalog: dict[str, Any] | None = None

    @property
    def sink_range(self) -> SinkRange:
        """The sink rows this run reads (``recon.snapshot.sink_position``)."""
        return SinkRange(
            self.sink_seq_from, self.sink_seq_to, self.sink_snapshot_from,
            self.sink_snapshot_to, self.sink_floor_from,
        )  # fmt: skip

    @property
    def fact_bound(self) -> int:
        """At most how many records and sink rows the run judges: its windows' offsets
        (committed, pending and in flight) plus its range of the sink's ingest sequence."""
        records = sum(w.high_watermark - w.read_from for w in self.windows)
        if self.sink_seq_to is None:
            return records
        return records + self.sink_seq_to - (self.sink_range.lowest or 0)


def load_state(pg: Any, pipeline: str) -> PipelineState:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id, sink_seq, ledger_path, sink_snapshot, sink_floor "
            "FROM recon.pipeline_state WHERE pipeline = %s",
            (pipeline,),
        )
        row = cur.fetchone()
        cur.execute(
            "SELECT topic, partition, next_offset, committed_offset FROM recon.watermarks "
            "WHERE pipeline = %s",
            (pipeline,),
        )
        marks = {(t, p): Watermark(n, c) for t, p, n, c in cur.fetchall()}
    if row is None:
        return PipelineState(None, None, None, marks)
    return PipelineState(row[0], row[1], row[2], marks, row[3], row[4])


def find_run(pg: Any, pipeline: str, run_id: str) -> RunRecord | None:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT status, snapshot_at, base_run_id, base_ledger_path, sink_seq_from, "
            "sink_seq_to, ledger_path IS NOT NULL, sink_snapshot_from, sink_snapshot_to, "
            "sink_floor_from, sink_floor_to, catalog FROM recon.runs "
            "WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
        row = cur.fetchone()
        if row is None or row[1] is None:
            return None
        cur.execute(
            "SELECT topic, partition, log_start_offset, last_stable_offset, high_watermark, "
            "committed_offset, settled_offset, window_from, window_to, previous_committed, "
            "rewound, new_partition, cleanup_policy FROM recon.offset_snapshots "
            "WHERE pipeline = %s AND run_id = %s ORDER BY topic, partition",
            (pipeline, run_id),
        )
        windows = [PartitionWindow(*r) for r in cur.fetchall()]
    return RunRecord(pipeline, run_id, row[0], row[1], windows, *row[2:])


def record_snapshot(
    pg: Any,
    *,
    pipeline: str,
    run_id: str,
    semantics: str,
    snapshot_at: datetime,
    windows: Sequence[PartitionWindow],
    base: PipelineState,
    sink: SinkPosition | None,
    catalog: Mapping[str, Any] | None = None,
) -> None:
    """Store a new run's snapshot (replacing any earlier attempt of the same run id).

    :param sink: the sink's position at the snapshot (None: a sink without ingest sequence).
    :param catalog: what the catalogs said (``recon.engines.plan.Catalog.as_json``), read back
        by the run's later steps instead of asking again.
    """
    window_spec = [w.as_dict() for w in windows]
    rewinds = window_rewinds(list(windows))
    new_parts = [w.partition for w in windows if w.new_partition]
    with pg.cursor() as cur:
        cur.execute(
            "DELETE FROM recon.offset_snapshots WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
        for w in windows:
            cur.execute(
                "INSERT INTO recon.offset_snapshots (pipeline, run_id, topic, partition, "
                "log_start_offset, last_stable_offset, high_watermark, committed_offset, "
                "settled_offset, window_from, window_to, previous_committed, rewound, "
                "new_partition, snapshot_at, cleanup_policy) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    pipeline, run_id, w.topic, w.partition, w.log_start_offset,
                    w.last_stable_offset, w.high_watermark, w.committed_offset,
                    w.settled_offset, w.window_from, w.window_to, w.previous_committed,
                    w.rewound, w.new_partition, snapshot_at, w.cleanup_policy,
                ),
            )  # fmt: skip
        cur.execute(
            "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, snapshot_at, "
            "window_spec, rewinds, new_partitions, base_run_id, base_ledger_path, sink_seq_from, "
            "sink_seq_to, sink_snapshot_from, sink_snapshot_to, sink_floor_from, sink_floor_to, "
            "catalog) VALUES (%s,%s,%s,'running',now(),%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (pipeline, run_id) DO UPDATE SET semantics = EXCLUDED.semantics, "
            "status = 'running', started_at = now(), finished_at = NULL, "
            "snapshot_at = EXCLUDED.snapshot_at, window_spec = EXCLUDED.window_spec, "
            "rewinds = EXCLUDED.rewinds, new_partitions = EXCLUDED.new_partitions, "
            "base_run_id = EXCLUDED.base_run_id, base_ledger_path = EXCLUDED.base_ledger_path, "
            "sink_seq_from = EXCLUDED.sink_seq_from, sink_seq_to = EXCLUDED.sink_seq_to, "
            "sink_snapshot_from = EXCLUDED.sink_snapshot_from, "
            "sink_snapshot_to = EXCLUDED.sink_snapshot_to, "
            "sink_floor_from = EXCLUDED.sink_floor_from, sink_floor_to = EXCLUDED.sink_floor_to, "
            "catalog = EXCLUDED.catalog, error = NULL",
            (
                pipeline, run_id, semantics, snapshot_at, json.dumps(window_spec),
                json.dumps(rewinds), json.dumps(new_parts), base.run_id, base.ledger_path,
                base.sink_seq, sink.seq if sink else None,
                base.sink_snapshot if sink else None, sink.snapshot if sink else None,
                base.sink_floor if sink else None, sink.floor if sink else None,
                None if catalog is None else json.dumps(catalog),
            ),
        )  # fmt: skip
    pg.commit()


def record_missing_offsets(
    pg: Any, pipeline: str, run_id: str, missing: Mapping[tuple[str, int], int]
) -> None:
    """Store, per partition of a run's snapshot, how many offsets of ``[read_from, pending_to)``
    hold no committed record (transaction markers, aborted records, and on a compacted topic
    the records the log cleaner removed); counted from the records read, never from offsets.

    :param missing: by ``(topic, partition)``; a partition absent here has no gap (0).

    The caller commits: the run's driver calls it on the connection of ``commit_run``, so the
    counts are stored in the run's one commit transaction, or not at all.
    """
    with pg.cursor() as cur:
        cur.execute(
            "SELECT topic, partition FROM recon.offset_snapshots "
            "WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
        for topic, partition in cur.fetchall():
            cur.execute(
                "UPDATE recon.offset_snapshots SET missing_offsets = %s WHERE pipeline = %s "
                "AND run_id = %s AND topic = %s AND partition = %s",
                (int(missing.get((topic, partition), 0)), pipeline, run_id, topic, partition),
            )


def mark_running(pg: Any, pipeline: str, run_id: str) -> None:
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.runs SET status = 'running', started_at = now(), finished_at = NULL, "
            "error = NULL WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
    pg.commit()


def mark_error(pg: Any, pipeline: str, run_id: str, error: str) -> None:
    """Record that a run failed before committing; nothing else changes."""
    pg.rollback()
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.runs SET status = 'error', finished_at = now(), error = %s "
            "WHERE pipeline = %s AND run_id = %s",
            (error[:2000], pipeline, run_id),
        )
    pg.commit()


def list_runs(pg: Any, pipeline: str, limit: int = 20) -> list[dict[str, Any]]:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id, status, started_at, finished_at, counts, contract_passed, "
            "duration_seconds, rewinds, unchecked, funnel, error FROM recon.runs "
            "WHERE pipeline = %s "
            "ORDER BY started_at DESC LIMIT %s",
            (pipeline, limit),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def committed_counts(
    pg: Any, pipeline: str, run_id: str
) -> tuple[dict[str, int], float | None] | None:
    """A committed run's counts per verdict and its duration; ``None`` before its results commit
    (a run still running, or one that failed, has none).

    :param pipeline: the pipeline.
    :param run_id: the run.
    """
    with pg.cursor() as cur:
        cur.execute(
            "SELECT counts, duration_seconds FROM recon.runs WHERE pipeline = %s AND run_id = %s "
            "AND ledger_path IS NOT NULL AND status NOT IN ('running', 'error')",
            (pipeline, run_id),
        )
        row = cur.fetchone()
    pg.commit()
    if row is None:
        return None
    counts = {str(k): int(v) for k, v in (row[0] or {}).items()}
    return counts, None if row[1] is None else float(row[1])


#: The figures of a ``recon.latency`` row after its partition (``recon.rules.run.LatencyRow``).
LATENCY_FIGURES = ("messages", "negative", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")


def committed_latency(pg: Any, pipeline: str, run_id: str) -> dict[str, Any] | None:
    """A committed run's delivery latency over all its messages (``recon.latency``'s whole-run
    row): :data:`LATENCY_FIGURES`, and ``bound_ms`` and ``timestamp_type`` as the run stored them
    (either may be None); ``None`` when it measured none.
    """
    with pg.cursor() as cur:
        cur.execute(
            f"SELECT {', '.join(LATENCY_FIGURES)}, bound_ms, timestamp_type FROM recon.latency "
            "WHERE pipeline = %s AND run_id = %s AND partition = -1",
            (pipeline, run_id),
        )
        row = cur.fetchone()
    pg.commit()
    if row is None:
        return None
    *figures, bound_ms, timestamp_type = row
    latency: dict[str, Any] = dict(zip(LATENCY_FIGURES, (int(v) for v in figures), strict=True))
    latency["bound_ms"] = None if bound_ms is None else int(bound_ms)
    latency["timestamp_type"] = timestamp_type
    return latency
