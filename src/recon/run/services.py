"""The services a run talks to, by connection id: the results database and a pipeline's sink;
and where runs keep their files. Shared by every engine and step."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from recon import settings
from recon.config import PipelineConfig
from recon.config.connections import postgres_connection

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
    with _postgres(results_conn_id()) as pg:
        yield pg


@contextlib.contextmanager
def sink_db(cfg: PipelineConfig) -> Iterator[Any]:
    with _postgres(cfg.sink.connection) as pg:
        yield pg


@contextlib.contextmanager
def source_db(cfg: PipelineConfig) -> Iterator[Any]:
    """The pipeline's source database (``source.connection``; it must declare a source)."""
    if cfg.source is None:
        raise ValueError(f"pipeline '{cfg.name}' declares no source")
    with _postgres(cfg.source.connection) as pg:
        yield pg


@contextlib.contextmanager
def _postgres(conn_id: str) -> Iterator[Any]:
    import psycopg2

    conn = postgres_connection(conn_id)
    pg = psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())
    try:
        yield pg
    finally:
        pg.close()
