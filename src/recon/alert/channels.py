"""The notifiers: a webhook (Slack-compatible JSON over http/https), an email (SMTP) and a Slack
incoming webhook (``recon.alert.slack``, on this module's POST).

Plain ``urllib`` and ``smtplib``: Airflow's notifiers would make this package import Airflow.

What a receiver cannot make them do:

- follow a redirect: a 3xx answer is a failed send naming the status, so the alert and its
  ``Authorization`` header go to the configured URL only (refused, not re-sent without
  credentials: a webhook that moved is a configuration to fix);
- send an SMTP login in plain text to a host other than loopback: STARTTLS when the server offers
  it (required with extra ``starttls: true``), SMTPS with ``ssl: true`` (or port 465); a
  plain-text login to a remote relay only with extra ``allow_plaintext_auth: true``;
- leak a credential through an error: every failure becomes :class:`SendFailed`, whose message
  has the connection's password, the URL's path, query and user info and the extra headers'
  values masked, and any URL cut to its host.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import smtplib
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from email.message import EmailMessage
from typing import Any

from recon import settings
from recon.alert.content import Alert
from recon.alert.formats import email_message
from recon.alert.text import shown
from recon.connections import RawConnection
from recon.errors import ConnectionNotFound

WEBHOOK, EMAIL, SLACK = "webhook", "email", "slack"
#: The default routes, each on its connection of ``recon.settings`` (recorded under these names).
CHANNELS = (WEBHOOK, EMAIL)
DEFAULT_WEBHOOK_CONN_ID = settings.DEFAULT_ALERT_WEBHOOK_CONN_ID
DEFAULT_SMTP_CONN_ID = settings.DEFAULT_ALERT_SMTP_CONN_ID
_ERROR_MAX = 500
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


class SendFailed(Exception):
    """A channel could not deliver the alert; the message names no credential."""


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


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


_OPENER = urllib.request.build_opener(_RefuseRedirects)
_PLAIN_HEADERS = ("Content-Type", "User-Agent")


def _webhook_secrets(conn: RawConnection, url: str, headers: Mapping[str, str]) -> list[str]:
    parts = urllib.parse.urlsplit(url)
    found = [conn.password, parts.password, parts.query, parts.fragment]
    found += [str(conn.extra.get("endpoint") or ""), parts.path if len(parts.path) > 1 else ""]
    found += [segment for segment in parts.path.split("/") if len(segment) >= 8]
    found += [v for k, v in headers.items() if k not in _PLAIN_HEADERS]
    return [s for s in found if s]


def json_headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers of a JSON POST, with ``extra`` added."""
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "recon-alerts"}
    headers.update(extra or {})
    return headers


def post_json(
    url: str,
    payload: dict[str, Any],
    headers: Mapping[str, str],
    timeout: float,
    secrets: Iterable[str],
) -> dict[str, Any]:
    """POST ``payload`` as JSON to an http(s) ``url``, refusing redirects; what was reached.

    :param secrets: what a failure's message must not show (masked by :func:`describe`).
    :raises SendFailed: the POST failed or was answered with an error or a redirect.
    """
    try:
        request = urllib.request.Request(
            url, data=json.dumps(payload).encode("utf-8"), headers=dict(headers), method="POST"
        )
        with _OPENER.open(request, timeout=timeout) as response:  # the callers check http(s)
            status = int(response.status)
            response.read(1024)
    except Exception as exc:
        raise SendFailed(describe(exc, secrets)) from None
    # The host only: the path of a webhook URL is often its secret.
    return {"host": urllib.parse.urlsplit(url).hostname, "http_status": status}


def post_webhook(conn: RawConnection, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
    """POST ``payload`` as JSON; redirects are refused."""
    url = webhook_url(conn)
    headers = json_headers()
    extra_headers = conn.extra.get("headers")
    if isinstance(extra_headers, dict):
        headers.update({str(k): str(v) for k, v in extra_headers.items()})
    if conn.login:
        token = base64.b64encode(f"{conn.login}:{conn.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return post_json(url, payload, headers, timeout, _webhook_secrets(conn, url, headers))


def _recipients(value: Any) -> list[str]:
    if isinstance(value, str):
        return [r.strip() for r in value.split(",") if r.strip()]
    if isinstance(value, list | tuple):
        return [str(r).strip() for r in value if str(r).strip()]
    return []


def send_email(conn: RawConnection, alert: Alert, timeout: float) -> dict[str, Any]:
    """Send the alert as a plain-text email; no login in plain text beyond loopback."""
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
    try:
        _smtp_send(conn, port, use_ssl, starttls, timeout, message, sender, recipients)
    except Exception as exc:
        raise SendFailed(describe(exc, [conn.password or ""])) from None
    return {"to": recipients}


def _smtp_send(
    conn: RawConnection,
    port: int,
    use_ssl: bool,
    starttls: bool | None,
    timeout: float,
    message: EmailMessage,
    sender: str,
    recipients: list[str],
) -> None:
    host = str(conn.host)
    tls = ssl.create_default_context()
    client: smtplib.SMTP = (
        smtplib.SMTP_SSL(host, port, timeout=timeout, context=tls)
        if use_ssl
        else smtplib.SMTP(host, port, timeout=timeout)
    )
    with client:
        client.ehlo()
        encrypted = use_ssl
        if not use_ssl and starttls is not False:
            offered = client.has_extn("starttls")
            if starttls and not offered:
                raise SendFailed(
                    f"the SMTP server {host}:{port} does not offer STARTTLS, which the "
                    f"connection '{conn.conn_id}' asks for (extra 'starttls')"
                )
            if offered:
                client.starttls(context=tls)
                client.ehlo()
                encrypted = True
        plain_login_ok = loopback_host(host) or _flag(conn.extra, "allow_plaintext_auth")
        if conn.login and not encrypted and not plain_login_ok:
            raise SendFailed(
                f"refusing to send the SMTP login of connection '{conn.conn_id}' unencrypted to "
                f"{host}:{port} (no STARTTLS): set extra 'ssl': true for SMTPS or 'starttls': "
                "true, or 'allow_plaintext_auth': true for a trusted relay"
            )
        if conn.login:
            client.login(conn.login, conn.password or "")
        client.send_message(message, from_addr=sender, to_addrs=recipients)


def loopback_host(host: str) -> bool:
    """``host`` names this machine's loopback interface (without asking DNS)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def describe(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """One line for the record and the log: the error with ``secrets`` masked, URLs cut to
    their host, control characters escaped."""
    if isinstance(exc, SendFailed):
        return str(exc)
    if isinstance(exc, urllib.error.HTTPError):
        text = f"HTTP {exc.code} {exc.reason}"
        if 300 <= exc.code < 400:
            text += ": a redirect, not followed (the alert goes to the configured URL only)"
    elif isinstance(exc, urllib.error.URLError):
        text = f"URLError: {exc.reason}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return shown(redact(text, secrets), _ERROR_MAX)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret masked (as written, repr-escaped, URL-quoted or -unquoted) and
    every URL cut to its scheme and host."""
    forms: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        forms.update(
            (
                secret,
                repr(secret)[1:-1],
                repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
                urllib.parse.quote(secret, safe=""),
                urllib.parse.quote(secret, safe="/"),
                urllib.parse.unquote(secret),
            )
        )
    for form in sorted((f for f in forms if f), key=len, reverse=True):
        text = text.replace(form, "***")
    return _URL.sub(_origin, text)


def _origin(match: re.Match[str]) -> str:
    scheme, _, rest = match.group().partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme}://{host}/***" if host else f"{scheme}://***"
