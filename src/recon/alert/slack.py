"""The Slack notifier: the alert as a Slack incoming-webhook message, sent by Airflow's Slack
provider (``SlackWebhookHook``, through ``recon.alert.transport``) to a ``slackwebhook``
connection: the password is the webhook token (``T000/B000/XXX``) or the whole webhook URL; the
host is the endpoint (default ``https://hooks.slack.com/services``). The provider builds the
URL; :func:`check_slack_url` refuses it unless it is https or plain http to loopback (a test
receiver): the token is the URL's path, and plain http would show it to the network.

The message: ``text`` (the notification and the fallback of clients that show no blocks) and
``blocks``, each a ``section`` with ``mrkdwn`` text within Slack's limits (3000 characters a
section, 50 blocks a message): a violated rule whose samples do not fit one section continues in
the next, and what would pass the 50th block is replaced by one line saying how much was left
out. Every text is escaped for Slack (``&``, ``<``, ``>``: no link, mention or command comes from
the data; the data-derived strings are already neutralised by ``recon.alert.text``) and marked
``verbatim``, so Slack does not turn bare ``@here``, ``#channel`` or URLs in it into mentions and
links either. The only links are the ones built here, to the Airflow run and the Data Docs.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from recon.alert.channels import SendFailed, loopback_host, url_secrets
from recon.alert.content import Alert, link_lines, report_heading
from recon.alert.text import shown, slack_escape

#: Slack's limits: the characters of one section's text, the blocks of one message.
SECTION_MAX, BLOCKS_MAX = 3000, 50
#: The notification text: Slack shows a line or two of it; the blocks carry the whole alert.
TEXT_MAX = 3000


def check_slack_url(url: str, conn_id: str) -> None:
    """A Slack webhook URL is https, or plain http to a loopback host.

    :param url: the URL Airflow's Slack provider built from the connection.
    :raises SendFailed: any other URL (the message names no token).
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and loopback_host(parts.hostname or "")):
        return
    raise SendFailed(
        f"connection '{conn_id}': a Slack webhook must be https (plain http only to a "
        "loopback host): the token is part of the URL"
    )


def slack_secrets(token: str, url: str) -> list[str]:
    """What an error must not show: the token, each part of it, and the URL's secret parts."""
    found = [token, *url_secrets(url)]
    found += [s for s in token.split("/") if len(s) >= 8]
    return [s for s in found if s]


def slack_payload(alert: Alert) -> dict[str, Any]:
    """The alert in Slack's incoming-webhook format: ``text`` and ``blocks`` of mrkdwn sections.

    :param alert: the alert (:func:`recon.alert.content.build_alert`).
    :returns: the JSON body: at most :data:`BLOCKS_MAX` blocks, each section's text at most
        :data:`SECTION_MAX` characters, everything escaped for Slack.
    """
    sections = [slack_text(alert.title)]
    run = f"*Run* `{shown(alert.run_id)}`"
    sections.append(
        slack_text("\n".join(x for x in (run, alert.flow, alert.latency, alert.funnel) if x))
    )
    for report in alert.reports:
        lines = [f"*{report_heading(report)}*", *(f"• {s}" for s in report.samples)]
        lines.append(f"_Repair:_ {report.hint}")
        sections.extend(_sections_of(lines))
    links = _links(alert)
    room = BLOCKS_MAX - 1  # the links always close the message
    if len(sections) > room:
        left_out = len(sections) - (room - 1)
        sections = sections[: room - 1] + [
            slack_text(
                f"… {left_out} more parts of this alert are not shown (Slack takes "
                f"{BLOCKS_MAX} blocks): the Data Docs and the email have all of it"
            )
        ]
    blocks = [_section(text) for text in [*sections, links]]
    return {"text": slack_text(alert.text().rstrip("\n"), TEXT_MAX), "blocks": blocks}


def slack_text(text: str, limit: int = SECTION_MAX) -> str:
    """``text`` escaped for Slack (``&``, ``<``, ``>``) and cut to ``limit`` characters with "…",
    never inside an escape (a cut ``&am`` would show as text, a cut ``&lt`` as garbage).

    :param text: plain text (data-derived parts already made harmless by ``recon.alert.text``).
    :param limit: the most characters of the result.
    """
    escaped = slack_escape(text)
    if len(escaped) <= limit:
        return escaped
    out: list[str] = []
    size = 0
    for char in text:
        piece = slack_escape(char)
        if size + len(piece) > limit - 1:
            break
        out.append(piece)
        size += len(piece)
    return "".join(out) + "…"


def _section(text: str) -> dict[str, Any]:
    # verbatim: Slack parses no bare @here, #channel or URL of the text into a mention or link.
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


def _sections_of(lines: list[str]) -> list[str]:
    """The lines of one violated rule as section texts of at most :data:`SECTION_MAX`
    characters, split between lines (a line longer than a section is cut)."""
    sections: list[str] = []
    current = ""
    for line in lines:
        piece = slack_text(line)
        if current and len(current) + 1 + len(piece) > SECTION_MAX:
            sections.append(current)
            current = ""
        current = f"{current}\n{piece}" if current else piece
    if current:
        sections.append(current)
    return sections


def _link(url: str, label: str) -> str:
    # Inside <url|label> a '|' would end the URL and '>' the link: escaped and percent-encoded.
    return f"<{slack_escape(url.replace('|', '%7C'))}|{label}>"


def _links(alert: Alert) -> str:
    """The links to the Airflow run and the Data Docs, and the validation's id."""
    parts = []
    if alert.run_url:
        parts.append(_link(alert.run_url, "Airflow run"))
    if alert.data_docs_url:
        parts.append(_link(alert.data_docs_url, "Data Docs"))
    parts.append(f"validation `{slack_escape(shown(alert.validation_id, 300))}`")
    text = " · ".join(parts)
    # An Airflow base URL or Data Docs path too long for one section: the links as plain text.
    return text if len(text) <= SECTION_MAX else slack_text("\n".join(link_lines(alert)))
