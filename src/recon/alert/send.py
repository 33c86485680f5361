"""Send an alert once per route and run: each route's row in ``recon.alerts`` is claimed
(inserted or found, and locked) before sending and finished (``sent``, ``failed`` or ``skipped``)
after, so a retried task sends nothing that was delivered.

A route is a notifier and a connection. A pipeline that declares none (``alerts:`` absent) has
the two default routes, recorded as channel ``webhook`` and ``email`` as they always were; a
declared route is recorded as ``<notifier>:<connection>`` (``slack:slack_ops``), so two routes
of one notifier are two rows, each sent once."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recon import settings
from recon.alert.channels import EMAIL, WEBHOOK, describe
from recon.alert.content import DEFAULT_SAMPLE_SIZE, Alert, build_alert
from recon.alert.text import shown
from recon.alert.transport import installed_transport
from recon.config.entry_points import plugin_output
from recon.config.model import NOTIFIERS, AlertRoute
from recon.errors import ConnectionNotFound
from recon.validation import ValidationOutcome

log = logging.getLogger(__name__)

#: Statuses returned by :func:`send_alerts`; ``already_sent`` is stored as ``sent``.
SENT, ALREADY_SENT, FAILED, SKIPPED = "sent", "already_sent", "failed", "skipped"


@dataclass(frozen=True)
class Route:
    """Where one alert goes: the notifier, its connection id, and the channel it is recorded
    under in ``recon.alerts``."""

    notifier: str
    conn_id: str
    channel: str


def routes_for(
    declared: Sequence[AlertRoute] = (),
    webhook_conn_id: str | None = None,
    smtp_conn_id: str | None = None,
) -> list[Route]:
    """The routes of a pipeline: its declared ``alerts:``, else the two defaults.

    :param declared: the pipeline's routes (``PipelineConfig.alerts``); empty: the defaults.
    :param webhook_conn_id: the default webhook's connection (default: ``recon.settings``).
    :param smtp_conn_id: the default email's connection (default: ``recon.settings``).
    """
    if declared:
        return [Route(r.notifier, r.connection, f"{r.notifier}:{r.connection}") for r in declared]
    return [
        Route(WEBHOOK, webhook_conn_id or settings.alert_webhook_conn_id(), WEBHOOK),
        Route(EMAIL, smtp_conn_id or settings.alert_smtp_conn_id(), EMAIL),
    ]


def send(notifier: str, conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
    """Deliver ``alert`` with ``notifier`` (one of :data:`NOTIFIERS`) through connection
    ``conn_id``, by the installed transport (Airflow's provider hooks); what was reached (no
    secret: safe to record).

    :raises SendFailed: the delivery failed (the reason, redacted).
    :raises ConnectionNotFound: the connection is not defined, or no transport is installed.
    """
    if notifier not in NOTIFIERS:
        raise ValueError(f"unknown notifier {notifier!r} (expected one of {', '.join(NOTIFIERS)})")
    with plugin_output():
        return installed_transport().send(notifier, conn_id, alert, timeout)


def _claim(pg: Any, pipeline: str, run_id: str, channel: str) -> str:
    """Insert the channel's row if absent and lock it; its current status."""
    with pg.cursor() as cur:
        cur.execute(
            "INSERT INTO recon.alerts (pipeline, run_id, channel, status) "
            "VALUES (%s, %s, %s, 'sending') ON CONFLICT (pipeline, run_id, channel) DO NOTHING",
            (pipeline, run_id, channel),
        )
        cur.execute(
            "SELECT status FROM recon.alerts WHERE pipeline = %s AND run_id = %s "
            "AND channel = %s FOR UPDATE",
            (pipeline, run_id, channel),
        )
        row = cur.fetchone()
    return str(row[0])


