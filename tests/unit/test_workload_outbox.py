"""The outbox scenarios' ground truth (three-way reconciliation, the workload side): which
message is ``unpublished``, on hand-made produced records, read-back records and sink rows (no
Kafka, no PostgreSQL), and the outbox table's names and shape."""

from __future__ import annotations

from typing import Any

import pytest

from recon_workload import SCENARIOS, WorkloadError, ledger, sink
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.ledger import LedgerRow, Produced
from recon_workload.messages import Message
from recon_workload.names import RunNames
from recon_workload.runner import ScenarioResult
from recon_workload.scenarios_outbox import relay_messages
from recon_workload.sink import SinkRow

pytestmark = pytest.mark.unit

TOPIC = "wl-outbox"
SOURCE = "public.wl_outbox_fire_and_forget_x_outbox"


def _record(mid: str, offset: int) -> ReadRecord:
    return ReadRecord(Position(TOPIC, 0, offset), mid, b"{}")


def _row(mid: str, offset: int) -> SinkRow:
    return SinkRow(mid, TOPIC, 0, offset, None)


def _ledger(outbox: list[str] | None) -> dict[str | None, LedgerRow]:
    """``m0`` published and delivered, ``m1`` sent by the relay (acks=0: "sent") but never in the
    topic, ``m2`` published and delivered; the group committed past both records."""
    produced = [Produced(0, "m0", True), Produced(1, "m1", True), Produced(2, "m2", True)]
    records = [_record("m0", 0), _record("m2", 1)]
    rows = [_row("m0", 0), _row("m2", 1)]
    entries = ledger.build(produced, records, records, rows, {0: 2}, outbox)
    return {e.message_id: e for e in entries}


def test_a_message_dropped_before_the_topic_is_unpublished_when_the_outbox_holds_it() -> None:
    by_id = _ledger(["m0", "m1", "m2"])
    assert by_id["m1"].expected_verdict == "unpublished"
    assert by_id["m1"].positions == [] and by_id["m1"].sink_rows == 0
    assert by_id["m1"].detail == "never committed in the topic"


def test_without_an_outbox_the_same_message_has_no_verdict_as_before() -> None:
    by_id = _ledger(None)
    assert by_id["m1"].expected_verdict is None
    assert by_id["m1"].detail == "never committed in the topic"
    assert "unpublished" in ledger.VERDICTS


def test_a_published_delivered_message_is_delivered() -> None:
    for outbox in (["m0", "m1", "m2"], None):
        by_id = _ledger(outbox)
        assert by_id["m0"].expected_verdict == by_id["m2"].expected_verdict == "delivered"


def test_a_message_the_outbox_lacks_keeps_todays_rule() -> None:
    by_id = _ledger(["m0", "m2"])  # m1 produced, yet no outbox row names it
    assert by_id["m1"].expected_verdict is None


def test_an_outbox_row_the_relay_never_sent_is_unpublished() -> None:
    by_id = _ledger(["m0", "m1", "m2", "m3"])
    assert by_id["m3"].expected_verdict == "unpublished"
    assert by_id["m3"].acked is None and by_id["m3"].detail == "in the outbox, never sent"


def test_an_aborted_record_never_read_is_unpublished_when_the_outbox_holds_it() -> None:
    produced = [Produced(0, "m0", False)]
    aborted = [_record("m0", 0)]  # read_uncommitted only
    (entry,) = ledger.build(produced, [], aborted, [], {}, ["m0"])
    assert (entry.expected_verdict, entry.detail) == ("unpublished", "aborted, never read")


def test_the_summary_counts_unpublished_as_a_verdict_not_as_unseen() -> None:
    entries = list(_ledger(["m0", "m1", "m2"]).values())
    summary = ledger.summarize(entries, 3, 2, 2, source_table=SOURCE)
    assert summary.counts["unpublished"] == 1 and summary.counts["delivered"] == 2
    assert summary.unseen == 0
    line = summary.line("outbox_fire_and_forget-x")
    assert "lost=0 unpublished=1 duplicated=0" in line
    assert f"(unpublished: in {SOURCE}, never in the topic)" in line
    assert summary.as_json()["source_table"] == SOURCE
    assert summary.as_json()["counts"]["unpublished"] == 1


def test_runs_without_a_source_keep_their_summary_line() -> None:
    summary = ledger.summarize(list(_ledger(None).values()), 3, 2, 2)
    assert "unpublished" not in summary.line("at_most_once-x")
    assert summary.counts["unpublished"] == 0 and summary.unseen == 1
    assert summary.as_json()["source_table"] is None
    plain = ScenarioResult("r", "s", "t", "public.t", "g", {}, "line")
    assert plain.source_table is None and plain.unpublished_ids == []


# --- the scenarios, the outbox table and the relay ---------------------------------------------


def test_both_outbox_scenarios_are_registered_with_their_defaults() -> None:
    assert SCENARIOS["outbox_fire_and_forget"].defaults == {"bounce": 1, "kill_rate": 0.0}
    assert SCENARIOS["outbox_relay"].defaults == {"kill_rate": 0.0}
    assert "unpublished" in SCENARIOS["outbox_fire_and_forget"].description


def test_the_outbox_table_sits_beside_the_sink() -> None:
    names = RunNames("outbox_relay", "x")
    assert names.outbox_table == f"{names.table}_outbox"
    assert names.qualified_outbox_table == f"public.{names.table}_outbox"


class _Recorder:
    def __init__(self) -> None:
        self.statements: list[str] = []

    def execute(self, statement: Any, *_: Any) -> None:
        # A composed statement's text, its identifiers written schema.table (no connection).
        parts = getattr(statement, "seq", [statement])
        text = (getattr(p, "string", None) or ".".join(getattr(p, "strings", ())) for p in parts)
        self.statements.append("".join(text))


def test_the_outbox_is_created_and_dropped_with_the_sink() -> None:
    cur = _Recorder()
    sink.create_tables(cur, "wl_t", ("outbox",))
    creates = [s for s in cur.statements if s.startswith("CREATE TABLE")]
    assert len(creates) == 2
    outbox = creates[1]
    assert "public.wl_t_outbox" in outbox
    assert "seq bigserial PRIMARY KEY, message_id text UNIQUE," in outbox
    assert "created_at timestamptz NOT NULL DEFAULT clock_timestamp()" in outbox
    dropped = _Recorder()
    sink.drop_tables(dropped, "wl_t")
    assert any("public.wl_t_outbox" in s for s in dropped.statements)


def _message(seq: int, mid: str | None) -> Message:
    return Message(seq, mid, None, b"{}", [])


def test_the_relay_publishes_the_outbox_rows_in_seq_order_and_nothing_else() -> None:
    messages = [_message(0, "a"), _message(1, None), _message(2, "b"), _message(3, "c")]
    published = relay_messages(messages, [(1, "b"), (2, "a"), (3, "c")])
    assert [m.message_id for m in published] == ["b", "a", "c"]  # no id, no outbox row
    with pytest.raises(WorkloadError, match="unplanned"):
        relay_messages(messages, [(1, "zz")])
