"""The contract table itself: well formed, refused when it is not, and in step with the
configuration's own check of which semantic may tolerate which ratio."""

from __future__ import annotations

import dataclasses

import pytest

from recon.config import Tolerances
from recon.contract.table import (
    CONTRACT,
    Allowance,
    Rule,
    _checked,
    unless_idempotent,
    up_to_ratio,
)
from recon.model.verdicts import SEMANTICS, Verdict

pytestmark = pytest.mark.unit


def _copy() -> dict[str, dict[str, Rule]]:
    return {semantics: dict(rules) for semantics, rules in CONTRACT.items()}


def test_every_tolerance_is_a_pipeline_setting() -> None:
    fields = {f.name for f in dataclasses.fields(Tolerances)}
    for semantics, rules in CONTRACT.items():
        for verdict, rule in rules.items():
            if rule.allowance in (Allowance.RATIO, Allowance.COUNT):
                assert rule.tolerance in fields, (semantics, verdict)


def test_pending_and_delivered_are_never_judged() -> None:
    for rules in CONTRACT.values():
        assert Verdict.PENDING not in rules and Verdict.DELIVERED not in rules


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_late_is_a_ratio_of_judged_messages_under_every_semantic(semantics: str) -> None:
    rule = CONTRACT[semantics][Verdict.LATE]
    assert (rule.allowance, rule.tolerance) == (Allowance.RATIO, "max_late_ratio")
    # right after the other judged verdicts: the order of violations and of suite expectations
    assert list(CONTRACT[semantics])[:3] == [Verdict.LOST, Verdict.DUPLICATED, Verdict.LATE]


def test_today_s_table_is_accepted_as_is() -> None:
    assert _checked(_copy()) == CONTRACT


def _edit(semantics: str, verdict: str, rule: Rule) -> dict[str, dict[str, Rule]]:
    table = _copy()
    table[semantics][verdict] = rule
    return table


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({s: CONTRACT[s] for s in reversed(SEMANTICS)}, "must list"),
        (_edit("exactly_once", Verdict.PHANTOM, up_to_ratio("max_loss_ratio")), "judged verdict"),
        (_edit("exactly_once", Verdict.LOST, unless_idempotent("x")), "topic_duplicate"),
        (_edit("exactly_once", Verdict.LOST, Rule(Allowance.FORBIDDEN, "x", "max_loss_ratio")),
         "tolerance"),
        ({**_copy(), "exactly_once": dict(reversed(CONTRACT["exactly_once"].items()))},
         "in this order"),
    ],
    ids=["semantics-order", "ratio-of-unjudged", "idempotence-of-lost", "forbidden-with-tolerance",
         "verdict-order"],
)  # fmt: skip
def test_a_table_that_cannot_hold_is_refused(
    table: dict[str, dict[str, Rule]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _checked(table)


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("tolerance", ["max_loss_ratio", "max_duplicate_ratio", "max_late_ratio"])
def test_the_configuration_accepts_a_ratio_where_the_table_tolerates_it(
    semantics: str, tolerance: str
) -> None:
    """``recon.config`` refuses a ratio the claimed semantic would ignore; it writes that check by
    hand, so it must name the same cells as the table."""
    from pydantic import ValidationError

    from recon.config.schema import TolerancesDecl

    tolerated = any(
        rule.allowance is Allowance.RATIO and rule.tolerance == tolerance
        for rule in CONTRACT[semantics].values()
    )
    try:
        TolerancesDecl.model_validate({tolerance: 0.1}, context={"semantics": semantics})
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == tolerated
