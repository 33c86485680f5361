"""Debezium on the project's Kafka Connect worker, for the ``outbox_debezium`` scenario: its two
PostgreSQL connectors, their replication slots and publication (through the worker's REST
client, :mod:`recon_workload.connect`).

One pair of connectors serves every run of the scenario (a connector's start costs seconds and
its slot waits for the database's open transactions): a run adds its outbox table to their
publication and grants the replication role (``RECON_PG_DEBEZIUM_USER``) ``SELECT`` on it. Both
connectors stream the same table through slots of their own:

- ``<name>`` publishes the outbox with Debezium's outbox ``EventRouter``: each row's ``payload``
  becomes a record of the topic its ``aggregatetype`` names, keyed by ``aggregateid``, with the
  row's ``message_id`` as a header; updates and deletes publish nothing;
- ``<name>-cdc`` publishes the table's change events as they are (``{"before", "after",
  "source", "op", ...}``, creates only) to the run's topic ``...-in``: the outbox's own change
  topic, what a pipeline declares as its ``source:`` when the application deletes its outbox rows
  right after writing them (docs/algorithm.md, "An outbox published by Debezium").

The connectors' name is ``RECON_WORKLOAD_DEBEZIUM`` (default ``recon-workload-outbox``): a test
gives its own and removes it (:func:`remove`) with its slots and publication.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from psycopg2 import sql

from recon_workload import connect, sink
from recon_workload.errors import WorkloadError

POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
EVENT_ROUTER = "io.debezium.transforms.outbox.EventRouter"
#: The setting naming the connectors a run uses (read here only).
NAME_VARIABLE = "RECON_WORKLOAD_DEBEZIUM"
DEFAULT_NAME = "recon-workload-outbox"
#: Every outbox table of the scenario: the connectors capture those their publication names.
TABLES = r"public\.wl_outbox_debezium_[a-z0-9_]+_outbox"
_STRING = "org.apache.kafka.connect.storage.StringConverter"
_JSON = "org.apache.kafka.connect.json.JsonConverter"


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise WorkloadError(f"{name} is not set: run through scripts/with-env.sh")
    return value


@dataclass(frozen=True)
class Connectors:
    """The names of one pair of connectors and what they hold in PostgreSQL.

    :param name: the router connector's name (lowercase letters, digits, ``-``); the change
        topic's connector is ``<name>-cdc``.
    """

    name: str

    @property
    def cdc(self) -> str:
        return f"{self.name}-cdc"

    @property
    def publication(self) -> str:
        return self.name.replace("-", "_")

    def slot(self, connector: str) -> str:
        return connector.replace("-", "_")


def connectors() -> Connectors:
    """The connectors this process's runs use (``RECON_WORKLOAD_DEBEZIUM``)."""
    return Connectors(os.environ.get(NAME_VARIABLE) or DEFAULT_NAME)


def _common(c: Connectors, connector: str) -> dict[str, str]:
    return {
        **_database(connector, c.publication),
        "table.include.list": TABLES,
        # An outbox is insert-only to its readers: the deletes that clean it publish nothing.
        "skipped.operations": "u,d,t",
        "tombstones.on.delete": "false",
    }


def _database(connector: str, publication: str) -> dict[str, str]:
    return {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": _env("RECON_PG_HOST"),
        "database.port": _env("RECON_PG_PORT"),
        "database.dbname": _env("RECON_PG_SINK_DB"),
        "database.user": _env("RECON_PG_DEBEZIUM_USER"),
        # Resolved by the worker from its environment (scripts/connect.sh): no stored config
        # holds the password.
        "database.password": "${env:RECON_PG_DEBEZIUM_PASSWORD}",
        # Each its own: Debezium names its metrics by it, and a second connector with the same
        # prefix waits for the first's to go.
        "topic.prefix": connector.replace("-", "_"),
        "slot.name": connector.replace("-", "_"),
        "publication.name": publication,
        # The role may not create a publication (that needs the tables' owner): the scenario
        # names each table in it.
        "publication.autocreate.mode": "disabled",
        "snapshot.mode": "no_data",
    }


def change_events_config(connector: str, publication: str, table: str) -> dict[str, str]:
    """A connector publishing ``table``'s (``schema.table``) inserts and updates as change
    events, envelopes as they are (JSON, no schema), to ``<connector>.<schema>.<table>`` (dashes
    as underscores); its deletes and their tombstones are skipped."""
    return {
        **_database(connector, publication),
        "table.include.list": re.escape(table),
        "skipped.operations": "d,t",
        "tombstones.on.delete": "false",
        "key.converter": _JSON,
        "key.converter.schemas.enable": "false",
        "value.converter": _JSON,
        "value.converter.schemas.enable": "false",
        "header.converter": _STRING,
    }


def create(name: str, config: dict[str, str]) -> None:
    """Create a connector and wait until it runs."""
    connect.create(name, config)
    connect.wait_running(name)


