"""Reader processes over a window's offset ranges: :func:`read_ranges` starts them,
:meth:`Readers.wait` collects them.

Why processes: a consumer hands records to Python one object at a time, so one interpreter reads
at most about a million records a second; partitions are spread over one worker per core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recon import settings
from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.errors import ServiceUnavailable
from recon.read.kafka_local.reader import KafkaReadFailed
from recon.read.kafka_local.task import order_json, payload_json
from recon.read.ranges import OffsetRange
from recon.snapshot.offsets import KafkaAuthFailed

#: What a reader process runs: ``python -m READER_MODULE`` (``recon/read/kafka_local/__main__.py``).
READER_MODULE = "recon.read.kafka_local"


def spread(ranges: Sequence[OffsetRange], workers: int) -> list[list[OffsetRange]]:
    """Ranges spread over at most ``workers`` groups, largest first onto the lightest group."""
    wanted = sorted((r for r in ranges if r.end > r.start), key=lambda r: r.start - r.end)
    groups: list[list[OffsetRange]] = [[] for _ in range(max(1, min(workers, len(wanted))))]
    loads = [0] * len(groups)
    for r in wanted:
        lightest = loads.index(min(loads))
        groups[lightest].append(r)
        loads[lightest] += r.end - r.start
    return [g for g in groups if g]


def default_workers() -> int:
    """One reader per core (``RECON_LOCAL_READERS`` overrides)."""
    return settings.local_readers()


class ReaderLost(ServiceUnavailable):
    """A Kafka reader process died (killed, out of memory) before its ranges were written."""


@dataclass
class Readers:
    """Reader processes at work on one read; :meth:`wait` collects them."""

    procs: list[subprocess.Popen[bytes]]

    def wait(self) -> int:
        """The number of records written by all readers.

        :raises KafkaAuthFailed: the broker refused the connection's credentials.
        :raises KafkaReadFailed: the broker went away or stopped answering.
        :raises ReaderLost: a reader died without saying why.
        """
        total = 0
        try:
            for proc in self.procs:
                out, err = proc.communicate()
                if proc.returncode == 0:
                    total += int(json.loads(out)["records"])
                    continue
                raise _error_of(proc.returncode, err)
        finally:
            self.stop()
        return total

    def stop(self) -> None:
        """Kill what is still reading (after another reader failed, or on interruption)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


_ERRORS: dict[str, type[Exception]] = {
    "KafkaAuthFailed": KafkaAuthFailed,
    "KafkaReadFailed": KafkaReadFailed,
}


def _error_of(returncode: int, stderr: bytes) -> Exception:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    if lines:
        try:
            said = json.loads(lines[-1])
            return _ERRORS.get(said["error"], KafkaReadFailed)(said["message"])
        except (ValueError, KeyError, TypeError):
            pass
    how = f"signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    return ReaderLost(
        f"a Kafka reader process died ({how}) before its part of the window was written; "
        "nothing was kept: run it again with the same run id"
    )


def read_ranges(
    config: dict[str, Any],
    ranges: Sequence[OffsetRange],
    spec: MessageIdSpec,
    directory: str,
    *,
    isolation_level: str = "read_committed",
    workers: int | None = None,
    with_time: bool = False,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
) -> Readers:
    """Start reading ``ranges`` into ``directory`` (one Parquet file per reader process).

    Readers are fresh interpreters (``python -m recon.read.kafka_local``), whatever process
    starts them (the CLI, an Airflow task, a test): librdkafka's threads do not survive a fork.
    The task, credentials included, goes to a reader on its standard input, never its command
    line.

    :param config: the connection's librdkafka settings.
    :param ranges: ``[start, end)`` per partition; empty ranges are skipped.
    :param spec: where the id lives.
    :param directory: created if missing; holds ``part-<n>.parquet``.
    :param isolation_level: ``read_committed``, or ``read_uncommitted`` to find aborted records.
    :param workers: processes to use (default :func:`default_workers`).
    :param with_time: read each record's Kafka timestamp too (else it is left null).
    :param payload: what of each value the pipeline compares (else the column stays null).
    :param order: where each record's upsert key and position are (else they stay null).
    """
    os.makedirs(directory, exist_ok=True)
    groups = spread(ranges, workers or default_workers()) or [[]]
    procs = []
    for i, group in enumerate(groups):
        task = {
            "config": dict(config),
            "ranges": [[r.topic, r.partition, r.start, r.end] for r in group],
            "isolation_level": isolation_level,
            "spec": [spec.kind, spec.name],
            "path": f"{directory}/part-{i}.parquet",
            "with_time": with_time,
            "payload": payload_json(payload),
            "order": order_json(order),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", READER_MODULE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(task).encode())
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() has nothing more to send
        procs.append(proc)
    return Readers(procs)
