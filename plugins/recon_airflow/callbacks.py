"""Operational failure notices: a task of a reconciliation DAG failed (not a broken contract:
that is the data-quality alert of the ``alert`` task). Sent by the alerts' own path
(``recon_airflow.notifiers.post_webhook``: no redirect followed, errors redacted) to the same
webhook connection as the alerts, when that connection exists; the error is redacted as an
alert's is (``recon.alert.formats.failure_notice``), after Airflow's masker hid every secret
the task read."""

from __future__ import annotations

import logging
from typing import Any

from recon import settings

log = logging.getLogger(__name__)

#: Seconds for the webhook's connection and answer, as an alert's (``send_alerts``).
NOTICE_TIMEOUT = 15.0


def webhook_conn_id() -> str:
    """The alerts' webhook connection id (:func:`recon.settings.alert_webhook_conn_id`)."""
    return settings.alert_webhook_conn_id()


def notify_task_failure(context: Any) -> None:
    """Task-level ``on_failure_callback``: post a one-line notice to the alert webhook.

    Names the DAG, run, task and try, and the error's first line, redacted; never connection
    details. A notice that cannot be sent is logged (redacted), never raised.
    """
    from airflow.sdk._shared.secrets_masker import redact as masked

    from recon.alert.channels import describe
    from recon.alert.formats import failure_notice
    from recon.errors import ConnectionNotFound
    from recon_airflow.notifiers import post_webhook

    conn_id = webhook_conn_id()
    ti = context["ti"]
    exception = context.get("exception")
    # Airflow's masker knows the secrets the task read: its connections' passwords, ...
    error = str(masked(str(exception))) if exception is not None else ""
    payload = failure_notice(
        dag_id=ti.dag_id, run_id=ti.run_id, task_id=ti.task_id, try_number=ti.try_number,
        error=error,
    )  # fmt: skip
    try:
        post_webhook(conn_id, payload, NOTICE_TIMEOUT)
    except ConnectionNotFound:
        log.info("no connection %s: no failure notice sent", conn_id)
    except Exception as exc:  # a notice must never mask the task's own failure
        log.warning("failure notice to %s not sent: %s", conn_id, describe(exc))