def delete(name: str) -> None:
    """Stop and delete a connector with its stored offsets, then drop its slot."""
    if name in set(connect.call("/connectors")):
        stop(name)
        connect.call(f"/connectors/{name}/offsets", "DELETE")
        connect.call(f"/connectors/{name}", "DELETE")
    with sink.transaction() as cur:
        cur.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
            " WHERE slot_name = %s",
            (name.replace("-", "_"),),
        )


def router_config(c: Connectors) -> dict[str, str]:
    """The outbox connector: EventRouter to the topic each row's ``aggregatetype`` names."""
    return {
        **_common(c, c.name),
        "key.converter": _STRING,
        "value.converter": _STRING,
        "header.converter": _STRING,
        "transforms": "outbox",
        "transforms.outbox.type": EVENT_ROUTER,
        "transforms.outbox.table.field.event.id": "message_id",
        "transforms.outbox.table.field.event.key": "aggregateid",
        "transforms.outbox.table.field.event.payload": "payload",
        "transforms.outbox.route.by.field": "aggregatetype",
        "transforms.outbox.route.topic.replacement": "${routedByValue}",
        "transforms.outbox.table.fields.additional.placement": "message_id:header:message_id",
    }


def cdc_config(c: Connectors) -> dict[str, str]:
    """The change-topic connector: each table's change events to ``wl-outbox_debezium-<tag>-in``
    (the run's second topic, removed with the run)."""
    return {
        **_common(c, c.cdc),
        "key.converter": _JSON,
        "key.converter.schemas.enable": "false",
        "value.converter": _JSON,
        "value.converter.schemas.enable": "false",
        "header.converter": _STRING,
        "transforms": "name",
        "transforms.name.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.name.regex": r".*\.public\.wl_outbox_debezium_(.+)_outbox",
        "transforms.name.replacement": "wl-outbox_debezium-$1-in",
    }


def stored_config(name: str) -> dict[str, str]:
    """The connector's config as the worker stores it (placeholders unresolved)."""
    config: dict[str, str] = connect.call(f"/connectors/{name}/config")
    return config


def ensure(c: Connectors) -> None:
    """Create the publication and both connectors unless they exist; wait until they run."""
    with sink.transaction() as cur:
        cur.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (c.publication,))
        if cur.fetchone() is None:
            cur.execute(sql.SQL("CREATE PUBLICATION {}").format(sql.Identifier(c.publication)))
    existing = set(connect.call("/connectors"))
    for name, config in ((c.name, router_config(c)), (c.cdc, cdc_config(c))):
        if name not in existing:
            connect.create(name, config)
    for name in (c.name, c.cdc):
        connect.wait_running(name)


def capture(c: Connectors, table: str) -> None:
    """Let the connectors read ``table`` (bare, schema ``public``): ``SELECT`` for the role, and
    the table in their publication (changes committed from now on are streamed)."""
    ident = sql.Identifier("public", table)
    role = sql.Identifier(_env("RECON_PG_DEBEZIUM_USER"))
    with sink.transaction() as cur:
        cur.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(ident, role))
        cur.execute(
            sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(
                sql.Identifier(c.publication), ident
            )
        )


def pause(name: str) -> None:
    """Pause the connector (its task stops polling; the slot stays held)."""
    connect.call(f"/connectors/{name}/pause", "PUT")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = connect.call(f"/connectors/{name}/status")
        if {t["state"] for t in status["tasks"]} == {"PAUSED"}:
            return
        time.sleep(0.3)
    raise WorkloadError(f"connector {name} did not pause within 30 s")


def resume(name: str) -> None:
    connect.call(f"/connectors/{name}/resume", "PUT")
    connect.wait_running(name)


def stop(name: str) -> None:
    """Stop the connector: its task ends and releases its slot (resumed by :func:`resume`)."""
    connect.call(f"/connectors/{name}/stop", "PUT")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not slot_active(name.replace("-", "_")):
            return
        time.sleep(0.3)
    raise WorkloadError(f"connector {name} still holds its slot 60 s after it was stopped")


def slot_active(slot: str) -> bool:
    with sink.transaction() as cur:
        cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
        row = cur.fetchone()
    return bool(row and row[0])


def lose_slot(name: str) -> None:
    """What a lost replication slot does to a stopped connector (a failover to a server without
    it, an operator recreating the connector): its slot and stored offsets are gone, so on
    :func:`resume` it makes a new slot and streams from then on; what was committed meanwhile is
    never published by it."""
    connect.call(f"/connectors/{name}/offsets", "DELETE")
    with sink.transaction() as cur:
        cur.execute("SELECT pg_drop_replication_slot(%s)", (name.replace("-", "_"),))


def remove(c: Connectors) -> None:
    """Delete both connectors with their stored offsets and slots (:func:`delete`), then their
    publication (what a test made)."""
    for name in (c.name, c.cdc):
        delete(name)
    with sink.transaction() as cur:
        cur.execute(sql.SQL("DROP PUBLICATION IF EXISTS {}").format(sql.Identifier(c.publication)))