def _finish(
    pg: Any,
    pipeline: str,
    run_id: str,
    channel: str,
    status: str,
    summary: Mapping[str, Any],
    error: str | None,
) -> None:
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.alerts SET status = %s, sent_at = now(), summary = %s, error = %s "
            "WHERE pipeline = %s AND run_id = %s AND channel = %s",
            (status, json.dumps(summary, default=str), error, pipeline, run_id, channel),
        )
    pg.commit()


def _record_summary(alert: Alert, outcome: ValidationOutcome) -> dict[str, Any]:
    return {
        "semantics": alert.semantics,
        "validation_id": alert.validation_id,
        "failures": outcome.failures,
        "sample_message_ids": alert.sample_ids,
        "data_docs": alert.data_docs_url,
        "run_url": alert.run_url,
    }


def send_alerts(
    pg: Any,
    *,
    pipeline: str,
    semantics: str,
    run_id: str,
    summary: Mapping[str, Any],
    outcome: ValidationOutcome,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    dag_id: str | None = None,
    webhook_conn_id: str | None = None,
    smtp_conn_id: str | None = None,
    timeout: float = 15.0,
    routes: Sequence[AlertRoute] = (),
) -> dict[str, str]:
    """Alert every route once for a run whose validation failed; record each in recon.alerts.

    :param pg: a psycopg2 connection to the results database (schema ``recon`` in place); this
        function commits its own transactions, one per route.
    :param summary: the run's summary as a dict (counts, samples per verdict).
    :param outcome: the run's validation; a passed validation sends nothing and returns ``{}``.
    :param webhook_conn_id: the default webhook route's connection (when ``routes`` is empty).
    :param smtp_conn_id: the default email route's connection (when ``routes`` is empty).
    :param routes: the pipeline's declared routes (``PipelineConfig.alerts``); empty: the
        default routes ``webhook`` and ``email``.
    :returns: per channel (``webhook``, ``email``, or ``<notifier>:<connection>`` of a declared
        route): ``sent``, ``already_sent`` (a previous attempt delivered it), ``failed`` (the
        error is recorded; a retry tries again) or ``skipped`` (no connection).
    """
    if outcome.passed:
        return {}
    alert = build_alert(
        pipeline=pipeline, semantics=semantics, run_id=run_id, summary=summary,
        outcome=outcome, sample_size=sample_size, dag_id=dag_id,
    )  # fmt: skip
    targets = routes_for(routes, webhook_conn_id, smtp_conn_id)
    recorded = _record_summary(alert, outcome)
    shown_ids = (shown(pipeline), shown(run_id))  # for the log: one line each
    statuses: dict[str, str] = {}
    if pg.autocommit:
        raise ValueError("send_alerts needs a connection with autocommit off (it locks rows)")
    for route in targets:
        channel = route.channel
        try:
            current = _claim(pg, pipeline, run_id, channel)
            if current == SENT:
                pg.commit()
                statuses[channel] = ALREADY_SENT
                continue
            error: str | None = None
            target: dict[str, Any] = {}
            try:
                target = send(route.notifier, route.conn_id, alert, timeout)
            except ConnectionNotFound as exc:
                _finish(pg, pipeline, run_id, channel, SKIPPED, recorded, str(exc))
                statuses[channel] = SKIPPED
                log.info("alert %s for %s run %s skipped: %s", channel, *shown_ids, exc)
                continue
            # Whatever one route raises (an invalid URL, a refused login, a bug) fails that
            # route only, recorded without credentials; the other routes still go out.
            except Exception as exc:
                error = describe(exc)
            if error is not None:
                _finish(pg, pipeline, run_id, channel, FAILED, recorded, error)
                statuses[channel] = FAILED
                log.warning("alert %s for %s run %s failed: %s", channel, *shown_ids, error)
                continue
            _finish(pg, pipeline, run_id, channel, SENT, {**recorded, "target": target}, None)
            statuses[channel] = SENT
        except BaseException:
            pg.rollback()
            raise
        log.info("alert %s for %s run %s: %s", channel, *shown_ids, statuses[channel])
    return statuses
