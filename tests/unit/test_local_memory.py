"""The local engine judges within its memory limit (``RECON_LOCAL_MEMORY_LIMIT``) by spilling to
its temp directory: a window whose join does not fit the limit still gets every verdict right,
and the same limit without a place to spill fails, so the spill is what carried it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.engines import duckdb_reconcile

from recon.engines.local_run import _connect
from recon.engines.plan import EngineSettings

pytestmark = pytest.mark.unit

MESSAGES = 1_000_000
LIMIT = "100MB"


def _write_window(directory: Path) -> None:
    """Every message once in the topic; the sink lost every 1000th (ids ending in 999 of each
    thousand) and holds every 500th twice (ids 0, 500, 1000, ...)."""
    con = duckdb.connect()
    con.execute(
        f"""COPY (
            SELECT 'orders' AS topic, CAST(i % 4 AS INTEGER) AS "partition",
                   CAST(i // 4 AS BIGINT) AS "offset", 'message-' || lpad(i::VARCHAR, 9, '0')
                   AS message_id, CAST(NULL AS VARCHAR) AS invalid_reason,
                   CAST(NULL AS TIMESTAMPTZ) AS "timestamp", CAST(NULL AS VARCHAR[]) AS payload,
                   CAST(NULL AS VARCHAR) AS order_key, CAST(NULL AS BIGINT) AS order_position
            FROM range({MESSAGES}) t(i)
        ) TO '{directory}/window.parquet' (FORMAT parquet)"""
    )
    con.execute(
        f"""COPY (
            SELECT 'k' || i::VARCHAR || '-' || copy::VARCHAR AS sink_key,
                   'message-' || lpad(i::VARCHAR, 9, '0') AS message_id,
                   CAST(NULL AS TIMESTAMPTZ) AS sink_time, CAST(NULL AS VARCHAR[]) AS payload,
                   CAST(NULL AS VARCHAR) AS order_key, CAST(NULL AS BIGINT) AS order_position
            FROM range({MESSAGES}) t(i), range(2) c(copy)
            WHERE i % 1000 <> 999 AND (copy = 0 OR i % 500 = 0)
        ) TO '{directory}/sink.parquet' (FORMAT parquet)"""
    )


def _judge(con: Any, directory: Path) -> dict[str, int]:
    con.execute(f"CREATE VIEW w AS SELECT * FROM read_parquet('{directory}/window.parquet')")
    con.execute(f"CREATE VIEW s AS SELECT * FROM read_parquet('{directory}/sink.parquet')")
    _, counts = duckdb_reconcile(con, window="w", sink_rows="s")
    return {verdict: n for verdict, n in counts.items() if n}


def test_a_window_larger_than_the_limit_is_judged_by_spilling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_window(tmp_path)
    monkeypatch.setenv("RECON_LOCAL_MEMORY_LIMIT", LIMIT)
    con = _connect(str(tmp_path / "data"), EngineSettings.read(spark=False).memory_limit)
    (limit,) = con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert limit.endswith("MiB")
    lost, duplicated = MESSAGES // 1000, MESSAGES // 500
    assert _judge(con, tmp_path) == {
        "delivered": MESSAGES - lost - duplicated,
        "lost": lost,
        "duplicated": duplicated,
    }
    # The same limit with nowhere to spill: the judging does not fit.
    unspilled = duckdb.connect(config={"memory_limit": LIMIT, "temp_directory": ""})
    with pytest.raises(duckdb.OutOfMemoryException):
        _judge(unspilled, tmp_path)
