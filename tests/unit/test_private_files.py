"""Secrets the scripts write are private from the moment their file exists, and no script or
demo line prints the Airflow admin password (it says where to read it)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("*.sh"))


def test_write_private_creates_the_file_for_its_owner_only(tmp_path: Path) -> None:
    target = tmp_path / "secret"
    # A permissive umask, as a user's shell may have: the file must still be 0600 when created.
    subprocess.run(
        ["bash", "-c", f'umask 000; . "{ROOT}/scripts/env.sh"; printf s3cret | write_private "$1"',
         "test", str(target)],
        check=True, capture_output=True,
    )  # fmt: skip
    assert target.read_text() == "s3cret"
    assert target.stat().st_mode & 0o777 == 0o600


def test_secret_files_are_written_through_write_private() -> None:
    """A secret file written with a plain redirection exists with the umask's mode (0644 for
    most) until a later chmod: ``write_private`` creates it private instead. Appending to a file
    that already exists keeps its mode."""
    written = re.compile(r"(?<!>)>\s*\"?\$[^ ]*(passwords\.json|secrets\.env)")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in SCRIPTS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if written.search(line)
    ]
    assert found == []


def test_no_script_prints_the_admin_password() -> None:
    printing = re.compile(r"\b(say|echo|print)\b")
    sources = [*SCRIPTS, *sorted((ROOT / "src" / "recon_workload").glob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sources
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "ADMIN_PASSWORD" in line and printing.search(line)
    ]
    assert found == []
