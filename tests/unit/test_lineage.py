"""OpenLineage from the operators: each step names the Kafka topic, the sink table and the results
tables by OpenLineage's conventions, never with a credential in them, and Airflow's OpenLineage
provider finds the operators' facets and emits them through its file transport."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.pipelines import WORKLOAD_PIPELINE

pytestmark = pytest.mark.unit

SECRETS = ("kafka-secret-pw", "sink-secret-pw", "results-secret-pw", "kafkauser")

#: The pipeline's connections, every one carrying a secret, as Airflow's variables hold them.
CONNECTIONS = {
    "AIRFLOW_CONN_KAFKA_DEFAULT": json.dumps({
        "conn_type": "kafka", "login": "kafkauser", "password": "kafka-secret-pw",
        "extra": {"bootstrap.servers": "SASL_SSL://broker-1.example:9093,broker-2.example:9093",
                  "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
    }),
    "AIRFLOW_CONN_POSTGRES_SINK": "postgres://sinkuser:sink-secret-pw@sink-db.example:6543/shop",
    "AIRFLOW_CONN_LINEAGE_RESULTS": json.dumps({
        "conn_type": "postgres", "host": "results-db.example", "port": 5433,
        "login": "recon", "password": "results-secret-pw", "schema": "recon_results",
    }),
    "RECON_RESULTS_CONN_ID": "lineage_results",
}  # fmt: skip


def _pipeline_yaml(table: str = "orders.sink_rows") -> str:
    return WORKLOAD_PIPELINE.format(
        name="orders_eo", engine="local", semantics="exactly_once", topic="orders",
        group="orders-consumer", table=table, idempotent="true",
    )  # fmt: skip


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.config.connections import set_resolver

    for name, value in CONNECTIONS.items():
        monkeypatch.setenv(name, value)
    # The environment's lookup, as recon run resolves connections outside Airflow.
    set_resolver(None)


def _cfg(table: str = "orders.sink_rows") -> Any:
    from recon.config import parse_pipelines

    return parse_pipelines(_pipeline_yaml(table))["orders_eo"]


def _names(datasets: list[Any]) -> list[tuple[str, str]]:
    """(namespace, name) of each dataset, an OpenLineage object or an emitted event's dict."""
    return [(d["namespace"], d["name"]) if isinstance(d, dict) else (d.namespace, d.name)
            for d in datasets]  # fmt: skip


#: What reconcile reads and writes, by the connections above.
RECONCILE_READS = [
    ("kafka://broker-1.example:9093", "orders"),
    ("postgres://sink-db.example:6543", "shop.orders.sink_rows"),
]
RECONCILE_WRITES = [
    ("postgres://results-db.example:5433", "recon_results.recon.runs"),
    ("postgres://results-db.example:5433", "recon_results.recon.discrepancies"),
]


def test_reconcile_reads_the_topic_and_the_sink_and_writes_the_results(connections: None) -> None:
    from recon_airflow.lineage import step_lineage

    lineage = step_lineage(_cfg(), "reconcile", "lineage_results")
    assert _names(lineage.inputs) == RECONCILE_READS
    assert _names(lineage.outputs) == RECONCILE_WRITES


@pytest.mark.parametrize(
    ("step", "inputs", "outputs"),
    [
        ("snapshot_offsets", ["orders"], ["recon_results.recon.offset_snapshots",
                                          "recon_results.recon.runs"]),
        ("snapshot_topic", ["orders"], []),
        ("validate", ["recon_results.recon.discrepancies"], ["recon_results.recon.runs"]),
    ],
)  # fmt: skip
def test_each_step_names_what_it_reads_and_writes(
    connections: None, step: str, inputs: list[str], outputs: list[str]
) -> None:
    from recon_airflow.lineage import step_lineage

    lineage = step_lineage(_cfg(), step, "lineage_results")
    assert [d.name for d in lineage.inputs] == inputs
    assert [d.name for d in lineage.outputs] == outputs


