"""The wheel installs on its own: its files, its Airflow entry point, and what it reads at run time.

The wheel is built offline (no build isolation: setuptools and wheel come from the dev extra) from a
copy of the checkout, and installed with ``--no-deps`` into a fresh venv whose only way to the
dependencies is a ``.pth`` line naming this venv's site-packages. Python reads a ``.pth`` file's
lines as paths and does not process the ``.pth`` files inside them, so the checkout's editable
install stays out: every ``recon*`` module imported there comes from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
# What a wheel is built from; the rest of the checkout (.venv, .state, tests) stays out of the copy.
SOURCES = ("src", "plugins", "expectations", "spark_apps", "jvm")
SOURCE_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
PACKAGES = ("recon", "recon_workload", "recon_airflow", "recon_page")
ENTRY_POINT = "recon_page = recon_page.plugin:ReconPagePlugin"

# Run in the new venv: prints what it found, as JSON, for the test to judge.
PROBE = r"""
import json, os, runpy, sys
from importlib.metadata import entry_points

found = {}
points = [p for p in entry_points(group="airflow.plugins") if p.name == "recon_page"]
found["entry_points"] = [p.value for p in points]
plugin = points[0].load()
from airflow.plugins_manager import is_valid_plugin
found["plugin"] = [plugin.name, is_valid_plugin(plugin), plugin.fastapi_apps[0]["url_prefix"]]
found["dist"] = str(points[0].dist.locate_file(""))

import recon.rules.render as render
import recon.store.schema as schema
from recon import settings
from recon.validation import load_suite
found["rule_sql"] = len(render.source("05_general_verdicts"))
found["suite"] = load_suite("exactly_once")["name"]
found["expectations_dir"] = settings.expectations_dir()
found["spark_app"] = [settings.spark_app(), os.path.isfile(settings.spark_app())]
from recon.spark.jars import pom_path, spark_coordinates
found["pom"] = [pom_path(), spark_coordinates()]
state = os.environ.pop("RECON_STATE")
found["default_state"] = settings.state_dir()
os.environ["RECON_STATE"] = state

# The one DAG file a team adds to its own Airflow: the checkout's, run against the wheel.
dags = runpy.run_path(sys.argv[1])
built = {k: v for k, v in dags.items() if k.startswith("recon_")}
found["dags"] = sorted(built)
found["applications"] = sorted(
    {t.application for d in built.values() for t in d.tasks if hasattr(t, "application")}
)
found["files"] = {
    name: module.__file__
    for name, module in sys.modules.items()
    if name.split(".")[0] in ("recon", "recon_airflow", "recon_page", "recon_workload")
    and getattr(module, "__file__", None)
}
print(json.dumps(found))
"""

# recon without Airflow and without Spark: both imports refused, the CLI and local engine load.
NO_AIRFLOW = r"""
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("airflow", "pyspark"):
            raise ImportError(f"{name} refused: recon must not need it")
        return None

