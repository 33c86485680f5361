"""The alert as each channel carries it: Slack-compatible JSON for the webhook, an email (its
text, as ``<pre>`` HTML for ``SmtpHook``, which sends HTML). Data-derived strings are already
neutralised in the alert's text (``recon.alert.text``); here Slack's control characters and
HTML's are escaped and no header gets a line break."""

from __future__ import annotations

import html
from dataclasses import dataclass
from email.utils import make_msgid
from typing import Any

from recon.alert.channels import redact
from recon.alert.content import Alert, report_heading
from recon.alert.text import clip, shown, slack_escape, value

# Slack limits: 150 characters of header text, 3000 per section text, 50 blocks.
_HEADER_MAX, _SECTION_MAX, _BLOCKS_MAX = 150, 2900, 45
#: Longest rendering of a failed task's error in its notice.
NOTICE_ERROR_MAX = 300


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
    for line in (alert.flow, alert.latency, alert.funnel):
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


@dataclass(frozen=True)
class EmailContent:
    """What an alert email says: its subject, its text and the headers recon adds."""

    subject: str
    text: str
    headers: dict[str, str]

    def html(self) -> str:
        """The text as HTML: preformatted, every ``&``, ``<``, ``>`` and quote escaped (no markup
        or link comes from the data)."""
        return f'<pre style="font-family: monospace">{html.escape(self.text)}</pre>'


def email_content(alert: Alert) -> EmailContent:
    """The alert as an email: subject and headers clipped and without a line break."""
    subject = clip(
        f"[recon] {value(alert.pipeline)}: {alert.semantics} contract broken "
        f"(run {value(alert.run_id)})",
        250,
    )
    headers = {
        "Message-ID": make_msgid(domain="recon.local"),
        "X-Recon-Pipeline": shown(alert.pipeline, 250),
        "X-Recon-Run-Id": shown(alert.run_id, 250),
    }
    return EmailContent(subject=subject, text=alert.text(), headers=headers)


def failure_notice(
    *, dag_id: str, run_id: str, task_id: str, try_number: object, error: str = ""
) -> dict[str, Any]:
    """The webhook JSON of an operational failure notice: a task failed (not a broken contract).
    The error's first line is shown as an alert's error is recorded: every URL cut to its host,
    control and format characters escaped, clipped; the caller masks the secrets it knows.

    :param error: the task's error, its secrets already masked (Airflow's masker in a task).
    """
    lines = error.strip().splitlines()
    first = f": {shown(redact(lines[0], ()), NOTICE_ERROR_MAX)}" if lines else ""
    text = (
        f"recon: task {shown(task_id)} of {shown(dag_id)} failed in run {shown(run_id)} "
        f"(try {shown(try_number)}){first}"
    )
    return {
        "text": slack_escape(text),
        "recon": {"kind": "task_failed", "dag_id": dag_id, "run_id": run_id, "task_id": task_id},
    }
