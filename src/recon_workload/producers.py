"""The producer side of the scenarios: plain, lossy (acks=0 across a broker bounce), retrying
through the ack-dropping proxy, idempotent, and transactional with aborts."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaException, Producer

from recon_workload import broker
from recon_workload.errors import WorkloadError
from recon_workload.kafka_io import DeliveryTracker, quiet
from recon_workload.ledger import Produced
from recon_workload.messages import Message, bad_message, good_message
from recon_workload.progress import Progress

# A lost ack must time out fast for a small run to stay short: librdkafka bounds a ProduceRequest
# by socket.timeout.ms (request.timeout.ms is only the broker-side ack timeout).
RETRYING = {"acks": "all", "retries": 10, "socket.timeout.ms": 2000, "retry.backoff.ms": 100}
# One request in flight: a re-sent request after a lost ack is then always the newest, which the
# broker answers as a duplicate; with five, a timed-out older batch can come back behind newer
# ones and librdkafka fails fatally (OUT_OF_ORDER_SEQUENCE_NUMBER, "rewound sequence number").
IDEMPOTENT = {**RETRYING, "enable.idempotence": True, "max.in.flight": 1}
AT_LEAST_ONCE = {**RETRYING, "enable.idempotence": False, "max.in.flight": 5}
FIRE_AND_FORGET = {
    "acks": "0",
    "retries": 0,
    "enable.idempotence": False,
    # long enough for queued messages to outlive the bounce: only what hit the dying broker is lost
    "message.timeout.ms": 120_000,
}
#: The delivery timeout of what a fire-and-forget relay sends while the broker is stopped: it
#: passes before the broker is back, so those records are lost for sure.
AWAY_TIMEOUT_MS = 1_000


def plan(run_tag: str, count: int, seed: int, bad_kinds: Sequence[str] = ()) -> list[Message]:
    """The messages of a run: ``count`` good ones, with bad records at seeded places.

    :param bad_kinds: bad records to mix in (see :data:`recon_workload.messages.BAD_KINDS`).
    """
    rng = random.Random(seed)
    messages = [good_message(run_tag, seq, rng) for seq in range(count)]
    for j, kind in enumerate(bad_kinds):
        # sequence numbers after the good ones: every record keeps a unique one
        messages.insert(rng.randrange(len(messages) + 1), bad_message(kind, count + j))
    return messages


def _send(
    producer: Producer,
    topic: str,
    messages: Sequence[Message],
    tracker: DeliveryTracker,
    pace: Callable[[int], None] | None = None,
) -> None:
    for i, m in enumerate(messages):
        while True:
            try:
                producer.produce(
                    topic,
                    key=m.key,
                    value=m.value,
                    headers=m.headers or None,
                    on_delivery=tracker.callback(m.seq),
                )
                break
            except BufferError:
                producer.poll(0.1)  # local queue full: let deliveries drain
        producer.poll(0)
        if pace:
            pace(i)


def _produced(messages: Sequence[Message], tracker: DeliveryTracker) -> list[Produced]:
    return [
        Produced(
            m.seq, m.message_id, tracker.acked.get(m.seq), m.kind, tracker.positions.get(m.seq)
        )
        for m in messages
    ]


def _flush(producer: Producer, timeout: float) -> None:
    left = producer.flush(timeout)
    if left:
        raise WorkloadError(f"{left} messages still undelivered after {timeout:.0f} s")


def connected_producer(conf: dict[str, Any], topic: str) -> Producer:
    """A producer that starts connecting now (metadata for ``topic``), so that by the time it
    sends, an idempotent one has its producer id: its first records then do not wait ~0.5 s in
    its queue with their timestamps already taken (which a latency measurement would count)."""
    producer = Producer(quiet({"linger.ms": 5, **conf}))
    producer.list_topics(topic, timeout=30)
    return producer


def send_all(
    conf: dict[str, Any],
    topic: str,
    messages: Sequence[Message],
    progress: Progress,
    pause_every: int = 0,
    producer: Producer | None = None,
) -> list[Produced]:
    """Produce ``messages`` with ``conf`` and wait for every delivery report.

    :param pause_every: sleep briefly after this many messages, so they travel as several
        produce requests (what the ack-dropping proxy needs to pick from); 0 never pauses.
    :param producer: send with this one (see :func:`connected_producer`); ``conf`` is then
        not used.
    """
    if producer is None:
        producer = Producer(quiet({"linger.ms": 5, **conf}))
    tracker = DeliveryTracker()

    def pace(i: int) -> None:
        if pause_every and (i + 1) % pause_every == 0:
            producer.poll(0.02)
        progress.tick(f"producing: {i + 1}/{len(messages)} sent")

    _send(producer, topic, messages, tracker, pace)
    _flush(producer, 60)
    return _produced(messages, tracker)


def send_across_bounce(
    conf: dict[str, Any], topic: str, messages: Sequence[Message], progress: Progress
) -> tuple[list[Produced], float]:
    """Fire-and-forget production while the broker is really stopped and started mid-stream.

    The first 40% go out before the bounce, the next 20% trickle out while the broker shuts
    down and is away (``acks=0``: whatever reaches a dying broker is gone, and the producer still
    counts it as sent), the rest after it is back. Whether a record reaches the dying broker
    depends on timing, so the last quarter of that 20% is sent while the broker is stopped, by a
    producer whose delivery timeout passes before it is back: those are lost in every run.

    :returns: the produced records and the bounce's duration in seconds.
    """
    producer = Producer(quiet({"linger.ms": 5, **conf, **FIRE_AND_FORGET}))
    tracker = DeliveryTracker()
    n = len(messages)
    first, middle, rest = (
        messages[: n * 2 // 5],
        messages[n * 2 // 5 : n * 3 // 5],
        messages[n * 3 // 5 :],
    )
    cut = len(middle) - max(1, len(middle) // 4)
    dying, away = middle[:cut], middle[cut:]
    _send(producer, topic, first, tracker)
    _flush(producer, 30)
    took: list[float] = []
    failure: list[BaseException] = []

    def send_while_down() -> None:
        gone = Producer(quiet({**conf, **FIRE_AND_FORGET, "message.timeout.ms": AWAY_TIMEOUT_MS}))
        _send(gone, topic, away, tracker)
        gone.flush(AWAY_TIMEOUT_MS / 1000 + 10)  # each one times out: no broker to take it

    def do_bounce() -> None:
        try:
            took.append(broker.bounce(while_down=send_while_down))
        except BaseException as exc:  # re-raised in the main thread below
            failure.append(exc)

    progress.step("bouncing the broker (kafka.sh stop; start)")
    bouncer = threading.Thread(target=do_bounce, name="bounce")
    bouncer.start()
    # Spread over the ~3 s the broker takes to stop, so some land on it while it goes down.
    _send(producer, topic, dying, tracker, lambda _i: time.sleep(0.075))
    bouncer.join()
    if failure:
        raise WorkloadError(f"broker bounce failed: {failure[0]}")
    progress.step(f"broker back after {took[0]:.1f} s; producing the rest")
    _send(producer, topic, rest, tracker)
    _flush(producer, 90)
    return _produced(messages, tracker), took[0]


def send_transactions(
    conf: dict[str, Any],
    topic: str,
    messages: Sequence[Message],
    transactional_id: str,
    txn_size: int,
    abort: Callable[[int], bool],
    progress: Progress,
) -> tuple[list[Produced], list[int]]:
    """Produce in transactions of ``txn_size`` messages, aborting those ``abort(i)`` picks.

    An aborted message is not sent again: it exists in the topic only as an aborted record.

    :returns: the produced records (``acked`` only if their transaction committed) and the
        indexes of the aborted transactions.
    """
    producer = Producer(quiet({**conf, "transactional.id": transactional_id, "linger.ms": 5}))
    producer.init_transactions(60)
    tracker = DeliveryTracker()
    aborted: list[int] = []
    aborted_seqs: set[int] = set()
    for t, start in enumerate(range(0, len(messages), txn_size)):
        chunk = messages[start : start + txn_size]
        producer.begin_transaction()
        _send(producer, topic, chunk, tracker)
        # Flushed before deciding, so the aborted records are really in the log.
        _flush(producer, 30)
        try:
            if abort(t):
                producer.abort_transaction(30)
                aborted.append(t)
                aborted_seqs.update(m.seq for m in chunk)
            else:
                producer.commit_transaction(30)
        except KafkaException as exc:
            raise WorkloadError(f"transaction {t} failed: {exc}") from exc
        progress.tick(f"producing: {start + len(chunk)}/{len(messages)} in {t + 1} transactions")
    out = _produced(messages, tracker)
    return [
        Produced(p.seq, p.message_id, False, p.kind, p.position) if p.seq in aborted_seqs else p
        for p in out
    ], aborted
