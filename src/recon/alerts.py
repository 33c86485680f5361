"""Data-quality alerts when a run breaks its pipeline's contract: a webhook and an email.

Channels and their connections (Airflow connection ids, resolved at send time with
:func:`recon.connections.raw_connection`, i.e. ``AIRFLOW_CONN_<ID>`` outside Airflow):

``webhook``  ``recon_alert_webhook`` (``$RECON_ALERT_WEBHOOK_CONN_ID``), conn_type ``http``:
             ``schema`` (http/https, default http), ``host``, ``port``, extra ``endpoint``
             (e.g. ``/hook``) and optional extra ``headers``; login/password become basic auth.
             The body is Slack-compatible JSON: ``{"text": ..., "blocks": [...]}``.
``email``    ``smtp_default`` (``$RECON_ALERT_SMTP_CONN_ID``): ``host``, ``port``, optional
             login/password, extra ``from_email`` and ``to`` (a list or a comma-separated
             string); ``ssl`` (default: port 465) and ``starttls`` (default: when the server
             offers it); Airflow's ``disable_ssl`` / ``disable_tls`` are honoured too.

A channel whose connection is not defined is skipped and recorded as ``skipped``. Each channel is
recorded in ``recon.alerts`` under (pipeline, run_id, channel): the row is inserted (or found)
and locked before sending, and a row already ``sent`` is never sent again, so retries of the
task send nothing new. The only window for a second delivery is a crash after the receiver
accepted the alert and before the ``sent`` row committed.

The senders are plain ``smtplib`` and ``urllib``: GX's Slack and email actions render GX's own
summary inside the checkpoint, where neither the sample messages, the repair hints nor the
send-once bookkeeping can live; Airflow's notifiers would make this package import Airflow.

Alerts carry message ids, positions, sink keys and counts: never message payloads (only
whitelisted fields of the samples are rendered) and never credentials (the webhook URL, which
may embed a token, is neither logged nor recorded).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import smtplib
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from recon.connections import RawConnection, raw_connection
from recon.errors import ConnectionNotFound
from recon.validation import ValidationOutcome, data_docs_url
from recon.verdicts import JUDGED, Verdict

log = logging.getLogger(__name__)

WEBHOOK, EMAIL = "webhook", "email"
CHANNELS = (WEBHOOK, EMAIL)
DEFAULT_WEBHOOK_CONN_ID = "recon_alert_webhook"
DEFAULT_SMTP_CONN_ID = "smtp_default"
DEFAULT_SAMPLE_SIZE = 10
#: Statuses returned by :func:`send_alerts`; ``already_sent`` is stored as ``sent``.
SENT, ALREADY_SENT, FAILED, SKIPPED = "sent", "already_sent", "failed", "skipped"

# Slack limits: 150 characters of header text, 3000 per section text, 50 blocks.
_HEADER_MAX, _SECTION_MAX, _BLOCKS_MAX = 150, 2900, 45
_ERROR_MAX = 500


# --- content ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerdictReport:
    """One violated rule: how many, what was allowed, which messages, how to repair."""

    verdict: str | None
    rule: str
    observed: int | None
    allowed: str
    samples: list[str]
    hint: str


@dataclass(frozen=True)
class Alert:
    """Everything an alert says, independent of the channel."""

    pipeline: str
    semantics: str
    run_id: str
    title: str
    reports: list[VerdictReport]
    data_docs_url: str
    run_url: str | None
    validation_id: str
    sample_ids: dict[str, list[str]] = field(default_factory=dict)

    def text(self) -> str:
        """The alert as plain text (the email body, the webhook's fallback ``text``)."""
        lines = [self.title, ""]
        for report in self.reports:
            lines.append(_report_heading(report))
            lines.extend(f"  - {s}" for s in report.samples)
            lines.append(f"  Repair: {report.hint}")
            lines.append("")
        lines.extend(_link_lines(self))
        return "\n".join(lines).rstrip() + "\n"


def _report_heading(report: VerdictReport) -> str:
    name = report.verdict or report.rule
    observed = "?" if report.observed is None else str(report.observed)
    return f"{name}: {observed} ({report.allowed})"


def _link_lines(alert: Alert) -> list[str]:
    lines = []
    if alert.run_url:
        lines.append(f"Airflow run: {alert.run_url}")
    if alert.data_docs_url:
        lines.append(f"Data Docs: {alert.data_docs_url}")
    lines.append(f"Validation: {alert.validation_id}")
    return lines


def _position(sample: Mapping[str, Any]) -> str | None:
    topic, partition = sample.get("topic"), sample.get("partition")
    if topic is None or partition is None:
        return None
    offsets = [int(o) for o in sample.get("offsets") or []]
    return f"{topic}/{partition}" + ("@" + ",".join(map(str, offsets)) if offsets else "")


def _keys(sample: Mapping[str, Any]) -> list[str]:
    return [str(k) for k in sample.get("sink_keys") or []]


def _sample_line(verdict: str, sample: Mapping[str, Any]) -> str:
    # Only these fields are rendered: a sample that carries anything else (a payload) leaks nothing.
    parts = [str(sample.get("message_id") or "(no message id)")]
    position = _position(sample)
    if position:
        parts.append(f"at {position}")
    keys = _keys(sample)
    if keys:
        parts.append("sink keys " + ", ".join(keys))
    if verdict == Verdict.DUPLICATED and sample.get("sink_count") is not None:
        parts.append(f"{int(sample['sink_count'])} sink rows")
    return "  ".join(parts)


def _ranges(offsets: Iterable[int]) -> str:
    ordered = sorted(set(offsets))
    spans: list[str] = []
    start = prev = None
    for o in [*ordered, None]:
        if o is not None and prev is not None and o == prev + 1:
            prev = o
            continue
        if start is not None:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = o
    return ", ".join(spans)


def _by_partition(samples: Sequence[Mapping[str, Any]]) -> str:
    grouped: dict[tuple[str, int], list[int]] = {}
    for s in samples:
        if s.get("topic") is None or s.get("partition") is None:
            continue
        grouped.setdefault((str(s["topic"]), int(s["partition"])), []).extend(
            int(o) for o in s.get("offsets") or []
        )
    parts = []
    for (topic, partition), offsets in sorted(grouped.items()):
        word = "offset" if len(set(offsets)) == 1 else "offsets"
        parts.append(
            f"{topic}/{partition} {word} {_ranges(offsets)}" if offsets else f"{topic}/{partition}"
        )
    return "; ".join(parts)


def _sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _full_list(pipeline: str, run_id: str, verdict: str) -> str:
    where = "topic_duplicate" if verdict == Verdict.TOPIC_DUPLICATE else f"verdict = '{verdict}'"
    return (
        "SELECT message_id, topic, partition, offsets, sink_keys FROM recon.discrepancies "
        f"WHERE pipeline = {_sql_literal(pipeline)} AND run_id = {_sql_literal(run_id)} "
        f"AND {where}"
    )


def _duplicate_deletes(samples: Sequence[Mapping[str, Any]]) -> str:
    items = []
    for s in samples:
        keys = _keys(s)
        total = int(s.get("sink_count") or len(keys))
        if not keys:
            continue
        if total > len(keys):
            # Rows from earlier runs (or keys left out of the sample) keep the message delivered.
            items.append(f"{s.get('message_id')}: delete {', '.join(keys)} ({total} rows in all)")
        else:
            items.append(f"{s.get('message_id')}: delete {', '.join(keys[1:])} (keep {keys[0]})")
    return "; ".join(items)


def _hint(verdict: str | None, samples: Sequence[Mapping[str, Any]]) -> str:
    keys = [k for s in samples for k in _keys(s)]
    positions = _by_partition(samples)
    if verdict == Verdict.LOST:
        return (
            f"replay these committed records to the sink: {positions or 'see the full list'}."
            " Typical cause: the consumer committed offsets before writing, then crashed."
        )
    if verdict == Verdict.DUPLICATED:
        return (
            "delete the extra sink rows, keeping one per message: "
            f"{_duplicate_deletes(samples) or 'see the full list'}."
            " Typical cause: the consumer wrote again after a crash or a rewind, without an upsert."
        )
    if verdict == Verdict.ABORTED_READ:
        return (
            "records of aborted producer transactions reached the sink, at "
            f"{positions or 'see the full list'}; delete their sink rows "
            f"({', '.join(keys) or 'see the full list'}) and make the consumer read with "
            "isolation.level=read_committed."
        )
    if verdict == Verdict.PHANTOM:
        return (
            "no committed record carries these messageIds: investigate sink keys "
            f"{', '.join(keys) or '(see the full list)'}: written by something other than the "
            "consumer, or read from records outside the reconciled topic."
        )
    if verdict == Verdict.TOPIC_DUPLICATE:
        return (
            "the producer wrote the same messageId at several offsets (a retry without "
            f"idempotence): {positions or 'see the full list'}. Check enable.idempotence and "
            "the producer's retries; the sink verdicts count each message once."
        )
    if verdict == Verdict.UNVERIFIABLE:
        return (
            "records were removed by retention or compaction before this run read them"
            + (f" ({positions})" if positions else "")
            + ": reconcile more often than the topic's retention, or raise max_unverifiable "
            "to accept the gap."
        )
    if verdict == Verdict.INVALID:
        where = "; ".join(
            part for part in (positions, "sink keys " + ", ".join(keys) if keys else "") if part
        )
        return (
            f"records or sink rows without a usable messageId ({where or 'see the full list'}): "
            "fix the producer or the consumer so every record carries its id, or raise "
            "max_invalid to accept them."
        )
    return "the results do not have the shape the suite expects (a reconciler bug): see Data Docs."


def _allowed_text(failure: Mapping[str, Any], semantics: str, judged: int) -> str:
    rule = str(failure.get("rule") or "")
    allowed = failure.get("allowed") or 0
    if rule.endswith("_ratio"):
        return f"allowed up to {float(allowed):.2%} of {judged} judged messages"
    if rule.endswith("_count"):
        return f"allowed {int(allowed)}"
    if failure.get("verdict") == Verdict.TOPIC_DUPLICATE:
        return "forbidden: the producer is declared idempotent"
    if failure.get("verdict"):
        return f"forbidden under {semantics}"
    return f"expectation {failure.get('expectation')} failed"


def airflow_run_url(dag_id: str, run_id: str) -> str | None:
    """``{RECON_AIRFLOW_BASE_URL}/dags/{dag_id}/runs/{run_id}``, or ``None`` when unset."""
    base = os.environ.get("RECON_AIRFLOW_BASE_URL")
    if not base:
        return None
    quote = urllib.parse.quote
    return f"{base.rstrip('/')}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def build_alert(
    *,
    pipeline: str,
    semantics: str,
    run_id: str,
    summary: Mapping[str, Any],
    outcome: ValidationOutcome,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    dag_id: str | None = None,
) -> Alert:
    """Compose the alert for a failed validation.

    :param summary: the run's summary (``dataclasses.asdict(RunSummary)``): ``counts`` and
        ``samples`` (per verdict: message_id, topic, partition, offsets, sink_keys, sink_count).
    :param outcome: the checkpoint's decision; its failures name the violated rules.
    :param sample_size: at most this many sample messages per verdict.
    :param dag_id: the pipeline's DAG id for the run link (default: the pipeline name).
    """
    counts = {str(k): int(v) for k, v in (summary.get("counts") or {}).items()}
    judged = sum(counts.get(v, 0) for v in JUDGED)
    all_samples: Mapping[str, Sequence[Mapping[str, Any]]] = summary.get("samples") or {}
    reports: list[VerdictReport] = []
    sample_ids: dict[str, list[str]] = {}
    for failure in outcome.failures:
        verdict = failure.get("verdict")
        samples = list(all_samples.get(verdict, []))[: max(sample_size, 0)] if verdict else []
        observed = failure.get("observed")
        lines = [_sample_line(verdict or "", s) for s in samples]
        if verdict and observed is not None and observed > len(samples):
            every = _full_list(pipeline, run_id, verdict)
            lines.append(f"... {len(samples)} of {observed} shown; all of them: {every}")
        if verdict:
            sample_ids[verdict] = [str(s.get("message_id")) for s in samples]
        reports.append(
            VerdictReport(
                verdict=verdict,
                rule=str(failure.get("rule") or failure.get("expectation")),
                observed=observed,
                allowed=_allowed_text(failure, semantics, judged),
                samples=lines,
                hint=_hint(verdict, samples),
            )
        )
    broken = ", ".join(
        f"{r.observed} {r.verdict or r.rule}" for r in reports if r.observed is not None
    )
    title = (
        f"Delivery contract broken: pipeline {pipeline} claims {semantics}, run {run_id}: "
        f"{broken or 'see Data Docs'}"
    )
    return Alert(
        pipeline=pipeline,
        semantics=semantics,
        run_id=run_id,
        title=title,
        reports=reports,
        data_docs_url=data_docs_url(outcome.data_docs_path),
        run_url=airflow_run_url(dag_id or pipeline, run_id),
        validation_id=outcome.validation_id,
        sample_ids=sample_ids,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def webhook_payload(alert: Alert) -> dict[str, Any]:
    """Slack-compatible JSON: the plain text as ``text`` (notification and fallback), and
    blocks: a header, one section per violated rule, the links."""
    header = f"Contract broken: {alert.pipeline} ({alert.semantics})"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(header, _HEADER_MAX)}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": _clip(f"*Run* `{alert.run_id}`", _SECTION_MAX)},
        },
    ]
    for report in alert.reports:
        body = "\n".join(
            [f"*{_report_heading(report)}*", *(f"• {s}" for s in report.samples)]
            + [f"_Repair:_ {report.hint}"]
        )
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": _clip(body, _SECTION_MAX)}}
        )
    links = []
    if alert.run_url:
        links.append(f"<{alert.run_url}|Airflow run>")
    if alert.data_docs_url:
        links.append(f"<{alert.data_docs_url}|Data Docs>")
    links.append(f"validation `{alert.validation_id}`")
    blocks = blocks[:_BLOCKS_MAX]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(links)}]})
    return {"text": alert.text(), "blocks": blocks}


