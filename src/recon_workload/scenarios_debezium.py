"""The transactional outbox published by Debezium (``outbox_debezium``): the relay teams run.

The application commits each message's outbox row (Debezium's outbox columns: ``message_id``
as the event id, ``aggregatetype`` naming the run's topic, ``aggregateid`` the key, ``payload``
the record's value) in small transactions; Debezium's PostgreSQL connector on the project's
Kafka Connect worker streams them from the WAL and its ``EventRouter`` publishes each row's
payload to the topic (:mod:`recon_workload.debezium`); a consumer that skips messageIds it has
already written fills the sink. Faults, each a parameter:

- ``worker_kill``: the Connect worker is killed (SIGKILL) while rows keep coming, then started
  again: the connector resumes from the last offsets it flushed (every 10 s), so what it
  published since is published twice (``topic_duplicate``; the consumer's dedupe keeps one sink
  row: ``delivered``);
- ``pause``: the connector is paused while a fifth of the rows are committed, then resumed; a
  caller's :class:`~recon_workload.hold.HoldGate` is held meanwhile (a pipeline whose
  ``settle_seconds`` covers the pause says nothing ``unpublished`` then); the run waits until it
  caught up, so nothing is unpublished;
- ``skipped``: this many rows are committed while the connector is stopped and its slot is lost
  (:func:`recon_workload.debezium.lose_slot`): it never publishes them (``unpublished``);
- ``delete_rows``: each transaction deletes its outbox rows right after inserting them
  (Debezium's recommended cleanup: the WAL keeps the inserts). The table then names no message:
  the truth's source is what the application committed, and a pipeline declares the outbox's own
  change topic (the run's ``...-in`` topic, creates only) as its source.

The ledger is read back as for every scenario, after the connector caught up.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from psycopg2 import sql

from recon_workload import connect, debezium, kafka_io, scenarios, sink
from recon_workload.errors import WorkloadError
from recon_workload.ledger import Produced
from recon_workload.messages import Message
from recon_workload.producers import plan
from recon_workload.runner import Outcome, Run

DEBEZIUM_DEFAULTS = {"worker_kill": 1.0, "pause": 1.0, "skipped": 0.0, "delete_rows": 0.0}
_TXN = 5  # rows per application transaction
_STREAM_SECONDS = 2.0  # how long the rows before and after the kill take to commit
_CATCH_UP_SECONDS = 120.0


def outbox_debezium(run: Run) -> Outcome:
    """The application commits its outbox rows; Debezium's EventRouter on the Connect worker
    publishes them; the worker is killed mid-stream and restarted (worker_kill: duplicates in
    the topic, one sink row each: the consumer dedupes), the connector is paused while rows keep
    coming (pause: held for a caller, then caught up: nothing unpublished), rows are committed
    while its slot is lost (skipped: unpublished), the rows are deleted right after insert
    (delete_rows: the source is the outbox's change topic, ...-in)."""
    names, rates = run.names, run.rates
    topic, changes = names.topic(), names.topic("in")
    connectors = debezium.connectors()
    run.progress.step(f"Debezium connectors {connectors.name}, {connectors.cdc}")
    debezium.ensure(connectors)
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    kafka_io.create_topics(run.conf, [changes], 1)
    outbox = names.outbox_table
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table, ("processed",))
        create_outbox(cur, outbox)
    debezium.capture(connectors, outbox)
    run.progress.step(f"topic {topic}; sink {names.qualified_table}; outbox public.{outbox}")

    messages = [m for m in plan(names.run_tag, run.messages, run.seed) if m.message_id]
    deleting = rates["delete_rows"] > 0
    writer = _Writer(outbox, topic, deleting)
    skipped = int(rates["skipped"])
    if skipped >= len(messages) // 2:
        raise WorkloadError(f"skipped={skipped}: leave at least half of {len(messages)} published")
    cut_a, cut_b = (len(messages) * 2) // 5, (len(messages) * 3) // 5
    streaming, paused = messages[:cut_a], messages[cut_a:cut_b]
    lost, rest = messages[cut_b : cut_b + skipped], messages[cut_b + skipped :]

    half = len(streaming) // 2
    writer.write(streaming[:half], _STREAM_SECONDS / 2)
    if rates["worker_kill"] > 0:
        _wait_for(run, topic, run.partitions, {m.message_id for m in streaming[:1]}, "first")
        # The rows keep coming while the worker dies and starts again.
        rows = threading.Thread(target=writer.write, args=(streaming[half:], _STREAM_SECONDS))
        rows.start()
        try:
            down = connect.kill_and_restart()
        finally:
            rows.join()
        for name in (connectors.name, connectors.cdc):
            connect.wait_running(name)
        run.faults["worker_kill_seconds"] = round(down, 1)
        run.progress.step(
            f"Connect worker killed and back in {run.faults['worker_kill_seconds']} s"
        )
    else:
        writer.write(streaming[half:], _STREAM_SECONDS / 2)
    if rates["pause"] > 0:
        debezium.pause(connectors.name)
        writer.write(paused)
        run.progress.step(f"connector paused; {len(paused)} rows committed meanwhile")
        if run.hold is not None and not run.hold.hold():
            raise WorkloadError("the caller did not release the hold in time")
        debezium.resume(connectors.name)
    else:
        writer.write(paused)
    if lost:
        # Everything before them published first: only these rows fall in the lost slot's gap.
        _wait_for(run, topic, run.partitions, writer.ids(), "published so far")
        debezium.stop(connectors.name)
        writer.write(lost)
        debezium.lose_slot(connectors.name)
        debezium.resume(connectors.name)
        run.progress.step(f"slot lost: {len(lost)} rows committed meanwhile, never published")
    run.faults["skipped_ids"] = [m.message_id for m in lost]
    writer.write(rest)
    published = set(writer.ids()) - {m.message_id for m in lost}
    _wait_for(run, topic, run.partitions, published, "all but the skipped")
    _wait_for(run, changes, 1, set(writer.ids()), "every committed row", change_topic=True)
    run.faults["outbox_rows_deleted"] = deleting
    run.faults["change_topic"] = changes

    _consume(run, topic)
    produced = [Produced(m.seq, m.message_id, None) for m in writer.written]
    source = names.qualified_outbox_table
    return Outcome(
        topic, [topic, changes], names.group(), produced, source_table=source,
        source_ids=writer.ids() if deleting else None,
    )  # fmt: skip


