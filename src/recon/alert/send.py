"""Send an alert once per channel and run: each channel's row in ``recon.alerts`` is claimed
(inserted or found, and locked) before sending and finished (``sent``, ``failed`` or ``skipped``)
after, so a retried task sends nothing that was delivered."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from recon import settings
from recon.alert.channels import (
    CHANNELS,
    EMAIL,
    WEBHOOK,
    describe,
    send,
)
from recon.alert.content import DEFAULT_SAMPLE_SIZE, Alert, build_alert
from recon.alert.text import shown
from recon.connections import raw_connection
from recon.errors import ConnectionNotFound
from recon.validation import ValidationOutcome

log = logging.getLogger(__name__)

#: Statuses returned by :func:`send_alerts`; ``already_sent`` is stored as ``sent``.
SENT, ALREADY_SENT, FAILED, SKIPPED = "sent", "already_sent", "failed", "skipped"


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
) -> dict[str, str]:
    """Alert every channel once for a run whose validation failed; record each in recon.alerts.

    :param pg: a psycopg2 connection to the results database (schema ``recon`` in place); this
        function commits its own transactions, one per channel.
    :param summary: the run's summary as a dict (counts, samples per verdict).
    :param outcome: the run's validation; a passed validation sends nothing and returns ``{}``.
    :returns: per channel: ``sent``, ``already_sent`` (a previous attempt delivered it),
        ``failed`` (the error is recorded; a retry tries again) or ``skipped`` (no connection).
    """
    if outcome.passed:
        return {}
    alert = build_alert(
        pipeline=pipeline, semantics=semantics, run_id=run_id, summary=summary,
        outcome=outcome, sample_size=sample_size, dag_id=dag_id,
    )  # fmt: skip
    conn_ids = {
        WEBHOOK: webhook_conn_id or settings.alert_webhook_conn_id(),
        EMAIL: smtp_conn_id or settings.alert_smtp_conn_id(),
    }
    recorded = _record_summary(alert, outcome)
    shown_ids = (shown(pipeline), shown(run_id))  # for the log: one line each
    statuses: dict[str, str] = {}
    if pg.autocommit:
        raise ValueError("send_alerts needs a connection with autocommit off (it locks rows)")
    for channel in CHANNELS:
        try:
            current = _claim(pg, pipeline, run_id, channel)
            if current == SENT:
                pg.commit()
                statuses[channel] = ALREADY_SENT
                continue
            error: str | None = None
            target: dict[str, Any] = {}
            try:
                conn = raw_connection(conn_ids[channel])
            except ConnectionNotFound as exc:
                _finish(pg, pipeline, run_id, channel, SKIPPED, recorded, str(exc))
                statuses[channel] = SKIPPED
                continue
            # Whatever one channel raises (an invalid URL, a refused login, a bug) fails that
            # channel only, recorded without credentials; the other channel still goes out.
            except Exception as exc:
                error = describe(exc)
            else:
                try:
                    target = send(channel, conn, alert, timeout)
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
