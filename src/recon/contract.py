"""The contract: which verdicts each claimed delivery semantic allows (DESIGN.md, "The contract").

=============  ==============================  ===================================  =========
semantic       lost                            duplicated                           phantom,
                                                                                    aborted_read
=============  ==============================  ===================================  =========
at_most_once   up to ``max_loss_ratio``        forbidden                            forbidden
at_least_once  forbidden                       up to ``max_duplicate_ratio``        forbidden
exactly_once   forbidden                       forbidden                            forbidden
=============  ==============================  ===================================  =========

Ratios are relative to the messages judged in the run (delivered + lost + duplicated).
``topic_duplicate`` fails only a pipeline that declares ``idempotent_producer: true``.
``unverifiable`` and ``invalid`` fail unless ``max_unverifiable`` / ``max_invalid`` (absolute
counts) allow them. ``pending`` never fails: it is judged in a later run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from recon.config import Tolerances
from recon.verdicts import ALL_VERDICTS, SEMANTICS, Verdict


class Violation(NamedTuple):
    """One verdict over its allowance: ``allowed`` is a ratio for lost/duplicated, else a count."""

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

    def n(verdict: str) -> int:
        return int(counts.get(verdict, 0))

    judged = n(Verdict.DELIVERED) + n(Verdict.LOST) + n(Verdict.DUPLICATED)
    violations: list[Violation] = []

    def ratio_rule(verdict: str, allowed: float, tolerated_by: str) -> None:
        count = n(verdict)
        if count == 0:
            return
        if semantics != tolerated_by:
            reason = f"{semantics} forbids {verdict} messages"
            violations.append(Violation(str(verdict), count, 0.0, reason))
        # Compare as the decimal the user wrote: 0.29 * 100 is 28.999... in floating point.
        elif count > Fraction(str(allowed)) * judged:
            reason = (
                f"{count} of {judged} judged messages {verdict} "
                f"({count / judged:.2%}), allowed up to {allowed:.2%}"
            )
            violations.append(Violation(str(verdict), count, allowed, reason))

    ratio_rule(Verdict.LOST, tol.max_loss_ratio, "at_most_once")
    ratio_rule(Verdict.DUPLICATED, tol.max_duplicate_ratio, "at_least_once")
    for verdict in (Verdict.PHANTOM, Verdict.ABORTED_READ):
        if n(verdict):
            reason = f"sink rows without a committed record are forbidden under {semantics}"
            violations.append(Violation(str(verdict), n(verdict), 0, reason))
    if idempotent_producer and n(Verdict.TOPIC_DUPLICATE):
        reason = "the producer is declared idempotent, yet a messageId is at more than one offset"
        violations.append(
            Violation(Verdict.TOPIC_DUPLICATE.value, n(Verdict.TOPIC_DUPLICATE), 0, reason)
        )
    for verdict, allowed in (
        (Verdict.UNVERIFIABLE, tol.max_unverifiable),
        (Verdict.INVALID, tol.max_invalid),
    ):
        if n(verdict) > allowed:
            reason = f"{n(verdict)} {verdict}, tolerance allows {allowed}"
            violations.append(Violation(str(verdict), n(verdict), allowed, reason))
    return ContractResult(passed=not violations, judged=judged, violations=violations)
