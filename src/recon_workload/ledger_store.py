"""Where the ground truth is kept: schema ``workload`` (``workload.runs``, one row per run;
``workload.ledger``, one row per message, built by :mod:`recon_workload.ledger`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg2.extras import execute_values

from recon_workload.kafka_io import Position
from recon_workload.ledger import LedgerRow

_DDL = """
CREATE SCHEMA IF NOT EXISTS workload;
CREATE TABLE IF NOT EXISTS workload.runs (
  scenario_run text PRIMARY KEY,
  scenario text NOT NULL,
  topic text NOT NULL,
  topics jsonb NOT NULL,
  sink_table text NOT NULL,
  consumer_group text NOT NULL,
  params jsonb NOT NULL,
  summary jsonb NOT NULL,
  summary_line text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS workload.ledger (
  scenario_run text NOT NULL,
  ledger_key text NOT NULL,
  message_id text,
  acked boolean,
  positions jsonb NOT NULL,
  aborted_positions jsonb NOT NULL,
  sink_rows integer NOT NULL,
  topic_duplicate boolean NOT NULL,
  expected_verdict text,
  detail text,
  latency_seconds double precision,
  payload_diff jsonb,
  PRIMARY KEY (scenario_run, ledger_key)
);
"""

# Columns added to workload.ledger after it first shipped, in the order they came.
_ADDED_COLUMNS = (("latency_seconds", "double precision"), ("payload_diff", "jsonb"))


def ensure_schema(cur: Any) -> None:
    """Create schema ``workload`` and its tables if absent.

    Serialised with an advisory lock: two runs starting at once would otherwise race on
    ``CREATE ... IF NOT EXISTS`` (which is not atomic against itself).
    """
    cur.execute("SELECT pg_advisory_xact_lock(hashtext('recon_workload.ddl'))")
    cur.execute(_DDL)
    # A ledger created before the slow consumer (or the mangling one) gains the column in place,
    # rows kept. Looked up first: ALTER TABLE takes an exclusive lock even when the column
    # exists, which would queue every reader of the ledger behind any open transaction that
    # reads it.
    cur.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'workload'"
        " AND table_name = 'ledger'"
    )
    present = {name for (name,) in cur.fetchall()}
    for column, kind in _ADDED_COLUMNS:
        if column not in present:
            cur.execute(f"ALTER TABLE workload.ledger ADD COLUMN {column} {kind}")


def _positions_json(positions: Sequence[Position]) -> str:
    return json.dumps([p.as_json() for p in positions])


def store(cur: Any, run: Mapping[str, Any], rows: Sequence[LedgerRow]) -> None:
    """Replace the run's ledger rows and its ``workload.runs`` row (in the caller's transaction).

    :param run: ``scenario_run, scenario, topic, topics, sink_table, consumer_group, params,
        summary, summary_line``.
    """
    ensure_schema(cur)
    cur.execute("DELETE FROM workload.ledger WHERE scenario_run = %s", (run["scenario_run"],))
    cur.execute("DELETE FROM workload.runs WHERE scenario_run = %s", (run["scenario_run"],))
    cur.execute(
        "INSERT INTO workload.runs (scenario_run, scenario, topic, topics, sink_table,"
        " consumer_group, params, summary, summary_line) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
        (
            run["scenario_run"],
            run["scenario"],
            run["topic"],
            json.dumps(run["topics"]),
            run["sink_table"],
            run["consumer_group"],
            json.dumps(run["params"]),
            json.dumps(run["summary"]),
            run["summary_line"],
        ),
    )
    execute_values(
        cur,
        "INSERT INTO workload.ledger (scenario_run, ledger_key, message_id, acked, positions,"
        " aborted_positions, sink_rows, topic_duplicate, expected_verdict, detail,"
        " latency_seconds, payload_diff) VALUES %s",
        [
            (
                run["scenario_run"],
                r.ledger_key,
                r.message_id,
                r.acked,
                _positions_json(r.positions),
                _positions_json(r.aborted_positions),
                r.sink_rows,
                r.topic_duplicate,
                r.expected_verdict,
                r.detail,
                r.latency_seconds,
                None if r.payload_diff is None else json.dumps(r.payload_diff),
            )
            for r in rows
        ],
        page_size=1000,
    )
