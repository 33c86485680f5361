"""The rules run by DuckDB: inputs are views over the run's Parquet files, kept steps are
temporary tables (DuckDB spills them to its temp directory), the others views."""

from __future__ import annotations

from typing import Any

from recon.rules.judging import Judging
from recon.rules.run import (
    PartitionEnds,
    Replays,
    UnverifiableRows,
    conform_sql,
    judge_inputs,
    register_empty,
)


class DuckDBRules:
    """:class:`recon.rules.run.RuleEngine` over one DuckDB connection.

    :param con: the connection; the rules' relations are temporary objects in it.
    """

    dialect = "duckdb"

    def __init__(self, con: Any) -> None:
        self.con = con

    def define(self, name: str, statement: str, *, keep: bool = False) -> None:
        kind = "TABLE" if keep else "VIEW"
        self.con.execute(f"CREATE OR REPLACE TEMP {kind} {name} AS {statement}")

    def rows(self, name: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.con.execute(f"SELECT * FROM {name}").fetchall()]

    def relation(self, name: str) -> str:
        return name

    def reread(self, name: str, source: str) -> None:
        # A kept relation is a table, which a view cannot replace (nor DROP VIEW drop).
        kept = "SELECT 1 FROM duckdb_tables() WHERE temporary AND table_name = ?"
        if self.con.execute(kept, [name]).fetchone():
            self.con.execute(f"DROP TABLE {name}")
        self.define(name, f"SELECT * FROM {source}")

    def scratch(self) -> DuckDBRules:
        # A cursor is a connection of its own to the same database: its temporary objects are
        # its own.
        return DuckDBRules(self.con.cursor())

    def close(self) -> None:
        self.con.close()

    def use(self, name: str, source: str | None) -> None:
        """Input ``name`` read from the relation ``source`` (None: the run has none).

        :param name: one of ``recon.rules.INPUTS``.
        """
        if source is None:
            register_empty(self, name)
            return
        present = [r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        self.define(name, conform_sql(name, source, present))


def reconcile(
    con: Any,
    *,
    window: str,
    sink_rows: str,
    ledger: str | None = None,
    pending: str | None = None,
    uncommitted: str | None = None,
    unverifiable: UnverifiableRows | None = None,
    partition_ends: PartitionEnds | None = None,
    judging: Judging | None = None,
    replays: Replays | None = None,
    source_rows: str | None = None,
    source_known: str | None = None,
    named_once: bool = False,
    dead_letters: str | None = None,
) -> tuple[DuckDBRules, dict[str, int]]:
    """Judge a run with the rules: the relation ``results`` (``schemas.RESULT``) and the counts.

    :param con: a DuckDB connection where the inputs are visible by name.
    :param window: the window's committed records; ``pending``, ``uncommitted``, ``ledger``:
        the other inputs (``recon.rules``), None when the run has none.
    :param unverifiable: ``(topic, partition, from_offset, log_start_offset)`` per partition.
    :param partition_ends: ``(partition, window_to, log_start_offset)`` per partition.
    :param judging: the pipeline's declared checks (``recon.rules.run.judge``).
    :param replays: ``(topic, partition, offset)`` of each record a repair replayed.
    :param source_rows, source_known: a run with a source (``recon.rules``), None without.
    :param named_once: the source names each messageId once at most (``recon.rules.run.judge``).
    :param dead_letters: the records of the pipeline's dead-letter topics (``diverted``).
    """
    rules = DuckDBRules(con)
    inputs = {
        "records": window, "sink_rows": sink_rows, "ledger": ledger, "pending": pending,
        "uncommitted": uncommitted, "source_rows": source_rows, "source_known": source_known,
        "dead_letters": dead_letters,
    }  # fmt: skip
    return rules, judge_inputs(
        rules, inputs, unverifiable, partition_ends, judging, replays, named_once=named_once
    )
