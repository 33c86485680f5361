"""A Spark driver of the product maps the class archive ``make setup`` made
(``recon.spark.class_archive``; ``tests/unit/test_spark_class_archive.py`` holds the rest). Here,
not in the unit tier, because it starts a JVM."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from recon import settings
from recon.spark import classes as spark_classes

pytestmark = pytest.mark.integration


def test_a_spark_driver_of_the_product_maps_the_archive_make_setup_made() -> None:
    """With ``-Xshare:on`` a JVM that cannot map its archive does not start: a driver that
    starts has mapped it (a class path that no longer matches would fail here, where a normal
    start ignores the archive without a word)."""
    if not settings.spark_class_archive():
        pytest.skip("RECON_SPARK_CLASS_ARCHIVE=false here: make setup made no archive")
    path = spark_classes.archive_path()
    assert path is not None and os.path.isfile(path), "make setup makes the archive"
    script = (
        "from recon.spark import spark_session\n"
        "s = spark_session('archive-check', master='local[1]')\n"
        "print('counted', s.range(3).count())\n"
        "s.stop()\n"
    )
    env = {**os.environ, "RECON_SPARK_REMOTE": "", "RECON_SPARK_CLASS_ARCHIVE": "true",
           "RECON_SPARK_JAVA_OPTIONS": "-Xshare:on"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert "counted 3" in done.stdout, done.stderr[-3000:] + done.stdout[-2000:]
