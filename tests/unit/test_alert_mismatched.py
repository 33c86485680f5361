"""The alert of a run with ``mismatched`` deliveries (issue 19, part 2): the samples name the
differing fields read back from their detail (names only, escaped like messageIds), the repair
hint says what to check, the allowance reads by the claimed semantic; a duplicated message whose
copies differ says so; ``recon run`` prints a mismatched sample's detail; and ``alert_for_run``
carries the details from the results tables to the alert.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fixtures.alert_results import FakeResults, alert_from, run_row

from recon import cli
from recon.alert.content import Alert, build_alert
from recon.alert.formats import email_content, webhook_payload
from recon.alert.hints import repair_hint
from recon.config.model import SHA256_FIELD
from recon.model import details
from recon.model.details import differing_fields
from recon.run.outcome import RunSummary
from recon.validation import ValidationOutcome

pytestmark = pytest.mark.unit

# A field name is the pipeline's own: it may hold markup, a mention or a line break.
CRAFTED = "note\n<!channel> *bold* `x`"


def _mismatched(message_id: str, offset: int, *fields: str, partition: int = 0) -> dict[str, Any]:
    return {
        "message_id": message_id, "topic": "orders", "partition": partition, "offsets": [offset],
        "sink_keys": [f"s{offset}"], "sink_count": 1,
        "detail": details.MISMATCHED % ", ".join(fields),
    }  # fmt: skip


def _failure(verdict: str, rule: str, observed: int, allowed: float = 0.0) -> dict[str, Any]:
    return {"expectation": "expect_column_values_to_not_be_in_set", "rule": rule,
            "verdict": verdict, "observed": observed, "allowed": allowed}  # fmt: skip


def _alert(
    samples: dict[str, list[dict[str, Any]]],
    *,
    semantics: str = "exactly_once",
    failures: list[dict[str, Any]] | None = None,
) -> Alert:
    failures = failures or [_failure(v, f"{v}_forbidden", len(s)) for v, s in samples.items()]
    counts = {"delivered": 998, **{v: len(s) for v, s in samples.items()}}
    return build_alert(
        pipeline="payments", semantics=semantics, run_id="r1",
        summary={"counts": counts, "samples": samples},
        outcome=ValidationOutcome(
            passed=False, failures=failures, data_docs_path="/tmp/none.html",
            validation_id=f"{semantics}/r1/t/recon_results-x",
        ),
    )  # fmt: skip


def _two() -> list[dict[str, Any]]:
    return [
        _mismatched("m-1", 40, "amount", "currency"),
        _mismatched("m-2", 41, "customer.id", partition=3),
    ]


# --- recon.model.details: the names read back by the format that wrote them -------------------


def test_the_differing_fields_are_read_back_from_both_formats() -> None:
    assert differing_fields(details.MISMATCHED % "amount, currency") == ("amount", "currency")
    assert differing_fields(details.MISMATCHED % SHA256_FIELD) == (SHA256_FIELD,)
    copies = details.DUPLICATE_COPIES_DIFFER % (2, "amount")
    assert differing_fields(copies) == ("amount",)
    # one part of a detail the reconciler joins with "; ", wherever it stands
    joined = f"3 sink rows, 2 new in this run; {copies}; read again (group reset or replay)"
    assert differing_fields(joined) == ("amount",)
    assert differing_fields("first; " + details.MISMATCHED % "a.b, c") == ("a.b", "c")
    for other in (None, 17, "", details.LATE % (2500, 2000), "no sink row for a committed record",
                  "the payload differs from its record's in: amount"):  # fmt: skip
        assert differing_fields(other) is None, other


# --- the alert ----------------------------------------------------------------------------------


def test_mismatched_samples_name_the_differing_fields() -> None:
    text = _alert({"mismatched": _two()}).text()
    assert "mismatched: 2 (forbidden under exactly_once)" in text
    assert "  - m-1  at orders/0@40  sink keys s40  differs in amount, currency\n" in text
    assert "  - m-2  at orders/3@41  sink keys s41  differs in customer.id\n" in text


def test_the_sha256_mode_names_the_value_and_its_hint_the_raw_bytes() -> None:
    alert = _alert({"mismatched": [_mismatched("m-1", 40, SHA256_FIELD)]})
    assert f"sink keys s40  differs in {SHA256_FIELD}\n" in alert.text()
    (report,) = alert.reports
    assert "raw value bytes" in report.hint and "orders/0 offset 40" in report.hint
    assert "numeric scale" not in report.hint


def test_the_mismatched_repair_hint_says_what_to_check_and_where() -> None:
    (report,) = _alert({"mismatched": _two()}).reports
    assert "orders/0 offset 40; orders/3 offset 41" in report.hint
    for words in ("transformation", "serialisation", "amount, currency, customer.id",
                  "another writer", "numeric scale", "timestamp precision", "rewrite"):  # fmt: skip
        assert words in report.hint, words
    # not the hint of another verdict, nor the fallback for an unknown one
    assert report.hint == repair_hint("mismatched", _two())
    assert "reconciler bug" not in report.hint


def test_field_names_are_escaped_like_message_ids_in_every_channel() -> None:
    alert = _alert({"mismatched": [_mismatched("m-1", 40, CRAFTED, "amount")]})
    text = alert.text()
    shown = "`note\\n<!channel> *bold* \\x60x\\x60`"
    assert f"differs in {shown}, amount\n" in text
    (report,) = alert.reports
    assert shown in report.hint
    # no line of the alert starts inside a field name, nor does a mention reach Slack
    assert "\n<!channel>" not in text
    payload = json.dumps(webhook_payload(alert))
    assert "<!channel>" not in payload and "&lt;!channel&gt;" in payload
    body = email_content(alert).text
    assert "\n<!channel>" not in body


def test_only_the_names_of_a_detail_reach_the_alert() -> None:
    sample = {**_mismatched("m-1", 40, "amount"), "detail": "amount 12.50 != 99.00 <!channel>"}
    text = _alert({"mismatched": [sample]}).text()
    assert "12.50" not in text and "channel" not in text
    assert "  - m-1  at orders/0@40  sink keys s40\n" in text


@pytest.mark.parametrize(
    ("semantics", "rule", "allowed", "words"),
    [
        # the contract's own violations name the bare verdict as the rule
        ("exactly_once", "mismatched", 0.0, "forbidden under exactly_once"),
        ("at_least_once", "mismatched", 0.001, "allowed up to 0.10% of 1000 judged messages"),
        ("at_most_once", "mismatched", 0.0, "allowed up to 0.00% of 1000 judged messages"),
        # the checkpoint's rules say it in their names
        ("at_least_once", "mismatched_ratio", 0.001, "allowed up to 0.10% of 1000 judged messages"),
        ("exactly_once", "mismatched_forbidden", 0.0, "forbidden under exactly_once"),
    ],
)
def test_the_allowance_reads_by_the_claimed_semantic(
    semantics: str, rule: str, allowed: float, words: str
) -> None:
    failure = _failure("mismatched", rule, 2, allowed)
    (report,) = _alert({"mismatched": _two()}, semantics=semantics, failures=[failure]).reports
    assert report.allowed == words


def test_a_duplicated_message_whose_copies_differ_says_so() -> None:
    detail = "3 sink rows, 2 new in this run; " + details.DUPLICATE_COPIES_DIFFER % (2, "amount")
    differ = {"message_id": "d-1", "topic": "orders", "partition": 0, "offsets": [7],
              "sink_keys": ["s7", "s8"], "sink_count": 3, "detail": detail}  # fmt: skip
    same = {**differ, "message_id": "d-2", "sink_keys": ["s9", "s10"], "sink_count": 2,
            "detail": "2 sink rows, 2 new in this run"}  # fmt: skip
    (report,) = _alert({"duplicated": [differ, same]}).reports
    assert report.samples[0].endswith("3 sink rows  copies differ in amount")
    assert report.samples[1].endswith("2 sink rows")
    # which copy is right is not known: the hint does not keep the first one blindly
    assert "d-1: keep one row that matches its record" in report.hint
    assert "d-2: delete s10 (keep s9)" in report.hint
    assert "differ from their record in amount" in report.hint


# --- recon run: the sample lines ----------------------------------------------------------------


def test_recon_run_prints_a_mismatched_samples_detail() -> None:
    summary = RunSummary(
        pipeline="payments", run_id="r1", semantics="at_least_once", status="failed",
        counts={"delivered": 9, "mismatched": 1, "lost": 1}, contract_passed=False,
        violations=[], windows=[], rewinds=[], discrepancies=2, sink_rows_scanned=10,
        duration_seconds=1.0, ledger_path="/tmp/ledger",
        samples={"mismatched": [_mismatched("m-1", 40, "amount", "currency")],
                 "lost": [{**_mismatched("l-1", 41), "detail": "no sink row"}]},
    )  # fmt: skip
    lines = cli._format_summary(summary).splitlines()
    assert (
        "  mismatched: m-1 at orders[0]@40 sink rows 1; payload differs from its record's in: "
        "amount, currency"
    ) in lines
    assert "  lost: l-1 at orders[0]@41 sink rows 1" in lines  # other details stay out


# --- alert_for_run: the details from the results tables -----------------------------------------


def test_alert_for_run_carries_the_mismatched_details(monkeypatch: pytest.MonkeyPatch) -> None:
    # the contract's own violation: the rule is the bare verdict
    failures = [{"verdict": "mismatched", "rule": "mismatched", "observed": 1, "allowed": 0.0}]
    db = FakeResults(
        run_row({"delivered": 9, "mismatched": 1}, failures),
        [("m-1", "orders", 0, [40], ["s40"], 1, details.MISMATCHED % "amount")],
    )
    summary, alert = alert_from(monkeypatch, db, "payments", "at_most_once")
    assert summary["samples"]["mismatched"][0]["detail"] == details.MISMATCHED % "amount"
    assert "  - m-1  at orders/0@40  sink keys s40  differs in amount\n" in alert.text()
    (report,) = alert.reports
    assert report.allowed == "allowed up to 0.00% of 10 judged messages"
