"""The contract table, cell by cell."""

from __future__ import annotations

import pytest

from recon.config import Tolerances
from recon.contract.evaluate import ContractResult, Violation, evaluate_contract

pytestmark = pytest.mark.unit

SEMANTICS = ("at_most_once", "at_least_once", "exactly_once")


def failing(result: ContractResult) -> set[str]:
    return {v.verdict for v in result.violations}


def test_clean_run_passes_everywhere() -> None:
    for semantics in SEMANTICS:
        result = evaluate_contract(semantics, {"delivered": 10, "pending": 5})
        assert result == ContractResult(passed=True, judged=10, violations=[])


@pytest.mark.parametrize(
    ("semantics", "lost_ok", "dup_ok"),
    [
        ("at_most_once", True, False),
        ("at_least_once", False, True),
        ("exactly_once", False, False),
    ],
)
def test_loss_and_duplicates_per_semantic(semantics: str, lost_ok: bool, dup_ok: bool) -> None:
    generous = Tolerances(max_loss_ratio=1, max_duplicate_ratio=1)
    lost = evaluate_contract(semantics, {"delivered": 9, "lost": 1}, generous)
    dup = evaluate_contract(semantics, {"delivered": 9, "duplicated": 1}, generous)
    assert lost.passed is lost_ok
    assert dup.passed is dup_ok


def test_ratio_is_relative_to_judged_messages() -> None:
    # 1 lost of 100 judged (pending, invalid etc. do not count) is 1 %.
    counts = {"delivered": 99, "lost": 1, "pending": 900}
    assert evaluate_contract("at_most_once", counts, Tolerances(max_loss_ratio=0.01)).passed
    result = evaluate_contract("at_most_once", counts, Tolerances(max_loss_ratio=0.009))
    assert result.violations == [
        Violation("lost", 1, 0.009, "1 of 100 judged messages lost (1.00%), allowed up to 0.90%")
    ]


def test_ratio_compares_the_decimal_as_written() -> None:
    # 0.29 * 100 is 28.999... in floating point; 29 of 100 must still pass.
    counts = {"delivered": 71, "duplicated": 29}
    assert evaluate_contract("at_least_once", counts, Tolerances(max_duplicate_ratio=0.29)).passed


def test_zero_tolerance_means_none() -> None:
    result = evaluate_contract("at_least_once", {"delivered": 1000, "duplicated": 1})
    assert failing(result) == {"duplicated"}
    assert result.violations[0].allowed == 0


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("verdict", ["phantom", "aborted_read"])
def test_sink_rows_without_a_record_always_fail(semantics: str, verdict: str) -> None:
    generous = Tolerances(1, 1, 100, 100)
    result = evaluate_contract(semantics, {"delivered": 5, verdict: 1}, generous)
    assert failing(result) == {verdict}


@pytest.mark.parametrize("idempotent", [False, True])
def test_topic_duplicate_only_fails_an_idempotent_producer(idempotent: bool) -> None:
    result = evaluate_contract(
        "exactly_once", {"delivered": 5, "topic_duplicate": 2}, None, idempotent
    )
    assert result.passed is not idempotent
    if idempotent:
        assert result.violations[0][:3] == ("topic_duplicate", 2, 0)


@pytest.mark.parametrize("verdict", ["unverifiable", "invalid"])
def test_unverifiable_and_invalid_are_never_silent(verdict: str) -> None:
    assert failing(evaluate_contract("at_least_once", {verdict: 1})) == {verdict}
    allow = Tolerances(max_unverifiable=3, max_invalid=3)
    assert evaluate_contract("at_least_once", {verdict: 3}, allow).passed
    assert failing(evaluate_contract("at_least_once", {verdict: 4}, allow)) == {verdict}


def test_pending_never_fails() -> None:
    assert evaluate_contract("exactly_once", {"pending": 10**6}).passed


def test_every_violation_is_listed() -> None:
    counts = {"delivered": 1, "lost": 1, "duplicated": 1, "late": 1, "phantom": 1, "invalid": 1}
    result = evaluate_contract("exactly_once", counts)
    assert not result.passed
    assert [v.verdict for v in result.violations] == [
        "lost",
        "duplicated",
        "late",
        "phantom",
        "invalid",
    ]
    assert all(v.reason for v in result.violations)


@pytest.mark.parametrize(
    ("semantics", "counts", "message"),
    [
        ("twice", {}, "unknown semantics"),
        ("exactly_once", {"teleported": 1}, "unknown verdict"),
        ("exactly_once", {"lost": -1}, "negative count"),
    ],
)
def test_bad_input(semantics: str, counts: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_contract(semantics, counts)


# --- late: a delivered message slower than latency.max_seconds --------------------------------


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_late_is_forbidden_until_the_pipeline_sets_a_ratio(semantics: str) -> None:
    result = evaluate_contract(semantics, {"delivered": 99, "late": 1})
    assert result.violations == [
        Violation("late", 1, 0.0, "1 of 100 judged messages late (1.00%), allowed up to 0.00%")
    ]


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_late_is_allowed_up_to_max_late_ratio_under_every_semantic(semantics: str) -> None:
    # Latency is no part of the delivery semantic: exactly_once tolerates it like the others.
    allow = Tolerances(max_late_ratio=0.02)
    assert evaluate_contract(semantics, {"delivered": 98, "late": 2}, allow).passed
    over = evaluate_contract(semantics, {"delivered": 97, "late": 3}, allow)
    assert over.violations == [
        Violation("late", 3, 0.02, "3 of 100 judged messages late (3.00%), allowed up to 2.00%")
    ]


def test_late_ratio_compares_the_decimal_as_written() -> None:
    counts = {"delivered": 71, "late": 29}
    assert evaluate_contract("exactly_once", counts, Tolerances(max_late_ratio=0.29)).passed


def test_late_messages_are_judged_messages() -> None:
    # 1 lost of 100 judged (99 delivered or late) is 1 %; were late left out, 1 of 50 is 2 %.
    counts = {"delivered": 50, "late": 49, "lost": 1}
    allow = Tolerances(max_loss_ratio=0.01, max_late_ratio=0.49)
    result = evaluate_contract("at_most_once", counts, allow)
    assert result == ContractResult(passed=True, judged=100, violations=[])


def test_a_run_without_late_counts_passes_a_zero_late_ratio() -> None:
    # A pipeline that declares no latency has no 'late' count at all: absent counts 0.
    for semantics in SEMANTICS:
        assert evaluate_contract(semantics, {"delivered": 3}, Tolerances()).passed
        assert evaluate_contract(semantics, {"delivered": 3, "late": 0}, Tolerances()).passed


def test_late_does_not_borrow_another_ratio() -> None:
    # Generous loss and duplicate ratios say nothing of late messages.
    generous = Tolerances(max_loss_ratio=1, max_duplicate_ratio=1, max_unverifiable=9)
    result = evaluate_contract("at_least_once", {"delivered": 9, "late": 1}, generous)
    assert failing(result) == {"late"}