def test_an_unqualified_sink_table_is_in_public(connections: None) -> None:
    from recon_airflow.lineage import step_lineage

    lineage = step_lineage(_cfg(table="sink_rows"), "reconcile", "lineage_results")
    assert lineage.inputs[1].name == "shop.public.sink_rows"


@pytest.mark.parametrize(
    ("servers", "namespace"),
    [
        ("localhost:9092", "kafka://localhost:9092"),
        ("broker:9094,other:9094", "kafka://broker:9094"),
        ("PLAINTEXT://user:pw@broker:9095", "kafka://broker:9095"),
        ("broker", "kafka://broker:9092"),
    ],
)
def test_the_kafka_namespace_is_the_first_servers_host_and_port(
    servers: str, namespace: str
) -> None:
    from recon_airflow.lineage import kafka_dataset_naming

    assert kafka_dataset_naming(servers, "t").get_namespace() == namespace


def test_the_validate_step_carries_the_checkpoints_assertions(connections: None) -> None:
    from recon_airflow.lineage import step_lineage

    failures = [{"rule": "lost", "verdict": "lost", "observed": 3, "allowed": 0}]
    lineage = step_lineage(_cfg(), "validate", "lineage_results", validation=(False, failures))
    facet = lineage.inputs[0].inputFacets["dataQualityAssertions"]
    assert [(a.assertion, a.success, a.actual, a.expected) for a in facet.assertions] == [
        ("exactly_once_contract", False, None, None),
        ("lost", False, "3", "0"),
    ]


def test_no_credential_reaches_the_lineage(connections: None) -> None:
    from openlineage.client.serde import Serde

    from recon_airflow.lineage import STEP_DATASETS, step_lineage

    for step in STEP_DATASETS:
        lineage = step_lineage(_cfg(), step, "lineage_results")
        text = json.dumps([Serde.to_dict(d) for d in (*lineage.inputs, *lineage.outputs)])
        for secret in SECRETS:
            assert secret not in text, (step, secret)


#: In a process of its own: the provider's configuration is read once per process. The operator
#: is the DAG's reconcile task; the provider's extractor manager picks the extractor for it
#: (its get_openlineage_facets_on_complete) and its adapter emits the COMPLETE event through the
#: transport configured in [openlineage], as the provider's listener does when a task ends.
EMIT = """
import sys
from types import SimpleNamespace

from airflow.providers.openlineage.extractors.manager import ExtractorManager
from airflow.providers.openlineage.plugins.adapter import OpenLineageAdapter
from airflow.utils.state import TaskInstanceState

from recon_airflow.operators import LocalStepOperator

task = LocalStepOperator(task_id="reconcile", pipeline="orders_eo", step="reconcile",
                         pipelines_file=sys.argv[1])
lineage = ExtractorManager().extract_metadata(
    dagrun=SimpleNamespace(run_id="manual__1"), task=task,
    task_instance_state=TaskInstanceState.SUCCESS, task_instance=None,
)
OpenLineageAdapter().complete_task(
    run_id="01890000-0000-7000-8000-000000000001", job_name="recon_orders_eo.reconcile",
    end_time="2026-01-01T00:00:00+00:00", task=lineage, nominal_start_time=None,
    nominal_end_time=None, owners=None, tags=None, job_description=None,
)
"""


def test_the_provider_emits_the_operators_datasets_through_its_file_transport(
    tmp_path: Path,
) -> None:
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(_pipeline_yaml())
    events = tmp_path / "events.jsonl"
    env = {
        **os.environ,
        **CONNECTIONS,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(events), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__DISABLED": "False",
    }
    done = subprocess.run(
        [sys.executable, "-c", EMIT, str(pipelines)], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [event] = [json.loads(line) for line in events.read_text().splitlines()]
    assert event["eventType"] == "COMPLETE"
    assert event["job"]["name"] == "recon_orders_eo.reconcile"
    assert _names(event["inputs"]) == RECONCILE_READS
    assert _names(event["outputs"]) == RECONCILE_WRITES
    for secret in SECRETS:
        assert secret not in events.read_text()
