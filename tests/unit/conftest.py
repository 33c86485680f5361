"""Shared fixtures for unit tests: a Great Expectations project folder per test module, and the
guard that keeps the tier free of a JVM.

The unit tier judges its tiny relations with DuckDB: a Spark session costs a JVM's start and about
a second a job, which is what made the tier slow (issue 71). What must run on Spark lives in the
integration tier, whose conftest offers its one shared ``spark`` session; ``test_test_layout.py``
checks that no file here asks for one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The Airflow plugin's package (operators, hooks) as Airflow imports it, whichever test runs first.
_PLUGINS = str(Path(__file__).resolve().parents[2] / "plugins")
if _PLUGINS not in sys.path:
    sys.path.insert(0, _PLUGINS)


def _no_jvm(*_: Any, **__: Any) -> Any:
    raise RuntimeError(
        "a unit test started a JVM (a Spark session): unit tests judge with DuckDB; "
        "move the test to tests/integration, which has a shared `spark` fixture"
    )


@pytest.fixture(autouse=True)
def no_jvm_in_unit_tests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fails a test that starts a Spark driver in this process (py4j's gateway launch)."""
    try:
        import pyspark.core.context as context
        import pyspark.java_gateway as gateway
    except ImportError:  # without pyspark nothing can start one
        yield
        return
    monkeypatch.setattr(gateway, "launch_gateway", _no_jvm)
    monkeypatch.setattr(context, "launch_gateway", _no_jvm)
    yield


@pytest.fixture(scope="module")
def gx_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Great Expectations project folder of the test module's own (not yet made): the runs of
    one module share it (``test_suites.py``, ``test_suite_files.py``)."""
    return str(tmp_path_factory.mktemp("gx") / "gx")
