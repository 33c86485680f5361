"""What a source table's catalog proves (issue 20, P7): a run skips the search for messageIds
named twice only when PostgreSQL enforces that none is, by a unique index on the messageId
column alone; any other index, or none, leaves the search on."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg2
import pytest
from fixtures.declarations import doc

from recon.config import parse_pipelines
from recon.errors import SourceTableError
from recon.read.source import inspect_source
from recon.run.services import source_db

pytestmark = pytest.mark.integration

COLUMNS = "seq bigserial, message_id text, tenant text, created_at timestamptz"


@pytest.mark.parametrize(
    ("index", "proven"),
    [
        ("ALTER TABLE {t} ADD PRIMARY KEY (message_id)", True),
        ("CREATE UNIQUE INDEX ON {t} (message_id)", True),
        ("ALTER TABLE {t} ADD PRIMARY KEY (seq)", False),
        ("CREATE INDEX ON {t} (message_id)", False),
        # Unique only where the predicate holds, or only with another column: two rows may
        # still name one id.
        ("CREATE UNIQUE INDEX ON {t} (message_id) WHERE tenant = 'a'", False),
        ("CREATE UNIQUE INDEX ON {t} (message_id, tenant)", False),
        ("CREATE UNIQUE INDEX ON {t} (lower(message_id))", False),
    ],
)
def test_only_a_unique_index_on_the_message_id_alone_proves_each_id_named_once(
    pg_kwargs: dict[str, Any], index: str, proven: bool
) -> None:
    table = f"outbox_{uuid.uuid4().hex[:10]}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"CREATE TABLE public.{table} ({COLUMNS})")
        cur.execute(index.format(t=f"public.{table}"))
    pg.close()
    source = {"connection": "postgres_sink", "table": f"public.{table}",
              "message_id_column": "message_id", "time_column": "created_at"}  # fmt: skip
    try:
        cfg = parse_pipelines(doc(source=source))["payments"]
        with source_db(cfg) as source_pg:
            assert inspect_source(source_pg, cfg).named_once is proven
    finally:
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"DROP TABLE public.{table}")
        pg.close()


def test_an_upstream_topic_is_never_taken_as_named_once() -> None:
    # No table to inspect: a run's catalog holds no source (recon.read.catalog), so nothing is
    # taken as named once.
    config = parse_pipelines(doc(source={"connection": "kafka_up", "topic": "raw"}))
    with pytest.raises(SourceTableError, match="declares no source table"):
        inspect_source(None, config["payments"])
