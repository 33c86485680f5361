"""The optional truths of a workload run, judged from its read-back beside the delivery verdicts:
each delivered message's latency, its payload against its record, and an upsert sink's order per
key. Each marks its verdicts in the run's ledger entries and notes its figures in the faults.
"""

from __future__ import annotations

from typing import Any

from recon_workload import kafka_io, latency, order, payload, sink, upsert_sink
from recon_workload.kafka_io import ReadRecord
from recon_workload.latency import LatencyPlan
from recon_workload.ledger import LedgerRow
from recon_workload.order import OrderPlan
from recon_workload.payload import PayloadPlan


def judge_latency(
    plan: LatencyPlan,
    entries: list[LedgerRow],
    records: list[ReadRecord],
    rows: list[sink.SinkRow],
    faults: dict[str, Any],
) -> set[str]:
    """Measure each delivered message's latency, mark the late ones in ``entries`` and return
    their ids.

    :raises WorkloadError: when the run broke the scenario's margins (see
        :func:`recon_workload.latency.check_plan`): such truth is never stored.
    """
    stamps = {r.position: r.timestamp_ms for r in records if r.timestamp_ms is not None}
    written = {r.message_id: r.written_at for r in rows if r.message_id and r.written_at}
    truth = latency.judge(latency.latencies(entries, stamps, written), plan.design)
    delivered = {e.message_id for e in entries if e.expected_verdict == "delivered"}
    latency.check_plan(truth, plan, {m for m in delivered if m is not None})
    latency.apply(entries, truth)
    on_time = [s for m, s in truth.seconds.items() if m not in truth.late]
    faults["latency"] = {
        "time_column": plan.time_column,
        "timestamp_type": ",".join(sorted({r.timestamp_type or "none" for r in records})),
        "bound_seconds": plan.design.bound,
        "on_time_max_seconds": plan.design.on_time_max,
        "late_min_seconds": plan.design.late_min,
        "slowest_on_time_seconds": round(max(on_time), 3) if on_time else None,
        "fastest_late_seconds": round(min(truth.seconds[m] for m in truth.late), 3)
        if truth.late
        else None,
    }
    return truth.late


def judge_payload(
    plan: PayloadPlan,
    entries: list[LedgerRow],
    records: list[ReadRecord],
    rows: list[sink.SinkRow],
    faults: dict[str, Any],
) -> list[str]:
    """Compare each delivered or duplicated message's sink rows with its record (both ways),
    mark the mismatched ones in ``entries`` and return their ids, sorted.

    :raises WorkloadError: when the run broke the scenario's promise (see
        :func:`recon_workload.payload.check_plan`): such truth is never stored.
    """
    diffs = payload.measure(entries, records, rows, plan.fields)
    payload.check_plan(entries, diffs, plan)
    payload.apply(entries, diffs)
    found = [e.message_id for e in entries if e.expected_verdict == "mismatched"]
    mismatched = sorted(m for m in found if m is not None)
    faults["payload"] = {
        "fields": dict(plan.fields),
        "sha256_column": plan.sha256_column,
        "mismatched": len(mismatched),
        "mangled_copies": len(plan.mangled_copies),
    }
    return mismatched


def judge_order(
    plan: OrderPlan,
    entries: list[LedgerRow],
    records: list[ReadRecord],
    keys: dict[kafka_io.Position, str | None],
    rows: list[upsert_sink.UpsertRow],
    faults: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    """Judge every committed message per key of the upsert sink, mark the verdicts in
    ``entries`` and return the stale keys (see :meth:`recon_workload.order.KeyTruth.as_json`).

    :param keys: the Kafka record key per position (the ledger's read-back keeps none).
    :raises WorkloadError: when the run broke the scenario's promise (see
        :func:`recon_workload.order.check_plan`): such truth is never stored.
    """
    truth = order.measure(entries, records, keys, rows)
    order.check_plan(entries, truth, plan)
    order.apply(entries, truth)
    stale = {k: t.as_json() for k, t in truth.stale.items()}
    faults["order"] = {
        "key_column": plan.key_column,
        "position_column": plan.position_column,
        "keys": len(truth.keys),
        "stale_keys": len(stale),
        "superseded": sum(1 for e in entries if (e.detail or "").startswith("superseded")),
    }
    return stale
