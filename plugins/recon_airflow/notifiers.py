"""Alerts through Airflow's provider hooks, which own the connections: ``HttpHook`` (the webhook),
``SlackWebhookHook`` (Slack), ``SmtpHook`` (email). Registered for ``recon`` in the entry point
group ``recon.alert_transports`` (``recon.alert.transport``), so the CLI outside a scheduler
sends through the same hooks, reading ``AIRFLOW_CONN_*`` or Airflow's secrets backend.

``recon`` builds the messages and keeps the rules the hooks lack (``recon.alert.channels``):
no redirect followed, no SMTP login in plain text beyond loopback, errors with every secret
masked. The secrets of a connection are also handed to Airflow's log masker before a hook runs,
so a line a hook logs (a URL with a token in its path) is masked in the task log too.
"""

from __future__ import annotations

import json
import logging
import math
import urllib.parse
from typing import Any

import attrs
from airflow.providers.http.hooks.http import HttpHook
from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook
from airflow.providers.smtp.hooks.smtp import SmtpHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk.log import mask_secret

from recon.alert.channels import (
    EMAIL,
    SLACK,
    WEBHOOK,
    SendFailed,
    check_answer,
    check_smtp_login,
    describe,
    flag,
    header_secrets,
    recipients,
    url_secrets,
)
from recon.alert.content import Alert
from recon.alert.formats import email_content, webhook_payload
from recon.alert.slack import check_slack_url, slack_payload, slack_secrets
from recon.config.connections import env_variable
from recon.errors import ConnectionNotFound

#: The extras of a webhook connection that ``recon`` reads and ``HttpHook`` must not send as
#: headers: the path after the host, and a dict of headers (flattened into the extras).
_WEBHOOK_KEYS = ("endpoint", "headers")
#: The extras ``HttpHook`` reads as its own options (not headers, no secret to mask).
_HOOK_OPTIONS = frozenset(
    ("stream", "cert", "timeout", "verify", "verify_ssl", "allow_redirects", "max_redirects",
     "trust_env", "check_response", "srv_lookup")
)  # fmt: skip


def _hook_extras(extra: dict[str, Any]) -> dict[str, Any]:
    """A webhook connection's extras as ``HttpHook`` gets them: ``endpoint`` gone, the
    ``headers`` dict flattened among the others (each a header unless one of
    :data:`_HOOK_OPTIONS`)."""
    kept = {k: v for k, v in extra.items() if k not in _WEBHOOK_KEYS}
    headers = extra.get("headers")
    if isinstance(headers, dict):
        kept.update({str(k): str(v) for k, v in headers.items()})
    return kept


class AlertWebhookHook(HttpHook):
    """``HttpHook`` (POST) on a webhook connection that may carry ``recon``'s extras
    ``endpoint`` (the path, as ``HttpOperator``'s ``endpoint``) and ``headers`` (a dict): the
    hook sends every other extra as a header, as Airflow's HTTP connections do.

    :param http_conn_id: the ``http`` connection of the webhook.
    """

    def __init__(self, http_conn_id: str) -> None:
        super().__init__(method="POST", http_conn_id=http_conn_id)

    @classmethod
    def get_connection(cls, conn_id: str) -> Any:
        conn = super().get_connection(conn_id)
        return attrs.evolve(conn, extra=json.dumps(_hook_extras(conn.extra_dejson)))

    def run_and_check(
        self, session: Any, prepped_request: Any, extra_options: dict[Any, Any]
    ) -> Any:
        """``HttpHook.run_and_check`` without its warning on a connection error: that line
        quotes the URL, whose path is often the webhook's secret, and outside a task (the CLI)
        no masker sees it. The caller records the error, redacted. The answer is checked by
        the caller too (``check_response`` is off)."""
        settings = session.merge_environment_settings(
            prepped_request.url, proxies=session.proxies, stream=session.stream,
            verify=session.verify, cert=session.cert,
        )  # fmt: skip
        return session.send(
            prepped_request, timeout=extra_options.get("timeout"),
            allow_redirects=extra_options.get("allow_redirects", True), **settings,
        )  # fmt: skip


#: The Slack client's logger: slack_sdk logs a failed request with its error, which may quote the
#: URL and so the token, and outside a task no masker sees it. The caller records the error,
#: redacted; this logger drops slack_sdk's copy.
_SLACK_CLIENT_LOG = logging.getLogger("recon_airflow.notifiers.slack_client")
_SLACK_CLIENT_LOG.setLevel(logging.CRITICAL + 1)


def _connection(conn_id: str) -> Any:
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConnectionNotFound(
            f"connection '{conn_id}' is not defined: create it in Airflow (its metadata "
            f"database or its secrets backend) or set {env_variable(conn_id)}"
        ) from None


def _mask(secrets: list[str]) -> list[str]:
    for secret in secrets:
        if len(secret) >= 5:  # Airflow's masker skips shorter ones, with a warning
            mask_secret(secret)
    return secrets


