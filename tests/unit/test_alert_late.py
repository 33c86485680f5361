"""The alert of a run with ``late`` deliveries (issue 19): the late samples with their latency and
bound, the repair hint, the tolerance in words, and the run's latency line in every channel; and
``alert_for_run`` reading the latency row and the samples' details from the results tables.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fixtures.alert_results import FakeResults, alert_from, run_row

from recon.alert.content import Alert, build_alert, latency_line
from recon.alert.formats import email_content, webhook_payload
from recon.alert.hints import repair_hint
from recon.model import details
from recon.model.details import late_figures
from recon.validation import ValidationOutcome

pytestmark = pytest.mark.unit

LATENCY = {
    "bound_ms": 2000,
    "overall": {"messages": 1000, "negative": 0, "min_ms": 12, "p50_ms": 150, "p95_ms": 1900,
                "p99_ms": 2400, "max_ms": 3100},
    "partitions": {},
}  # fmt: skip


def _late(message_id: str, partition: int, offset: int, latency_ms: int) -> dict[str, Any]:
    return {
        "message_id": message_id, "topic": "orders", "partition": partition, "offsets": [offset],
        "sink_keys": [f"s{offset}"], "sink_count": 1,
        "detail": details.LATE % (latency_ms, 2000),
    }  # fmt: skip


def _outcome(rule: str = "late_ratio", allowed: float = 0.01, observed: int = 2) -> Any:
    return ValidationOutcome(
        passed=False,
        failures=[{"expectation": "expect_column_values_to_not_be_in_set", "rule": rule,
                   "verdict": "late", "observed": observed, "allowed": allowed}],
        data_docs_path="/tmp/none.html",
        validation_id="exactly_once/r1/t/recon_results-x",
    )  # fmt: skip


def _alert(latency: dict[str, Any] | None = LATENCY, **outcome: Any) -> Alert:
    samples = [_late("slow-1", 0, 40, 2500), _late("slow-2", 3, 41, 3100)]
    return build_alert(
        pipeline="payments",
        semantics="exactly_once",
        run_id="r1",
        summary={"counts": {"delivered": 998, "late": 2}, "samples": {"late": samples},
                 "latency": latency},
        outcome=_outcome(**outcome),
    )  # fmt: skip


def test_late_samples_show_their_latency_and_the_bound() -> None:
    text = _alert().text()
    assert "late: 2 (allowed up to 1.00% of 1000 judged messages)" in text
    assert "  - slow-1  at orders/0@40  sink keys s40  latency 2500 ms (bound 2000 ms)\n" in text
    assert "  - slow-2  at orders/3@41  sink keys s41  latency 3100 ms (bound 2000 ms)\n" in text


def test_the_late_repair_hint_names_the_partitions_the_consumer_lag_and_the_bound() -> None:
    (report,) = _alert().reports
    assert "orders/0 offset 40; orders/3 offset 41" in report.hint
    for words in ("consumer", "lag", "latency.max_seconds", "nothing to repair"):
        assert words in report.hint, words
    # not the hint of another verdict, nor the fallback for an unknown one
    assert report.hint == repair_hint("late", [_late("slow-1", 0, 40, 2500),
                                               _late("slow-2", 3, 41, 3100)])  # fmt: skip
    assert "reconciler bug" not in report.hint


def test_late_from_the_contract_reads_as_a_ratio_not_as_forbidden_by_the_semantic() -> None:
    # a run's own violations name the verdict as the rule (recon.run.outcome.judged_outcome)
    (report,) = _alert(rule="late", allowed=0.0).reports
    assert report.allowed == "allowed up to 0.00% of 1000 judged messages"


def test_the_latency_line_goes_under_the_title_in_the_email_and_the_webhook() -> None:
    alert = _alert()
    line = "latency p50/p95/p99/max: 150/1900/2400/3100 ms (bound 2000 ms)"
    assert alert.latency == line
    assert alert.text().splitlines()[:3] == [alert.title, "", line]
    body = email_content(alert).text
    assert line in body
    payload = webhook_payload(alert)
    assert line in payload["text"]
    sections = [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]
    assert sections[1] == line  # after the run, before the verdicts


def test_no_latency_line_without_figures() -> None:
    alert = _alert(latency=None)
    assert alert.latency is None and "latency p50" not in alert.text()
    assert "latency p50" not in json.dumps(webhook_payload(alert))
    # a summary of another shape costs the line, never the alert
    assert latency_line({"overall": {"p50_ms": "soon"}}) is None
    assert latency_line({"bound_ms": 5, "overall": {}}) is None


def test_the_latency_line_counts_negative_latencies_and_says_when_there_is_no_bound() -> None:
    skewed = {"bound_ms": None, "overall": {**LATENCY["overall"], "negative": 7, "p50_ms": -20}}
    assert latency_line(skewed) == (
        "latency p50/p95/p99/max: -20/1900/2400/3100 ms (no bound); 7 of 1000 negative (clock skew)"
    )


def test_only_the_numbers_of_a_detail_reach_the_alert() -> None:
    assert late_figures(details.LATE % (2500, 2000)) == (2500, 2000)
    assert late_figures(details.LATE % (-15, 2000)) == (-15, 2000)
    for other in (None, 17, "no sink row for a committed record", "delivered soon"):
        assert late_figures(other) is None
    # a detail that is not the reconciler's wording is not shown at all
    sample = {**_late("slow-1", 0, 40, 2500), "detail": "card 4111-1111 <!channel>"}
    alert = build_alert(
        pipeline="payments", semantics="exactly_once", run_id="r1",
        summary={"counts": {"late": 1}, "samples": {"late": [sample]}}, outcome=_outcome(),
    )  # fmt: skip
    assert "4111" not in alert.text() and "channel" not in alert.text()
    assert "  - slow-1  at orders/0@40  sink keys s40\n" in alert.text()


# --- alert_for_run: what it reads from the results tables ---------------------------------------


def _for_run(monkeypatch: pytest.MonkeyPatch, measured: bool) -> tuple[dict[str, Any], Alert]:
    failures = [{"verdict": "late", "rule": "late_ratio", "observed": 1, "allowed": 0.0}]
    latency = (1000, 2, -30, 150, 1900, 2400, 3100, 2000, "CreateTime")
    db = FakeResults(
        run_row({"delivered": 9, "late": 1}, failures),
        [("slow-1", "orders", 0, [40], ["s40"], 1, details.LATE % (2500, 2000))],
        latency if measured else None,
    )
    summary, alert = alert_from(monkeypatch, db, "payments", "exactly_once")
    assert [p for q, p in db.queries if "FROM recon.latency" in q] == [("payments", "r1")]
    return summary, alert


def test_alert_for_run_reads_the_run_latency_and_the_late_details(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary, alert = _for_run(monkeypatch, measured=True)
    assert summary["latency"]["overall"]["p99_ms"] == 2400
    assert summary["latency"]["timestamp_type"] == "CreateTime"
    assert summary["samples"]["late"][0]["detail"] == details.LATE % (2500, 2000)
    assert alert.latency == (
        "latency p50/p95/p99/max: 150/1900/2400/3100 ms (bound 2000 ms); "
        "2 of 1000 negative (clock skew)"
    )
    assert "latency 2500 ms (bound 2000 ms)" in alert.text()


def test_alert_for_run_of_a_run_without_latency_sends_without_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary, alert = _for_run(monkeypatch, measured=False)
    assert summary["latency"] is None and alert.latency is None
    assert "latency 2500 ms" in alert.text()  # the samples still carry their figures
