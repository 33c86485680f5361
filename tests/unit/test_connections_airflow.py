"""Outside a task, a connection id without an ``AIRFLOW_CONN_*`` variable is looked up through
Airflow's own model (the entry point ``recon.connection_resolvers``), so the CLI finds what
Airflow's secrets backend holds; a variable that is set is read without importing Airflow, and an
install without Airflow keeps the variable lookup.

Each lookup through Airflow runs in a process of its own: Airflow reads its secrets backend from
the configuration once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from recon.config import connections
from recon.errors import ConnectionNotFound

pytestmark = pytest.mark.unit

#: What the child prints: the resolved PostgreSQL connection, and whether it imported Airflow.
RESOLVE = """
import json, sys
from recon.config.connections import postgres_connection
from recon.errors import ConnectionNotFound
try:
    c = postgres_connection(sys.argv[1])
    found = [c.host, c.port, c.user, c.password, c.dbname, c.tls]
except ConnectionNotFound as exc:
    found = str(exc)
print(json.dumps({"found": found, "airflow_imported": "airflow" in sys.modules}))
"""

VAULT = {
    "conn_type": "postgres", "host": "db.vault.example", "port": 6543, "login": "auditor",
    "password": "from-the-backend", "schema": "sinkdb", "extra": {"sslmode": "require"},
}  # fmt: skip


def _resolve(conn_id: str, tmp_path: Path, *, backend: bool, **variables: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    for inherited in ("AIRFLOW__SECRETS__BACKEND", "AIRFLOW__SECRETS__BACKEND_KWARGS"):
        env.pop(inherited, None)
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow")
    if backend:
        # Airflow's file backend stands in for Vault or a cloud secret manager: the same
        # [secrets] backend setting, the same lookup.
        path = tmp_path / "connections.json"
        path.write_text(json.dumps({"pg_vault": VAULT}))
        env["AIRFLOW__SECRETS__BACKEND"] = "airflow.secrets.local_filesystem.LocalFilesystemBackend"
        env["AIRFLOW__SECRETS__BACKEND_KWARGS"] = json.dumps({"connections_file_path": str(path)})
    env.update(variables)
    done = subprocess.run(
        [sys.executable, "-c", RESOLVE, conn_id], env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_an_id_without_a_variable_is_found_in_airflows_secrets_backend(tmp_path: Path) -> None:
    out = _resolve("pg_vault", tmp_path, backend=True)
    assert out["found"] == [
        "db.vault.example",
        6543,
        "auditor",
        "from-the-backend",
        "sinkdb",
        {"sslmode": "require"},
    ]


def test_a_set_variable_is_read_without_importing_airflow(tmp_path: Path) -> None:
    variable = json.dumps({**VAULT, "host": "db.env.example"})
    out = _resolve("pg_vault", tmp_path, backend=False, AIRFLOW_CONN_PG_VAULT=variable)
    assert out["found"][:2] == ["db.env.example", 6543]
    assert out["airflow_imported"] is False


def test_an_id_defined_nowhere_names_both_ways_to_define_it(tmp_path: Path) -> None:
    out = _resolve("pg_nowhere", tmp_path, backend=True)
    assert isinstance(out["found"], str), out
    assert "AIRFLOW_CONN_PG_NOWHERE" in out["found"] and "secrets backend" in out["found"]


@pytest.mark.parametrize("module_text", [None, "raise RuntimeError('airflow.cfg unreadable')"])
def test_without_a_usable_airflow_the_variable_lookup_remains(
    module_text: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without the airflow extra (the entry point's module cannot import), or an
    Airflow that fails as it loads: the variables are read, an absent id is named."""
    from importlib.metadata import EntryPoint

    if module_text is not None:
        (tmp_path / "recon_broken_resolver.py").write_text(module_text)
        monkeypatch.syspath_prepend(str(tmp_path))
    name = "recon_no_such_module" if module_text is None else "recon_broken_resolver"
    unusable = EntryPoint("airflow", f"{name}:resolve", connections.RESOLVER_GROUP)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [unusable])
    monkeypatch.delenv("AIRFLOW_CONN_PG_NOWHERE", raising=False)
    connections.installed_resolver.cache_clear()
    try:
        assert connections.installed_resolver() is None
        with pytest.raises(ConnectionNotFound, match="set AIRFLOW_CONN_PG_NOWHERE"):
            connections.raw_connection("pg_nowhere")
    finally:
        connections.installed_resolver.cache_clear()