def _webhook(conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
    return post_webhook(conn_id, webhook_payload(alert), timeout)


def post_webhook(conn_id: str, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
    """POST ``payload`` as JSON to the webhook of connection ``conn_id``: the alerts' path, and
    the task-failure notices' (``recon_airflow.callbacks``). No redirect followed, errors with
    the connection's secrets masked.

    :returns: what was reached: the host and the HTTP status (no secret).
    :raises ConnectionNotFound: the connection is not defined.
    :raises SendFailed: the delivery failed (the reason, redacted).
    """
    conn = _connection(conn_id)
    extra = conn.extra_dejson
    endpoint = str(extra.get("endpoint") or "")
    sent = {k: str(v) for k, v in _hook_extras(extra).items() if k not in _HOOK_OPTIONS}
    host = conn.host or ""
    # A host is no secret, but a whole URL in it (HttpHook takes one) has a path that may be.
    secrets = [conn.password or "", endpoint, *(url_secrets(host) if "://" in host else [])]
    secrets += url_secrets(endpoint) + header_secrets(sent)
    _mask(secrets)
    if "://" in endpoint:
        raise SendFailed(
            f"connection '{conn_id}': extra 'endpoint' is the path after the host; put a whole "
            "URL in the connection's host"
        )
    hook = AlertWebhookHook(conn_id)
    try:
        response = hook.run(
            endpoint or None,
            data=json.dumps(payload),
            headers={"Content-Type": "application/json; charset=utf-8"},
            extra_options={"allow_redirects": False, "check_response": False, "timeout": timeout},
        )
        url = hook.url_from_endpoint(endpoint or None)
    except Exception as exc:  # requests' errors quote the URL: masked and cut to the host
        raise SendFailed(describe(exc, secrets)) from None
    check_answer(int(response.status_code), str(response.reason or ""))
    # The host only: the path of a webhook URL is often its secret.
    return {"host": urllib.parse.urlsplit(url).hostname, "http_status": response.status_code}


def _slack(conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
    conn = _connection(conn_id)
    token = (conn.password or "").strip()
    if not token:
        raise SendFailed(
            f"connection '{conn_id}' has no Slack webhook token: put it (T000/B000/XXX, or the "
            "whole webhook URL) in the connection's password"
        )
    secrets = _mask(slack_secrets(token, ""))
    hook = SlackWebhookHook(
        slack_webhook_conn_id=conn_id, timeout=max(1, math.ceil(timeout)), logger=_SLACK_CLIENT_LOG
    )
    try:
        client = hook.get_conn()  # the provider builds the URL from the connection
        secrets = _mask(slack_secrets(token, client.url))
        check_slack_url(client.url, conn_id)
        # The client, not the hook's send_dict: a redirect's status is checked here (urllib
        # refuses a 307/308 for a POST; a 301/302/303 becomes a GET without the message).
        response = client.send_dict(slack_payload(alert))
    except Exception as exc:
        raise SendFailed(describe(exc, secrets)) from None
    check_answer(int(response.status_code))
    if str(response.body).strip() != "ok":  # Slack answers a delivered message with "ok"
        raise SendFailed(
            f"HTTP {response.status_code} from the Slack webhook of connection '{conn_id}', "
            "but not Slack's 'ok': the message was not delivered"
        )
    host = urllib.parse.urlsplit(client.url).hostname
    return {"host": host, "http_status": response.status_code}


def _email(conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
    conn = _connection(conn_id)
    extra = conn.extra_dejson
    if not conn.host:
        raise SendFailed(f"connection '{conn_id}' has no host")
    to = recipients(extra.get("to"))
    if not to:
        raise SendFailed(f"connection '{conn_id}' names no recipients (extra 'to')")
    # As SmtpHook reads them: SMTPS unless disable_ssl, then STARTTLS unless disable_tls.
    encrypted = not extra.get("disable_ssl") or not extra.get("disable_tls")
    check_smtp_login(
        conn_id, conn.host, conn.port, login=bool(conn.login and conn.password),
        encrypted=encrypted, allow_plaintext_auth=bool(flag(extra, "allow_plaintext_auth")),
    )  # fmt: skip
    secrets = _mask([conn.password or ""])
    content = email_content(alert)
    sender = str(extra.get("from_email") or conn.login or "recon@localhost")
    try:
        with SmtpHook(smtp_conn_id=conn_id) as hook:  # connects, TLS, logs in
            hook.send_email_smtp(
                to=to, subject=content.subject, html_content=content.html(), from_email=sender,
                custom_headers=content.headers,
            )  # fmt: skip
    except Exception as exc:
        raise SendFailed(describe(exc, secrets)) from None
    return {"to": to}


class HookTransport:
    """``recon.alert.transport.Transport`` through the provider hooks."""

    def send(self, notifier: str, conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
        """Deliver ``alert`` with ``notifier`` through connection ``conn_id``.

        :param notifier: ``webhook`` (``HttpHook``), ``slack`` (``SlackWebhookHook``) or
            ``email`` (``SmtpHook``; its timeout is the connection's extra ``timeout``), as
            ``recon.alert.send.send`` checked it.
        :param conn_id: the Airflow connection id.
        :param timeout: seconds for the connection and the answer (webhook, Slack).
        :raises ConnectionNotFound: the connection is not defined.
        :raises SendFailed: the delivery failed (the reason, redacted).
        """
        senders = {WEBHOOK: _webhook, SLACK: _slack, EMAIL: _email}
        return senders[notifier](conn_id, alert, timeout)


#: The object the entry point names.
transport = HookTransport()
