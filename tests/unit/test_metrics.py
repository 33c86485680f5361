"""A run's metrics reach StatsD through Airflow's Stats, configured by [metrics] as a task's process
is: a UDP socket in the test receives them, line by line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from recon.model.verdicts import ALL_VERDICTS

#: The lines of a run without latency: a counter per verdict (zeros too), the lag, the duration.
RUN_LINES = len(ALL_VERDICTS) + 2

pytestmark = pytest.mark.unit

#: In a process of its own, Stats initialised as Airflow's task runner does it
#: (airflow.sdk.execution_time.task_runner.main): the backend the [metrics] settings choose.
EMIT = """
import json, sys

from airflow.sdk.configuration import conf
from airflow.sdk.observability import stats
from airflow.sdk.observability.metrics import stats_utils

from recon_airflow.metrics import emit_run_metrics

stats.initialize(factory=stats_utils.get_stats_factory(),
                 export_legacy_names=conf.getboolean("metrics", "legacy_names_on"))
pipeline, counts, duration, latency = json.loads(sys.argv[1])
emit_run_metrics(pipeline, counts, duration, latency=latency)
"""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))  # a free port
    sock.settimeout(10)
    yield sock
    sock.close()


def _emit(
    listener: socket.socket,
    pipeline: str,
    counts: dict[str, int],
    duration: float,
    latency: dict[str, int] | None = None,
) -> None:
    import json

    env = {
        **os.environ,
        "AIRFLOW__METRICS__STATSD_ON": "True",
        "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
        "AIRFLOW__METRICS__STATSD_PORT": str(listener.getsockname()[1]),
        "AIRFLOW__METRICS__STATSD_PREFIX": "airflow",
    }
    done = subprocess.run(
        [sys.executable, "-c", EMIT, json.dumps([pipeline, counts, duration, latency])],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def _received(listener: socket.socket, n: int) -> list[str]:
    """The first ``n`` recon lines; Airflow's own (``airflow.serde...``) are not ours."""
    lines: list[str] = []
    while len(lines) < n:
        data, _ = listener.recvfrom(65535)
        lines.extend(x for x in data.decode().splitlines() if x.startswith("airflow.recon."))
    return lines


def test_a_runs_counts_lag_and_duration_reach_statsd(listener: socket.socket) -> None:
    counts = {"delivered": 990, "lost": 3, "duplicated": 2, "pending": 17, "topic_duplicate": 1}
    _emit(listener, "orders_eo", counts, 12.5)
    # One counter per verdict (zeros too), in the vocabulary's order, the lag gauge, the
    # duration timer.
    assert _received(listener, RUN_LINES) == [
        *(f"airflow.recon.orders_eo.verdict.{v}:{counts.get(v, 0)}|c" for v in ALL_VERDICTS),
        "airflow.recon.orders_eo.lag_messages:17|g",
        "airflow.recon.orders_eo.run_duration:12500.000000|ms",
    ]


def test_a_dotted_pipeline_name_keeps_the_names_hierarchy(listener: socket.socket) -> None:
    _emit(listener, "team.orders", {"lost": 1}, 1.0)
    lines = _received(listener, RUN_LINES)
    assert lines[0] == "airflow.recon.team__orders.verdict.delivered:0|c"
    assert "airflow.recon.team__orders.verdict.lost:1|c" in lines


def test_no_latency_is_sent_while_runs_do_not_measure_it(listener: socket.socket) -> None:
    _emit(listener, "orders_eo", {}, 1.0)
    lines = _received(listener, RUN_LINES)
    assert not [line for line in lines if ".latency" in line]
    # Nothing more follows: the subprocess has ended, every datagram it sent has arrived.
    listener.settimeout(0.5)
    with pytest.raises(TimeoutError):
        while True:
            assert b"airflow.recon." not in listener.recvfrom(65535)[0]


def test_a_run_that_measures_latency_sends_its_percentiles(listener: socket.socket) -> None:
    figures = {"messages": 120, "negative": 0, "min_ms": 3, "p50_ms": 12, "p95_ms": 4510,
               "p99_ms": 4530, "max_ms": 4533}  # fmt: skip
    _emit(listener, "orders_eo", {"late": 14, "delivered": 106}, 2.0, figures)
    assert _received(listener, RUN_LINES + 4)[-4:] == [
        "airflow.recon.orders_eo.latency_p50_ms:12|g",
        "airflow.recon.orders_eo.latency_p95_ms:4510|g",
        "airflow.recon.orders_eo.latency_p99_ms:4530|g",
        "airflow.recon.orders_eo.latency_max_ms:4533|g",
    ]
