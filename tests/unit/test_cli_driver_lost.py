"""How ``recon run`` tells a dead Spark driver from an ordinary failure.

A killed JVM refuses gateway connections a moment before its process can be reaped; the CLI must
call that the driver's death (exit 2, one line), not re-raise the refused connection.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from py4j.protocol import Py4JNetworkError

from recon.cli import _driver_lost, _gateway_refused

pytestmark = pytest.mark.unit


@pytest.fixture
def jvm() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in process for the driver JVM: only its lifetime matters here."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def _spark(proc: subprocess.Popen[bytes] | None) -> SimpleNamespace:
    return SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(proc=proc)))


def _raised_from(cause: BaseException) -> Exception:
    try:
        try:
            raise cause
        except BaseException:
            raise RuntimeError("py4j call failed") from None
    except RuntimeError as exc:
        return exc


def test_refused_connection_found_through_the_exception_chain() -> None:
    assert _gateway_refused(ConnectionRefusedError(111, "refused"))
    assert _gateway_refused(Py4JNetworkError("Answer from Java side is empty"))
    assert _gateway_refused(_raised_from(ConnectionRefusedError(111, "refused")))
    assert not _gateway_refused(ValueError("a bad window"))


def test_exited_driver_is_lost(jvm: subprocess.Popen[bytes]) -> None:
    jvm.kill()
    jvm.wait()
    assert _driver_lost(_spark(jvm), ValueError("anything"))


def test_ordinary_error_with_a_live_driver_is_not_a_lost_driver(
    jvm: subprocess.Popen[bytes],
) -> None:
    assert not _driver_lost(_spark(jvm), ValueError("a bad window"), grace_seconds=0.1)


def test_refused_connection_while_the_killed_driver_is_still_being_reaped(
    jvm: subprocess.Popen[bytes],
) -> None:
    threading.Timer(0.3, jvm.kill).start()
    assert _driver_lost(_spark(jvm), _raised_from(ConnectionRefusedError(111, "refused")))


def test_refused_connection_with_a_driver_that_stays_up_is_raised_as_is(
    jvm: subprocess.Popen[bytes],
) -> None:
    assert not _driver_lost(_spark(jvm), ConnectionRefusedError(111, "x"), grace_seconds=0.2)


def test_a_gateway_this_process_did_not_launch_is_never_called_lost() -> None:
    assert not _driver_lost(_spark(None), ConnectionRefusedError(111, "refused"))
