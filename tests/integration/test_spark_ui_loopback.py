"""The Spark UI, when a person turns it on (``RECON_SPARK_UI=true``), listens on loopback only,
like every other service of the product: Spark binds it to ``$SPARK_LOCAL_IP``, else every
address, whatever ``spark.driver.bindAddress`` says."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.integration

# A driver of its own: the tests' shared session runs without a UI, and a JVM keeps the
# environment it started with.
DRIVER = """
import sys
from recon.spark import spark_session
session = spark_session("recon-ui-test", master="local[1]")
print(session.sparkContext.uiWebUrl, flush=True)
sys.stdin.readline()
session.stop()
"""

LISTEN = "0A"


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on ``port`` (``/proc/net/tcp``, ``tcp6``),
    an IPv4 address mapped into IPv6 written as IPv4."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] != LISTEN or int(port_hex, 16) != port:
                continue
            # The kernel writes each 32-bit word of the address in host (little-endian) order.
            words = (address[i : i + 8] for i in range(0, len(address), 8))
            raw = b"".join(bytes.fromhex(word)[::-1] for word in words)
            ip = ipaddress.ip_address(raw)
            mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
            found.add(str(mapped or ip))
    return found


def test_the_spark_ui_listens_on_loopback_only() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RECON_SPARK_REMOTE", "SPARK_LOCAL_IP")}
    env["RECON_SPARK_UI"] = "true"
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert driver.stdout is not None and driver.stdin is not None
        url = driver.stdout.readline().strip()
        assert url.startswith("http"), "the driver started no UI"
        port = urlparse(url).port
        assert port is not None
        # Not "0.0.0.0" or "::" (every address), which Spark binds to by default.
        assert _listening_addresses(port) == {"127.0.0.1"}
        driver.stdin.write("\n")
        driver.stdin.flush()
        assert driver.wait(timeout=60) == 0
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
