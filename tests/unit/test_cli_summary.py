"""What ``recon run`` prints of a run's summary: the lines a declared check adds."""

from __future__ import annotations

import pytest

from recon.cli import _format_summary
from recon.run.outcome import RunSummary

pytestmark = pytest.mark.unit


def _summary(**extra: object) -> RunSummary:
    return RunSummary(
        pipeline="accounts", run_id="r1", semantics="at_least_once", status="passed",
        counts={"delivered": 3}, contract_passed=True, violations=[], windows=[], rewinds=[],
        discrepancies=0, sink_rows_scanned=3, duration_seconds=1.0, ledger_path="x",
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_what_was_not_checked_is_said_in_words() -> None:
    text = _format_summary(
        _summary(unchecked={"unordered_records": 2, "unordered_sink_rows": 1, "shared_keys": 3,
                            "untimed_sink_rows": 4})
    )  # fmt: skip
    assert (
        "not checked: 4 sink rows with a null time column (no latency); 2 records without an "
        "upsert key or position (no order check); 1 sink rows without an upsert key or position "
        "(no order check); 3 upsert keys with more than one sink row" in text
    )


def test_nothing_is_said_when_everything_was_checked() -> None:
    assert "not checked" not in _format_summary(_summary(unchecked={}))
    assert "not checked" not in _format_summary(_summary())


def test_an_outcome_keeps_only_the_reasons_that_occurred() -> None:
    from recon.store import RunOutcome

    outcome = RunOutcome(
        status="passed", counts={}, contract_passed=True, violations=[], ledger_path="x",
        sink_rows_scanned=0, duration_seconds=0.0, topic_duplicates=0, untimed=(0, 5),
        unordered=(1, 0, 0),
    )  # fmt: skip
    assert outcome.unchecked == {"untimed_sink_rows": 5, "unordered_records": 1}


def test_source_rows_without_a_time_are_counted_and_said() -> None:
    from recon.store import RunOutcome

    outcome = RunOutcome(
        status="passed", counts={}, contract_passed=True, violations=[], ledger_path="x",
        sink_rows_scanned=0, duration_seconds=0.0, topic_duplicates=0, untimed_source=2,
    )  # fmt: skip
    assert outcome.unchecked == {"untimed_source_rows": 2}
    text = _format_summary(_summary(unchecked=outcome.unchecked))
    assert (
        "not checked: 2 source rows with a null or infinite time column (no run judges them)"
        in text
    )


def test_ids_from_the_data_cannot_drive_the_terminal() -> None:
    crafted = "m1\x1b[2J\x1b[31m\nlost: forged line\r"
    sample = {"message_id": crafted, "topic": "t\x1b]0;title\x07", "partition": 0, "offsets": [4],
              "sink_count": 0, "detail": "key \x1b[1mA\x1b[0m: stale"}  # fmt: skip
    summary = _summary(samples={"out_of_order": [sample], "lost": [sample]})
    summary.run_id = "r\x1b[31m1"
    text = _format_summary(summary)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b[2J" in text and "\\n" in text
    # one line per sample: the crafted newline was not written as one
    assert sum(line.startswith("  lost: ") for line in text.splitlines()) == 1


def test_a_three_way_run_says_its_way_and_where_its_unpublished_messages_are() -> None:
    funnel = {"produced": 6, "published": 4, "committed": 5, "delivered": 5, "unsourced": 1,
              "source_invalid": 0, "source_duplicates": 0, "unsourced_sample": []}  # fmt: skip
    sample = {"message_id": "a5", "topic": None, "partition": None, "offsets": [],
              "sink_count": 0, "detail": "source row 5 (of 1 naming it) settled; no committed "
              "record of the topic carries it"}  # fmt: skip
    text = _format_summary(_summary(funnel=funnel, samples={"unpublished": [sample]}))
    assert "source → topic → sink: 6 produced, 4 published, 5 committed, 5 delivered" in text
    line = next(x for x in text.splitlines() if x.startswith("  unpublished: "))
    assert "None" not in line and "no position in the topic" in line and "source row 5" in line
