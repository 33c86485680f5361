"""Shared fixtures for unit tests: one small local SparkSession for the whole run, and a Great
Expectations project folder per test module."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# The Airflow plugin's package (operators, hooks) as Airflow imports it, whichever test runs first.
_PLUGINS = str(Path(__file__).resolve().parents[2] / "plugins")
if _PLUGINS not in sys.path:
    sys.path.insert(0, _PLUGINS)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The session's JVM runs C1 only under the test scripts (scripts/test-env.sh).
_TEST_ENV = {"RECON_SPARK_SHUFFLE_PARTITIONS": "2"}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A local[1] session with few shuffle partitions: tiny frames, fast tests."""
    previous = {name: os.environ.get(name) for name in _TEST_ENV}
    for name, value in _TEST_ENV.items():
        # An explicit setting from the person running the tests wins (except the partitions).
        if name == "RECON_SPARK_SHUFFLE_PARTITIONS" or name not in os.environ:
            os.environ[name] = value
    from fixtures.session_settings import for_tests

    from recon.spark import spark_session

    session = for_tests(spark_session("recon-unit-tests", master="local[1]"))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def spark_judged(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Each named scenario's Spark rows, judged a group of scenarios at a time
    (``fixtures.spark_batches``), shared by the session's pytest-xdist workers."""
    from fixtures.spark_batches import SparkJudged

    base = tmp_path_factory.getbasetemp()
    # Each worker's base is its own folder of the session's: their parent is shared by them
    # (and by nothing else); without workers the session's own base serves.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return SparkJudged(spark, shared)


@pytest.fixture(scope="module")
def gx_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Great Expectations project folder of the test module's own (not yet made): the runs of
    one module share it (``test_suites.py``, ``test_suite_files.py``)."""
    return str(tmp_path_factory.mktemp("gx") / "gx")
