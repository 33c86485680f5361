"""What every engine's run shares: the outcome it commits (its counts judged by the claimed
contract), the summary it returns, and the failure it records."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recon import store
from recon.config import PipelineConfig
from recon.config.connections import kafka_connection, postgres_connection, scrub
from recon.contract.evaluate import evaluate_contract
from recon.errors import first_line
from recon.model.verdicts import Verdict
from recon.run.services import Progress, noop, results_conn_id, results_db
from recon.snapshot.window import rewinds

#: Discrepancy rows per verdict kept as samples for the summary and the alert.
DISCREPANCY_SAMPLE = 20


@dataclass
class RunSummary:
    """What a run found, as printed by the CLI and returned to Airflow (small, JSON-friendly)."""

    pipeline: str
    run_id: str
    semantics: str
    status: str
    counts: dict[str, int]
    contract_passed: bool
    violations: list[dict[str, Any]]
    windows: list[dict[str, Any]]
    rewinds: list[dict[str, Any]]
    discrepancies: int
    sink_rows_scanned: int
    duration_seconds: float
    ledger_path: str
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    validation_url: str | None = None
    #: delivery latency in ms (:func:`latency_figures`); None unless the pipeline measures it.
    latency: dict[str, Any] | None = None
    #: an upsert sink's records and rows without a key or position (``records``,
    #: ``sink_rows``: they take no part in the order check) and its keys with more than one row
    #: (``shared_keys``); None unless ``order`` is declared.
    unordered: dict[str, int] | None = None
    #: what a declared check could not use, by reason (``recon.store.RunOutcome.unchecked``)
    unchecked: dict[str, int] = field(default_factory=dict)
    #: a run with a source: its way from source to sink (``recon.store.RunOutcome.funnel``)
    funnel: dict[str, Any] | None = None


def latency_figures(
    rows: Sequence[Sequence[Any]],
    bound_ms: int | None,
    timestamp_type: str | None = None,
    untimed: tuple[int, int] = (0, 0),
) -> dict[str, Any] | None:
    """A run's latency rows (partition first, None for the whole run) as ``{"bound_ms",
    "timestamp_type", "untimed_records", "untimed_sink_rows", "overall": {...},
    "partitions": {p: {...}}}``; None when there are none and nothing lacked a time."""
    if not rows and not any(untimed):
        return None
    named = {row[0]: dict(zip(store.LATENCY_FIGURES, row[1:], strict=True)) for row in rows}
    return {
        "bound_ms": bound_ms,
        "timestamp_type": timestamp_type,
        "untimed_records": untimed[0],
        "untimed_sink_rows": untimed[1],
        "overall": named.pop(None, None),
        "partitions": {str(p): figures for p, figures in sorted(named.items())},
    }


def judged_outcome(
    cfg: PipelineConfig,
    counts: dict[str, int],
    *,
    ledger_path: str,
    sink_rows_scanned: int,
    duration_seconds: float,
    latency: Sequence[Sequence[int | None]] = (),
    timestamp_type: str | None = None,
    untimed: tuple[int, int] = (0, 0),
    late_after_ms: int | None = None,
    unordered: tuple[int, int, int] | None = None,
    funnel: dict[str, Any] | None = None,
    untimed_source: int = 0,
    dead_letter_positions: Mapping[tuple[str, int], int] | None = None,
) -> store.RunOutcome:
    """What a run commits besides its discrepancy rows: its counts judged by the claimed contract.

    Both engines commit through this, so a pipeline's verdicts read the same whichever judged it.

    :param late_after_ms: the latency bound the run judged by (``recon.rules.judging.Judging``),
        stored beside its latencies.
    :param untimed_source: the source table's rows without a time, which no run reads.
    :param dead_letter_positions: where the next run reads each dead-letter partition from.
    """
    contract = evaluate_contract(cfg.semantics, counts, cfg.tolerances, cfg.idempotent_producer)
    # Same keys as the checkpoint's failures (recon.validation), which replace these.
    violations = [
        {"verdict": v.verdict, "rule": v.verdict, "observed": v.count, "allowed": v.allowed,
         "reason": v.reason}
        for v in contract.violations
    ]  # fmt: skip
    return store.RunOutcome(
        status="passed" if contract.passed else "failed",
        counts=counts,
        contract_passed=contract.passed,
        violations=violations,
        ledger_path=ledger_path,
        sink_rows_scanned=sink_rows_scanned,
        duration_seconds=duration_seconds,
        topic_duplicates=counts.get(Verdict.TOPIC_DUPLICATE, 0),
        latency=latency,
        late_after_ms=late_after_ms,
        timestamp_type=timestamp_type,
        untimed=untimed,
        unordered=unordered,
        funnel=funnel,
        untimed_source=untimed_source,
        dead_letter_positions=dict(dead_letter_positions or {}),
    )


def run_summary(
    cfg: PipelineConfig,
    record: store.RunRecord,
    outcome: store.RunOutcome,
    discrepancies: int,
    samples: dict[str, list[dict[str, Any]]],
) -> RunSummary:
    """The summary of a committed run, as the CLI prints it and Airflow's XCom carries it."""
    return RunSummary(
        pipeline=cfg.name,
        run_id=record.run_id,
        semantics=cfg.semantics,
        status=outcome.status,
        counts=dict(outcome.counts),
        contract_passed=outcome.contract_passed,
        violations=outcome.violations,
        windows=[w.as_dict() for w in record.windows],
        rewinds=rewinds(record.windows),
        discrepancies=discrepancies,
        sink_rows_scanned=outcome.sink_rows_scanned,
        duration_seconds=round(outcome.duration_seconds, 3),
        ledger_path=outcome.ledger_path,
        samples=samples,
        latency=latency_figures(
            outcome.latency, outcome.late_after_ms, outcome.timestamp_type, outcome.untimed
        ),
        unordered=None
        if outcome.unordered is None
        else dict(zip(("records", "sink_rows", "shared_keys"), outcome.unordered, strict=True)),
        unchecked=outcome.unchecked,
        funnel=None if outcome.funnel is None else dict(outcome.funnel),
    )


