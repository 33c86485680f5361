"""The project's PostgreSQL cluster lives in its service user's own folder, so a checkout under a
private directory works without widening the permissions of anything above it (issue 22, low)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pg_home() -> Iterator[Path]:
    """A folder for the test's cluster beside the stack's, in the service user's own folder (which
    it can reach; pytest's tmp_path it cannot)."""
    home = Path(os.environ["RECON_PG_HOME"]) / f"test-{uuid.uuid4().hex[:8]}"
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_a_checkout_under_a_private_directory_keeps_its_permissions(
    tmp_path: Path, pg_home: Path
) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    state = private / "checkout" / ".state"
    env = {
        **os.environ,
        "RECON_STATE": str(state),
        "RECON_PG_HOME": str(pg_home),
        "RECON_PG_PASSWORD": "not-used-by-a-server",
    }
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "init"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr

    assert stat.S_IMODE(private.stat().st_mode) == 0o700, "a private ancestor was widened"
    cluster = (state / "pg").resolve()
    assert cluster.parent == pg_home.resolve(), cluster
    assert (cluster / "data" / "PG_VERSION").is_file()
    owner = os.environ.get("RECON_PG_OS_USER", "recon-pg")
    assert cluster.owner() == owner and pg_home.owner() == owner
    assert stat.S_IMODE(pg_home.stat().st_mode) == 0o700
    # The password file given to initdb is gone.
    assert not list(cluster.glob("pw-*"))
    # The folder names the link that owns it: scripts/clean.sh tells an orphaned one by it.
    assert (cluster / "checkout").read_text() == f"{state.resolve() / 'pg'}\n"

    # Idempotent: a second init keeps the same cluster.
    again = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh"), "init"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert (state / "pg").resolve() == cluster
