"""The alert of a three-way run (a pipeline with ``source:``): the line of its way from source to
sink in every channel, the ``unpublished`` samples (no topic, partition or offset: their source
row instead) and their repair hint, a source row without a messageId among the ``invalid`` ones;
and ``alert_for_run`` reading the run's funnel and those details from the results tables.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fixtures.alert_results import FakeResults, alert_from, run_row

from recon.alert.content import Alert, build_alert
from recon.alert.formats import email_content, webhook_payload
from recon.alert.funnel import funnel_line, source_row_without_id, unpublished_source
from recon.alert.hints import repair_hint
from recon.alert.slack import slack_payload
from recon.contract.table import CONTRACT
from recon.model import details
from recon.model.verdicts import Verdict
from recon.validation import ValidationOutcome

pytestmark = pytest.mark.unit

FUNNEL: dict[str, Any] = {
    "produced": 6, "published": 4, "committed": 5, "delivered": 5, "unsourced": 1,
    "source_invalid": 0, "source_duplicates": 0,
    "unsourced_sample": [{"message_id": "stray-9", "partition": 2, "offset": 40}],
}  # fmt: skip
LINE = "source → topic → sink: 6 produced, 4 published, 5 committed, 5 delivered; 1 unsourced"
#: The reconciler's answer when it has no hint for a verdict.
NO_HINT = repair_hint("no such verdict", [])
#: A source key written by someone who wants the alert to say something else.
CRAFTED = "row-1\nlost: 0 (all clear) <!channel> `x`"


def _unpublished(message_id: str | None, source_key: str = "outbox-17", rows: int = 1) -> Any:
    # As the run's summary samples a discrepancy row: an unpublished one is in no topic.
    return {
        "message_id": message_id, "topic": None, "partition": None, "offsets": [],
        "sink_keys": [], "sink_count": 0, "detail": details.UNPUBLISHED % (source_key, rows),
    }  # fmt: skip


def _outcome(verdict: str = "unpublished", observed: int = 2, **failure: Any) -> Any:
    return ValidationOutcome(
        passed=False,
        failures=[{"expectation": "expect_column_values_to_not_be_in_set",
                   "rule": f"{verdict}_forbidden", "verdict": verdict, "observed": observed,
                   "allowed": 0, **failure}],
        data_docs_path="/tmp/none.html",
        validation_id="at_least_once/r1/t/recon_results-x",
    )  # fmt: skip


def _alert(
    samples: dict[str, list[dict[str, Any]]] | None = None,
    funnel: dict[str, Any] | None = FUNNEL,
    semantics: str = "at_least_once",
    **outcome: Any,
) -> Alert:
    if samples is None:
        samples = {"unpublished": [_unpublished("order-7"), _unpublished("order-8", "outbox-18")]}
    return build_alert(
        pipeline="orders",
        semantics=semantics,
        run_id="r1",
        summary={"counts": {"delivered": 5, "unpublished": 2}, "samples": samples,
                 "funnel": funnel},
        outcome=_outcome(**outcome),
    )  # fmt: skip


# --- the funnel line ----------------------------------------------------------------------------


def test_the_funnel_line_reads_the_way_from_source_to_sink() -> None:
    assert funnel_line(FUNNEL) == LINE
    more = {**FUNNEL, "source_invalid": 2, "source_duplicates": 1}
    assert funnel_line(more) == (
        f"{LINE}; 2 source rows without a message id; 1 extra source row of ids held more than once"
    )


def test_no_funnel_line_for_a_run_without_a_source_or_of_another_shape() -> None:
    assert funnel_line(None) is None and funnel_line({}) is None
    # a summary of another shape costs the line, never the alert
    assert funnel_line({"produced": "many"}) is None
    assert funnel_line(["produced", 6]) is None  # type: ignore[arg-type]
    alert = _alert(funnel=None)
    assert alert.funnel is None and "source → topic → sink" not in alert.text()


def test_the_funnel_line_goes_under_the_title_in_the_email_the_webhook_and_slack() -> None:
    alert = _alert()
    assert alert.funnel == LINE
    lines = alert.text().splitlines()
    assert lines[:3] == [alert.title, "", LINE]
    body = email_content(alert).text
    assert LINE in body
    blocks = webhook_payload(alert)["blocks"]
    assert blocks[2]["text"]["text"] == LINE  # after the header and the run
    assert LINE in slack_payload(alert)["blocks"][1]["text"]["text"]


def test_the_funnel_line_follows_the_latency_line() -> None:
    latency = {"bound_ms": 2000, "overall": {"messages": 5, "negative": 0, "p50_ms": 1,
                                             "p95_ms": 2, "p99_ms": 3, "max_ms": 4}}  # fmt: skip
    alert = build_alert(
        pipeline="orders", semantics="at_least_once", run_id="r1",
        summary={"counts": {"unpublished": 1}, "samples": {}, "funnel": FUNNEL,
                 "latency": latency},
        outcome=_outcome(observed=1),
    )  # fmt: skip
    text = alert.text()
    assert text.index("latency p50/p95/p99/max") < text.index(LINE)
    payload = json.dumps(webhook_payload(alert), ensure_ascii=False)
    assert payload.count("source → topic → sink") == 2  # the text, and its own block


# --- unpublished samples and their hint ---------------------------------------------------------


def test_unpublished_samples_name_their_source_row_and_no_position() -> None:
    text = _alert().text()
    assert "  - order-7  source row outbox-17\n" in text
    assert "  - order-8  source row outbox-18\n" in text
    assert (
        "None" not in text and " at " not in text.split("unpublished: 2", 1)[1].split("Repair")[0]
    )
    held = _alert({"unpublished": [_unpublished("order-7", rows=2)]}, observed=1).text()
    assert "  - order-7  source row outbox-17 (held 2 times)\n" in held


def test_a_detail_that_is_not_the_reconcilers_wording_is_not_shown() -> None:
    odd = {**_unpublished("order-7"), "detail": "card 4111-1111"}
    text = _alert({"unpublished": [odd]}, observed=1).text()
    assert "  - order-7\n" in text and "4111" not in text


def test_the_unpublished_repair_hint_says_to_publish_again_from_the_source() -> None:
    alert = _alert()
    (report,) = alert.reports
    assert report.hint != NO_HINT
    assert "publish them again from the source" in report.hint
    assert (
        "re-run the outbox relay for order-7 (source row outbox-17), order-8 (source row "
        "outbox-18)" in report.hint
    )
    assert "acks" in report.hint and "retries" in report.hint
    assert "None" not in report.hint
    # forbidden under at_least_once; a ratio of the judged and unpublished ones under at_most_once
    assert report.allowed == "forbidden under at_least_once"
    ratio = _alert(semantics="at_most_once", rule="unpublished_ratio", allowed=0.1)
    assert ratio.reports[0].allowed == "allowed up to 10.00% of 7 judged messages"


def test_more_unpublished_than_shown_point_to_the_full_list() -> None:
    text = _alert(observed=9).text()
    assert "... 2 of 9 shown; all of them: `SELECT" in text
    assert "AND verdict = 'unpublished'`" in text


def test_every_verdict_the_contract_judges_has_a_repair_hint() -> None:
    named = {str(v) for rules in CONTRACT.values() for v in rules}
    assert Verdict.UNPUBLISHED in named
    for verdict in named:
        assert repair_hint(verdict, []) != NO_HINT, verdict


def test_a_crafted_source_key_forges_no_line_link_or_mention() -> None:
    plain = _alert({"unpublished": [_unpublished("order-7")]}, observed=1)
    crafted = _alert({"unpublished": [_unpublished("order-7", CRAFTED)]}, observed=1)
    text = crafted.text()
    assert len(text.splitlines()) == len(plain.text().splitlines())
    assert not any(line.startswith("lost") for line in text.splitlines())
    assert "source row `row-1\\nlost: 0 (all clear) <!channel> \\x60x\\x60`" in text
    assert "<!channel>" not in json.dumps(webhook_payload(crafted))
    assert "<!channel>" not in json.dumps(slack_payload(crafted))


def test_the_detail_readers_take_the_source_key_back() -> None:
    assert unpublished_source(details.UNPUBLISHED % ("outbox-17", 3)) == ("outbox-17", 3)
    # a key holding the format's own words is taken whole
    tricky = "k (of 9 naming it) settled; x"
    assert unpublished_source(details.UNPUBLISHED % (tricky, 1)) == (tricky, 1)
    assert source_row_without_id(details.SOURCE_WITHOUT_ID % "outbox-3") == "outbox-3"
    for other in (None, 17, details.PHANTOM, details.LATE % (1, 2)):
        assert unpublished_source(other) is None and source_row_without_id(other) is None


def test_a_source_row_without_an_id_is_named_among_the_invalid() -> None:
    sample = {
        "message_id": None, "topic": None, "partition": None, "offsets": [], "sink_keys": [],
        "sink_count": 0, "detail": details.SOURCE_WITHOUT_ID % "outbox-3",
    }  # fmt: skip
    alert = _alert({"invalid": [sample]}, verdict="invalid", observed=1)
    text = alert.text()
    assert "  - (no message id)  source row outbox-3\n" in text and "None" not in text
    assert "(source rows outbox-3)" in alert.reports[0].hint
    assert "the source's writer so every row names one" in alert.reports[0].hint
    # an invalid record reads as before
    record = {"message_id": None, "topic": "orders", "partition": 0, "offsets": [5]}
    hint = repair_hint("invalid", [record])
    assert hint.startswith("records or sink rows without a usable messageId (orders/0 offset 5)")


# --- alert_for_run: the funnel and the details from the results tables --------------------------


def test_alert_for_run_reads_the_runs_funnel_and_the_unpublished_details(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failures = [{"verdict": "unpublished", "rule": "unpublished", "observed": 1, "allowed": 0}]
    db = FakeResults(
        run_row({"delivered": 5, "unpublished": 1}, failures, FUNNEL),
        [("order-7", None, None, [], [], 0, details.UNPUBLISHED % ("outbox-17", 1))],
    )
    summary, alert = alert_from(monkeypatch, db, "orders", "at_least_once")
    (run_query,) = [q for q, _ in db.queries if "FROM recon.runs" in q]
    assert "funnel" in run_query
    assert summary["funnel"] == FUNNEL
    assert alert.funnel == LINE
    assert "  - order-7  source row outbox-17\n" in alert.text()
    assert "None" not in alert.text()


def test_alert_for_run_of_a_run_without_a_source_sends_without_the_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failures = [{"verdict": "lost", "rule": "lost", "observed": 1, "allowed": 0}]
    db = FakeResults(
        run_row({"delivered": 5, "lost": 1}, failures),
        [("gone-1", "orders", 0, [7], [], 0, None)],
    )
    summary, alert = alert_from(monkeypatch, db, "orders", "at_least_once")
    assert summary["funnel"] is None and alert.funnel is None
    assert "source → topic → sink" not in alert.text()
