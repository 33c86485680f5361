"""Only what pyproject.toml cannot declare: the checkout's top-level folders read at run time.

The GX suites (``expectations/*.json``), the Spark steps' application
(``spark_apps/reconcile.py``) and the Spark jars' coordinates (``jvm/pom.xml``, read by
``recon.spark.jars``) stay at the top of the checkout, where docker-compose mounts them and
people read them; a wheel carries a copy under ``recon/_shipped/`` and ``recon.settings.shipped``
picks it when no checkout is around. Everything else is in ``pyproject.toml``.
"""

from __future__ import annotations

import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py

# folder at the top of the checkout -> the files of it a run reads
SHIPPED = {"expectations": "*.json", "spark_apps": "*.py", "jvm": "pom.xml"}


class BuildPyWithShipped(build_py):
    def run(self) -> None:
        super().run()
        # An editable install reads the checkout's own folders; copying would only add a
        # second, stale set.
        if self.editable_mode:
            return
        here = os.path.dirname(os.path.abspath(__file__))
        for folder, pattern in SHIPPED.items():
            target = os.path.join(self.build_lib, "recon", "_shipped", folder)
            self.mkpath(target)
            for path in sorted(glob.glob(os.path.join(here, folder, pattern))):
                self.copy_file(path, target)


# The egg-info goes under build/, not the top of the checkout: a checkout on sys.path (pytest's
# rootdir, a `python -m` started there) would show a second kafka-recon distribution, and Airflow
# loads the airflow.plugins entry points of every one it sees (no deduplication): the page twice.
EGG_BASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build")
os.makedirs(EGG_BASE, exist_ok=True)

setup(cmdclass={"build_py": BuildPyWithShipped}, options={"egg_info": {"egg_base": EGG_BASE}})
