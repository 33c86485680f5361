"""The services a run talks to, by connection id: the results database and a pipeline's sink;
and where runs keep their files. Shared by every engine and step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from recon import settings
from recon.config import PipelineConfig
from recon.connections import postgres_connection

Progress = Callable[[str], None]

#: Connection id of the results database (schema ``recon``); override with RECON_RESULTS_CONN_ID.
DEFAULT_RESULTS_CONN_ID = settings.DEFAULT_RESULTS_CONN_ID


def results_conn_id() -> str:
    """The results database's connection id (:func:`recon.settings.results_conn_id`)."""
    return settings.results_conn_id()


def default_data_dir() -> str:
    """Where runs keep their files (:func:`recon.settings.data_dir`)."""
    return settings.data_dir()


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
