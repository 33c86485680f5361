"""The reconciliation page and the verdict ``out_of_order`` (issue 19, part 3): the verdict in the
charts, the overview, the discrepancy order, "What to do" and the repair hints, which name the
key and both positions read back from the row's detail and the newest record to re-apply in
Kafka; the key is the user's data, escaped like every value.

The HTML is checked as the page renders it, with fake runs and rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from fixtures.page_fakes import FakeConn, page_run

from recon.model import details
from recon_page import chart, data, hints, links, render
from recon_page.data import Discrepancy, Run

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LINKS = links.Links(prefix="/recon", airflow="")
EVIL = '<script>alert("x")</script>&'


def _run(i: int, **counts: int) -> Run:
    return page_run(i, "accounts", "at_least_once", "out_of_order", T0, **counts)


def _row(key: str = "A", held: int = 0, newest: int = 17, **kw: Any) -> Discrepancy:
    """The newest record of ``key`` (at offset 17 of partition 1), whose row holds ``held``."""
    values: dict[str, Any] = dict(
        pipeline="accounts", run_id="scheduled__r2", verdict="out_of_order", message_id="m-17",
        topic="balances", partition=1, offsets=[17], sink_keys=[], sink_count=0,
        detail=details.OUT_OF_ORDER % (key, held, newest),
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


def test_out_of_order_sorts_with_the_wrong_data_before_late() -> None:
    order = data.VERDICT_ORDER
    # the whole newest record is missing from its key's row: before a row with some fields wrong
    assert order.index("invalid") < order.index("out_of_order") < order.index("mismatched")
    assert order.index("mismatched") < order.index("late")
    conn = FakeConn()
    data.discrepancies(conn, "accounts")
    assert "out_of_order" in conn.queries[0][1]["order"]


def test_out_of_order_has_its_own_color_and_a_place_in_both_verdict_charts() -> None:
    assert "out_of_order" in chart.ALL_SERIES and "out_of_order" in chart.PROBLEM_SERIES
    colors = [c for name, c in chart.VERDICT_COLORS.items() if name != "out_of_order"]
    assert chart.VERDICT_COLORS["out_of_order"] not in colors
    html = _section([_run(2, out_of_order=4), _run(1)])
    bars = re.findall(r'<rect class="bar" data-verdict="out_of_order"[^>]*>', html)
    assert len(bars) == 2  # the run with 4 out_of_order, in each chart
    assert "out_of_order 4</title>" in html
    assert chart.VERDICT_COLORS["out_of_order"] in chart.legend(chart.PROBLEM_SERIES)


def test_the_overview_counts_out_of_order_in_its_own_column() -> None:
    html = render.overview([_run(2, out_of_order=3, mismatched=5, late=7, lost=1)], LINKS)
    cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', html)
    heads = re.findall(r'<th class="num">([^<]*)</th>', html)
    by_head = dict(zip(heads, cells, strict=True))
    assert by_head["Out of order"] == "3"
    assert (by_head["Mismatched"], by_head["Late"], by_head["Lost"]) == ("5", "7", "1")
    assert '<td class="num bad">3</td>' in html


# --- hints --------------------------------------------------------------------------------------


def test_the_general_hint_says_what_to_check_and_what_to_do() -> None:
    general = hints.VERDICT_HINTS["out_of_order"]
    for words in ("stale overwrite", "replaying or retrying old records without a version check",
                  "two consumers or writers racing on one key",
                  "WHERE excluded.position > row.position",
                  "re-apply the newest record of each key"):  # fmt: skip
        assert words in general, words


def test_the_row_hint_names_the_key_both_positions_and_the_record_in_kafka() -> None:
    hint = hints.row_hint(_row("A", 0, 2, offsets=[2]))
    assert hint.startswith("the row of key A holds position 0, older than this record's 2: check")
    assert "without a version check" in hint and "racing on the key" in hint
    assert hint.endswith("then re-apply this record at balances[1] offset 2")


def test_a_version_position_is_no_offset() -> None:
    # with order.version_field the positions are versions; where to re-apply is the offset
    hint = hints.row_hint(_row("A", 40, 41))
    assert "holds position 40, older than this record's 41" in hint
    assert hint.endswith("re-apply this record at balances[1] offset 17")


def test_a_row_without_its_key_still_gets_a_hint() -> None:
    row = _row(detail="something else", partition=None, offsets=[])
    assert hints.row_hint(row) == (
        "the row of its key holds an older record: re-apply this record at balances[?] offset ?"
    )


def test_a_superseded_detail_is_no_stale_key() -> None:
    superseded = _row(verdict="delivered", detail=details.SUPERSEDED % ("A", 17))
    assert hints.stale_keys([superseded]) == []
    assert "holds position" not in hints.row_hint(superseded)


# --- the page -----------------------------------------------------------------------------------


def test_what_to_do_lists_the_keys_and_positions_and_the_table_the_hint() -> None:
    rows = [_row("A", 0, 17), _row("B", 3, 18, offsets=[18], message_id="m-18"), _row("A", 1, 17)]
    html = _section([_run(2, out_of_order=3)], rows)
    todo = _todo(html)
    assert "out_of_order" in todo and "3 shown" in todo
    assert "keys A, B; balances[1] @ 17, 17, 18" in todo
    assert "version check" in todo  # the general hint
    table = _table(html)
    assert "the row of key B holds position 3, older than this record&#x27;s 18" in table
    assert table.count('<span class="verdict">') == 3


def test_keys_are_escaped_in_the_page() -> None:
    html = _section([_run(2, out_of_order=1)], [_row(EVIL)])
    assert "<script>" not in html
    table = _table(html)
    assert "the row of key &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp; holds" in table
    assert "keys &lt;script&gt;" in _todo(html)


def test_the_rows_no_check_could_use_are_named_in_the_facts() -> None:
    from dataclasses import replace

    run = replace(_run(2), unchecked={"unordered_sink_rows": 4, "shared_keys": 2})
    html = _section([run])
    facts = re.search(r'<dl class="facts">.*?</dl>', html)
    assert facts is not None
    assert "Not checked" in facts[0]
    assert "4 sink rows without an upsert key or position (no order check)" in facts[0]
    assert "2 upsert keys with more than one sink row" in facts[0]
    assert "Not checked" not in _section([_run(2)])


def test_the_stored_reasons_are_read_with_the_run() -> None:
    stored = ("accounts", "r1", "at_least_once", "passed", T0, T0, {"delivered": 1}, True, [],
              None, [], [], 1.0, None, {}, {"untimed_sink_rows": 3}, None)  # fmt: skip
    assert data._run(stored).unchecked == {"untimed_sink_rows": 3}
