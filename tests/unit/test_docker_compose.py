"""Static checks of docker-compose.yml: no Docker engine needed, only the file and the pins."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"

AIRFLOW_SERVICES = {
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}
ONE_SHOT_SERVICES = {"postgres-init", "airflow-init"}
EXPECTED_SERVICES = {
    "kafka",
    "kafka-replica",
    "kafka-connect",
    "postgres",
    "spark-master",
    "spark-worker",
    *AIRFLOW_SERVICES,
    *ONE_SHOT_SERVICES,
}
# service -> {host port: container port}; a service not named here publishes nothing.
EXPECTED_PORTS = {
    "kafka": {23092: 23092},
    "kafka-replica": {23192: 23192},
    "kafka-connect": {23083: 8083},
    "postgres": {23432: 5432},
    "airflow-apiserver": {23080: 8080},
    "spark-master": {23077: 7077, 23180: 8080},
    "spark-worker": {23181: 8081},
}
# The repo folders every Airflow service mounts, and where.
AIRFLOW_MOUNTS = {
    "dags": "/opt/airflow/dags",
    "plugins": "/opt/airflow/plugins",
    "expectations": "/opt/airflow/expectations",
    "spark_apps": "/opt/airflow/spark_apps",
    "src": "/opt/airflow/src",
}
PG_PASSWORD = "${RECON_PG_PASSWORD:?set RECON_PG_PASSWORD}"
# A whole value that is one compose interpolation: ${VAR}, ${VAR:-default}, ${VAR:?message}, ...
INTERPOLATION = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-?+])[^}]*)?\}$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict), "docker-compose.yml is not a YAML mapping"
    assert isinstance(data.get("services"), dict), "docker-compose.yml has no services mapping"
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _constraint_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        match = PIN.match(line.split("#", 1)[0].strip())
        if match:
            pins[_normalize(match.group(1))] = match.group(2)
    return pins


def _pom_property(name: str) -> str:
    tree = ET.parse(ROOT / "jvm" / "pom.xml")
    for element in tree.iter():
        if element.tag.rsplit("}", 1)[-1] == name and element.text:
            return element.text.strip()
    raise AssertionError(f"<{name}> not found in jvm/pom.xml")


def _image_version(image: str) -> str:
    """``apache/airflow:3.3.2-python3.11`` -> ``3.3.2``."""
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    match = re.match(r"^v?(\d+(?:\.\d+)*)", tag)
    assert match, f"image {image!r} has no version tag"
    return match.group(1)


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(key): "" if value is None else str(value) for key, value in env.items()}


def _ports(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Every published port as (host ip, host port, container port)."""
    published = []
    for entry in service.get("ports") or []:
        if isinstance(entry, dict):
            published.append(
                (str(entry.get("host_ip", "")), int(entry["published"]), int(entry["target"]))
            )
            continue
        spec = str(entry).split("/", 1)[0]
        parts = spec.rsplit(":", 2)
        if len(parts) == 3:
            published.append((parts[0], int(parts[1]), int(parts[2])))
        elif len(parts) == 2:
            published.append(("", int(parts[0]), int(parts[1])))
        else:
            published.append(("", 0, int(parts[0])))
    return published


def _bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """Every host-path mount as (host path as written, container path)."""
    mounts = []
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            if entry.get("type") == "bind":
                mounts.append((str(entry["source"]), str(entry["target"])))
            continue
        source, _, rest = str(entry).partition(":")
        if source.startswith((".", "/", "~")):
            mounts.append((source, rest.split(":", 1)[0]))
    return mounts


def _named_volumes(service: dict[str, Any]) -> set[str]:
    names = set()
    for entry in service.get("volumes") or []:
        if isinstance(entry, dict):
            if entry.get("type", "volume") == "volume" and entry.get("source"):
                names.add(str(entry["source"]))
            continue
        source, sep, _ = str(entry).partition(":")
        if sep and not source.startswith((".", "/", "~")):
            names.add(source)
    return names