sys.meta_path.insert(0, Refuse())
import recon.cli, recon.run.steps, recon.engines.local_run, recon.validation, recon.store.schema
print("ok")
"""


def _call(*command: str) -> str:
    """Run ``command``; its output, stripped, or its error output in the failure."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr[-3000:]}"
    return done.stdout.strip()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel`` builds from a copy of the checkout (no build/ left in the tree)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    junk = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in SOURCES:
        shutil.copytree(ROOT / name, source / name, ignore=junk)
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, source / name)
    dist = tmp / "dist"
    _call(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(dist), str(source))  # fmt: skip
    (built,) = dist.glob("kafka_recon-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Path:
    """A fresh venv holding the wheel; its dependencies come through this venv's site-packages."""
    env = wheel.parent.parent / "venv"
    _call(sys.executable, "-m", "venv", "--without-pip", str(env))
    python = str(env / "bin" / "python")
    site = _call(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    Path(site, "recon_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _call(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
          "--no-index", str(wheel))  # fmt: skip
    return env


def _run(env: Path, code: str, *args: str) -> str:
    """``code`` in the venv with none of the checkout's settings: RECON_ROOT and PYTHONPATH would
    lead it back to the checkout; a private AIRFLOW_HOME keeps Airflow off the project's."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("RECON_", "AIRFLOW", "PYTHON"))
    }
    home = env / "airflow-home"
    environ.pop("XDG_STATE_HOME", None)
    environ.update(
        HOME=str(env / "home"),
        AIRFLOW_HOME=str(home),
        RECON_STATE=str(env / "state"),
        RECON_PIPELINES=str(ROOT / "demo" / "pipelines.yaml"),
    )
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        cwd=str(env),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_wheel_holds_the_packages_their_data_and_the_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (points,) = (n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = archive.read(points).decode()
    for package in PACKAGES:
        assert f"{package}/__init__.py" in names, package
    assert "recon_airflow/factory.py" in names
    assert "recon_page/plugin.py" in names
    assert "recon_page_plugin.py" not in names  # a plugins-folder file, not part of the package
    sql = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.sql")}
    assert sql and sql <= names, sorted(sql - names)
    suites = {f"recon/_shipped/expectations/{p.name}" for p in ROOT.glob("expectations/*.json")}
    assert len(suites) == 3 and suites <= names, sorted(suites - names)
    assert "recon/_shipped/spark_apps/reconcile.py" in names
    assert "recon/_shipped/jvm/pom.xml" in names
    assert "[airflow.plugins]" in entry_points and ENTRY_POINT in entry_points
    # recon reaches Airflow's connections and its providers' hooks through its own groups.
    assert "[recon.alert_transports]" in entry_points
    assert "airflow = recon_airflow.notifiers:transport" in entry_points


def test_the_installed_wheel_registers_the_plugin_and_builds_the_dags(venv: Path) -> None:
    found = json.loads(_run(venv, PROBE, str(ROOT / "dags" / "recon_pipelines.py")))
    assert found["entry_points"] == ["recon_page.plugin:ReconPagePlugin"]
    assert found["plugin"] == ["recon_page", True, "/recon"]
    shipped = venv.resolve()
    assert Path(found["dist"]).resolve().is_relative_to(shipped)
    # Every module of the product came from the wheel, none from the checkout.
    files = found["files"]
    assert {"recon.rules.render", "recon_page.plugin", "recon_airflow.factory"} <= set(files)
    assert {n: f for n, f in files.items() if not Path(f).resolve().is_relative_to(shipped)} == {}
    assert found["rule_sql"] > 0 and found["suite"] == "exactly_once"
    assert Path(found["expectations_dir"]).resolve().is_relative_to(shipped)
    app, exists = found["spark_app"]
    assert exists and Path(app).resolve().is_relative_to(shipped)
    assert "recon_payments_exactly_once" in found["dags"]
    # The Spark steps submit the wheel's copy of spark_apps/reconcile.py.
    assert found["applications"] == [app]
    # The Spark jars' coordinates come with the wheel, for Spark to resolve (no Maven here).
    from recon.spark.jars import spark_coordinates

    pom, coordinates = found["pom"]
    assert Path(pom).resolve().is_relative_to(shipped) and coordinates == spark_coordinates()
    # Without RECON_STATE, run-time files go to the user's state folder, not into the venv.
    assert found["default_state"] == str(venv / "home" / ".local" / "state" / "kafka-recon")


def test_recon_imports_without_airflow_or_spark(venv: Path) -> None:
    assert _run(venv, NO_AIRFLOW) == "ok"


def test_the_checkout_registers_the_page_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Airflow loads the plugins folder, then the entry points, and counts a second plugin of one
    name as an import error: plugins/recon_page_plugin.py exports the class only when the
    installed distribution's entry point is missing (docker-compose mounts the checkout without
    installing it)."""
    import importlib.metadata
    import runpy

    from airflow._shared.plugins_manager.plugins_manager import (
        _load_entrypoint_plugins,
        _load_plugins_from_plugin_directory,
    )

    folder, folder_errors = _load_plugins_from_plugin_directory(str(ROOT / "plugins"))
    points, point_errors = _load_entrypoint_plugins()
    assert folder_errors == {} and point_errors == {}
    assert [p.name for p in [*folder, *points]].count("recon_page") == 1

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    exported = runpy.run_path(str(ROOT / "plugins" / "recon_page_plugin.py"))
    assert exported["ReconPagePlugin"].name == "recon_page"
