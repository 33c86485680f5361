"""The product's DuckDB connections, made one way."""

from __future__ import annotations

from typing import Any


def connect(**config: Any) -> Any:
    """A new in-memory DuckDB connection with ``config``, its progress bar off: DuckDB draws it
    on stdout for any statement past two seconds, where ``recon run --json`` writes its summary
    (a segment of 60M entries sorted in a run drew one there)."""
    import duckdb

    con = duckdb.connect(config=config)
    con.execute("SET enable_progress_bar = false")  # a session option, not a config one
    return con
