"""What ``recon run`` prints of a run's summary: the lines a declared check adds."""

from __future__ import annotations

import pytest

from recon.cli import _format_summary
from recon.outcome import RunSummary

pytestmark = pytest.mark.unit


def _summary(**extra: object) -> RunSummary:
    return RunSummary(
        pipeline="accounts", run_id="r1", semantics="at_least_once", status="passed",
        counts={"delivered": 3}, contract_passed=True, violations=[], windows=[], rewinds=[],
        discrepancies=0, sink_rows_scanned=3, duration_seconds=1.0, ledger_path="x",
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_records_without_an_upsert_key_are_said() -> None:
    text = _format_summary(_summary(unordered={"records": 2, "sink_rows": 1}))
    assert (
        "no order check for 2 records without an upsert key or position and 1 sink rows "
        "without one" in text
    )


def test_keys_with_several_rows_are_said() -> None:
    text = _format_summary(_summary(unordered={"records": 0, "sink_rows": 0, "shared_keys": 3}))
    assert "3 keys have more than one row in the upsert sink" in text
    assert "no order check" not in text


def test_nothing_is_said_when_every_record_has_one() -> None:
    assert "order check" not in _format_summary(_summary(unordered={"records": 0, "sink_rows": 0}))
    assert "order check" not in _format_summary(_summary())
