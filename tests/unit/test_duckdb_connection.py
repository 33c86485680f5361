"""The product's DuckDB connections draw no progress bar: DuckDB draws it on stdout for any
statement past two seconds (a ledger segment sorted in a run), where ``recon run --json`` writes
its summary."""

from __future__ import annotations

import pytest

from recon.engines.duckdb_connection import connect

pytestmark = pytest.mark.unit


def test_a_connection_and_its_cursors_draw_no_progress_bar() -> None:
    con = connect(threads=1)
    for each in (con, con.cursor()):
        assert each.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    assert con.execute("SELECT current_setting('threads')").fetchone() == (1,)
