"""The project's Kafka Connect worker (scripts/connect.sh) as the MirrorMaker 2 scenarios use it:
its REST API (create, wait, read a connector's source offsets, delete) and a hard kill and
restart of the worker.

The worker is shared by the whole stack: the scenarios only ever touch connectors they created
(unique names), and a killed worker is started again before the scenario returns.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from recon_workload.errors import WorkloadError

#: How long a REST call may be refused before it fails: the worker may be restarting (another
#: helper loading a plugin, or a scenario's own kill), which takes 10-30 s.
REFUSED_GRACE_SECONDS = 90.0


class ConnectError(WorkloadError):
    """The worker answered a REST call with an error status (``code``), its message kept."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def url() -> str:
    """The worker's REST API (``RECON_CONNECT_URL`` of scripts/env.sh)."""
    found = os.environ.get("RECON_CONNECT_URL")
    if not found:
        raise WorkloadError("RECON_CONNECT_URL is not set: run under scripts/with-env.sh")
    return found.rstrip("/")


def call(path: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    """One REST call; retried while the worker refuses connections (it is restarting).

    :raises ConnectError: the worker answered with an error status.
    :raises WorkloadError: the worker did not answer within :data:`REFUSED_GRACE_SECONDS`.
    """
    data = json.dumps(body).encode() if body is not None else None
    deadline = time.monotonic() + REFUSED_GRACE_SECONDS
    while True:
        request = urllib.request.Request(
            f"{url()}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
            return json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            said = exc.read().decode(errors="replace")[:1000]
            # 409: the herder is rebalancing (just after a restart); a 404 page that is not the
            # API's JSON: the web server is up, the API not yet. Both answer again shortly.
            starting = exc.code == 409 or (exc.code == 404 and not said.startswith("{"))
            if not starting or time.monotonic() > deadline:
                raise ConnectError(f"{method} {path}: {exc.code} {said}", exc.code) from exc
        except (urllib.error.URLError, ConnectionError) as exc:
            if time.monotonic() > deadline:
                raise WorkloadError(f"Kafka Connect at {url()} did not answer: {exc}") from exc
        time.sleep(1)


def create(name: str, config: dict[str, str]) -> None:
    """Create connector ``name`` (it must not exist)."""
    call("/connectors", "POST", {"name": name, "config": config})


def wait_running(name: str, timeout: float = 90.0) -> None:
    """Until the connector and all its tasks run.

    :raises WorkloadError: a task failed, or not running within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    status: Any = None
    while time.monotonic() < deadline:
        try:
            status = call(f"/connectors/{name}/status")
        except ConnectError as exc:  # 404 until the herder has written the config
            if exc.code != 404:
                raise
            status = None
        if status is not None:
            states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
            if "FAILED" in states:
                raise WorkloadError(f"connector {name} failed: {json.dumps(status)[:2000]}")
            if status["tasks"] and set(states) == {"RUNNING"}:
                return
        time.sleep(0.5)
    raise WorkloadError(f"connector {name} not running within {timeout:.0f} s: {status}")


def source_offsets(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The connector's committed source offsets, ``(partition, offset)`` as the worker stores them
    (``GET /connectors/<name>/offsets``)."""
    found = call(f"/connectors/{name}/offsets")
    return [(o["partition"], o["offset"]) for o in found.get("offsets", [])]


def delete(name: str) -> None:
    """Delete the connector; one that does not exist is fine."""
    try:
        call(f"/connectors/{name}", "DELETE")
    except ConnectError as exc:
        if exc.code != 404:
            raise


def _script() -> Path:
    root = os.environ.get("RECON_ROOT") or str(Path(__file__).resolve().parents[2])
    return Path(root) / "scripts" / "connect.sh"


def _pidfile() -> Path:
    state = os.environ.get("RECON_STATE") or str(Path(_script()).parents[1] / ".state")
    return Path(state) / "connect" / "connect.pid"


def kill_and_restart() -> float:
    """SIGKILL the worker (no offset flush, as a crash or an OOM kill) and start it again with
    scripts/connect.sh; return the seconds it was down.

    :raises WorkloadError: the worker is not running, or did not start again.
    """
    pidfile = _pidfile()
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError) as exc:
        raise WorkloadError(f"the Connect worker is not running ({pidfile}): {exc}") from exc
    started = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while _alive(pid):
        if time.monotonic() > deadline:
            raise WorkloadError(f"the Connect worker (pid {pid}) still exists 60 s after SIGKILL")
        time.sleep(0.2)
    done = subprocess.run(
        [str(_script()), "start"], capture_output=True, text=True, timeout=180, check=False
    )
    if done.returncode != 0 or "already running" in done.stdout + done.stderr:
        raise WorkloadError(
            f"scripts/connect.sh start failed after the kill: {done.stderr.strip()[-500:]}"
        )
    return time.monotonic() - started


def _alive(pid: int) -> bool:
    # A zombie (killed, not yet reaped by init) still answers kill -0, and so would make
    # scripts/connect.sh think the worker runs: wait until it is gone altogether.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
