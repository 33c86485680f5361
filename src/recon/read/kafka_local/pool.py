"""Readers over a window's offset ranges: :func:`read_ranges` starts them, their ``wait``
collects them.

Why processes: a consumer hands records to Python one object at a time, so one interpreter reads
at most about a million records a second; partitions are spread over one worker per core. Why
not always: a reader process is a fresh interpreter that pays its imports before its first
record (about 1.1 s here), so a small window (``IN_PROCESS_OFFSETS``) is read on a thread of the
calling process instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from recon import settings
from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.config.connections import KafkaConnection
from recon.config.diversions import FieldRef
from recon.errors import ServiceUnavailable
from recon.read.kafka_local.reader import KafkaReadFailed, read_task
from recon.read.kafka_local.task import ReadTask, expect_json, order_json, payload_json
from recon.read.ranges import OffsetRange
from recon.snapshot.offsets import KafkaAuthFailed

#: What a reader process runs: ``python -m READER_MODULE`` (``recon/read/kafka_local/__main__.py``).
READER_MODULE = "recon.read.kafka_local"

#: A window of at most this many offsets is read on a thread of the calling process. Measured
#: 2026-11-29 on the P5 topic (8 partitions): 10,000 records took 1.13 s in one reader process
#: and 0.17 s on a thread; 100,000 took 1.40 s in one process, 1.61 s in two, and 0.34 s on a
#: thread (0.79 s when the thread's process had not imported the reader yet). Past about 700,000
#: the two processes' second core pays for their start; this bound keeps well inside the gain.
IN_PROCESS_OFFSETS = 250_000


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


def offsets_in(ranges: Sequence[OffsetRange]) -> int:
    """How many offsets ``ranges`` span (an empty or inverted range spans none)."""
    return sum(max(0, r.end - r.start) for r in ranges)


def read_in_process(ranges: Sequence[OffsetRange]) -> bool:
    """Whether :func:`read_ranges` reads ``ranges`` on a thread (a small window)."""
    return offsets_in(ranges) <= IN_PROCESS_OFFSETS


def default_workers() -> int:
    """One reader per core (``RECON_LOCAL_READERS`` overrides)."""
    return settings.local_readers()


class ReaderLost(ServiceUnavailable):
    """A Kafka reader process died (killed, out of memory) before its ranges were written."""


class Read(Protocol):
    """A read at work: :meth:`wait` collects it, :meth:`stop` abandons it."""

    def wait(self) -> int:
        """The number of records written.

        :raises KafkaAuthFailed: the broker refused the connection's credentials.
        :raises KafkaReadFailed: the broker went away or stopped answering.
        :raises ReaderLost: a reader process died without saying why.
        """
        ...

    def stop(self) -> None:
        """End what is still reading (after another part failed, or on interruption)."""
        ...


def collect(read: Read, pipeline: str, kafka: KafkaConnection) -> int:
    """``read``'s record count; its failures name the pipeline and the connection it read with.

    :param pipeline: the pipeline's name.
    :param kafka: the connection the read used (its id, never its secrets, in the message).
    """
    try:
        return read.wait()
    except KafkaAuthFailed as exc:
        raise KafkaAuthFailed(kafka.failure(pipeline, exc)) from None
    except KafkaReadFailed as exc:
        raise KafkaReadFailed(kafka.failure(pipeline, exc)) from None
    except ReaderLost as exc:
        raise ReaderLost(f"pipeline '{pipeline}': {exc}") from None


class InProcessRead:
    """One reader on a thread of the calling process, over the whole (small) window."""

    def __init__(self, task: ReadTask) -> None:
        self._stop = threading.Event()
        self._records: list[int] = []
        self._failure: list[BaseException] = []
        # A daemon: a process told to end (an Airflow task killed) does not wait for the read.
        self._thread = threading.Thread(target=self._read, args=(task,), daemon=True,
                                        name="recon-kafka-read")  # fmt: skip
        self._thread.start()

    def _read(self, task: ReadTask) -> None:
        try:
            self._records.append(read_task(task, stop=self._stop))
        except BaseException as exc:  # re-raised by wait(), in the caller's thread
            self._failure.append(exc)

    def wait(self) -> int:
        self._thread.join()
        if self._failure:
            raise self._failure[0]
        return self._records[0]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


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
    in_process: bool | None = None,
    expect: tuple[FieldRef, ...] = (),
) -> Read:
    """Start reading ``ranges`` into ``directory`` (one Parquet file per reader).

    Reader processes are fresh interpreters (``python -m recon.read.kafka_local``), whatever
    process starts them (the CLI, an Airflow task, a test): librdkafka's threads do not survive a
    fork. The task, credentials included, goes to a reader on its standard input, never its
    command line. A small window is read on a thread instead (``IN_PROCESS_OFFSETS``); either
    way the files, the records in them and the errors raised are the same.

    :param config: the connection's librdkafka settings.
    :param ranges: ``[start, end)`` per partition; empty ranges are skipped.
    :param spec: where the id lives.
    :param directory: created if missing; holds ``part-<n>.parquet``.
    :param isolation_level: ``read_committed``, or ``read_uncommitted`` to find aborted records.
    :param workers: processes to use (default :func:`default_workers`).
    :param with_time: read each record's Kafka timestamp too (else it is left null).
    :param payload: what of each value the pipeline compares (else the column stays null).
    :param order: where each record's upsert key and position are (else they stay null).
    :param in_process: read on a thread (True) or in reader processes (False); None: by the
        window's size.
    :param expect: the fields the pipeline's ``expect`` reads (else the column stays null).
    """
    os.makedirs(directory, exist_ok=True)
    if in_process is None:
        in_process = read_in_process(ranges)
    if in_process:
        return InProcessRead(ReadTask(
            config=dict(config), ranges=tuple(r for r in ranges if r.end > r.start),
            isolation_level=isolation_level, spec=spec, path=f"{directory}/part-0.parquet",
            with_time=with_time, payload=payload, order=order, expect=expect,
        ))  # fmt: skip
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
            "expect": expect_json(expect),
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
