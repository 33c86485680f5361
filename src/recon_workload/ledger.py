"""The ground-truth ledger: what actually happened to every message, in the product's vocabulary.

Built from what is read back after the run (the topic read ``read_committed`` and
``read_uncommitted`` from the beginning, the sink table, the group's committed offsets), never from
what the scenario planned, then stored in ``workload.ledger`` (one row per message) and
``workload.runs`` (one row per run).

Expected verdict rules (per messageId):

- no usable id -> ``invalid`` (keyed by its position);
- a committed position below the group's committed offset -> ``delivered`` (1 sink row),
  ``lost`` (0) or ``duplicated`` (>1); in a run designed around a latency bound (the slow
  consumer), a delivered message whose measured latency exceeds the bound is ``late`` instead
  (see :mod:`recon_workload.latency`), and every delivered one keeps its ``latency_seconds``;
  in a run that compares payloads (the mangling consumer), a delivered message whose sink row
  holds other content than its record is ``mismatched`` instead (see
  :mod:`recon_workload.payload`), and every delivered or duplicated one keeps its
  ``payload_diff``;
  in a run over an upsert sink (the upsert consumer), the verdicts of the committed messages
  are judged per key instead (see :mod:`recon_workload.order`): the newest record of a key
  whose row holds an older one is ``out_of_order``, a record overwritten by a later one
  ``delivered``;
- committed, but only at or past the committed offset -> ``pending``;
- not committed, yet in the sink -> ``aborted_read`` if an aborted record carries the id, else
  ``phantom``;
- not committed any more, yet in the sink, on a compacted topic where the producer placed it
  (acknowledged at a known position) -> ``unverifiable``: the log cleaner removed it (an older
  version of its key) and nothing left in the topic can prove or refute the sink row;
- neither committed nor in the sink, yet in the run's source (a row of the outbox table the
  outbox scenarios' relay publishes from) -> ``unpublished``: the source says it was produced,
  the topic never got it;
- neither committed nor in the sink, and in no source -> no verdict (``NULL``): the product can
  never see it. This is where a producer's silent loss (``acks=0`` during a broker bounce) or an
  aborted message that no consumer read ends up; ``detail`` says which.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.messages import invalid_reason
from recon_workload.sink import SinkRow

VERDICTS = (
    "delivered",
    "late",  # delivered, over the run's latency bound (only runs designed around one)
    "mismatched",  # delivered, its row's content not its record's (only runs comparing payloads)
    "out_of_order",  # a key's newest record, its upsert row holding an older one (upsert sinks)
    "lost",
    "unpublished",  # in the run's source (outbox), never committed in the topic nor in the sink
    "duplicated",
    "phantom",
    "aborted_read",
    "pending",
    "invalid",
    "unverifiable",  # a sink row whose record the log cleaner removed (compacted topics)
    "diverted",  # lost, found in the run's dead-letter or retry topic (diverting consumers)
    "excluded",  # not of the type the run's sink holds (the fan-out consumer)
)


@dataclass(frozen=True)
class Produced:
    """A record the scenario asked a producer to send, and what the producer heard back.

    :param acked: the producer saw it acknowledged (for a transactional producer: and its
        transaction committed); ``None`` when no report came.
    :param position: where the delivery report placed it, when the report said.
    """

    seq: int
    message_id: str | None
    acked: bool | None
    kind: str = "good"
    position: Position | None = None


@dataclass
class LedgerRow:
    ledger_key: str
    message_id: str | None
    acked: bool | None
    positions: list[Position] = field(default_factory=list)
    aborted_positions: list[Position] = field(default_factory=list)
    sink_rows: int = 0
    topic_duplicate: bool = False
    expected_verdict: str | None = None
    detail: str | None = None
    # sink row time minus Kafka timestamp; only in runs designed around a latency bound
    latency_seconds: float | None = None
    # how its sink rows differ from its record (PayloadDiff.as_json); only in runs comparing
    # payloads, and only for messages delivered or duplicated
    payload_diff: dict[str, Any] | None = None


def _pos_key(pos: Position) -> str:
    return f"{pos.topic}:{pos.partition}:{pos.offset}"


def _verdict(
    positions: Sequence[Position],
    aborted: Sequence[Position],
    sink_rows: int,
    committed: Mapping[int, int | None],
) -> str | None:
    if positions:
        claimed = any(p.offset < (committed.get(p.partition) or 0) for p in positions)
        if not claimed:
            return "pending"
        return "lost" if sink_rows == 0 else "delivered" if sink_rows == 1 else "duplicated"
    if sink_rows:
        return "aborted_read" if aborted else "phantom"
    return None


def build(
    produced: Iterable[Produced],
    committed_records: Sequence[ReadRecord],
    uncommitted_records: Sequence[ReadRecord],
    sink_rows: Sequence[SinkRow],
    committed_offsets: Mapping[int, int | None],
    outbox_ids: Collection[str] | None = None,
    compacted: bool = False,
) -> list[LedgerRow]:
    """One ledger row per message (and per id-less record), from what was read back.

    :param produced: every record the scenario produced, for ``acked`` and for messages that
        never reached the topic.
    :param committed_records: the topic read ``read_committed``.
    :param uncommitted_records: the topic read ``read_uncommitted``.
    :param committed_offsets: the sink consumer group's committed offset per partition.
    :param outbox_ids: the messageIds of the run's source rows (its outbox table), in a run that
        has one (``None``: no source, nothing is ``unpublished``).
    :param compacted: the topic's ``cleanup.policy`` is ``compact``: an acknowledged record
        missing from it was removed by the log cleaner.
    """
    produced = list(produced)
    committed_set = {r.position for r in committed_records}
    positions: dict[str, list[Position]] = defaultdict(list)
    aborted: dict[str, list[Position]] = defaultdict(list)
    idless: list[tuple[ReadRecord, bool]] = []  # (record, committed?)
    for rec in committed_records:
        if rec.message_id is None:
            idless.append((rec, True))
        else:
            positions[rec.message_id].append(rec.position)
    for rec in uncommitted_records:
        if rec.position in committed_set:
            continue
        if rec.message_id is None:
            idless.append((rec, False))
        else:
            aborted[rec.message_id].append(rec.position)
    sink_by_id = Counter(r.message_id for r in sink_rows if r.message_id is not None)
    sink_idless = Counter(
        Position(r.topic, r.partition, r.offset) for r in sink_rows if r.message_id is None
    )

    acked_by_id = {p.message_id: p.acked for p in produced if p.message_id is not None}
    acked_by_pos = {p.position: p.acked for p in produced if p.position is not None}
    source = set(outbox_ids or ())
    # Outbox ids last: a row the relay never sent has no other trace, and still is a message.
    ids = list(dict.fromkeys([*acked_by_id, *positions, *aborted, *sink_by_id, *sorted(source)]))
    rows = []
    for mid in ids:
        pos, abt, n = (
            sorted(positions[mid], key=_sort),
            sorted(aborted[mid], key=_sort),
            sink_by_id[mid],
        )
        verdict = _verdict(pos, abt, n, committed_offsets)
        detail = None
        if compacted and verdict == "phantom" and acked_by_id.get(mid):
            verdict, detail = "unverifiable", "compacted away after the consumer wrote it"
        elif compacted and verdict is None and acked_by_id.get(mid):
            detail = "compacted away before any consumer read it"
        if verdict is None and detail is None:
            detail = "aborted, never read" if abt else "never committed in the topic"
            if not abt and mid not in acked_by_id:
                detail = "in the outbox, never sent"
            if mid in source:
                verdict = "unpublished"
        rows.append(
            LedgerRow(mid, mid, acked_by_id.get(mid), pos, abt, n, len(pos) > 1, verdict, detail)
        )

    seen_idless: set[Position] = set()
    for rec, is_committed in idless:
        seen_idless.add(rec.position)
        rows.append(
            LedgerRow(
                ledger_key=_pos_key(rec.position),
                message_id=None,
                acked=acked_by_pos.get(rec.position),
                positions=[rec.position] if is_committed else [],
                aborted_positions=[] if is_committed else [rec.position],
                sink_rows=sink_idless[rec.position],
                expected_verdict="invalid",
                detail=invalid_reason(rec.value),
            )
        )
    for at, count in sink_idless.items():
        if at not in seen_idless:  # an id-less sink row pointing at no record we read
            rows.append(
                LedgerRow(f"sink:{_pos_key(at)}", None, None, [], [], count, False, "invalid")
            )
    for p in produced:
        placed = p.position in seen_idless or p.position in committed_set
        if p.message_id is None and not placed:
            rows.append(LedgerRow(f"unplaced:{p.kind}:{p.seq}", None, p.acked, detail=p.kind))
    return rows


def _sort(p: Position) -> tuple[str, int, int]:
    return (p.topic, p.partition, p.offset)


@dataclass(frozen=True)
class Summary:
    produced: int
    committed_in_topic: int
    sink_rows: int
    counts: dict[str, int]
    topic_duplicates: int
    unseen: int
    late_bound: float | None = None  # the latency bound ``late`` is judged by, if the run has one
    payload_fields: tuple[str, ...] | None = None  # the JSON fields ``mismatched`` compares, if any
    # the upsert sink's key and position columns ``out_of_order`` is judged by, if any
    order_columns: tuple[str, str] | None = None
    source_table: str | None = None  # the outbox ``unpublished`` is judged by, if the run has one
    compacted: bool = False  # a compacted topic: ``unverifiable`` is judged

    def line(self, scenario_run: str) -> str:
        # ``late`` only where a bound was declared, ``mismatched`` only where payloads were
        # compared, ``out_of_order`` only over an upsert sink, ``unpublished`` only where a source
        # was read: elsewhere late=0, mismatched=0, ... would claim a judgement.
        hidden = {"late"} if self.late_bound is None else set()
        hidden |= {"mismatched"} if self.payload_fields is None else set()
        hidden |= {"out_of_order"} if self.order_columns is None else set()
        hidden |= {"unpublished"} if self.source_table is None else set()
        hidden |= set() if self.compacted else {"unverifiable"}
        # only in the runs that have them (their consumers divert or filter by design)
        hidden |= {v for v in ("diverted", "excluded") if not self.counts[v]}
        verdicts = " ".join(f"{v}={self.counts[v]}" for v in VERDICTS if v not in hidden)
        if self.late_bound is not None:
            verdicts += f" (late: over {self.late_bound:g} s)"
        if self.payload_fields is not None:
            verdicts += f" (mismatched: in {', '.join(self.payload_fields)} or the value's hash)"
        if self.order_columns is not None:
            key, position = self.order_columns
            verdicts += f" (out_of_order: a row per {key} holding an older {position})"
        if self.source_table is not None:
            verdicts += f" (unpublished: in {self.source_table}, never in the topic)"
        return (
            f"{scenario_run}: produced={self.produced} committed_in_topic="
            f"{self.committed_in_topic} sink_rows={self.sink_rows} | {verdicts} | "
            f"topic_duplicate={self.topic_duplicates} unseen_by_product={self.unseen}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "produced": self.produced,
            "committed_in_topic": self.committed_in_topic,
            "sink_rows": self.sink_rows,
            "counts": self.counts,
            "topic_duplicates": self.topic_duplicates,
            "unseen_by_product": self.unseen,
            "late_bound_seconds": self.late_bound,
            "payload_fields": None if self.payload_fields is None else list(self.payload_fields),
            "order_columns": None if self.order_columns is None else list(self.order_columns),
            "source_table": self.source_table,
            "compacted": self.compacted,
        }


def summarize(
    rows: Sequence[LedgerRow],
    produced: int,
    committed_in_topic: int,
    sink_rows: int,
    late_bound: float | None = None,
    payload_fields: Sequence[str] | None = None,
    order_columns: tuple[str, str] | None = None,
    source_table: str | None = None,
    compacted: bool = False,
) -> Summary:
    """Counts per expected verdict plus the run's totals.

    :param late_bound: the latency bound the run's ``late`` verdicts were judged by, if any.
    :param payload_fields: the JSON fields the run's ``mismatched`` verdicts compared (beside
        the value's hash), if any.
    :param order_columns: the upsert sink's key and position columns the run's
        ``out_of_order`` verdicts were judged by, if any.
    :param source_table: the outbox table the run's ``unpublished`` was judged by, if any.
    :param compacted: the run's topic is compacted (its ``unverifiable`` verdicts count).
    """
    counts = {v: 0 for v in VERDICTS}
    for r in rows:
        if r.expected_verdict is not None:
            counts[r.expected_verdict] += 1
    return Summary(
        produced,
        committed_in_topic,
        sink_rows,
        counts,
        sum(r.topic_duplicate for r in rows),
        sum(r.expected_verdict is None for r in rows),
        late_bound,
        None if payload_fields is None else tuple(payload_fields),
        order_columns,
        source_table,
        compacted,
    )
