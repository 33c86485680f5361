"""The services a run talks to, by connection id: the results database and a pipeline's sink;
and where runs keep their files. Shared by every engine and step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from recon.config import PipelineConfig
from recon.connections import postgres_connection

Progress = Callable[[str], None]

#: Connection id of the results database (schema ``recon``); override with RECON_RESULTS_CONN_ID.
DEFAULT_RESULTS_CONN_ID = "postgres_recon"


def results_conn_id() -> str:
    import os

    return os.environ.get("RECON_RESULTS_CONN_ID", DEFAULT_RESULTS_CONN_ID)


def default_data_dir() -> str:
    import os

    from recon.spark import _state_dir

    return os.environ.get("RECON_DATA_DIR") or os.path.join(_state_dir(), "data")


def noop(_: str) -> None:
    """A progress callback that prints nothing."""
    return None


@contextlib.contextmanager
def results_db() -> Iterator[Any]:
    import psycopg2

    conn = postgres_connection(results_conn_id())
    pg = psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())
    try:
        yield pg
    finally:
        pg.close()


@contextlib.contextmanager
def sink_db(cfg: PipelineConfig) -> Iterator[Any]:
    import psycopg2

    conn = postgres_connection(cfg.sink.connection)
    pg = psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())
    try:
        yield pg
    finally:
        pg.close()
