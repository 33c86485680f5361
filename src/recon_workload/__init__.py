"""A workload that breaks delivery on purpose and records what it broke.

Real producers and consumers against the project's Kafka and PostgreSQL, each scenario keeping or
breaking a delivery promise the way real pipelines do, plus a ground-truth ledger
(``workload.ledger``) of what actually happened to every message. Entry points:
:func:`run_scenario` and the ``recon-workload`` command (:mod:`recon_workload.cli`).
"""

from __future__ import annotations

import time

from recon_workload.errors import WorkloadError
from recon_workload.hold import HoldGate
from recon_workload.kafka_io import base_config
from recon_workload.latency import (
    LATE_BOUND_SECONDS,
    LATE_MIN_SECONDS,
    ON_TIME_MAX_SECONDS,
)
from recon_workload.ledger import VERDICTS
from recon_workload.names import RunNames
from recon_workload.registry import SCENARIOS
from recon_workload.runner import ScenarioResult, finish, make_run, reset
from recon_workload.sink import PAYLOAD_COLUMNS, SHA256_COLUMN, TIME_COLUMN
from recon_workload.upsert_sink import KEY_COLUMN as UPSERT_KEY_COLUMN
from recon_workload.upsert_sink import POSITION_COLUMN as UPSERT_POSITION_COLUMN

__all__ = [
    "LATE_BOUND_SECONDS",
    "LATE_MIN_SECONDS",
    "ON_TIME_MAX_SECONDS",
    "PAYLOAD_COLUMNS",
    "SCENARIOS",
    "SHA256_COLUMN",
    "TIME_COLUMN",
    "UPSERT_KEY_COLUMN",
    "UPSERT_POSITION_COLUMN",
    "HoldGate",
    "VERDICTS",
    "ScenarioResult",
    "WorkloadError",
    "remove_run",
    "run_scenario",
]


def run_scenario(
    name: str,
    *,
    messages: int = 200,
    partitions: int = 3,
    seed: int = 0,
    run_tag: str | None = None,
    progress: bool = True,
    hold: HoldGate | None = None,
    **fault_rates: float,
) -> ScenarioResult:
    """Run one scenario for real and write its ledger.

    :param name: a key of :data:`SCENARIOS`.
    :param messages: good messages to produce (bad_records adds its four bad ones).
    :param partitions: partitions of every topic the run creates.
    :param seed: seeds payloads and fault choices; timing can still vary what happens, and the
        ledger records what did.
    :param run_tag: names the run's topic, group and tables; re-using a tag replaces that run.
    :param progress: print progress lines on stderr.
    :param hold: keeps the scenario's long transaction open until released, so a caller can
        reconcile meanwhile (scenarios that hold one: ``concurrent_writers``).
    :param fault_rates: override the scenario's fault parameters (``recon-workload list``).
    :raises WorkloadError: unknown scenario or parameter, or a step of the run failed.
    """
    scenario = SCENARIOS.get(name)
    if scenario is None:
        raise WorkloadError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    unknown = sorted(set(fault_rates) - set(scenario.defaults))
    if unknown:
        raise WorkloadError(
            f"scenario {name} has no parameter {', '.join(unknown)}; "
            f"it takes: {', '.join(scenario.defaults)}"
        )
    if hold is not None and not scenario.takes_hold:
        holding = ", ".join(s.name for s in SCENARIOS.values() if s.takes_hold)
        raise WorkloadError(f"scenario {name} holds no transaction open; these do: {holding}")
    rates = {k: float(v) for k, v in {**scenario.defaults, **fault_rates}.items()}
    started = time.monotonic()
    run = make_run(name, messages, partitions, seed, run_tag, rates, progress, hold)
    reset(run.names, run.conf)
    if scenario.cleanup is not None:
        scenario.cleanup(run.names)
    outcome = scenario.body(run)
    result = finish(run, outcome, started)
    run.progress.step(f"done in {result.seconds:.1f} s: {result.summary}")
    return result


def remove_run(scenario: str, run_tag: str) -> None:
    """Delete what a run left behind: its topics, consumer groups, sink tables and ledger rows.

    :param scenario: the run's scenario name.
    :param run_tag: the run's tag (``ScenarioResult.scenario_run`` is ``<scenario>-<tag>``).
    """
    names = RunNames(scenario, run_tag)
    reset(names, base_config())
    found = SCENARIOS.get(scenario)
    if found is not None and found.cleanup is not None:
        found.cleanup(names)
