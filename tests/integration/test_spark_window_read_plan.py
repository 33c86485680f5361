"""The plan of the Spark engine's window read (``recon.read.kafka_spark``) names the function its
tasks run, never the connection's secrets it carries (``tests/unit/test_spark_window_read.py``
holds what needs no session). Here, not in the unit tier, because it needs a JVM."""

from __future__ import annotations

from typing import Any

import pytest

from recon.read.ranges import OffsetRange

pytestmark = pytest.mark.integration


def test_the_connections_secrets_travel_to_the_tasks_but_never_into_the_plan(spark: Any) -> None:
    """The tasks need the connection's settings (a SASL password among them): they reach them
    inside the pickled function; the plan, which Spark logs and shows, names only the function."""
    from recon.config import MessageIdSpec
    from recon.config.connections import KafkaConnection
    from recon.read.kafka_spark import read_window

    secret = "SENTINEL-sasl-pw-81f3"
    kafka = KafkaConnection("k", {"bootstrap.servers": "127.0.0.1:1", "sasl.password": secret})
    frame = read_window(spark, kafka, [OffsetRange("t", 0, 0, 5)], MessageIdSpec("key"))
    plan = frame._jdf.queryExecution().toString()
    assert "MapInArrow" in plan and secret not in plan
