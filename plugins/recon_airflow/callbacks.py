"""Operational failure notices: a task of a reconciliation DAG failed (not a broken contract:
that is the data-quality alert of the ``alert`` task). Sent with the HTTP provider's notifier to
the same webhook connection as the alerts, when that connection exists."""

from __future__ import annotations

import logging
from typing import Any

from recon import settings

log = logging.getLogger(__name__)


def webhook_conn_id() -> str:
    """The alerts' webhook connection id (:func:`recon.settings.alert_webhook_conn_id`)."""
    return settings.alert_webhook_conn_id()


def notify_task_failure(context: Any) -> None:
    """Task-level ``on_failure_callback``: post a one-line notice to the alert webhook.

    Names the DAG, run, task and try, and the error's first line; never connection details.
    """
    from airflow.providers.http.notifications.http import HttpNotifier
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    conn_id = webhook_conn_id()
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        log.info("no connection %s: no failure notice sent", conn_id)
        return
    ti = context["ti"]
    error = str(context.get("exception") or "").strip().splitlines()
    text = (
        f"recon: task {ti.task_id} of {ti.dag_id} failed in run {ti.run_id} "
        f"(try {ti.try_number})" + (f": {error[0][:300]}" if error else "")
    )
    notifier = HttpNotifier(
        http_conn_id=conn_id,
        endpoint=str(conn.extra_dejson.get("endpoint") or ""),
        json={"text": text, "recon": {"kind": "task_failed", "dag_id": ti.dag_id,
                                      "run_id": ti.run_id, "task_id": ti.task_id}},
    )  # fmt: skip
    try:
        notifier.notify(context)
    except Exception as exc:  # a notice must never mask the task's own failure
        log.warning("failure notice to %s not sent: %s", conn_id, type(exc).__name__)
