"""Property-based tests over generated messageIds (issue 77): through id extraction, the rule SQL
on DuckDB and the results store's COPY encoding, no id crashes a run, blocks a pipeline (an id
the results database cannot hold) or changes on its way (an id is its exact text)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.raw_records import raw_rows
from fixtures.relations import judge, rows
from fixtures.scenarios import Scenario, rec, sink
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.config import MessageIdSpec
from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH, extract_ids
from recon.store.commit import _copy_value

pytestmark = pytest.mark.unit

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Texts of every kind, NUL, line breaks, the CSV readers' null markers and lengths around the
#: limit among them.
ids = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["NULL", "null", "NaN", "N/A", "#N/A", "\\N", " ", "a\x00b", '"', ","]),
    st.integers(MAX_MESSAGE_ID_LENGTH - 1, MAX_MESSAGE_ID_LENGTH + 1).map(lambda n: "x" * n),
)


def _blank(text: str) -> bool:
    return text.strip(" ") == ""


@given(st.lists(st.one_of(ids.map(str.encode), st.binary(max_size=20)), max_size=30))
@PROPERTY
def test_a_header_id_is_its_exact_text_or_invalid_with_a_reason(headers: list[bytes]) -> None:
    raw = raw_rows([(i, None, b"{}", [("message_id", h)]) for i, h in enumerate(headers)])
    got = extract_ids(raw, MessageIdSpec("header", "message_id"))
    for header, mid, reason in zip(
        headers, got["message_id"].to_pylist(), got["invalid_reason"].to_pylist(), strict=True
    ):
        assert (mid is None) == (reason is not None), (header, mid, reason)
        if mid is not None:
            assert mid == header.decode(), (header, mid)
            assert "\x00" not in mid and len(mid) <= MAX_MESSAGE_ID_LENGTH and not _blank(mid)


@given(st.lists(ids, unique=True, max_size=25))
@settings(PROPERTY, max_examples=40)  # each example is a whole run of the rules: 0.25 s
def test_records_and_sink_rows_of_the_same_ids_are_delivered_or_invalid_never_lost(
    texts: list[str],
) -> None:
    raw = raw_rows([(i, None, b"{}", [("message_id", t.encode())]) for i, t in enumerate(texts)])
    got = extract_ids(raw, MessageIdSpec("header", "message_id"))
    records = [
        rec(o, m, invalid=r)
        for o, m, r in zip(
            got["offset"].to_pylist(), got["message_id"].to_pylist(),
            got["invalid_reason"].to_pylist(), strict=True,
        )
    ]  # fmt: skip
    # PostgreSQL cannot store a NUL: a consumer writes every other id as it is.
    written = [t for t in texts if "\x00" not in t]
    con, results = judge(
        Scenario(window=records, sinks=[sink(f"k{i}", t) for i, t in enumerate(written)])
    )
    verdicts: dict[str, list[Any]] = {}
    for row in rows(con, results):
        verdicts.setdefault(row["verdict"], []).append(row)
    assert set(verdicts) <= {"delivered", "invalid"}, {v: len(r) for v, r in verdicts.items()}
    good = {m for _, _, _, m, r, *_ in records if r is None}
    assert {r["message_id"] for r in verdicts.get("delivered", [])} == good
    bad_rows = [t for t in written if _blank(t) or len(t) > MAX_MESSAGE_ID_LENGTH]
    assert len(verdicts.get("invalid", [])) == len(texts) - len(good) + len(bad_rows)


def _read_copy_text(field: str) -> str | None:
    """A field of PostgreSQL's COPY text format as the server reads it."""
    if field == "\\N":
        return None
    escapes = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\":
            out.append(escapes[field[i + 1]])
            i += 2
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


@given(st.one_of(st.none(), ids.filter(lambda t: "\x00" not in t)))
@PROPERTY
def test_the_results_copy_keeps_every_id_the_database_can_hold(text: str | None) -> None:
    encoded = _copy_value(text)
    assert "\t" not in encoded and "\n" not in encoded and "\r" not in encoded
    assert _read_copy_text(encoded) == text
