"""A run's metrics through Airflow's ``Stats`` (StatsD, Datadog or OpenTelemetry, as ``[metrics]``
configures the task's process), sent once the reconcile step has committed the run.

Names follow Airflow's own (``dagrun.duration.success.<dag_id>``): the subject first, the
pipeline in the name, since plain StatsD has no tags. The same values go out as tags
(``pipeline``, ``verdict``) for the backends that take them (Datadog, InfluxDB-style StatsD,
OpenTelemetry). Under ``statsd_prefix`` (default ``airflow``):

- ``recon.<pipeline>.verdict.<verdict>``: counter, messages judged with that verdict by the run
  (every verdict, zeros included, so a dashboard's sum starts from the first run);
- ``recon.<pipeline>.lag_messages``: gauge, the run's ``pending`` messages: records read past the
  consumer group's committed offset (or younger than the settle time), counted as messages, not
  as offsets (transaction markers and aborted records occupy offsets too);
- ``recon.<pipeline>.run_duration``: timer, the reconcile's duration
  (``recon.runs.duration_seconds``);
- ``recon.<pipeline>.latency_<figure>_ms``: gauges, the run's delivery latency over all its
  messages (``p50``, ``p95``, ``p99``, ``max``; ``recon.latency``), sent only by runs of a
  pipeline that declares ``sink.time_column``.

A pipeline name may hold dots, StatsD's separator: they become ``__``, as Airflow's legacy names
write a task id inside a task group.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from recon.model.verdicts import ALL_VERDICTS, Verdict

#: The latency figures sent as gauges, in this order.
LATENCY_GAUGES = ("p50_ms", "p95_ms", "p99_ms", "max_ms")


def stat_prefix(pipeline: str) -> str:
    """``recon.<pipeline>``, the pipeline's dots replaced so they do not split the name.

    :param pipeline: the pipeline's name.
    """
    return f"recon.{pipeline.replace('.', '__')}"


def emit_run_metrics(
    pipeline: str,
    counts: Mapping[str, int],
    duration_seconds: float | None,
    *,
    latency: Mapping[str, Any] | None = None,
) -> None:
    """Send one committed run's counters, gauge and timers through Airflow's ``Stats``.

    A re-run of the same run id (a retry, a clear) commits again and counts again: the counters
    count committed judgements, the gauge and the timers describe the latest one.

    :param pipeline: the pipeline's name.
    :param counts: messages per verdict, as the run committed them (``recon.runs.counts``).
    :param duration_seconds: the run's duration; ``None`` sends no duration.
    :param latency: the run's overall latency figures (``p50_ms``, ``p95_ms``, ``p99_ms``,
        ``max_ms``, as ``recon.run.outcome.latency_figures`` names them); ``None`` sends none.
    """
    from airflow.sdk.observability.stats import Stats

    prefix = stat_prefix(pipeline)
    for verdict in ALL_VERDICTS:
        Stats.incr(f"{prefix}.verdict.{verdict}", count=int(counts.get(verdict, 0)),
                   tags={"pipeline": pipeline, "verdict": verdict})  # fmt: skip
    tags = {"pipeline": pipeline}
    Stats.gauge(f"{prefix}.lag_messages", int(counts.get(Verdict.PENDING, 0)), tags=tags)
    if duration_seconds is not None:
        Stats.timing(f"{prefix}.run_duration", dt.timedelta(seconds=duration_seconds), tags=tags)
    for figure in LATENCY_GAUGES if latency else ():
        Stats.gauge(f"{prefix}.latency_{figure}", int(latency[figure]), tags=tags)  # type: ignore[index]


def emit_stored_run_metrics(cfg: Any, run_id: str, log: Any) -> None:
    """The metrics of a run judged in another process (a Spark step under spark-submit), read
    from what it committed. Metrics never fail a committed run: a failed read is logged.

    :param cfg: the pipeline (``recon.config.PipelineConfig``).
    :param run_id: the run.
    :param log: the task's logger.
    """
    import psycopg2

    from recon import store
    from recon.errors import ReconError
    from recon.run.services import results_db

    try:
        with results_db() as pg:
            committed = store.committed_counts(pg, cfg.name, run_id)
            latency = store.committed_latency(pg, cfg.name, run_id)
    except (psycopg2.Error, ReconError) as exc:
        log.warning("run %s: no metrics sent: the results database did not answer: %s",
                    run_id, type(exc).__name__)  # fmt: skip
        return
    if committed is None:
        log.warning("run %s: no metrics sent: the run has committed no results", run_id)
        return
    emit_run_metrics(cfg.name, *committed, latency=latency)
