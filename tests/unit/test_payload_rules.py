"""Payload consistency and ``mismatched`` (issue 19) on tiny relations, judged by DuckDB: the
words of each discrepancy row of the named scenarios (the differing field names, never their
values) and the rendered comparison itself. Spark's rows of these scenarios are held to DuckDB's by
``tests/integration/test_engine_parity.py``; the tests on relations of their own, on both
engines, are in ``tests/integration/test_payload_rules_on_spark.py`` (they need a JVM)."""

from __future__ import annotations

import pytest
from fixtures.payload_scenarios import DETAILS
from fixtures.relations import named_rows

from recon.rules.judging import Judging

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", list(DETAILS))
def test_each_discrepancy_names_the_differing_fields(name: str) -> None:
    found = named_rows("duckdb", None, name)
    details = {r["message_id"]: r["detail"] for r in found if r["verdict"] != "delivered"}
    details = {m: d for m, d in details.items() if m in DETAILS[name]}
    assert details == DETAILS[name]


def test_the_comparison_is_built_once_per_field_in_declared_order() -> None:
    params = Judging(compared=("b", "a"), kinds=("text", "number")).params()
    diff = params["PAYLOAD_DIFF"]
    assert diff.index("'b'") < diff.index("'a'")
    assert "record_digests.d2" in diff
    digests = params["PAYLOAD_DIGESTS"]
    assert "hash(payload[1])" in digests
    assert "TRY_CAST(payload[2] AS DOUBLE)" in digests
    assert "payload[3]" not in digests
    assert params["COMPARED"] == "['b', 'a']"
    assert Judging().params()["PAYLOAD_DIFF"] == "CAST(NULL AS VARCHAR[])"
    assert Judging().params()["PAYLOAD_DIGESTS"] == "CAST(NULL AS BIGINT)"
