"""The reconciliation page and the verdict ``mismatched`` (issue 19, part 2): the verdict in the
charts, the overview, the discrepancy order, "What to do" and the repair hints, which name the
differing fields read back from the row's detail (names only) and where the record sits in Kafka;
and a duplicated row whose copies differ.

The HTML is checked as the page renders it, with fake runs and rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from fixtures.page_fakes import FakeConn, page_run

from recon.config.model import SHA256_FIELD
from recon.model import details
from recon_page import chart, data, hints, links, render
from recon_page.data import Discrepancy, Run

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = '<script>alert("x")</script>&'


def _run(i: int, **counts: int) -> Run:
    return page_run(i, "payments", "exactly_once", "mismatched", T0, **counts)


def _row(*fields: str, verdict: str = "mismatched", **kw: Any) -> Discrepancy:
    values: dict[str, Any] = dict(
        pipeline="payments", run_id="scheduled__r2", verdict=verdict, message_id="m-17",
        topic="orders", partition=1, offsets=[17], sink_keys=["s17"], sink_count=1,
        detail=details.MISMATCHED % ", ".join(fields),
    )  # fmt: skip
    values.update(kw)
    return Discrepancy(**values)


def _section(runs: Sequence[Run], rows: Sequence[Discrepancy] = ()) -> str:
    view = render.PipelineView(latest=runs[0], runs=runs, discrepancies=rows)
    return render.pipeline_section(view, LINKS)


def _table(html: str) -> str:
    table = re.search(r'<table class="discrepancies">.*?</table>', html)
    assert table is not None
    return table[0]


def _todo(html: str) -> str:
    todo = re.search(r'<ul class="todo">.*?</ul>', html)
    assert todo is not None
    return todo[0]


# --- data and charts ----------------------------------------------------------------------------


def test_mismatched_sorts_after_missing_rows_and_before_late() -> None:
    order = data.VERDICT_ORDER
    assert order.index("invalid") < order.index("mismatched") < order.index("late")
    conn = FakeConn()
    data.discrepancies(conn, "payments")
    assert "mismatched" in conn.queries[0][1]["order"]


def test_mismatched_has_its_own_color_and_a_place_in_both_verdict_charts() -> None:
    assert "mismatched" in chart.ALL_SERIES and "mismatched" in chart.PROBLEM_SERIES
    colors = [c for name, c in chart.VERDICT_COLORS.items() if name != "mismatched"]
    assert chart.VERDICT_COLORS["mismatched"] not in colors
    html = _section([_run(2, mismatched=4), _run(1)])
    bars = re.findall(r'<rect class="bar" data-verdict="mismatched"[^>]*>', html)
    assert len(bars) == 2  # the run with 4 mismatched, in each chart
    assert "mismatched 4</title>" in html
    assert chart.VERDICT_COLORS["mismatched"] in chart.legend(chart.PROBLEM_SERIES)


def test_the_overview_counts_mismatched_in_its_own_column() -> None:
    html = render.overview([_run(2, mismatched=3, late=7, lost=1)], LINKS)
    cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', html)
    heads = re.findall(r'<th class="num">([^<]*)</th>', html)
    by_head = dict(zip(heads, cells, strict=True))
    assert (by_head["Mismatched"], by_head["Late"], by_head["Lost"]) == ("3", "7", "1")
    assert '<td class="num bad">3</td>' in html


# --- hints --------------------------------------------------------------------------------------


def test_the_general_hint_says_what_to_check() -> None:
    general = hints.VERDICT_HINTS["mismatched"]
    for words in ("transformation", "serialisation", "another writer", "numeric scale",
                  "timestamp precision", "sha256_column", "raw value bytes"):  # fmt: skip
        assert words in general, words


def test_the_row_hint_names_the_fields_and_the_record_in_kafka() -> None:
    hint = hints.row_hint(_row("amount", "currency"))
    assert hint.startswith("differs in amount, currency: check how the consumer transforms")
    assert "another writer" in hint and "rounds" in hint
    assert hint.endswith("rewrite it from the record at orders[1] offset 17")


def test_the_sha256_mode_hint_asks_for_the_raw_value_bytes() -> None:
    hint = hints.row_hint(_row(SHA256_FIELD))
    assert hint.startswith("the value's SHA-256 differs from the record at orders[1] offset 17")
    assert "raw value bytes" in hint and "rounds" not in hint


def test_a_row_without_its_field_names_still_gets_a_hint() -> None:
    row = _row(detail="something else", partition=None, offsets=[])
    assert hints.row_hint(row) == (
        "compare the sink row with the record at orders[?] offset ?, then rewrite it from the "
        "record"
    )


def test_a_duplicated_row_whose_copies_differ_does_not_keep_the_first_blindly() -> None:
    detail = "3 sink rows, 2 new in this run; " + details.DUPLICATE_COPIES_DIFFER % (2, "amount")
    row = _row(verdict="duplicated", sink_keys=["s7", "s8"], sink_count=3, detail=detail)
    assert hints.row_hint(row) == (
        "its copies differ in amount: keep the one that matches the record at orders[1] offset "
        "17, delete the others (sink keys s7, s8)"
    )
    same = _row(verdict="duplicated", sink_keys=["s7", "s8"], sink_count=2, detail="2 sink rows")
    assert hints.row_hint(same) == "keep sink key s7, delete s8"


# --- the page -----------------------------------------------------------------------------------


def test_what_to_do_lists_the_fields_and_positions_and_the_table_the_hint() -> None:
    rows = [_row("amount"), _row("currency", "amount", offsets=[18], message_id="m-18")]
    html = _section([_run(2, mismatched=2)], rows)
    todo = _todo(html)
    assert "mismatched" in todo and "2 shown" in todo
    assert "fields amount, currency; orders[1] @ 17, 18" in todo
    assert "transformation" in todo  # the general hint
    assert "differs in currency, amount: check how" in _table(html)


def test_field_names_are_escaped_in_the_page() -> None:
    html = _section([_run(2, mismatched=1)], [_row(EVIL, "amount")])
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;, amount" in _table(html)
    assert "&lt;script&gt;" in _todo(html)