def create_outbox(cur: object, table: str) -> None:
    """(Re)create an outbox table with Debezium's outbox columns (the event id is
    ``message_id``, unique) and the row's write time."""
    ident = sql.Identifier("public", table)
    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ident))  # type: ignore[attr-defined]
    cur.execute(  # type: ignore[attr-defined]
        sql.SQL(
            "CREATE TABLE {} (seq bigserial PRIMARY KEY, message_id text NOT NULL UNIQUE,"
            " aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL,"
            " payload text, created_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        ).format(ident)
    )


class _Writer:
    """The application: commits outbox rows a few per transaction, each row's payload the
    planned record's value; with ``deleting``, deletes them again before each commit."""

    def __init__(self, table: str, topic: str, deleting: bool) -> None:
        self.table, self.topic, self.deleting = table, topic, deleting
        self.written: list[Message] = []

    def ids(self) -> list[str]:
        return [str(m.message_id) for m in self.written]

    def write(self, messages: Sequence[Message], seconds: float = 0.0) -> None:
        """Commit ``messages`` in order, spread over about ``seconds``."""
        batches = [messages[i : i + _TXN] for i in range(0, len(messages), _TXN)]
        pause = seconds / len(batches) if batches else 0.0
        ident = sql.Identifier("public", self.table)
        for batch in batches:
            with sink.transaction() as cur:
                for m in batch:
                    cur.execute(
                        sql.SQL(
                            "INSERT INTO {} (message_id, aggregatetype, aggregateid, type,"
                            " payload) VALUES (%s, %s, %s, 'workload.message', %s)"
                        ).format(ident),
                        (m.message_id, self.topic, m.message_id, (m.value or b"").decode()),
                    )
                if self.deleting:
                    cur.execute(
                        sql.SQL("DELETE FROM {} WHERE message_id = ANY(%s)").format(ident),
                        ([m.message_id for m in batch],),
                    )
            self.written.extend(batch)
            time.sleep(pause)


def change_event_id(value: bytes | None) -> str | None:
    """The messageId of a change event of the outbox (``after.message_id``), if it has one."""
    try:
        doc = json.loads(value or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    after = doc.get("after") if isinstance(doc, dict) else None
    mid = after.get("message_id") if isinstance(after, dict) else None
    return mid if isinstance(mid, str) else None


def _wait_for(
    run: Run, topic: str, partitions: int, ids: set[str] | list[str], what: str,
    change_topic: bool = False,
) -> None:  # fmt: skip
    """Wait until ``topic``'s committed records carry every id of ``ids``.

    :raises WorkloadError: when they do not within two minutes.
    """
    wanted = set(ids)
    deadline = time.monotonic() + _CATCH_UP_SECONDS
    while True:
        records = kafka_io.scan_topic(run.conf, topic, partitions, "read_committed")
        found = {change_event_id(r.value) if change_topic else r.message_id for r in records}
        missing = wanted - found
        if not missing:
            return
        if time.monotonic() > deadline:
            raise WorkloadError(
                f"{topic}: {len(missing)} of {len(wanted)} ids ({what}) not published within "
                f"{_CATCH_UP_SECONDS:.0f} s, e.g. {sorted(missing)[0]!r}"
            )
        time.sleep(0.5)


def _consume(run: Run, topic: str) -> None:
    """The sink consumer: skips messageIds it has written (in the row's transaction), as an
    outbox's consumer does against the relay's re-sends; never killed."""
    scenarios._consume(run, "idempotent", topic, 0.0)
