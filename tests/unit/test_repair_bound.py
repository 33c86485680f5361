"""The bound on what a repair plan deletes (issue 77): ``repair.max_deletes`` and
``repair.max_delete_ratio``, their defaults and validation, and which key a plan exceeds (the
real stack: ``tests/integration/test_repair_safety.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import RepairSpec, parse_pipelines
from recon.repair.trust import over_bound

pytestmark = pytest.mark.unit


def test_the_default_bound_is_a_tenth_of_the_table_and_a_thousand_rows() -> None:
    assert (RepairSpec().max_deletes, RepairSpec().max_delete_ratio) == (1000, 0.1)
    assert parse_pipelines(doc())["payments"].repair is None  # undeclared: the default applies
    declared = parse_pipelines(doc(repair={"max_deletes": 5, "max_delete_ratio": 0.5}))
    spec = declared["payments"].repair
    assert spec is not None and (spec.max_deletes, spec.max_delete_ratio) == (5, 0.5)
    assert spec.sink_columns == ()  # a bound alone: the repair still replays records only


@pytest.mark.parametrize(
    ("deletes", "rows", "exceeded"),
    [
        (0, 0, None),
        (10, 100, None),  # each limit itself is allowed
        (11, 100, "repair.max_delete_ratio is 0.1"),
        (1, 0, "repair.max_delete_ratio is 0.1"),  # rows the table no longer counts
        (1000, 10_000, None),
        (1001, 1_000_000, "repair.max_deletes is 1000"),
    ],
)
def test_a_plan_above_either_limit_names_the_key(
    deletes: int, rows: int, exceeded: str | None
) -> None:
    assert over_bound(deletes, rows, RepairSpec()) == exceeded


def test_a_zero_bound_lets_no_delete_through_unasked() -> None:
    assert over_bound(1, 10**9, RepairSpec(max_deletes=0)) == "repair.max_deletes is 0"
    assert over_bound(0, 10, RepairSpec(max_deletes=0, max_delete_ratio=0.0)) is None


@pytest.mark.parametrize(
    ("repair", "said"),
    [
        ({"max_deletes": -1}, "repair.max_deletes: must be 0 or more, got -1"),
        ({"max_deletes": "5"}, "repair.max_deletes: expected a whole number, got a string"),
        ({"max_delete_ratio": 2}, "repair.max_delete_ratio: must be between 0 and 1, got 2"),
        ({"max_delete_ratio": True}, "repair.max_delete_ratio: expected a number between 0"),
        ({"max_rows": 5}, "repair.max_rows: unknown key"),
    ],
)
def test_a_wrong_bound_is_named_with_pipeline_and_key(repair: dict[str, Any], said: str) -> None:
    (error,) = errors_of(doc(repair=repair))
    assert error.startswith("pipelines.yaml: pipeline 'payments': ") and said in error, error
