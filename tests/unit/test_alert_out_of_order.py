"""The alert of a run with ``out_of_order`` records (issue 19, part 3): the samples name the key
and both positions read back from their detail (the key escaped like a messageId: it is the
user's data), the repair hint says what to check and which newest record of each key to re-apply,
the allowance reads by the claimed semantic; ``recon run`` prints an out_of_order sample's
detail; and ``alert_for_run`` carries the details from the results tables to the alert.
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
from recon.model import details
from recon.model.details import out_of_order_positions
from recon.run.outcome import RunSummary
from recon.validation import ValidationOutcome

pytestmark = pytest.mark.unit

# A key is the user's data: it may hold markup, a mention, a line break, even the format's words.
CRAFTED = "note\n<!channel> *bold* `x`"


def _stale(
    message_id: str,
    offset: int,
    key: str,
    held: int,
    *,
    partition: int = 0,
    newest: int | None = None,
) -> dict[str, Any]:
    """The newest record of ``key`` (at ``offset``, its position unless ``newest`` says), whose
    sink row holds position ``held``: no sink row of its own."""
    return {
        "message_id": message_id, "topic": "accounts", "partition": partition,
        "offsets": [offset], "sink_keys": [], "sink_count": 0,
        "detail": details.OUT_OF_ORDER % (key, held, offset if newest is None else newest),
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
    return [_stale("o-1", 2, "A", 0), _stale("o-2", 9, "B", 5, partition=3, newest=12)]


# --- recon.model.details: the key and positions read back by the format that wrote them -------


def test_the_key_and_both_positions_are_read_back_from_the_format() -> None:
    assert out_of_order_positions(details.OUT_OF_ORDER % ("A", 0, 2)) == ("A", 0, 2)
    # a version field may be negative; a key may be empty
    assert out_of_order_positions(details.OUT_OF_ORDER % ("", -3, 7)) == ("", -3, 7)
    # one part of a detail the reconciler joins with "; ", wherever it stands
    joined = "first; " + details.OUT_OF_ORDER % ("acc-1", 4, 6) + "; read again"
    assert out_of_order_positions(joined) == ("acc-1", 4, 6)
    for other in (None, 17, "", details.SUPERSEDED % ("A", 2), details.LATE % (2500, 2000),
                  details.MISMATCHED % "amount", "no sink row for a committed record",
                  details.OUT_OF_ORDER.replace("%d", "x") % "A"):  # fmt: skip
        assert out_of_order_positions(other) is None, other


def test_a_key_holding_the_formats_own_words_keeps_them() -> None:
    # the key comes first and may hold anything: only the figures that end the part are positions
    key = "x; y holds position 1, older than this newest record's 9; z\nw"
    assert out_of_order_positions(details.OUT_OF_ORDER % (key, 3, 4)) == (key, 3, 4)


# --- the alert ----------------------------------------------------------------------------------


def test_out_of_order_samples_name_the_key_and_both_positions() -> None:
    text = _alert({"out_of_order": _two()}).text()
    assert "out_of_order: 2 (forbidden under exactly_once)" in text
    assert "  - o-1  at accounts/0@2  key A  row holds position 0, newest 2\n" in text
    assert "  - o-2  at accounts/3@9  key B  row holds position 5, newest 12\n" in text


def test_the_out_of_order_repair_hint_says_what_to_check_and_what_to_re_apply() -> None:
    (report,) = _alert({"out_of_order": _two()}).reports
    for words in ("stale overwrite", "replaying or retrying old records without a version check",
                  "two consumers or writers racing on one key",
                  "`WHERE excluded.position > row.position`"):  # fmt: skip
        assert words in report.hint, words
    # the newest record of each key, at its Kafka position, and what its row holds instead
    assert report.hint.endswith(
        "re-apply the newest record of each key: key A: accounts/0 offset 2 (its row holds "
        "position 0); key B: accounts/3 offset 9 (its row holds position 5)."
    )
    # not the hint of another verdict, nor the fallback for an unknown one
    assert report.hint == repair_hint("out_of_order", _two())
    assert "reconciler bug" not in report.hint


def test_samples_without_their_key_still_name_the_records_to_re_apply() -> None:
    samples = [{**s, "detail": "something else"} for s in _two()]
    alert = _alert({"out_of_order": samples})
    assert "  - o-1  at accounts/0@2\n" in alert.text()
    (report,) = alert.reports
    assert report.hint.endswith(
        "re-apply the newest record of each key: accounts/0 offset 2; accounts/3 offset 9."
    )


def test_keys_are_escaped_like_message_ids_in_every_channel() -> None:
    alert = _alert({"out_of_order": [_stale("o-1", 2, CRAFTED, 0)]})
    text = alert.text()
    shown = "`note\\n<!channel> *bold* \\x60x\\x60`"
    assert f"key {shown}  row holds position 0, newest 2\n" in text
    (report,) = alert.reports
    assert f"key {shown}: accounts/0 offset 2" in report.hint
    # no line of the alert starts inside a key, nor does a mention reach Slack
    assert "\n<!channel>" not in text
    payload = json.dumps(webhook_payload(alert))
    assert "<!channel>" not in payload and "&lt;!channel&gt;" in payload
    body = email_content(alert).text
    assert "\n<!channel>" not in body


def test_only_the_key_and_positions_of_a_detail_reach_the_alert() -> None:
    # a superseded record's detail (a delivered one) on another verdict's sample says nothing
    lost = {**_stale("l-1", 3, "A", 2), "detail": details.SUPERSEDED % ("A <!channel>", 2)}
    text = _alert({"lost": [lost]}, semantics="at_least_once").text()
    assert "  - l-1  at accounts/0@3\n" in text and "channel" not in text


@pytest.mark.parametrize(
    ("semantics", "rule", "allowed", "words"),
    [
        # the contract's own violations name the bare verdict as the rule
        ("exactly_once", "out_of_order", 0.0, "forbidden under exactly_once"),
        ("at_least_once", "out_of_order", 0.001, "allowed up to 0.10% of 1000 judged messages"),
        ("at_most_once", "out_of_order", 0.0, "allowed up to 0.00% of 1000 judged messages"),
        # the checkpoint's rules say it in their names
        ("at_most_once", "out_of_order_ratio", 0.01, "allowed up to 1.00% of 1000 judged messages"),
        ("exactly_once", "out_of_order_forbidden", 0.0, "forbidden under exactly_once"),
    ],
)
def test_the_allowance_reads_by_the_claimed_semantic(
    semantics: str, rule: str, allowed: float, words: str
) -> None:
    failure = _failure("out_of_order", rule, 2, allowed)
    (report,) = _alert({"out_of_order": _two()}, semantics=semantics, failures=[failure]).reports
    assert report.allowed == words


# --- recon run: the sample lines ----------------------------------------------------------------


def test_recon_run_prints_an_out_of_order_samples_detail() -> None:
    summary = RunSummary(
        pipeline="payments", run_id="r1", semantics="at_least_once", status="failed",
        counts={"delivered": 9, "out_of_order": 1, "lost": 1}, contract_passed=False,
        violations=[], windows=[], rewinds=[], discrepancies=2, sink_rows_scanned=10,
        duration_seconds=1.0, ledger_path="/tmp/ledger",
        samples={"out_of_order": [_stale("o-1", 2, "A", 0)],
                 "lost": [{**_stale("l-1", 41, "B", 0), "detail": "no sink row"}]},
    )  # fmt: skip
    lines = cli._format_summary(summary).splitlines()
    assert (
        "  out_of_order: o-1 at accounts[0]@2 sink rows 0; the sink row of key A holds "
        "position 0, older than this newest record's 2"
    ) in lines
    assert "  lost: l-1 at accounts[0]@41 sink rows 0" in lines  # other details stay out


# --- alert_for_run: the details from the results tables -----------------------------------------


def test_alert_for_run_carries_the_out_of_order_details(monkeypatch: pytest.MonkeyPatch) -> None:
    # the contract's own violation: the rule is the bare verdict
    failures = [{"verdict": "out_of_order", "rule": "out_of_order", "observed": 1, "allowed": 0.0}]
    db = FakeResults(
        run_row({"delivered": 9, "out_of_order": 1}, failures),
        [("o-1", "accounts", 0, [2], [], 0, details.OUT_OF_ORDER % ("A", 0, 2))],
    )
    summary, alert = alert_from(monkeypatch, db, "payments", "at_least_once")
    assert summary["samples"]["out_of_order"][0]["detail"] == (details.OUT_OF_ORDER % ("A", 0, 2))
    assert "  - o-1  at accounts/0@2  key A  row holds position 0, newest 2\n" in alert.text()
    (report,) = alert.reports
    assert report.allowed == "allowed up to 0.00% of 10 judged messages"
    assert "key A: accounts/0 offset 2 (its row holds position 0)" in report.hint
