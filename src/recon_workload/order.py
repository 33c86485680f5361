"""Ground truth for an upsert sink's order: which accounts' rows a late retry left stale, and so
which messages are ``out_of_order``.

The scenario's topic is keyed: each message's Kafka record key is an account id, several
messages per account, so an account's records share a partition and their offsets order them.
Its sink keeps one row per account (:mod:`recon_workload.upsert_sink`), naming the record it was
last written from. Per account K, over the committed records (the run's window):

- newest(K) is the largest offset among K's records, held(K) the ``applied_offset`` of K's row;
- the record at newest(K) is ``out_of_order`` when held(K) < newest(K) (a stale overwrite);
- every other record of K is ``delivered`` while K has a row: the one the row names, and the
  ones a later record overwrote (``superseded``), as upserts do;
- an account without a row: its records are ``lost``.

As in :mod:`recon_workload.payload`, the truth is measured from what was read back (the records'
keys and values from the topic, the rows from the sink); the plan (which accounts the consumer
replayed an older record for) only serves to check the run kept its word.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from recon_workload.errors import WorkloadError
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.ledger import LedgerRow
from recon_workload.messages import HEADER, Message
from recon_workload.payload import pick
from recon_workload.upsert_sink import KEY_COLUMN, POSITION_COLUMN, UpsertRow

#: The header that holds a keyed message's account (its Kafka key) as well.
ACCOUNT_HEADER = "account"

#: The ledger verdicts of committed messages (below the group's committed offset): the window
#: the order truth is judged over. ``ledger.build`` gives an upsert sink's overwritten messages
#: ``lost`` (no row of their own); the truth here decides.
WINDOW = ("delivered", "lost", "duplicated")


def account_name(run_tag: str, index: int) -> str:
    """The account id (the Kafka key) of account ``index`` of a run."""
    return f"{run_tag}-acct{index:04d}"


def plan_keyed(run_tag: str, count: int, per_account: int, seed: int) -> list[Message]:
    """The messages of a keyed run: ``count`` JSON messages (``id``, ``account``, ``seq``,
    ``payload``), spread round robin over ``count // per_account`` accounts, so each account
    gets ``per_account`` (or one more) updates interleaved with the others'.

    The messageId is in the ``message_id`` header and the value's ``id``; the Kafka key is the
    account (a key's records then share a partition, in production order), which the header
    ``account`` holds too (for a pipeline that reads the upsert key from a header).

    :param per_account: at least 2 (a stale overwrite needs an older record to replay).
    :raises WorkloadError: when the messages do not make two accounts of ``per_account``.
    """
    if per_account < 2:
        raise WorkloadError(f"messages_per_account={per_account}: use 2 or more")
    accounts = count // per_account
    if accounts < 2:
        raise WorkloadError(
            f"{count} messages make {accounts} account(s) of {per_account}: need at least two"
        )
    rng = random.Random(seed)
    out = []
    for seq in range(count):
        mid, account = f"{run_tag}-{seq:06d}", account_name(run_tag, seq % accounts)
        payload = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=32))
        value = json.dumps({"id": mid, "account": account, "seq": seq, "payload": payload})
        headers: list[tuple[str, str | bytes | None]] = [
            (HEADER, mid.encode()), (ACCOUNT_HEADER, account.encode())
        ]  # fmt: skip
        out.append(Message(seq, mid, account.encode(), value.encode(), headers))
    return out


def pick_stale(messages: Sequence[Message], fraction: float, seed: int) -> dict[str, str]:
    """The accounts whose row the consumer leaves stale, each with the older record of theirs
    it replays after their newest: a seeded sample of ``fraction`` of the accounts, at least one
    and never all, and at least two accounts left clean; each replayed record drawn from the
    account's records before its last.

    :returns: account -> messageId of the record to replay, in account order.
    :raises WorkloadError: for a fraction outside (0, 1), or too few accounts for both kinds.
    """
    if not 0 < fraction < 1:
        raise WorkloadError(f"stale_fraction={fraction}: use a value between 0 and 1")
    by_account: dict[str, list[str]] = defaultdict(list)
    for m in messages:
        if m.key is not None and m.message_id is not None:
            by_account[m.key.decode()].append(m.message_id)
    accounts = sorted(by_account)
    stale = pick(accounts, fraction, seed, 19) if len(accounts) > 1 else []
    if not stale or len(accounts) - len(stale) < 2:
        raise WorkloadError(
            f"{len(accounts)} accounts with stale_fraction={fraction:g} leave {len(stale)} stale"
            f" and {len(accounts) - len(stale)} clean: need at least one and two"
        )
    rng = random.Random(seed * 1000 + 23)  # its own stream, like payload.pick's
    out = {}
    for account in stale:
        older = by_account[account][:-1]
        if not older:
            raise WorkloadError(f"account {account} has one message: nothing older to replay")
        out[account] = rng.choice(older)
    return out


@dataclass(frozen=True)
class OrderPlan:
    """What a scenario promises about its upsert sink, handed to the runner with its outcome.

    :param replayed: per stale account, the messageId of the older record the consumer wrote
        again after the account's newest (the row ends holding it).
    :param key_column: the sink column with the key (``order.key_column``).
    :param position_column: the sink column with the row's record offset
        (``order.position_column``).
    """

    replayed: Mapping[str, str]
    key_column: str = KEY_COLUMN
    position_column: str = POSITION_COLUMN


@dataclass(frozen=True)
class KeyTruth:
    """One key's committed records and its sink row.

    :param records: (offset, messageId) of every committed record of the key, by offset.
    :param partitions: the partitions those records are in (one, for a keyed topic).
    :param held: the position (``applied_offset``) the key's row holds; ``None``: no row.
    :param held_id: the messageId the key's row holds.
    """

    key: str
    records: tuple[tuple[int, str], ...]
    partitions: frozenset[int]
    held: int | None = None
    held_id: str | None = None

    @property
    def newest(self) -> int:
        return self.records[-1][0]

    @property
    def newest_id(self) -> str:
        return self.records[-1][1]

    @property
    def stale(self) -> bool:
        """The row holds an older record than the key's newest."""
        return self.held is not None and self.held < self.newest

    def as_json(self) -> dict[str, object]:
        return {
            "newest": self.newest,
            "newest_id": self.newest_id,
            "held": self.held,
            "held_id": self.held_id,
        }


@dataclass
class OrderTruth:
    """Every key of the window, and which key each windowed message belongs to.

    :param key_of: messageId -> its key.
    :param off_key: positions whose record's Kafka key is not its value's ``account``.
    """

    keys: dict[str, KeyTruth]
    key_of: dict[str, str]
    off_key: list[Position] = field(default_factory=list)

    @property
    def stale(self) -> dict[str, KeyTruth]:
        return {k: t for k, t in sorted(self.keys.items()) if t.stale}


def _account(value: bytes | None) -> str | None:
    try:
        doc = json.loads(value.decode("utf-8")) if value else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    account = doc.get("account") if isinstance(doc, dict) else None
    return account if isinstance(account, str) else None


def measure(
    entries: Sequence[LedgerRow],
    records: Sequence[ReadRecord],
    keys: Mapping[Position, str | None],
    rows: Sequence[UpsertRow],
) -> OrderTruth:
    """Per key, its windowed records (those of messages :data:`WINDOW` holds) and its row.

    :param records: the topic read ``read_committed`` (values: each one's ``account``).
    :param keys: the Kafka record key (decoded) per position.
    :raises WorkloadError: for a windowed record without a key (the order cannot be judged).
    """
    values = {r.position: r.value for r in records}
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    partitions: dict[str, set[int]] = defaultdict(set)
    key_of: dict[str, str] = {}
    off_key: list[Position] = []
    for e in entries:
        if e.expected_verdict not in WINDOW or e.message_id is None:
            continue
        for p in e.positions:
            key = keys.get(p)
            if key is None:
                raise WorkloadError(f"{e.message_id}: the record at {p} has no key")
            if _account(values.get(p)) != key:
                off_key.append(p)
            found[key].append((p.offset, e.message_id))
            partitions[key].add(p.partition)
            key_of[e.message_id] = key
    by_account = {r.account: r for r in rows}
    truths = {}
    for key, recs in found.items():
        row = by_account.get(key)
        truths[key] = KeyTruth(
            key,
            tuple(sorted(recs)),
            frozenset(partitions[key]),
            None if row is None else row.applied_offset,
            None if row is None else row.message_id,
        )
    return OrderTruth(truths, key_of, off_key)


def check_plan(entries: Sequence[LedgerRow], truth: OrderTruth, plan: OrderPlan) -> None:
    """Raise unless the run kept the scenario's promise: every message committed and claimed
    once, each record keyed by its value's account, each account in one partition with one row
    naming one of its records; the replayed accounts' rows holding the replayed (older) record,
    every other account's its newest; at least one stale account and two clean ones.

    :raises WorkloadError: naming what went wrong, so no truth the scenario did not mean is
        ever stored.
    """
    problems: list[str] = []

    def report(what: str, items: set[str] | list[str]) -> None:
        if items:
            problems.append(f"{what}: {sorted(items)[:5]}")

    report("not committed and claimed", {e.ledger_key for e in entries
                                          if e.expected_verdict not in WINDOW})  # fmt: skip
    report("in the topic twice", {e.ledger_key for e in entries if e.topic_duplicate})
    report("keyed by another account than its value's", [str(p) for p in truth.off_key])
    keys = truth.keys
    report("in several partitions", {k for k, t in keys.items() if len(t.partitions) > 1})
    report("without a sink row", {k for k, t in keys.items() if t.held is None})
    report(
        "a row naming no record of its key at its position",
        {k for k, t in keys.items() if t.held is not None and (t.held, t.held_id) not in t.records},
    )
    stale = set(truth.stale)
    report("stale, yet never replayed", stale - set(plan.replayed))
    report("replayed, yet not stale", set(plan.replayed) - stale)
    report(
        "stale, holding another record than the replayed one",
        {k for k in stale & set(plan.replayed) if keys[k].held_id != plan.replayed[k]},
    )
    clean = len(keys) - len(stale)
    if not problems and (not stale or clean < 2):
        problems.append(f"{len(stale)} stale and {clean} clean accounts: need 1 and 2 at least")
    if problems:
        raise WorkloadError("the upsert consumer missed its design: " + "; ".join(problems))


def detail(key: str, held: int, newest: int) -> str:
    """The ledger's detail of an ``out_of_order`` message: its key and both positions."""
    return f"key {key}: the sink row holds position {held}, the newest is {newest}"


def apply(entries: Sequence[LedgerRow], truth: OrderTruth) -> None:
    """Write the truth into the ledger rows of the window: the newest record of a stale key
    ``out_of_order``, every other record of a key with a row ``delivered`` (``superseded`` in
    its detail when the row names a later one), every record of a key without a row ``lost``."""
    for e in entries:
        key = truth.key_of.get(e.message_id) if e.message_id is not None else None
        if key is None or e.expected_verdict not in WINDOW:
            continue
        t = truth.keys[key]
        if t.held is None:
            e.expected_verdict, e.detail = "lost", f"key {key}: no sink row"
        elif t.stale and e.message_id == t.newest_id:
            e.expected_verdict, e.detail = "out_of_order", detail(key, t.held, t.newest)
        else:
            e.expected_verdict = "delivered"
            if e.message_id != t.held_id:
                e.detail = f"superseded: key {key} holds position {t.held}"
