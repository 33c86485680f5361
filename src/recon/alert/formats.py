"""The alert as each channel carries it: Slack-compatible JSON for the webhook, a plain-text
email. Data-derived strings are already neutralised in the alert's text (``recon.alert.text``);
here Slack's control characters are escaped and no header gets a line break."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from recon.alert.content import Alert, report_heading
from recon.alert.text import clip, shown, slack_escape, value

# Slack limits: 150 characters of header text, 3000 per section text, 50 blocks.
_HEADER_MAX, _SECTION_MAX, _BLOCKS_MAX = 150, 2900, 45


def webhook_payload(alert: Alert) -> dict[str, Any]:
    """Slack-compatible JSON: the plain text as ``text`` (notification and fallback), and
    blocks: a header, the run (and its latency and source-to-sink lines), one section per
    violated rule, the links."""
    header = f"Contract broken: {shown(alert.pipeline)} ({alert.semantics})"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": clip(header, _HEADER_MAX)}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": _mrkdwn(f"*Run* `{shown(alert.run_id)}`")},
        },
    ]
    for line in (alert.latency, alert.funnel):
        if line:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _mrkdwn(line)}})
    for report in alert.reports:
        body = "\n".join(
            [f"*{report_heading(report)}*", *(f"• {s}" for s in report.samples)]
            + [f"_Repair:_ {report.hint}"]
        )
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _mrkdwn(body)}})
    links = []
    if alert.run_url:
        links.append(f"<{slack_escape(alert.run_url)}|Airflow run>")
    if alert.data_docs_url:
        links.append(f"<{slack_escape(alert.data_docs_url)}|Data Docs>")
    links.append(f"validation `{slack_escape(shown(alert.validation_id, 300))}`")
    blocks = blocks[:_BLOCKS_MAX]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(links)}]})
    return {"text": slack_escape(alert.text()), "blocks": blocks}


def _mrkdwn(text: str) -> str:
    return clip(slack_escape(text), _SECTION_MAX)


def email_message(alert: Alert, sender: str, recipients: Sequence[str]) -> EmailMessage:
    """The alert as a plain-text email."""
    message = EmailMessage()
    message["Subject"] = clip(
        f"[recon] {value(alert.pipeline)}: {alert.semantics} contract broken "
        f"(run {value(alert.run_id)})",
        250,
    )
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain="recon.local")
    message["X-Recon-Pipeline"] = shown(alert.pipeline, 250)
    message["X-Recon-Run-Id"] = shown(alert.run_id, 250)
    message.set_content(alert.text())
    return message
