"""Shared test settings: tiers are chosen by marker; services come from the project's scripts."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Spark workers must run the same interpreter as the driver (the project's .venv).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# py4j logs "Closing down clientserver connection" at INFO from a finaliser at interpreter exit,
# through the console handler importing Airflow set up on pytest's stream, closed by then: a
# "--- Logging error ---" traceback per Spark session at the end of a tier. The CLI quiets it too.
logging.getLogger("py4j").setLevel(logging.WARNING)

TIERS = ("unit", "integration", "system")


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    """Every test belongs to exactly one tier, so `make test` runs each of them once."""
    untiered = [
        item.nodeid for item in items if sum(1 for t in TIERS if item.get_closest_marker(t)) != 1
    ]
    if untiered:
        raise RuntimeError(
            "tests without exactly one tier marker (unit, integration, system): "
            + ", ".join(untiered[:10])
        )
