"""What an alert says (recon.alert.content, .hints, .formats): the counts, samples and repair hints
of a broken run, and data-derived strings (messageIds, sink keys, run ids) that cannot forge
lines, links or mentions in the email or the Slack-compatible webhook text (issue 22, security)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from recon.alert.content import Alert, build_alert
from recon.alert.formats import email_content, webhook_payload
from recon.validation import ValidationOutcome

pytestmark = pytest.mark.unit

TOPIC = "orders"
# A messageId written by someone who wants the alert to say something else.
CRAFTED = (
    "evil-1\nduplicated: 0 (all clear)\r\n<!channel> <@U024BE7LH> [click](https://evil.example/x)"
    " *bold* `code` \u202eRTL\u2028next\x00\x1b[31m"
)


def _failure(verdict: str, observed: int) -> dict[str, Any]:
    return {
        "expectation": "expect_column_values_to_not_be_in_set",
        "rule": f"{verdict}_forbidden",
        "verdict": verdict,
        "observed": observed,
        "allowed": 0,
    }


def _alert(
    samples: dict[str, list[dict[str, Any]]],
    observed: dict[str, int] | None = None,
    run_id: str = "scheduled__2026-03-01T00:00:00+00:00",
) -> Alert:
    observed = observed or {v: len(s) for v, s in samples.items()}
    outcome = ValidationOutcome(
        passed=False,
        failures=[_failure(v, n) for v, n in observed.items()],
        data_docs_path="/srv/gx/uncommitted/data_docs/local_site/validations/x.html",
        validation_id=f"exactly_once/{run_id}/20260301T000000Z/recon_results-x",
    )
    counts = {"delivered": 10, **observed}
    return build_alert(
        pipeline="payments",
        semantics="exactly_once",
        run_id=run_id,
        summary={"counts": counts, "samples": samples},
        outcome=outcome,
    )


def _lost(message_id: str, offset: int = 17) -> dict[str, Any]:
    return {"message_id": message_id, "topic": TOPIC, "partition": 1, "offsets": [offset]}


def _mrkdwn_texts(payload: dict[str, Any]) -> list[str]:
    """Every string of the webhook payload that a Slack-like receiver renders as markup."""
    texts = [payload["text"]]
    for block in payload["blocks"]:
        if block["type"] == "section":
            texts.append(block["text"]["text"])
        elif block["type"] == "context":
            texts.extend(e["text"] for e in block["elements"])
    return texts


def _outside_code_spans(text: str) -> str:
    return re.sub(r"`[^`\n]*`", "", text)


def test_ordinary_ids_read_as_before() -> None:
    alert = _alert(
        {
            "lost": [_lost("gone-1")],
            "duplicated": [
                {"message_id": "twice-1", "topic": TOPIC, "partition": 0, "offsets": [18],
                 "sink_keys": ["s18", "s19"], "sink_count": 2},
            ],
        }
    )  # fmt: skip
    text = alert.text()
    assert alert.title.startswith("Delivery contract broken: pipeline payments claims")
    assert "  - gone-1  at orders/1@17\n" in text
    assert "replay these committed records to the sink: orders/1 offset 17." in text
    assert "  - twice-1  at orders/0@18  sink keys s18, s19  2 sink rows\n" in text
    assert "twice-1: delete s19 (keep s18)" in text
    payload = webhook_payload(alert)
    assert payload["text"] == text
    assert "• gone-1  at orders/1@17" in json.dumps(payload["blocks"], ensure_ascii=False)


def test_a_crafted_message_id_forges_no_line_in_the_email_or_the_webhook_text() -> None:
    plain = _alert({"lost": [_lost("gone-1")]})
    crafted = _alert({"lost": [_lost(CRAFTED)]})

    body = email_content(crafted).text
    for text in (crafted.text(), body, webhook_payload(crafted)["text"]):
        # exactly the lines of the same alert with an ordinary id: nothing added, nothing split
        assert len(text.splitlines()) == len(plain.text().splitlines())
        assert not any(line.startswith("duplicated") for line in text.splitlines())
        for char in ("\r", "\x00", "\x1b", "\u2028", "\u202e"):
            assert char not in text, repr(char)
        # the id is still recognisable, its control characters shown escaped
        assert "evil-1\\nduplicated: 0 (all clear)\\r\\n" in text


def test_a_crafted_message_id_makes_no_link_or_mention_in_slack_markup() -> None:
    payload = webhook_payload(_alert({"lost": [_lost(CRAFTED)]}))
    texts = _mrkdwn_texts(payload)
    every = "\n".join(texts)
    # Slack's control characters are escaped: no <!channel>, <@user> or <url|label> from data
    assert "<!channel>" not in every and "<@U024BE7LH>" not in every
    assert "&lt;!channel&gt;" in every
    for text in texts:
        outside = _outside_code_spans(text)
        # markdown links, emphasis and mentions from the id stay inside a code span
        for forged in ("](https://evil.example", "*bold*", "@U024BE7LH", "evil-1"):
            assert forged not in outside, (forged, text)
    # and a backtick inside the id cannot close the code span early
    assert "`code`" not in every


def test_a_long_message_id_is_clipped() -> None:
    text = _alert({"lost": [_lost("x" * 5000)]}).text()
    sample_line = next(line for line in text.splitlines() if line.startswith("  - "))
    assert len(sample_line) < 200
    assert "…" in sample_line


def test_the_full_list_sql_quotes_a_crafted_run_id_as_one_literal() -> None:
    run_id = "manual__x'; DROP TABLE recon.runs; --\nSELECT `1`"
    alert = _alert({"lost": [_lost("gone-1")]}, observed={"lost": 7}, run_id=run_id)
    text = alert.text()
    line = next(line for line in text.splitlines() if "all of them:" in line)
    sql = line.split("all of them: ", 1)[1].strip("`")
    # one PostgreSQL escape-string literal: the quote doubled, the newline and backticks escaped
    assert "run_id = E'manual__x''; DROP TABLE recon.runs; --\\nSELECT \\u00601\\u0060'" in sql
    assert sql.endswith("AND verdict = 'lost'")
    assert "\n" not in sql


def test_email_headers_carry_no_line_break_from_a_run_id() -> None:
    run_id = "manual__r1\r\nBcc: attacker@evil.example"
    content = email_content(_alert({"lost": [_lost("gone-1")]}, run_id=run_id))
    for header in (content.subject, *content.headers.values()):
        assert "\n" not in header and "\r" not in header
    assert "manual__r1\\r\\nBcc" in content.subject
    assert content.headers["X-Recon-Run-Id"] == "manual__r1\\r\\nBcc: attacker@evil.example"
