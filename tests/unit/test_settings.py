"""Every ``RECON_*`` setting is read in one module, ``recon.settings`` (issue 16): nothing else in
the product reads one from the environment, and each setting keeps its default and override."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from recon import settings

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
#: The product's source trees (``src/recon_workload`` is the demo workload, not the product).
TREES = ("src/recon", "plugins", "dags", "spark_apps")
SETTINGS = REPO / "src" / "recon" / "settings.py"
#: Methods of ``os.environ`` that read the key given as their first argument.
_READING_METHODS = {"get", "pop", "setdefault"}


def _is_environ(node: ast.AST) -> bool:
    """``os.environ``, or ``environ`` imported from ``os``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _is_getenv(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "getenv" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "getenv"


def _read_keys(tree: ast.AST) -> list[ast.expr]:
    """The key expression of every read of one environment variable."""
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if _is_getenv(func) or (
                isinstance(func, ast.Attribute)
                and func.attr in _READING_METHODS
                and _is_environ(func.value)
            ):
                keys.append(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if _is_environ(node.value):
                keys.append(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys.append(node.left)
    return keys


def _recon_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a ``RECON_*`` name: ``ENV_VAR = "RECON_X"`` or
    ``ENV_VAR = settings.RECON_X``."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            value = node.value
            named = (isinstance(value, ast.Constant) and str(value.value).startswith("RECON_")) or (
                isinstance(value, ast.Attribute) and value.attr.startswith("RECON_")
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if named:
                found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def _names_recon(key: ast.expr, constants: set[str]) -> bool:
    if isinstance(key, ast.Name) and key.id in constants:
        return True
    if isinstance(key, ast.JoinedStr) and key.values:
        first = key.values[0]
        return isinstance(first, ast.Constant) and str(first.value).startswith("RECON_")
    # A literal, settings.RECON_X, RECON_X, or any expression spelling the prefix out.
    return "RECON_" in ast.unparse(key)


def recon_reads(path: Path) -> list[str]:
    """``file:line: <the read>`` for every read of a ``RECON_*`` variable in one Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _recon_constants(tree)
    return [
        f"{path}:{key.lineno}: reads {ast.unparse(key)} from the environment"
        for key in sorted(_read_keys(tree), key=lambda k: (k.lineno, k.col_offset))
        if _names_recon(key, constants)
    ]


def test_no_module_but_settings_reads_a_recon_variable() -> None:
    found: list[str] = []
    for tree in TREES:
        for path in sorted((REPO / tree).rglob("*.py")):
            if path != SETTINGS:
                found += [line.replace(f"{REPO}/", "") for line in recon_reads(path)]
    assert found == [], "ask recon.settings instead:\n" + "\n".join(found)


def test_the_check_finds_every_form_of_read_and_no_write(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "import os\n"
        "from os import environ, getenv\n"
        "from recon import settings\n"
        'ENV_VAR = "RECON_PIPELINES"\n'
        "DIR = settings.RECON_PIPELINES_DIR\n"
        'a = os.environ.get("RECON_ROOT")\n'
        'b = os.environ["RECON_STATE"]\n'
        'c = os.getenv("RECON_DATA_DIR", "x")\n'
        "d = os.environ.get(ENV_VAR)\n"
        "e = environ.get(DIR)\n"
        "f = getenv(settings.RECON_SPARK_UI)\n"
        'g = os.environ.get(f"RECON_{a}")\n'
        'h = "RECON_X" in os.environ\n'
        'i = os.environ.setdefault("RECON_Y", "1")\n'
        # Not reads of a RECON_* variable: another variable, and writes for a child process.
        'j = os.environ.get("PYSPARK_PYTHON")\n'
        'os.environ["RECON_Z"] = "1"\n'
        "env = {}\n"
        'env["RECON_RESULTS_CONN_ID"] = "x"\n'
    )
    lines = [int(line.split(":")[1]) for line in recon_reads(path)]
    assert lines == [6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert recon_reads(path)[0].endswith("m.py:6: reads 'RECON_ROOT' from the environment")


def test_the_module_names_every_variable_it_reads_in_its_table() -> None:
    doc = settings.__doc__ or ""
    names = [n for n in vars(settings) if n.startswith("RECON_")]
    assert len(names) >= 19
    assert [n for n in names if getattr(settings, n) != n] == []
    assert [n for n in names if f"\n{n} " not in doc] == []


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ``RECON_*`` variable set: every setting at its default."""
    for name in list(os.environ):
        if name.startswith("RECON_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_paths_default_to_the_checkout_and_follow_root_and_state(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Path(settings.root()).resolve() == REPO
    assert settings.state_dir() == os.path.join(settings.root(), ".state")
    assert settings.pipelines_file() == os.path.join(settings.root(), "pipelines.yaml")
    assert settings.expectations_dir() == os.path.join(settings.root(), "expectations")
    assert settings.pipelines_dir() is None

    clean_env.setenv("RECON_ROOT", str(tmp_path))
    assert settings.state_dir() == str(tmp_path / ".state")
    assert settings.expectations_dir() == str(tmp_path / "expectations")
    clean_env.setenv("RECON_STATE", str(tmp_path / "st"))
    assert settings.data_dir() == str(tmp_path / "st" / "data")
    assert settings.spark_jars_dir() == str(tmp_path / "st" / "jars" / "spark")
    assert settings.data_docs_dir() == str(
        tmp_path / "st" / "gx" / "uncommitted" / "data_docs" / "local_site"
    )
    # An empty variable counts as unset for the paths.
    clean_env.setenv("RECON_STATE", "")
    assert settings.state_dir() == str(tmp_path / ".state")


def test_an_installed_package_keeps_its_state_out_of_site_packages(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Installed from a wheel (its shipped folders beside the module) and no ``RECON_ROOT``:
    the run-time files go to the user's state folder, never beside site-packages."""
    shipped = tmp_path / "site-packages" / "recon" / "_shipped"
    shipped.mkdir(parents=True)
    clean_env.setattr(settings, "_SHIPPED", str(shipped))
    clean_env.setenv("HOME", str(tmp_path / "home"))
    clean_env.delenv("XDG_STATE_HOME", raising=False)
    assert settings.installed()
    assert settings.state_dir() == str(tmp_path / "home" / ".local" / "state" / "kafka-recon")
    assert settings.data_dir() == os.path.join(settings.state_dir(), "data")
    clean_env.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert settings.state_dir() == str(tmp_path / "xdg" / "kafka-recon")
    # A root or a state folder the user names still wins.
    clean_env.setenv("RECON_ROOT", str(tmp_path / "project"))
    assert settings.state_dir() == str(tmp_path / "project" / ".state")
    clean_env.setenv("RECON_STATE", str(tmp_path / "st"))
    assert settings.state_dir() == str(tmp_path / "st")


def test_an_explicit_path_wins_over_the_derived_one(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean_env.setenv("RECON_STATE", str(tmp_path / "st"))
    for name, read in (
        ("RECON_DATA_DIR", settings.data_dir),
        ("RECON_JARS_SPARK", settings.spark_jars_dir),
        ("RECON_DATA_DOCS_DIR", settings.data_docs_dir),
        ("RECON_PIPELINES", settings.pipelines_file),
        ("RECON_PIPELINES_DIR", settings.pipelines_dir),
        ("RECON_EXPECTATIONS_DIR", settings.expectations_dir),
    ):
        clean_env.setenv(name, str(tmp_path / name))
        assert read() == str(tmp_path / name), name


def test_connection_ids_urls_and_spark_defaults(clean_env: pytest.MonkeyPatch) -> None:
    assert settings.results_conn_id() == "postgres_recon"
    assert settings.alert_webhook_conn_id() == "recon_alert_webhook"
    assert settings.alert_smtp_conn_id() == "smtp_default"
    assert settings.airflow_base_url() is None
    assert settings.data_docs_base_url() is None
    assert settings.spark_master() == "local[*]"
    assert settings.spark_ui() == "false"
    assert settings.spark_shuffle_partitions() == "8"
    assert settings.spark_driver_memory() == "1g"
    assert settings.spark_connect_memory() == "1g"
    assert settings.spark_pool() == "default_pool"
    assert settings.spark_python_idle() == 60.0
    assert settings.local_readers() == max(1, os.cpu_count() or 1)


def test_overrides_are_read_at_call_time(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("RECON_RESULTS_CONN_ID", "pg_other")
    clean_env.setenv("RECON_ALERT_SMTP_CONN_ID", "smtp_other")
    clean_env.setenv("RECON_AIRFLOW_BASE_URL", "http://af:8080/")
    clean_env.setenv("RECON_SPARK_MASTER", "spark://h:7077")
    clean_env.setenv("RECON_SPARK_POOL", "recon_spark")
    clean_env.setenv("RECON_LOCAL_READERS", "3")
    clean_env.setenv("RECON_SPARK_PYTHON_IDLE", "2.5")
    assert settings.spark_python_idle() == 2.5
    assert settings.results_conn_id() == "pg_other"
    assert settings.alert_smtp_conn_id() == "smtp_other"
    assert settings.airflow_base_url() == "http://af:8080/"
    assert settings.spark_master() == "spark://h:7077"
    assert settings.spark_pool() == "recon_spark"
    assert settings.local_readers() == 3
    # Empty: the results connection falls back to its default; the webhook's passes through.
    clean_env.setenv("RECON_RESULTS_CONN_ID", "")
    clean_env.setenv("RECON_ALERT_WEBHOOK_CONN_ID", "")
    assert settings.results_conn_id() == "postgres_recon"
    assert settings.alert_webhook_conn_id() == ""


def test_callers_follow_the_settings(clean_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from recon.alert.content import airflow_run_url
    from recon.config import default_pipelines_path
    from recon.read.kafka_local.pool import default_workers
    from recon.run.services import default_data_dir, results_conn_id
    from recon.spark import spark_settings
    from recon.validation import default_gx_dir, expectations_dir
    from recon_airflow.callbacks import webhook_conn_id
    from recon_page.docs import docs_root

    assert airflow_run_url("d", "r") is None
    clean_env.setenv("RECON_STATE", str(tmp_path))
    clean_env.setenv("RECON_ROOT", str(tmp_path / "root"))
    clean_env.setenv("RECON_RESULTS_CONN_ID", "pg_x")
    clean_env.setenv("RECON_ALERT_WEBHOOK_CONN_ID", "hook_x")
    clean_env.setenv("RECON_AIRFLOW_BASE_URL", "http://af/")
    clean_env.setenv("RECON_LOCAL_READERS", "5")
    clean_env.setenv("RECON_SPARK_DRIVER_MEMORY", "3g")
    clean_env.setenv("RECON_SPARK_JAVA_OPTIONS", " -XX:TieredStopAtLevel=1 ")
    assert default_data_dir() == str(tmp_path / "data")
    assert default_gx_dir() == str(tmp_path / "gx")
    assert docs_root() == tmp_path / "gx" / "uncommitted" / "data_docs" / "local_site"
    assert expectations_dir() == str(tmp_path / "root" / "expectations")
    assert default_pipelines_path() == str(tmp_path / "root" / "pipelines.yaml")
    assert results_conn_id() == "pg_x"
    assert webhook_conn_id() == "hook_x"
    assert airflow_run_url("d", "r") == "http://af/dags/d/runs/r"
    assert default_workers() == 5
    assert spark_settings()["spark.driver.memory"] == "3g"
    # Added to the product's own options, for the driver and the executors alike.
    for jvm in ("driver", "executor"):
        options = spark_settings()[f"spark.{jvm}.extraJavaOptions"]
        assert options == "-XX:+UseParallelGC -XX:TieredStopAtLevel=1"
