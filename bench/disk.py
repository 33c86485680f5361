"""The free space a bench needs, checked before it writes: a dataset that fills the disk stops the
bench half-way with PostgreSQL's or Kafka's "No space left on device" and leaves a half-written
topic and table behind (2026-11-30: 43 minutes in, generating P3's 30M rows, on a disk that
PostgreSQL clusters of deleted checkouts had filled).

What a generated message takes, measured on a 10M dataset (2026-11-30): Kafka's log 37 bytes
(the generator's lz4 batches); the sink table with its indexes 196 bytes; each product run over
it about 55 bytes of files (its window, results and ledger entries); the ledger 19 bytes an
entry. The constants below round those up and leave room for PostgreSQL's WAL while it copies.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

KAFKA_BYTES = 50
SINK_BYTES = 300
#: The files of the runs over one message that a bench keeps at once (a few runs per window).
RUN_BYTES = 200
LEDGER_BYTES = 25
#: Left free on every file system the bench writes to, beyond its estimate.
HEADROOM = 2 * 2**30

#: What frees space a bench's machine often lacks, named in the error.
HINT = (
    "Free space there first: `scripts/clean.sh --orphan-clusters` removes the PostgreSQL "
    "clusters of checkouts that are gone (a whole bench leaves about 13 GB in one); a checkout "
    "you no longer need holds its topics in its `.state/kafka`."
)


@dataclass
class Needs:
    """Bytes a bench will write, by the folder they go to."""

    bytes_by_path: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: What the estimate covers, for the error (e.g. ``"P3: 30,000,000 messages"``).
    parts: list[str] = field(default_factory=list)

    def messages(self, count: int, what: str) -> None:
        """``count`` generated messages: their records, sink rows and runs' files."""
        if count <= 0:
            return
        self.bytes_by_path[kafka_dir()] += count * KAFKA_BYTES
        self.bytes_by_path[sink_dir()] += count * SINK_BYTES
        self.bytes_by_path[data_dir()] += count * RUN_BYTES
        self.parts.append(f"{what}: {count:,} messages")

    def outbox(self, count: int, what: str) -> None:
        """An outbox table of ``count`` ids made from a dataset's sink (P7)."""
        self.bytes_by_path[sink_dir()] += count * SINK_BYTES
        self.parts.append(f"{what}: an outbox of {count:,} rows")

    def ledger(self, entries: int, directory: str, what: str) -> None:
        if entries <= 0:
            return
        self.bytes_by_path[directory] += entries * LEDGER_BYTES
        self.parts.append(f"{what}: {entries:,} ledger entries")


def kafka_dir() -> str:
    return os.path.join(os.environ["RECON_STATE"], "kafka", "data")


def sink_dir() -> str:
    """The PostgreSQL cluster's folder (``.state/pg`` links to it, under ``RECON_PG_HOME``)."""
    return os.path.realpath(os.path.join(os.environ["RECON_STATE"], "pg"))


def data_dir() -> str:
    from recon import settings

    return settings.data_dir()


def require(needs: Needs) -> None:
    """Stop the bench, before it writes anything, if a file system lacks the room ``needs``
    estimates plus :data:`HEADROOM`.

    :raises SystemExit: naming the file system, the bytes needed and free, and what they are for.
    """
    by_device: dict[int, tuple[str, int]] = {}
    for path, count in needs.bytes_by_path.items():
        existing = _existing(path)
        device = os.stat(existing).st_dev
        where, total = by_device.get(device, (existing, 0))
        by_device[device] = (where, total + count)
    short = []
    for where, count in by_device.values():
        stat = os.statvfs(where)
        free = stat.f_bavail * stat.f_frsize
        if free < count + HEADROOM:
            short.append(
                f"{where}: about {_gb(count + HEADROOM)} needed ({_gb(count)} of data and "
                f"{_gb(HEADROOM)} to spare), {_gb(free)} free"
            )
    if short:
        what, where = "; ".join(needs.parts), "; ".join(short)
        raise SystemExit(f"bench: not enough free disk for {what}. {where}. {HINT}")


def _existing(path: str) -> str:
    """``path`` or its nearest existing parent (the folder may not be made yet)."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def _gb(count: int) -> str:
    return f"{count / 2**30:.1f} GB"
