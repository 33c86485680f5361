"""One process at a time works on a run id: :func:`run_claim`.

Two processes on one run id (an Airflow retry overlapping a try that is stuck, a person
re-running what the scheduler runs) would read into one window folder and commit one run twice.
The claim is a session-level advisory lock in the results database, keyed by pipeline and run
id, held for as long as the process works on the run: PostgreSQL releases it when the process's
connection ends, so a killed process never leaves a run claimed. Beside it, ``recon.run_claims``
says who holds it (host, process, since when), for the error the other process reports.

Re-entrant in a process: ``recon run`` claims the run once and its steps find it claimed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

from recon.errors import ServiceUnavailable


class RunInProgress(ServiceUnavailable):
    """Another process works on the same run id of the pipeline; trying again once it has
    finished succeeds (its results are then reused or replaced)."""


_held: dict[tuple[str, str], int] = {}
_lock = threading.Lock()


def claim_key(pipeline: str, run_id: str) -> int:
    """The advisory lock's 64-bit key of a pipeline's run id (a digest: no two run ids of any
    pipelines share one in practice, and no other lock of the product uses this form)."""
    digest = hashlib.sha256(f"recon:run:{pipeline}\0{run_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextlib.contextmanager
def run_claim(pipeline: str, run_id: str) -> Iterator[None]:
    """Hold the run id for this process while the block runs.

    :raises RunInProgress: another process holds it, named with its host, process id and since
        when.
    """
    key = (pipeline, run_id)
    with _lock:
        if key in _held:
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _lock:
                _held[key] -= 1
        return
    with _claimed(pipeline, run_id):
        with _lock:
            _held[key] = 1
        try:
            yield
        finally:
            with _lock:
                del _held[key]


@contextlib.contextmanager
def _claimed(pipeline: str, run_id: str) -> Iterator[None]:
    from recon.run.services import results_db
    from recon.store.schema import ensure_schema

    with results_db() as pg:
        ensure_schema(pg)
        pg.autocommit = True
        with pg.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", (claim_key(pipeline, run_id),))
            if not cur.fetchone()[0]:
                raise RunInProgress(_in_progress(cur, pipeline, run_id))
            cur.execute(
                "INSERT INTO recon.run_claims (pipeline, run_id, host, pid, since) "
                "VALUES (%s, %s, %s, %s, now()) ON CONFLICT (pipeline, run_id) DO UPDATE SET "
                "host = EXCLUDED.host, pid = EXCLUDED.pid, since = EXCLUDED.since",
                (pipeline, run_id, socket.gethostname(), os.getpid()),
            )
        try:
            yield
        finally:
            # Closing the connection releases the lock too; the row stays, harmless: only the
            # lock says whether the run is claimed.
            with contextlib.suppress(Exception), pg.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s)", (claim_key(pipeline, run_id),))


def _in_progress(cur: Any, pipeline: str, run_id: str) -> str:
    cur.execute(
        "SELECT host, pid, since FROM recon.run_claims WHERE pipeline = %s AND run_id = %s",
        (pipeline, run_id),
    )
    row = cur.fetchone()
    who = f" (since {row[2]:%F %T %Z}, {row[0]}/{row[1]})" if row else ""
    return (
        f"run '{run_id}' of pipeline '{pipeline}' is already in progress{who}; wait for it, "
        "or use another run id"
    )
