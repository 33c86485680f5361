"""One process at a time on a run id (issue 70, item 5), and database errors told apart by what
another try can change (issue 77, item 3), on the real PostgreSQL."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from typing import Any

import psycopg2
import pytest
from everyday_kit import (
    ENGINES,
    EXIT_ERROR,
    EXIT_OK,
    Setup,
    commit_group,
    no_traceback,
    produce,
    write_rows,
)

from recon.store.claims import RunInProgress, run_claim
from recon.store.commit import transient

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_id_in_progress_elsewhere_is_named_and_nothing_is_done_twice(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str]
) -> None:
    s = kit_setup(engine, "claimed")
    where = produce(kafka_config, s.topic, ["m0", "m1"])
    write_rows(s.pg_kwargs, s.table, ["m0", "m1"], where)
    commit_group(kafka_config, s.group, s.topic)
    # This process works on run "r1" (as a stuck Airflow try would); a second one starts it.
    with run_claim(s.name, "r1"):
        with run_claim(s.name, "r1"):  # re-entrant in the process that holds it
            pass
        second = s.cli("r1", timeout=300)
        assert second.returncode == EXIT_ERROR, second.stdout + second.stderr
        no_traceback(second, "the second process")
        message = second.stderr.strip().splitlines()[-1]
        assert f"run 'r1' of pipeline '{s.name}' is already in progress (since " in message
        assert f", {socket.gethostname()}/{os.getpid()})" in message
        assert "wait for it, or use another run id" in message
        assert s.run_row("r1") is None, "the second process recorded a snapshot"
    done = s.cli("r1", timeout=300)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert s.run_row("r1", "status")[0] == "passed"


def test_a_claim_dies_with_its_process(pg_kwargs: dict[str, Any]) -> None:
    """A killed process's connection ends, and with it the claim: nothing stays claimed."""
    import multiprocessing

    name = f"claim_{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("spawn")
    held, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold, args=(name, held, release))
    child.start()
    try:
        assert held.wait(60), "the child never claimed the run"
        with (
            pytest.raises(RunInProgress, match=f"/{child.pid}\\)"),
            run_claim(name, "r1"),
        ):
            pass
        child.kill()
        child.join(30)
        with run_claim(name, "r1"):
            pass
    finally:
        if child.is_alive():
            child.kill()
        from recon.run.steps import results_db
        from recon.store import forget_pipeline

        with results_db() as pg:
            forget_pipeline(pg, name)


def _hold(name: str, held: Any, release: Any) -> None:
    with run_claim(name, "r1"):
        held.set()
        release.wait(120)


def test_a_statement_the_server_refuses_for_its_data_is_not_retried(
    pg_kwargs: dict[str, Any],
) -> None:
    """A value over a btree entry's limit (SQLSTATE 54000, which psycopg2 raises as an
    OperationalError) fails every try; a connection the server ended may pass the next."""
    pg = psycopg2.connect(**pg_kwargs)
    try:
        with pg.cursor() as cur:
            cur.execute("CREATE TEMP TABLE long_ids (id text)")
            cur.execute("CREATE INDEX ON long_ids (id)")
            with pytest.raises(psycopg2.OperationalError) as refused:
                cur.execute("INSERT INTO long_ids VALUES (%s)", (os.urandom(4000).hex(),))
        assert refused.value.pgcode == "54000"
        assert not transient(refused.value)
    finally:
        pg.close()
    victim, killer = psycopg2.connect(**pg_kwargs), psycopg2.connect(**pg_kwargs)
    try:
        with killer, killer.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", (victim.get_backend_pid(),))
        with pytest.raises(psycopg2.OperationalError) as ended, victim.cursor() as cur:
            cur.execute("SELECT 1")
        assert transient(ended.value), (ended.value.pgcode, ended.value)
    finally:
        victim.close()
        killer.close()
