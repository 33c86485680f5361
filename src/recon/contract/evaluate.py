"""The contract: which verdicts each claimed delivery semantic allows (DESIGN.md, "The contract").

The rules are the table :data:`recon.contract.table.CONTRACT` (per semantic, per verdict:
forbidden, allowed up to a ratio or a count tolerance, or forbidden for an idempotent producer
only); this module judges a run's counts by it. The Great Expectations suites of
``expectations/`` are generated from the same table, so both decide alike.

Ratios are relative to the messages judged in the run (``recon.model.verdicts.RATIO_BASE``:
delivered, late, mismatched, out_of_order, lost, duplicated, unpublished);
``late`` is allowed up to ``tolerances.max_late_ratio`` under every semantic (0 unless set).
``topic_duplicate`` fails only a pipeline that declares ``idempotent_producer: true``.
``unverifiable`` and ``invalid`` fail unless ``max_unverifiable`` / ``max_invalid`` (absolute
counts) allow them. ``pending`` never fails: it is judged in a later run. A verdict missing from
a run's counts counts 0 (a pipeline without ``latency`` has no ``late`` message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from recon.config import Tolerances
from recon.contract.table import CONTRACT, Allowance, Rule
from recon.model.verdicts import ALL_VERDICTS, RATIO_BASE, SEMANTICS


class Violation(NamedTuple):
    """One verdict over its allowance: ``allowed`` is a ratio for a judged verdict (lost,
    duplicated, late), else a count."""

    verdict: str
    # Shadows tuple.count on purpose: the field is the name callers expect.
    count: int  # type: ignore[assignment]
    allowed: float
    reason: str


@dataclass(frozen=True)
class ContractResult:
    """Whether the run keeps the claimed semantic, and every way it does not."""

    passed: bool
    judged: int
    violations: list[Violation] = field(default_factory=list)


def _allowed(verdict: str, rule: Rule, tolerances: Tolerances) -> float:
    """What the rule lets pass: the pipeline's tolerance, else nothing.

    :param verdict: the verdict the rule judges.
    :param rule: its cell of the contract table.
    :param tolerances: the pipeline's tolerances.
    """
    if rule.tolerance is not None:
        value: float = getattr(tolerances, rule.tolerance)
        return value
    # Violation.allowed of a judged verdict is a ratio (0.0), of any other a count (0).
    return 0.0 if verdict in RATIO_BASE else 0


def _over(rule: Rule, count: int, judged: int, allowed: float, idempotent_producer: bool) -> bool:
    """Whether ``count`` rows of a verdict break its rule.

    :param rule: the verdict's cell of the contract table.
    :param count: the run's rows of the verdict.
    :param judged: the run's judged messages (``recon.model.verdicts.RATIO_BASE``).
    :param allowed: what the rule lets pass (:func:`_allowed`).
    :param idempotent_producer: whether the pipeline declares an idempotent producer.
    """
    if rule.allowance is Allowance.RATIO:
        # Compare as the decimal the user wrote: 0.29 * 100 is 28.999... in floating point.
        return count > 0 and count > Fraction(str(allowed)) * judged
    if rule.allowance is Allowance.COUNT:
        return count > allowed
    if rule.allowance is Allowance.UNLESS_IDEMPOTENT:
        return idempotent_producer and count > 0
    return count > 0


def evaluate_contract(
    semantics: str,
    counts: Mapping[str, int],
    tolerances: Tolerances | None = None,
    idempotent_producer: bool = False,
) -> ContractResult:
    """Judge one run's verdict counts against the pipeline's claimed semantic.

    :param semantics: ``at_most_once``, ``at_least_once`` or ``exactly_once``.
    :param counts: messages per verdict (missing verdicts count 0), as from ``verdict_counts``.
    :param tolerances: the pipeline's tolerances; ``None`` allows nothing.
    :param idempotent_producer: whether a messageId at two offsets is a producer bug.
    :raises ValueError: for an unknown semantic, an unknown verdict or a negative count.
    """
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r}: expected one of {', '.join(SEMANTICS)}")
    for verdict, count in counts.items():
        if verdict not in ALL_VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r} in counts")
        if count < 0:
            raise ValueError(f"negative count for {verdict}: {count}")
    tol = tolerances or Tolerances()
    judged = sum(int(counts.get(verdict, 0)) for verdict in RATIO_BASE)
    violations: list[Violation] = []
    for verdict, rule in CONTRACT[semantics].items():
        count = int(counts.get(verdict, 0))
        allowed = _allowed(verdict, rule, tol)
        if not _over(rule, count, judged, allowed, idempotent_producer):
            continue
        reason = rule.reason.format(
            semantics=semantics,
            verdict=verdict,
            count=count,
            judged=judged,
            share=count / judged if judged else 0.0,
            allowed=allowed,
        )
        violations.append(Violation(str(verdict), count, allowed, reason))
    return ContractResult(passed=not violations, judged=judged, violations=violations)