def email_message(alert: Alert, sender: str, recipients: Sequence[str]) -> EmailMessage:
    """The alert as a plain-text email."""
    message = EmailMessage()
    message["Subject"] = _clip(
        f"[recon] {alert.pipeline}: {alert.semantics} contract broken (run {alert.run_id})", 250
    )
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain="recon.local")
    message["X-Recon-Pipeline"] = alert.pipeline
    message["X-Recon-Run-Id"] = alert.run_id
    message.set_content(alert.text())
    return message


# --- channels -----------------------------------------------------------------------------------


def _flag(extra: Mapping[str, Any], key: str) -> bool | None:
    value = extra.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def webhook_url(conn: RawConnection) -> str:
    """The URL an ``http`` connection points at: ``schema://host:port`` + extra ``endpoint``.

    :raises ConnectionNotFound: no host, or a scheme other than http/https.
    """
    endpoint = str(conn.extra.get("endpoint") or "")
    if "://" in endpoint:
        url = endpoint
    else:
        host = (conn.host or "").rstrip("/")
        if not host:
            raise ConnectionNotFound(f"connection '{conn.conn_id}' has no host")
        if "://" not in host:
            scheme = conn.schema or "http"
            host = f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")
        url = host + ("/" + endpoint.lstrip("/") if endpoint else "")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ConnectionNotFound(f"connection '{conn.conn_id}': the webhook must be http or https")
    return url


