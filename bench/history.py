"""A simulated history for P2: ledger segments written directly, as a year of runs leaves them.

A run's hot entries merge into a level-0 segment every ``COMPACT_AFTER`` runs and ``MERGE_FANOUT``
level-0 segments into a level-1 one, up to ``MERGE_MAX_ROWS`` rows (``recon.ledger.versions``);
bigger merges do not happen inside runs, so a long-lived pipeline's history is mostly level-1
segments of ``MERGE_MAX_ROWS`` rows each. :func:`simulate` writes such segments with the local
store's own writer (sorted by messageId, with their membership filters), from generated entries:
messageIds no run of the bench uses (``hist-<segment>-<16 hex digits><16 of an md5>``, 39
characters), each delivered once by a run of its own, and :func:`set_history` makes them the
oldest part of a pipeline's current ledger version, so that its next run starts from all of it,
or takes them out again.

The ids spread evenly over the key space, as random ids (UUIDs) do, but are generated in the
order the segment stores them, and the writer's sort finds them sorted: a 64M-entry segment took
151 s (3.7 minutes with random ids; 8M: 22.4 s -> 17.7 s). What a run does with a segment depends
on its rows and their spread, not on the order they were made in.
"""

from __future__ import annotations

import os
import uuid

from bench import progress
from recon.engines.duckdb_connection import connect

#: DuckDB's memory while it writes a segment; past it the sort spills to ``directory/tmp``.
SIMULATION_MEMORY = "4GB"


def _segment_path(directory: str, rows: int, i: int) -> str:
    return os.path.join(directory, f"sim-{rows}-{i}")


def _written(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "_SUCCESS"))


def missing_entries(directory: str, segments: int, rows: int) -> int:
    """How many of the entries :func:`simulate` would write are not written yet."""
    return rows * sum(not _written(_segment_path(directory, rows, i)) for i in range(segments))


def simulate(directory: str, segments: int, rows: int) -> list[str]:
    """``segments`` level-1 segments of ``rows`` entries each under ``directory`` (reused when a
    previous bench wrote them); their manifest entries, oldest first."""

    from recon.engines.duckdb import DuckDBRules
    from recon.ledger.local import LocalEntryStore
    from recon.ledger.versions import segment_entry
    from recon.rules.run import conform_sql

    os.makedirs(directory, exist_ok=True)
    entries = []
    stride = (2**63 - 1) // max(rows, 1)
    # Bounded: the bench's process holds it beside a Spark Connect server, and DuckDB's default
    # (80% of the machine) let a 64M-entry sort take 20 GB of 24 and the kernel kill the bench.
    con = connect(memory_limit=SIMULATION_MEMORY, temp_directory=os.path.join(directory, "tmp"))
    store = LocalEntryStore()
    for i in range(segments):
        path = _segment_path(directory, rows, i)
        if not _written(path):
            progress(f"P2: simulating history, segment {i + 1}/{segments} ({rows:,} entries)")
            con.execute(
                "CREATE OR REPLACE TEMP VIEW sim AS SELECT "
                f"'hist-{i}-' || lpad(lower(to_hex(r * {stride})), 16, '0') "
                "|| substr(md5(CAST(r AS VARCHAR)), 1, 16) AS message_id, "
                "'bench-history' AS topic, "
                "CAST(r % 8 AS INTEGER) AS partition, r AS first_offset, [r] AS offsets, "
                "1 AS sink_count, 'sim-run-' || CAST(r // 1000000 AS VARCHAR) AS first_run_id, "
                f"'delivered' AS verdict FROM range({rows}) t(r)"
            )
            columns = [c[0] for c in con.execute("DESCRIBE sim").fetchall()]
            con.execute(f"CREATE OR REPLACE TEMP VIEW sim_entries AS "
                        f"{conform_sql('ledger', 'sim', columns)}")  # fmt: skip
            scratch = f"{path}.{uuid.uuid4().hex[:8]}"
            store.write_segment(DuckDBRules(con), "sim_entries", scratch, i)
            os.rename(scratch, path)
        entries.append(segment_entry(path, 1, rows))
    con.close()
    return entries


def set_history(pipeline: str, entries: list[str], directory: str) -> str:
    """A new version of ``pipeline``'s ledger: ``entries`` first, then the current version's
    own (any simulated segment of ``directory`` left out), the pipeline's state pointed at it.
    ``entries`` empty takes the simulated history out again: it holds no message of the runs'.
    Returns the version's manifest."""
    from recon import settings
    from recon.ledger.local import LocalEntryStore
    from recon.ledger.versions import parse_entry
    from recon.run.paths import ledger_dir
    from recon.run.steps import results_db
    from recon.store.runs import load_state

    store = LocalEntryStore()
    simulated = os.path.join(os.path.abspath(directory), "")
    with results_db() as pg, pg.cursor() as cur:
        current = [e for e in store.read_manifest(load_state(pg, pipeline).ledger_path)
                   if not os.path.abspath(parse_entry(e)[0]).startswith(simulated)]  # fmt: skip
        root = ledger_dir(settings.data_dir(), pipeline)
        manifest = os.path.join(root, f"sim-history-{uuid.uuid4().hex[:8]}.manifest")
        store.write_manifest(manifest, entries + current)
        cur.execute(
            "UPDATE recon.pipeline_state SET ledger_path = %s WHERE pipeline = %s",
            (manifest, pipeline),
        )
        pg.commit()
    return manifest
