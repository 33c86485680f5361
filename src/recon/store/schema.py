"""Schema ``recon``: its tables created or brought up to date from ``recon/sql/schema.sql``."""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any


def ensure_schema(pg: Any) -> None:
    """Create schema ``recon`` and its tables if absent, or bring them up to date (idempotent).

    The DDL runs only when the schema's recorded version differs from this package's: even
    ``ALTER TABLE ... ADD COLUMN IF NOT EXISTS`` takes an ACCESS EXCLUSIVE lock, and a run doing
    so while another run holds a read lock on the same tables deadlocks with it.
    """
    ddl = resources.files("recon").joinpath("sql/schema.sql").read_text()
    version = hashlib.sha256(ddl.encode()).hexdigest()
    if _schema_version(pg) == version:
        pg.rollback()
        return
    with pg.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('recon:schema'))")
        if _schema_version(pg) != version:  # another session may have applied it meanwhile
            cur.execute(ddl)
            cur.execute("DELETE FROM recon.schema_version")
            cur.execute("INSERT INTO recon.schema_version (version) VALUES (%s)", (version,))
    pg.commit()


def _schema_version(pg: Any) -> str | None:
    with pg.cursor() as cur:
        cur.execute("SELECT to_regclass('recon.schema_version') IS NOT NULL")
        if not cur.fetchone()[0]:
            return None
        cur.execute("SELECT version FROM recon.schema_version")
        row = cur.fetchone()
    return str(row[0]) if row else None
