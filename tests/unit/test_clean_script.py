"""``make clean`` (scripts/clean.sh): refuses while the checkout's stack runs, removes only
generated leftovers inside the checkout, and removes a PostgreSQL cluster folder of
$RECON_PG_HOME only when asked and only when it is provably orphaned. Run against a checkout made
up in a temporary folder (RECON_ROOT, RECON_STATE and RECON_PG_HOME pointed there): no service
involved."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "clean.sh"


def _clean(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Nothing of the real stack's environment: each path the scripts derive points into root.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "AIRFLOW"))}
    env |= {
        "RECON_ROOT": str(root),
        "RECON_STATE": str(root / ".state"),
        "RECON_PG_HOME": str(root / "pg-home"),
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout with every kind of leftover and everything that must stay."""
    root = tmp_path / "checkout"
    state = root / ".state"
    for d in (
        "src/recon/__pycache__",
        ".mypy_cache/3.11",
        "build/lib",
        "spark-warehouse",
        ".venv/lib/__pycache__",
        ".state/data/ledger",
        ".state/pipelines.d",
        ".state/jars/kafka",
        ".state/kafka",
        ".state/airflow",
        "pg-home",
    ):
        (root / d).mkdir(parents=True)
    (root / "derby.log").write_text("x")
    (state / "secrets.env").write_text("RECON_PG_PASSWORD=x\n")
    (state / "pipelines.d" / "team.yaml").write_text("pipelines: []\n")
    (root / "pipelines.yaml").write_text("pipelines: []\n")
    return root


def _cluster(root: Path, name: str, owner_link: Path | None, *, initialised: bool = True) -> Path:
    c = root / "pg-home" / name
    (c / "data").mkdir(parents=True)
    if initialised:
        (c / "data" / "PG_VERSION").write_text("16\n")
    if owner_link is not None:
        (c / "checkout").write_text(f"{owner_link}\n")
    return c


def test_it_refuses_while_a_service_of_the_checkout_runs(checkout: Path) -> None:
    # kafka.sh's own status: a pid file naming a live process (this test's).
    (checkout / ".state" / "kafka" / "kafka.pid").write_text(f"{os.getpid()}\n")
    done = _clean(checkout)
    assert done.returncode != 0
    assert "Kafka" in done.stderr and "make down" in done.stderr
    assert "PostgreSQL" not in done.stderr and "Airflow" not in done.stderr
    assert (checkout / "src/recon/__pycache__").is_dir() and (checkout / "derby.log").exists()


def test_dry_run_lists_the_generated_leftovers_and_removes_nothing(checkout: Path) -> None:
    (checkout / ".state" / "pg").symlink_to(checkout / "pg-home" / "cluster-gone")
    done = _clean(checkout, "--dry-run")
    assert done.returncode == 0, done.stderr
    listed = {
        line.split()[2] for line in done.stdout.splitlines() if line.startswith("would remove")
    }
    assert listed == {
        str(checkout / p)
        for p in (
            ".state/pg",
            "src/recon/__pycache__",
            ".mypy_cache",
            "build",
            "spark-warehouse",
            "derby.log",
        )
    }
    assert (checkout / ".state" / "pg").is_symlink() and (checkout / "build").is_dir()


def test_it_removes_leftovers_and_keeps_state_pipelines_and_the_live_cluster(
    checkout: Path,
) -> None:
    live = _cluster(checkout, "cluster-live", checkout / ".state" / "pg")
    (checkout / ".state" / "pg").symlink_to(live)
    done = _clean(checkout)
    assert done.returncode == 0, done.stderr
    for gone in ("src/recon/__pycache__", ".mypy_cache", "build", "spark-warehouse", "derby.log"):
        assert not (checkout / gone).exists(), gone
    for kept in (
        ".venv/lib/__pycache__",
        ".state/secrets.env",
        ".state/pipelines.d/team.yaml",
        ".state/data/ledger",
        ".state/jars/kafka",
        ".state/kafka",
        ".state/airflow",
        "pipelines.yaml",
    ):
        assert (checkout / kept).exists(), kept
    assert (checkout / ".state" / "pg").resolve() == live and (live / "data/PG_VERSION").exists()


def test_an_aborted_init_of_the_earlier_layout_goes_a_cluster_of_it_stays(checkout: Path) -> None:
    pg = checkout / ".state" / "pg"
    (pg / "data").mkdir(parents=True)
    (pg / "initdb.log").write_text("initdb: error\n")
    assert _clean(checkout).returncode == 0
    assert not pg.exists()

    (pg / "data").mkdir(parents=True)
    (pg / "data" / "PG_VERSION").write_text("16\n")
    done = _clean(checkout)
    assert done.returncode == 0, done.stderr
    assert (pg / "data" / "PG_VERSION").exists() and "keeping" in done.stdout


def test_cluster_folders_outside_the_checkout_go_only_when_asked_and_provably_orphaned(
    checkout: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other" / ".state"
    other.mkdir(parents=True)
    others = _cluster(checkout, "cluster-other", other / "pg")
    (other / "pg").symlink_to(others)
    orphan = _cluster(checkout, "cluster-orphan", tmp_path / "deleted" / ".state" / "pg")
    unknown = _cluster(checkout, "cluster-unknown", None, initialised=False)
    running = _cluster(checkout, "cluster-running", tmp_path / "deleted2" / ".state" / "pg")
    (running / "data" / "postmaster.pid").write_text("1\n")

    listed = _clean(checkout)
    assert listed.returncode == 0, listed.stderr
    assert all(c.is_dir() for c in (others, orphan, unknown, running))
    assert f"orphaned: {orphan}" in listed.stdout and "--orphan-clusters" in listed.stdout
    assert f"not removed: {unknown}" in listed.stdout and "aborted initdb" in listed.stdout

    dry = _clean(checkout, "--dry-run", "--orphan-clusters")
    assert f"would remove {orphan} " in dry.stdout and orphan.is_dir()

    done = _clean(checkout, "--orphan-clusters")
    assert done.returncode == 0, done.stderr
    assert not orphan.exists()
    assert others.is_dir() and unknown.is_dir() and running.is_dir()


def test_an_unknown_option_is_refused(checkout: Path) -> None:
    done = _clean(checkout, "--all")
    assert done.returncode != 0 and "usage" in done.stderr
