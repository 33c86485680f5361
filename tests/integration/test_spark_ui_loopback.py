"""The Spark UI, when a person turns it on (``RECON_SPARK_UI=true``), listens on loopback only,
like every other service of the product: Spark binds it to ``$SPARK_LOCAL_IP``, else every
address, whatever ``spark.driver.bindAddress`` says."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import urlparse

import pytest
from fixtures.listening import listening_addresses

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
        assert listening_addresses(port) == {"127.0.0.1"}
        driver.stdin.write("\n")
        driver.stdin.flush()
        assert driver.wait(timeout=60) == 0
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