def redact(text: str, cfg: PipelineConfig) -> str:
    """``text`` with every secret of the pipeline's connections (and the results database's)
    masked: errors are stored in ``recon.runs`` and printed, never with a password in them."""
    from recon.errors import ConnectionNotFound

    secrets: list[str] = []
    try:
        kafka = kafka_connection(cfg.kafka.connection)
        text = scrub(text, kafka.config)
    except ConnectionNotFound:
        pass
    source = () if cfg.source is None or cfg.source.is_topic else (cfg.source.connection,)
    if cfg.source is not None and cfg.source.is_topic:
        with contextlib.suppress(ConnectionNotFound):
            text = scrub(text, kafka_connection(cfg.source.connection).config)
    for conn_id in (cfg.sink.connection, *source, results_conn_id()):
        try:
            secrets.extend(postgres_connection(conn_id).secrets)
        except ConnectionNotFound:
            continue
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def mark_error(cfg: PipelineConfig, run_id: str, exc: Exception, progress: Progress) -> None:
    """Record the failure on the run's row when the results database can take it; the error
    that failed the run is what the caller raises either way."""
    import psycopg2

    try:
        with results_db() as pg:
            store.mark_error(pg, cfg.name, run_id, redact(f"{type(exc).__name__}: {exc}", cfg))
    except psycopg2.Error as unreachable:
        progress(f"run {run_id}: could not record the error: {first_line(unreachable)}")


@contextlib.contextmanager
def failure_recorded(cfg: PipelineConfig, run_id: str, progress: Progress = noop) -> Iterator[None]:
    """Any exception inside marks the run ``error`` with its (redacted) message, then propagates:
    a run that failed is never left ``running``."""
    try:
        yield
    except Exception as exc:
        mark_error(cfg, run_id, exc, progress)
        raise