def _all_environments(compose: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """Environments of every service and of every ``x-`` extension (the shared anchors)."""
    found = [(name, _environment(svc)) for name, svc in compose["services"].items()]
    for key, value in compose.items():
        if key.startswith("x-") and isinstance(value, dict) and "environment" in value:
            found.append((key, _environment(value)))
    return found


def test_the_stack_has_exactly_the_expected_services(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == EXPECTED_SERVICES


def test_every_service_uses_an_image_and_builds_nothing(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        assert service.get("image"), f"{name} has no image"
        assert "build" not in service, f"{name} builds an image; the stack uses official images"


def test_published_ports_bind_loopback_on_the_project_ports(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        ports = _ports(service)
        for host_ip, host_port, container_port in ports:
            assert host_ip == "127.0.0.1", (
                f"{name} publishes {host_port}->{container_port} on {host_ip or 'every interface'}"
            )
        published = {host: container for _, host, container in ports}
        assert published == EXPECTED_PORTS.get(name, {}), f"{name} publishes {published}"


def test_mounted_repo_folders_exist(services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        for source, target in _bind_mounts(service):
            host = (ROOT / source).resolve()
            assert host.is_relative_to(ROOT), f"{name} mounts {source}, outside the repo"
            assert host.is_dir(), f"{name} mounts {source} -> {target}, which does not exist"


def test_airflow_services_mount_the_project_folders(services: dict[str, dict[str, Any]]) -> None:
    for name in AIRFLOW_SERVICES | {"airflow-init"}:
        mounts = {
            (ROOT / source).resolve(): target for source, target in _bind_mounts(services[name])
        }
        for folder, target in AIRFLOW_MOUNTS.items():
            assert mounts.get((ROOT / folder).resolve()) == target, (
                f"{name} does not mount ./{folder} at {target}"
            )


def test_named_volumes_are_declared(compose: dict[str, Any]) -> None:
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        missing = _named_volumes(service) - declared
        assert not missing, f"{name} uses undeclared volumes {sorted(missing)}"


def test_airflow_image_matches_the_constraints_pin(services: dict[str, dict[str, Any]]) -> None:
    pin = _constraint_pins()["apache-airflow"]
    for name in AIRFLOW_SERVICES | {"airflow-init"}:
        image = services[name]["image"]
        assert image.startswith("apache/airflow:"), f"{name} runs {image}"
        assert _image_version(image) == pin, f"{name} runs {image}, constraints pin {pin}"


def test_spark_image_matches_the_pyspark_pin(services: dict[str, dict[str, Any]]) -> None:
    pin = _constraint_pins()["pyspark"]
    for name in ("spark-master", "spark-worker"):
        image = services[name]["image"]
        assert image.startswith("apache/spark:"), f"{name} runs {image}"
        assert _image_version(image) == pin, f"{name} runs {image}, pyspark is pinned at {pin}"


def test_kafka_image_matches_the_pom(services: dict[str, dict[str, Any]]) -> None:
    version = _pom_property("kafka.version")
    for name in ("kafka", "kafka-replica", "kafka-connect"):
        image = services[name]["image"]
        assert image.startswith("apache/kafka:"), f"{name} runs {image}"
        assert _image_version(image) == version, f"{name} runs {image}, jvm/pom.xml has {version}"


def test_postgres_image_and_databases(services: dict[str, dict[str, Any]]) -> None:
    assert services["postgres"]["image"] == "postgres:15"
    assert services["postgres-init"]["image"] == services["postgres"]["image"]
    assert _environment(services["postgres"])["POSTGRES_DB"] == "airflow"
    init_command = json.dumps(services["postgres-init"].get("command"))
    assert "CREATE DATABASE recon_sink" in init_command


def test_extra_pip_requirements_follow_the_constraints(
    services: dict[str, dict[str, Any]],
) -> None:
    pins = _constraint_pins()
    for name in AIRFLOW_SERVICES:
        extra = _environment(services[name]).get("_PIP_ADDITIONAL_REQUIREMENTS", "")
        for requirement in extra.split():
            match = PIN.match(requirement)
            assert match, f"{name}: {requirement!r} is not pinned with =="
            package, version = _normalize(match.group(1)), match.group(2)
            assert pins.get(package) == version, (
                f"{name} installs {requirement}, constraints.txt pins {pins.get(package)}"
            )


def test_kafka_is_a_single_kraft_node_with_transactions(
    services: dict[str, dict[str, Any]],
) -> None:
    env = _environment(services["kafka"])
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    assert "HOST://127.0.0.1:23092" in env["KAFKA_ADVERTISED_LISTENERS"]


def test_airflow_settings_and_connections(services: dict[str, dict[str, Any]]) -> None:
    for name in AIRFLOW_SERVICES:
        env = _environment(services[name])
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor", name
        assert env["AIRFLOW__CORE__LOAD_EXAMPLES"].lower() == "false", name
        assert "@postgres:5432/airflow" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"], name
        kafka = json.loads(env["AIRFLOW_CONN_KAFKA_DEFAULT"])
        assert kafka["conn_type"] == "kafka"
        assert kafka["extra"]["bootstrap.servers"] == "kafka:9092"
        sink = json.loads(env["AIRFLOW_CONN_POSTGRES_SINK"])
        assert sink["conn_type"] == "postgres"
        assert (sink["host"], sink["port"], sink["schema"]) == ("postgres", 5432, "recon_sink")
        assert sink["password"] == PG_PASSWORD
        spark = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
        assert spark["conn_type"] == "spark"
        assert spark["host"] == "spark://spark-master"
        assert spark["port"] == 7077


def test_no_literal_passwords(compose: dict[str, Any]) -> None:
    for owner, env in _all_environments(compose):
        for key, value in env.items():
            if "PASSWORD" in key.upper():
                assert INTERPOLATION.match(value), f"{owner}: {key} holds a literal value"
            if key.startswith("AIRFLOW_CONN_") and value.lstrip().startswith("{"):
                password = json.loads(value).get("password")
                assert password is None or INTERPOLATION.match(password), (
                    f"{owner}: {key} holds a literal password"
                )
            for secret in re.findall(r"://[^:/@\s]+:([^@\s]+)@", value):
                assert INTERPOLATION.match(secret), f"{owner}: {key} holds a literal password"
    postgres = _environment(compose["services"]["postgres"])
    assert postgres["POSTGRES_PASSWORD"] == PG_PASSWORD


def test_dependencies_wait_on_health_or_completion(services: dict[str, dict[str, Any]]) -> None:
    allowed = {"service_started", "service_healthy", "service_completed_successfully"}
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        assert isinstance(depends, dict), f"{name}: depends_on without conditions"
        for target, spec in depends.items():
            assert target in services, f"{name} depends on unknown service {target}"
            condition = spec.get("condition")
            assert condition in allowed, f"{name} -> {target}: condition {condition!r}"
            if condition == "service_healthy":
                assert "healthcheck" in services[target], f"{target} has no healthcheck"
            if target in ONE_SHOT_SERVICES:
                assert condition == "service_completed_successfully", f"{name} -> {target}"
    for name in AIRFLOW_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["airflow-init"]["condition"] == "service_completed_successfully"
        assert depends["postgres"]["condition"] == "service_healthy"
    for name in ONE_SHOT_SERVICES:
        assert str(services[name].get("restart", "no")) == "no", f"{name} must run once"
    for name in EXPECTED_SERVICES - ONE_SHOT_SERVICES:
        assert "healthcheck" in services[name], f"{name} has no healthcheck"
