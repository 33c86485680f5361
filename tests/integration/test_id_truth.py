"""A messageId is its exact text (issue 70, items 2 and 3; issue 77, items 2 and 3), judged message
by message on both engines with our own producer, group commits and sink writer:

- ids that CSV readers take for missing (``NULL``, ``NaN``, ``N/A`` ...) and ids with spaces,
  tabs, quotes, backslashes, commas and line breaks are delivered like any other id;
- one length rule on both sides: a record or a sink row whose id is over the limit is ``invalid``
  (the sink row with its sink key), never ``phantom``; the limit itself is a good id;
- an id holding a NUL character (which PostgreSQL cannot store) is ``invalid`` at its position and
  the run commits, then and in every later run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from everyday_kit import ENGINES, Setup, commit_group, ids, produce, same, write_rows

from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH

pytestmark = pytest.mark.integration

engines = pytest.mark.parametrize("engine", ENGINES)

#: The texts that Arrow's CSV reader, pandas' and Spark's take for a missing value by default
#: (Spark's ``nullValue`` is the empty string, its ``nanValue`` ``NaN``), and the blank rule's
#: neighbours: each is an id like any other.
NULL_MARKERS = [
    "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null", "Null", "NAN", "\\N",
]  # fmt: skip
ODD_TEXTS = [
    " lead", "trail ", "\ttab", "tab\t", 'quo"te', "'single'", "back\\slash", "com,ma",
    "line\nbreak", "carriage\r\nreturn", '"', '""', ",", " x ",
]  # fmt: skip


@pytest.fixture
def setup(kit_setup: Callable[..., Setup]) -> Callable[..., Setup]:
    return kit_setup


def _invalid(s: Setup, run_id: str) -> list[tuple[Any, ...]]:
    """The run's invalid rows: (first offset, sink keys, detail), in offset order."""
    rows = s.discrepancies(run_id, "first_offset, sink_keys, detail, verdict")
    return sorted(
        ((o, k, d) for o, k, d, v in rows if v == "invalid"), key=lambda r: (r[0] is None, r)
    )


@engines
def test_ids_that_csv_readers_take_for_null_are_their_exact_text(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = setup(engine, "nullish")
    texts = NULL_MARKERS + ODD_TEXTS + ids("plain", 0, 3)
    where = produce(kafka_config, s.topic, texts)
    write_rows(s.pg_kwargs, s.table, texts, where)
    commit_group(kafka_config, s.group, s.topic)
    summary = s.run(spark, "run-1")
    same(dict.fromkeys(texts, "delivered"), s.verdicts(spark, "run-1"), "run 1")
    assert summary.contract_passed, summary.violations


@engines
def test_one_length_rule_for_records_and_sink_rows(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = setup(engine, "longid")
    at_limit = "a" * MAX_MESSAGE_ID_LENGTH
    over = "b" * (MAX_MESSAGE_ID_LENGTH + 1)
    phantom_over = "c" * 6000  # a sink row only, a few KB: over the results index's limit too
    where = produce(kafka_config, s.topic, ["m0", at_limit, over])
    write_rows(s.pg_kwargs, s.table, ["m0", at_limit, over, phantom_over], where)
    commit_group(kafka_config, s.group, s.topic)
    summary = s.run(spark, "run-1")
    # The record over the limit and both sink rows over it are invalid, none is phantom or lost.
    same({"m0": "delivered", at_limit: "delivered"}, s.verdicts(spark, "run-1"), "run 1")
    assert dict(summary.counts)["invalid"] == 3, summary.counts
    assert not dict(summary.counts).get("phantom"), summary.counts
    invalid = _invalid(s, "run-1")
    assert invalid[0][0] == where[over][1] and invalid[0][2] == "message_id_oversize"
    details = [d for o, _, d in invalid if o is None]
    assert details == [f"sink row message id longer than {MAX_MESSAGE_ID_LENGTH} characters"] * 2
    assert all(len(k) == 1 for o, k, _ in invalid if o is None), "each with its sink key"


@engines
def test_an_id_with_a_nul_is_invalid_and_the_pipeline_keeps_committing(
    engine: str, setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = setup(engine, "nul")
    first = ["m0", "a\x00b", "m2"]
    where = produce(kafka_config, s.topic, first)
    # PostgreSQL cannot store the NUL: the consumer wrote the two others.
    write_rows(s.pg_kwargs, s.table, ["m0", "m2"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(spark, "run-1")
    same({"m0": "delivered", "m2": "delivered"}, s.verdicts(spark, "run-1"), "run 1")
    assert _invalid(s, "run-1") == [(where["a\x00b"][1], [], "message_id_has_nul")]
    assert s.run_row("run-1", "status")[0] == "failed"  # committed, the contract broken

    # The next run is not blocked: the watermark moved past the record.
    second = ["m3", "\x00"]
    where = produce(kafka_config, s.topic, second)
    write_rows(s.pg_kwargs, s.table, ["m3"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(spark, "run-2")
    same({"m3": "delivered"}, s.verdicts(spark, "run-2"), "run 2")
    assert _invalid(s, "run-2") == [(where["\x00"][1], [], "message_id_has_nul")]