def _post_webhook(conn: RawConnection, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
    url = webhook_url(conn)
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "recon-alerts"}
    extra_headers = conn.extra.get("headers")
    if isinstance(extra_headers, dict):
        headers.update({str(k): str(v) for k, v in extra_headers.items()})
    if conn.login:
        token = base64.b64encode(f"{conn.login}:{conn.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    request = urllib.request.Request(
        url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:  # http(s) only: webhook_url
        status = int(response.status)
        response.read(1024)
    # The host only: the path of a webhook URL is often its secret.
    return {"host": urllib.parse.urlsplit(url).hostname, "http_status": status}


def _recipients(value: Any) -> list[str]:
    if isinstance(value, str):
        return [r.strip() for r in value.split(",") if r.strip()]
    if isinstance(value, list | tuple):
        return [str(r).strip() for r in value if str(r).strip()]
    return []


def _send_email(conn: RawConnection, alert: Alert, timeout: float) -> dict[str, Any]:
    if not conn.host:
        raise ConnectionNotFound(f"connection '{conn.conn_id}' has no host")
    recipients = _recipients(conn.extra.get("to"))
    if not recipients:
        raise ConnectionNotFound(f"connection '{conn.conn_id}' names no recipients (extra 'to')")
    sender = str(conn.extra.get("from_email") or conn.login or "recon@localhost")
    message = email_message(alert, sender, recipients)
    port = conn.port or 25
    use_ssl = _flag(conn.extra, "ssl")
    if use_ssl is None:
        use_ssl = port == 465 and not _flag(conn.extra, "disable_ssl")
    starttls = _flag(conn.extra, "starttls")
    if starttls is None and _flag(conn.extra, "disable_tls"):
        starttls = False
    tls = ssl.create_default_context()
    client: smtplib.SMTP = (
        smtplib.SMTP_SSL(conn.host, port, timeout=timeout, context=tls)
        if use_ssl
        else smtplib.SMTP(conn.host, port, timeout=timeout)
    )
    with client:
        client.ehlo()
        if not use_ssl and (starttls or (starttls is None and client.has_extn("starttls"))):
            client.starttls(context=tls)
            client.ehlo()
        if conn.login:
            client.login(conn.login, conn.password or "")
        client.send_message(message, from_addr=sender, to_addrs=recipients)
    return {"to": recipients}


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        text = f"HTTP {exc.code} {exc.reason}"
    elif isinstance(exc, urllib.error.URLError):
        text = f"URLError: {exc.reason}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return _clip(text, _ERROR_MAX)


# --- send once ----------------------------------------------------------------------------------


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
        WEBHOOK: webhook_conn_id
        or os.environ.get("RECON_ALERT_WEBHOOK_CONN_ID", DEFAULT_WEBHOOK_CONN_ID),
        EMAIL: smtp_conn_id or os.environ.get("RECON_ALERT_SMTP_CONN_ID", DEFAULT_SMTP_CONN_ID),
    }
    recorded = _record_summary(alert, outcome)
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
            try:
                conn = raw_connection(conn_ids[channel])
            except ConnectionNotFound as exc:
                _finish(pg, pipeline, run_id, channel, SKIPPED, recorded, str(exc))
                statuses[channel] = SKIPPED
                continue
            try:
                if channel == WEBHOOK:
                    target = _post_webhook(conn, webhook_payload(alert), timeout)
                else:
                    target = _send_email(conn, alert, timeout)
            except (OSError, smtplib.SMTPException, ConnectionNotFound, ValueError) as exc:
                error = _describe(exc)
                _finish(pg, pipeline, run_id, channel, FAILED, recorded, error)
                statuses[channel] = FAILED
                log.warning("alert %s for %s run %s failed: %s", channel, pipeline, run_id, error)
                continue
            _finish(pg, pipeline, run_id, channel, SENT, {**recorded, "target": target}, None)
            statuses[channel] = SENT
        except BaseException:
            pg.rollback()
            raise
        log.info("alert %s for %s run %s: %s", channel, pipeline, run_id, statuses[channel])
    return statuses
