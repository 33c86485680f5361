"""A PostgreSQL connection's TLS extras (``sslmode``, ``sslrootcert``, …) reach both drivers the
product uses: psycopg2 (results, sink copies, the page) and the JDBC driver (Spark's sink read).

The test starts a second PostgreSQL of its own that accepts TLS connections only, with a server
certificate signed by a CA made here. ``verify-full`` against that CA connects over TLS; against
another CA it is refused: without the extras, both drivers' default (``prefer``) would connect
anyway, so the refusal proves the settings were passed on.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from recon.config.connections import RawConnection, postgres_from_raw

pytestmark = pytest.mark.integration

PORT = 23433
USER, PASSWORD = "tls_user", "tls-pass-7Qx"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             cwd=directory)  # fmt: skip


def _server_cert(directory: Path) -> None:
    (directory / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=directory)  # fmt: skip
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "server.crt",
             cwd=directory)  # fmt: skip


@pytest.fixture(scope="module")
def tls_postgres() -> Iterator[Path]:
    """A PostgreSQL on 127.0.0.1:PORT that takes TLS connections only; yields the directory
    holding ``ca.pem`` (its CA) and ``other-ca.pem`` (a CA it does not use)."""
    owner = os.environ.get("RECON_PG_OS_USER", "recon-pg")
    bindir = os.path.dirname(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1])
    # In the service user's own folder, beside the stack's cluster (scripts/postgres.sh): it can
    # reach nothing under a private checkout.
    root = Path(os.environ["RECON_PG_HOME"]) / "tls-test"
    shutil.rmtree(root, ignore_errors=True)
    certs, data = root / "certs", root / "data"
    certs.mkdir(parents=True)
    _ca(certs, "ca")
    _ca(certs, "other-ca")
    _server_cert(certs)
    (certs / "pw").write_text(PASSWORD + "\n")
    shutil.chown(root, owner)
    for path in (certs, *certs.iterdir()):
        shutil.chown(path, owner)
    os.chmod(certs / "server.key", 0o600)

    def as_owner(*cmd: str) -> None:
        subprocess.run(["runuser", "-u", owner, "--", *cmd], check=True, capture_output=True)

    as_owner(f"{bindir}/initdb", "-D", str(data), "-U", USER, f"--pwfile={certs / 'pw'}",
             "--auth-host=scram-sha-256", "--auth-local=reject", "-E", "UTF8")  # fmt: skip
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(
            f"listen_addresses = '127.0.0.1'\nport = {PORT}\nunix_socket_directories = ''\n"
            f"ssl = on\nssl_cert_file = '{certs / 'server.crt'}'\n"
            f"ssl_key_file = '{certs / 'server.key'}'\n"
        )
    # TLS or nothing: no plain `host` line.
    (data / "pg_hba.conf").write_text("hostssl all all 127.0.0.1/32 scram-sha-256\n")
    shutil.chown(data / "pg_hba.conf", owner)
    as_owner(f"{bindir}/pg_ctl", "-D", str(data), "-w", "-l", str(root / "log"), "start")
    try:
        yield certs
    finally:
        subprocess.run(["runuser", "-u", owner, "--", f"{bindir}/pg_ctl", "-D", str(data),
                        "-m", "fast", "stop"], capture_output=True)  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


def _connection(**extra: str) -> Any:
    return postgres_from_raw(RawConnection(
        conn_id="tls_pg", conn_type="postgres", host="127.0.0.1", port=PORT, login=USER,
        password=PASSWORD, schema="postgres", extra=extra,
    ))  # fmt: skip


_ON_TLS = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


def test_psycopg2_verifies_the_server_as_the_extras_say(tls_postgres: Path) -> None:
    conn = _connection(sslmode="verify-full", sslrootcert=str(tls_postgres / "ca.pem"))
    with psycopg2.connect(connect_timeout=10, **conn.psycopg2_kwargs()) as pg, pg.cursor() as cur:
        cur.execute(_ON_TLS)
        assert cur.fetchone() == (True,)
    pg.close()

    wrong = _connection(sslmode="verify-full", sslrootcert=str(tls_postgres / "other-ca.pem"))
    with pytest.raises(psycopg2.OperationalError, match="certificate verify failed"):
        psycopg2.connect(connect_timeout=10, **wrong.psycopg2_kwargs())


def test_spark_jdbc_verifies_the_server_as_the_extras_say(tls_postgres: Path, spark: Any) -> None:
    conn = _connection(sslmode="verify-full", sslrootcert=str(tls_postgres / "ca.pem"))
    query = f"({_ON_TLS}) AS t"
    rows = spark.read.jdbc(conn.jdbc_url, query, properties=conn.jdbc_properties()).collect()
    assert [tuple(r) for r in rows] == [(True,)]

    wrong = _connection(sslmode="verify-full", sslrootcert=str(tls_postgres / "other-ca.pem"))
    with pytest.raises(Exception, match="(?i)certificate|PKIX|SSL"):
        spark.read.jdbc(wrong.jdbc_url, query, properties=wrong.jdbc_properties()).collect()
