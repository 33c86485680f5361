"""How an alert leaves the process: through Airflow's provider hooks, which own the connections
(``HttpHook``, ``SlackWebhookHook``, ``SmtpHook``: Airflow's connection model, so every secrets
backend a team configured holds them). ``recon`` does not import Airflow: the hooks come from
the transport the wheel's ``recon_airflow`` registers in the entry point group
:data:`TRANSPORT_GROUP` (``recon_airflow.notifiers:transport``).

``recon`` keeps what the hooks do not do (``recon.alert.channels``): the messages, no redirect
followed, no SMTP login in plain text beyond loopback, and errors with every secret masked.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from recon.alert.content import Alert
from recon.config.entry_points import first_loadable
from recon.errors import ConnectionNotFound

#: The entry point group of transports (``name = "module:object"``, the object a
#: :class:`Transport`); the wheel registers ``recon_airflow.notifiers:transport``.
TRANSPORT_GROUP = "recon.alert_transports"


class Transport(Protocol):
    """Delivers an alert with one notifier through one connection."""

    def send(self, notifier: str, conn_id: str, alert: Alert, timeout: float) -> dict[str, Any]:
        """Deliver ``alert``; what was reached (no secret: it is recorded).

        :param notifier: ``webhook``, ``slack`` or ``email``.
        :param conn_id: the Airflow connection id of the receiver.
        :param timeout: seconds for the connection and the answer.
        :raises ConnectionNotFound: the connection is not defined (the route is skipped).
        :raises recon.alert.channels.SendFailed: the delivery failed (the reason, redacted).
        """
        ...


class TransportMissing(ConnectionNotFound):
    """No transport installed: ``kafka-recon`` without its ``airflow`` extra."""


@functools.cache
def installed_transport() -> Transport:
    """The installed transport (:data:`TRANSPORT_GROUP`).

    :raises TransportMissing: none is installed or none imports.
    """
    transport: Transport | None = first_loadable(TRANSPORT_GROUP, "alerts cannot be sent")
    if transport is None:
        raise TransportMissing(
            "alerts are sent through Airflow's provider hooks, and no transport is installed: "
            "pip install 'kafka-recon[airflow]'"
        )
    return transport
