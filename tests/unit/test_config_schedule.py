"""Schedules: accepted exactly when Airflow accepts them, judged without importing Airflow.

``recon.config.schedule`` copies Airflow's preset table and calls croniter as Airflow does. The
tests marked *parity* compare both with Airflow itself, so that an Airflow upgrade that changes
either shows up here; they are skipped only where Airflow is not installed.
"""

from __future__ import annotations

import inspect
import re
from datetime import datetime

import pytest
from fixtures.schedules import ACCEPTED_SCHEDULES, REFUSED_SCHEDULES

from recon.config import CRON_PRESETS, SCHEDULE_PRESETS, SPECIAL_SCHEDULES, cron_problem
from recon.config.schedule import cron_expression

pytestmark = pytest.mark.unit


def _airflow_accepts(schedule: str) -> bool:
    """Whether Airflow builds and validates a DAG with this schedule, as the DAG factory builds
    it (``max_active_runs=1``, which ``@continuous`` requires)."""
    from airflow.sdk import DAG

    try:
        DAG(
            dag_id="schedule_parity",
            schedule=schedule,
            start_date=datetime(2026, 1, 1),
            catchup=False,
            max_active_runs=1,
        ).validate()
    except Exception:  # whatever Airflow raises, it refuses the DAG
        return False
    return True


@pytest.mark.parametrize("expression", ACCEPTED_SCHEDULES + REFUSED_SCHEDULES)
def test_parity_judged_as_airflow_judges(expression: str) -> None:
    assert (cron_problem(expression) is None) == _airflow_accepts(expression)


@pytest.mark.parametrize("expression", ACCEPTED_SCHEDULES)
def test_accepted(expression: str) -> None:
    assert cron_problem(expression) is None


@pytest.mark.parametrize("expression", REFUSED_SCHEDULES)
def test_refused(expression: str) -> None:
    assert cron_problem(expression) is not None


def test_parity_preset_table_is_airflows() -> None:
    from airflow.sdk.definitions.timetables import _cron as sdk_cron
    from airflow.utils import dates

    assert dict(CRON_PRESETS) == dates.cron_presets
    assert dict(CRON_PRESETS) == sdk_cron.CRON_PRESETS


def test_parity_special_schedules_are_airflows() -> None:
    # Airflow names its non-cron schedules in the function that turns a DAG's schedule into a
    # timetable; every other string goes to croniter.
    from airflow.sdk.definitions import dag as dag_module

    source = inspect.getsource(dag_module._create_timetable)
    assert sorted(set(re.findall(r"\"(@\w+)\"", source))) == sorted(SPECIAL_SCHEDULES)


def test_presets_resolve_to_airflows_cron_and_specials_to_none() -> None:
    assert cron_expression("@quarterly") == "0 0 1 */3 *"
    assert cron_expression("@daily") == "0 0 * * *"
    assert cron_expression("*/5 * * * *") == "*/5 * * * *"
    assert [cron_expression(s) for s in SPECIAL_SCHEDULES] == [None, None]


def test_an_unknown_preset_lists_every_preset() -> None:
    problem = cron_problem("@fortnightly") or ""
    assert problem.startswith("unknown preset '@fortnightly' (expected one of @once, ")
    assert all(preset in problem for preset in SCHEDULE_PRESETS)


def test_a_wrong_field_count_says_how_many_fields() -> None:
    assert cron_problem("* * * *") == (
        "expected 5 cron fields (6 or 7 with seconds and year) or a preset such as @hourly, "
        "got '* * * *'"
    )


def test_a_bad_field_carries_croniters_reason() -> None:
    problem = cron_problem("0 25 * * *") or ""
    assert problem.startswith("not a cron expression Airflow accepts: '0 25 * * *' (")
    assert "out of range" in problem
