"""One source of Spark settings: the CLI's session and Airflow's spark-submit run the same ones,
so a DAG run opens no Spark UI and keeps credentials out of Spark's plans and event log."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.alerts import free_port

pytestmark = pytest.mark.unit


def test_spark_submit_runs_with_the_cli_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.spark import spark_settings
    from recon.spark.jars import spark_jar_settings
    from recon_airflow.operators import ReconSparkSubmitOperator

    monkeypatch.delenv("RECON_SPARK_UI", raising=False)
    task = ReconSparkSubmitOperator(task_id="reconcile", pipeline="p1", step="reconcile")
    assert task.conf == {**spark_jar_settings(), **spark_settings()}
    assert task.jars is None  # one way for the jars: the settings above
    assert task.env_vars == {"SPARK_LOCAL_IP": "127.0.0.1"}  # the UI's address


def test_fetched_jars_are_used_else_spark_resolves_the_poms_coordinates(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import pyspark

    from recon.spark.jars import spark_coordinates, spark_jar_settings

    jars = tmp_path / "jars"
    jars.mkdir()
    monkeypatch.setenv("RECON_JARS_SPARK", str(jars))
    monkeypatch.setenv("RECON_STATE", str(tmp_path / "state"))
    # No jar fetched (an installed wheel): Spark resolves them, cached in the state folder.
    assert spark_jar_settings() == {
        "spark.jars.packages": ",".join(spark_coordinates()),
        "spark.jars.ivy": str(tmp_path / "state" / "ivy"),
    }
    # The Kafka source at exactly pyspark's version, and the JDBC driver.
    coordinates = spark_coordinates()
    assert coordinates[0] == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    assert [c.rsplit(":", 1)[0] for c in coordinates[1:]] == ["org.postgresql:postgresql"]
    (jars / "b.jar").write_bytes(b"")
    (jars / "a.jar").write_bytes(b"")
    assert spark_jar_settings() == {"spark.jars": f"{jars}/a.jar,{jars}/b.jar"}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("<profiles><profile><id>kafka</id></profile></profiles>", "no profile 'spark'"),
        (
            "<profiles><profile><id>spark</id><dependencies><dependency><groupId>g</groupId>"
            "<artifactId>a</artifactId><version>${v}</version></dependency></dependencies>"
            "</profile></profiles>",
            "no property v",
        ),
    ],
)
def test_a_pom_without_the_profile_or_a_property_is_refused_by_name(
    tmp_path: Path, body: str, error: str
) -> None:
    from recon.spark.jars import spark_coordinates

    pom = tmp_path / "pom.xml"
    pom.write_text(f'<project xmlns="http://maven.apache.org/POM/4.0.0">{body}</project>')
    with pytest.raises(ValueError, match=error):
        spark_coordinates(str(pom))


def test_no_ui_loopback_only_and_credentials_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.spark import spark_settings

    monkeypatch.delenv("RECON_SPARK_UI", raising=False)
    settings = spark_settings()
    assert settings["spark.ui.enabled"] == "false"
    assert settings["spark.driver.bindAddress"] == settings["spark.driver.host"] == "127.0.0.1"
    redacted = settings["spark.redaction.regex"]
    for key in ("sasl.jaas.config", "ssl.keystore.password", "kafka.ssl.key.password"):
        assert __import__("re").search(redacted, key), key


def test_the_connect_server_runs_every_drivers_settings_on_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from recon import settings
    from recon.spark import CONNECT_SERVER_CLASS, connect_server_command, spark_settings
    from recon.spark.jars import spark_jar_settings

    token = "not-on-the-command-line"
    monkeypatch.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", token)
    command = connect_server_command(23999, master="local[2]")
    # Its UI's address is an environment variable (Spark has no setting for it).
    assert command[:5] == ["env", "SPARK_LOCAL_IP=127.0.0.1", "spark-submit", "--class",
                           CONNECT_SERVER_CLASS]  # fmt: skip
    assert command[-1] == "spark-internal"
    assert command[command.index("--master") + 1] == "local[2]"
    confs = dict(command[i + 1].split("=", 1) for i, arg in enumerate(command) if arg == "--conf")
    assert confs == {
        **spark_jar_settings(),
        **spark_settings(),
        "spark.driver.memory": settings.spark_connect_memory(),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": "23999",
        "spark.python.daemon.module": "recon.spark.daemon",
    }
    # The server reads its token from its environment: `ps` shows command lines to every user.
    assert not any(token in arg for arg in command)


def test_the_connect_server_has_a_heap_of_its_own_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs attached to the server share its heap; a run's own driver has its own."""
    from recon.spark import connect_server_command, spark_settings

    monkeypatch.setenv("RECON_SPARK_DRIVER_MEMORY", "768m")
    monkeypatch.setenv("RECON_SPARK_CONNECT_MEMORY", "3g")
    command = connect_server_command(23999)
    confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    assert [c for c in confs if c.startswith("spark.driver.memory=")] == ["spark.driver.memory=3g"]
    assert spark_settings()["spark.driver.memory"] == "768m"


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_connect_server_with_a_bad_idle_time_for_its_daemons_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from recon.errors import ConfigError
    from recon.spark import connect_server_command

    monkeypatch.setenv("RECON_SPARK_PYTHON_IDLE", value)
    with pytest.raises(ConfigError, match=f"RECON_SPARK_PYTHON_IDLE .*{value!r}"):
        connect_server_command(23999)


def test_a_run_told_of_a_server_that_is_not_there_stops_at_once_naming_it() -> None:
    import time

    from recon.errors import SparkConnectUnavailable
    from recon.spark import remote_session

    port = free_port()  # a loopback port nothing listens on
    started = time.monotonic()
    with pytest.raises(SparkConnectUnavailable, match=rf"no Spark Connect server answers at "
                       rf"sc://localhost:{port} .*scripts/spark-connect.sh start"):  # fmt: skip
        remote_session("recon-test", f"sc://localhost:{port}")
    # pyspark alone would retry an unreachable server for about ten minutes: a bound far below
    # that (on any machine) says the retries did not run.
    assert time.monotonic() - started < 120
