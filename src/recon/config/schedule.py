"""Which ``schedule`` values a pipeline may declare: exactly those Airflow accepts for a DAG.

Airflow 3 turns a DAG's string ``schedule`` into a timetable in
``airflow.sdk.definitions.dag._create_timetable``: ``@once`` and ``@continuous`` name timetables
of their own; any other string is a cron timetable, whose expression is first looked up in
Airflow's preset table (``@hourly`` ... ``@yearly``) and then validated by constructing a
``croniter`` over it (``CronMixin.validate``; the DAG bag calls it before it accepts a DAG). This
module does the same with the same library, without importing Airflow (this package also runs in
Spark jobs and a CLI where Airflow is absent). So croniter's own syntax is accepted too: 6 and 7
fields (seconds, year), ``L``, ``W``, ``#``, ``?``, month and day names, reversed ranges, and
croniter's aliases such as ``@midnight``; text Airflow refuses (a blank around a preset, ``H``
without a hash id) is refused here. ``tests/unit/test_config_schedule.py`` compares the preset
table and the verdicts with Airflow's own whenever Airflow is importable.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from croniter import croniter

#: Schedules that are not cron at all: one run, or a new run as soon as the last one ends.
#: (The DAG factory sets ``max_active_runs=1``, which ``@continuous`` requires.)
SPECIAL_SCHEDULES: tuple[str, ...] = ("@once", "@continuous")

#: Airflow's preset table (``airflow.utils.dates.cron_presets``, kept in sync by Airflow with
#: ``airflow.sdk.definitions.timetables._cron.CRON_PRESETS``), copied here.
CRON_PRESETS: Mapping[str, str] = MappingProxyType(
    {
        "@hourly": "0 * * * *",
        "@daily": "0 0 * * *",
        "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *",
        "@quarterly": "0 0 1 */3 *",
        "@yearly": "0 0 1 1 *",
    }
)

#: Every named schedule, in the order error messages list them.
SCHEDULE_PRESETS: tuple[str, ...] = (*SPECIAL_SCHEDULES, *CRON_PRESETS)

# croniter reads 5 fields as minute..day of week, 6 adds seconds, 7 adds seconds and year.
_FIELD_COUNTS = (5, 6, 7)


def cron_expression(schedule: str) -> str | None:
    """The cron expression Airflow runs for ``schedule``: presets resolved, the rest as written.

    :param schedule: a ``schedule`` value.
    :returns: ``None`` for ``@once`` and ``@continuous``, which are not cron schedules.
    """
    if schedule in SPECIAL_SCHEDULES:
        return None
    return CRON_PRESETS.get(schedule, schedule)


def cron_problem(expression: str) -> str | None:
    """Why Airflow would refuse ``expression`` as a DAG's schedule, or ``None`` when it accepts it.

    :param expression: the ``schedule`` value, exactly as declared (Airflow strips nothing).
    """
    cron = cron_expression(expression)
    if cron is None:
        return None
    try:
        croniter(cron)
    except ValueError as exc:  # croniter's errors are ValueErrors; Airflow refuses them all
        return _explain(expression, exc)
    return None


def _explain(expression: str, exc: ValueError) -> str:
    presets = ", ".join(SCHEDULE_PRESETS)
    if expression.startswith("@"):
        return f"unknown preset {expression!r} (expected one of {presets})"
    if len(expression.split()) not in _FIELD_COUNTS:
        return (
            f"expected 5 cron fields (6 or 7 with seconds and year) or a preset such as "
            f"@hourly, got {expression!r}"
        )
    return f"not a cron expression Airflow accepts: {expression!r} ({exc})"
