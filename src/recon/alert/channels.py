"""The notifiers' rules, around Airflow's provider hooks (``recon.alert.transport`` sends):
a webhook (Slack-compatible JSON over http/https, ``HttpHook``), an email (``SmtpHook``) and a
Slack incoming webhook (``recon.alert.slack``, ``SlackWebhookHook``).

What a receiver cannot make them do, whatever the hooks would:

- follow a redirect: a 3xx answer is a failed send naming the status, so the alert and its
  ``Authorization`` header go to the configured URL only (refused, not re-sent without
  credentials: a webhook that moved is a configuration to fix);
- send an SMTP login in plain text to a host other than loopback: ``SmtpHook`` speaks SMTPS
  unless extra ``disable_ssl`` and then STARTTLS (required) unless extra ``disable_tls``; with
  both disabled, a login goes only to loopback, or to a relay the connection trusts with extra
  ``allow_plaintext_auth: true``;
- leak a credential through an error: every failure becomes :class:`SendFailed`, whose message
  has the connection's password, the URL's path, query and user info and the extra headers'
  values masked, and any URL cut to its host.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from recon import settings
from recon.alert.text import shown

WEBHOOK, EMAIL, SLACK = "webhook", "email", "slack"
#: The default routes, each on its connection of ``recon.settings`` (recorded under these names).
CHANNELS = (WEBHOOK, EMAIL)
DEFAULT_WEBHOOK_CONN_ID = settings.DEFAULT_ALERT_WEBHOOK_CONN_ID
DEFAULT_SMTP_CONN_ID = settings.DEFAULT_ALERT_SMTP_CONN_ID
_ERROR_MAX = 500
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
#: Headers whose values are no secret (every other header's value is masked in errors).
PLAIN_HEADERS = ("content-type", "user-agent", "accept")


class SendFailed(Exception):
    """A channel could not deliver the alert; the message names no credential."""


def flag(extra: Mapping[str, Any], key: str) -> bool | None:
    """A boolean connection extra as a person writes it (``true``, ``"yes"``, ``"0"``...);
    None when absent. (``SmtpHook`` reads ``bool(value)``, so ``"false"`` would be true.)"""
    value = extra.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be its secret: user info, path, query, fragment, and each
    long path segment (an error may quote one)."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:  # e.g. a port that is not a number: mask what follows the scheme
        return [url.split("://", 1)[-1]]
    found = [password, parts.query, parts.fragment, parts.path if len(parts.path) > 1 else ""]
    found += [segment for segment in parts.path.split("/") if len(segment) >= 8]
    return [s for s in found if s]


def header_secrets(headers: Mapping[str, Any]) -> list[str]:
    """The values of ``headers`` other than :data:`PLAIN_HEADERS`."""
    return [str(v) for k, v in headers.items() if str(k).lower() not in PLAIN_HEADERS and v]


def check_answer(status: int, reason: str = "") -> None:
    """The receiver took the alert: a 2xx.

    :raises SendFailed: a redirect (never followed) or an error status.
    """
    if 200 <= status < 300:
        return
    text = f"HTTP {status} {reason}".rstrip()
    if 300 <= status < 400:
        text += ": a redirect, not followed (the alert goes to the configured URL only)"
    raise SendFailed(text)


def check_smtp_login(
    conn_id: str,
    host: str,
    port: int | None,
    *,
    login: bool,
    encrypted: bool,
    allow_plaintext_auth: bool,
) -> None:
    """An SMTP login is never sent unencrypted beyond loopback unless the connection says so.

    :param encrypted: SMTPS or STARTTLS will be spoken before the login.
    :raises SendFailed: a login would go in plain text to a remote host.
    """
    if login and not encrypted and not loopback_host(host) and not allow_plaintext_auth:
        raise SendFailed(
            f"refusing to send the SMTP login of connection '{conn_id}' unencrypted to "
            f"{host}:{port or 25} (extras disable_ssl and disable_tls): drop one of them for "
            "SMTPS or STARTTLS, or set 'allow_plaintext_auth': true for a trusted relay"
        )


def recipients(value: Any) -> list[str]:
    """The ``to`` extra of an SMTP connection: a list or a comma-separated string."""
    if isinstance(value, str):
        return [r.strip() for r in value.split(",") if r.strip()]
    if isinstance(value, list | tuple):
        return [str(r).strip() for r in value if str(r).strip()]
    return []


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
    text = str(exc) if isinstance(exc, SendFailed) else f"{type(exc).__name__}: {exc}"
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
