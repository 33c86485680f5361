"""The delivery contract as one table: what each claimed semantic allows of each verdict.

:data:`CONTRACT` is the one source of the contract (issue 16); everything that decides by the
contract reads it:

- :func:`recon.contract.evaluate.evaluate_contract` judges a run's verdict counts by it, in
  plain Python;
- :func:`recon.validation.suites.build_suite` generates the Great Expectations suites of
  ``expectations/`` from it (``scripts/gen_suites.py`` rewrites the files; a unit test fails when
  a committed file differs from the generated one), and
  :func:`recon.validation.suites.suite_parameters` fills their placeholders by it.

Ratios are relative to the messages judged in the run (delivered + late + mismatched +
out_of_order + lost + duplicated + diverted) and the unpublished ones
(``recon.model.verdicts.RATIO_BASE``).
Verdicts absent from the table never fail a run: ``delivered``, and ``pending`` (judged in a later
run). A verdict absent from a run's counts counts 0.

``late`` (a delivered message slower than the pipeline's ``latency.max_seconds``) is allowed up to
``tolerances.max_late_ratio`` under every semantic: latency is no part of a delivery semantic, so
each claim tolerates it alike, and the default 0 forbids it until the pipeline sets a ratio. A
pipeline that declares no ``latency`` never has a ``late`` message.

``mismatched`` (a delivered message whose sink row's content differs from the record's, when the
pipeline declares ``payload``) is forbidden under ``exactly_once``: a changed message was not
delivered exactly once as produced. The other claims allow it up to
``tolerances.max_mismatched_ratio`` (0 unless set). ``out_of_order`` (an upsert sink whose row
for a key holds an older record than the key's newest, when the pipeline declares ``order``) is
alike: forbidden under ``exactly_once``, up to ``tolerances.max_out_of_order_ratio`` elsewhere.

``unpublished`` (a message the pipeline's ``source`` holds that the topic never got) is a loss
before the topic: allowed up to ``tolerances.max_unpublished_ratio`` under ``at_most_once`` (0
unless set), forbidden under the other two. A pipeline without ``source`` never has one.

``diverted`` (a committed record the consumer sent to a declared dead-letter or retry topic and
did not write, ``diverted:`` declared) is allowed up to ``tolerances.max_diverted_ratio`` under
every semantic, and that ratio is 1 (any share) unless set. Declaring the topics says diverting
is part of the design: the record is not lost, it is in a named place with its error, the
consumer's account of what it could not write. No semantic's promise is about such a record
(at-most-once, at-least-once and exactly-once speak of the records the consumer writes), so each
claim treats it alike; a ratio below 1 turns a flood of poison records into an alert. It is a
judged verdict (in the ratios' base): 5 diverted of 100 is 5%. ``excluded`` (a record outside the
pipeline's ``expect``) is not in the table: it never fails a run.

This module imports nothing of ``recon`` but the verdict vocabulary, so that any module (the
configuration's validation too) may read the table without an import circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final

from recon.model.verdicts import RATIO_BASE, SEMANTICS, Verdict


class Allowance(Enum):
    """How much of a verdict a claimed semantic lets pass."""

    #: None: one message with the verdict breaks the contract.
    FORBIDDEN = "forbidden"
    #: Up to a share of the judged messages: the pipeline's ``tolerances.<tolerance>``.
    RATIO = "ratio"
    #: Up to an absolute count: the pipeline's ``tolerances.<tolerance>``.
    COUNT = "count"
    #: Any, unless the pipeline declares ``idempotent_producer: true``; then none.
    UNLESS_IDEMPOTENT = "unless_idempotent"


@dataclass(frozen=True)
class Rule:
    """One cell of the table: how one claimed semantic treats one verdict.

    :param allowance: how much of the verdict passes.
    :param reason: the ``Violation.reason`` of a run over the allowance, as a :meth:`str.format`
        template over ``semantics``, ``verdict``, ``count``, ``judged``, ``share``
        (``count / judged``) and ``allowed``.
    :param tolerance: the ``recon.config.Tolerances`` field holding the allowance (``RATIO`` and
        ``COUNT`` only).
    """

    allowance: Allowance
    reason: str
    tolerance: str | None = None


def forbidden(reason: str) -> Rule:
    """A verdict no run may hold.

    :param reason: the violation's reason template (see :class:`Rule`).
    """
    return Rule(Allowance.FORBIDDEN, reason)


def up_to_ratio(tolerance: str) -> Rule:
    """A judged verdict allowed up to a share of the judged messages.

    :param tolerance: the ``Tolerances`` field holding the ratio.
    """
    return Rule(
        Allowance.RATIO,
        "{count} of {judged} judged messages {verdict} ({share:.2%}), allowed up to {allowed:.2%}",
        tolerance,
    )


def up_to_count(tolerance: str) -> Rule:
    """A verdict allowed up to an absolute number of rows.

    :param tolerance: the ``Tolerances`` field holding the count.
    """
    return Rule(Allowance.COUNT, "{count} {verdict}, tolerance allows {allowed}", tolerance)


def unless_idempotent(reason: str) -> Rule:
    """A producer-side finding that only a pipeline declaring an idempotent producer forbids.

    :param reason: the violation's reason template (see :class:`Rule`).
    """
    return Rule(Allowance.UNLESS_IDEMPOTENT, reason)


_FORBIDS = "{semantics} forbids {verdict} messages"
_NO_RECORD = "sink rows without a committed record are forbidden under {semantics}"
_CHANGED = "{semantics} forbids a delivery whose content changed on the way ({verdict})"
_UNPUBLISHED = (
    "{semantics} forbids a message the source produced and the topic never got ({verdict})"
)
_STALE = "{semantics} forbids a stale overwrite of an upsert sink ({verdict})"
_RETRY = "the producer is declared idempotent, yet a messageId is at more than one offset"


def _checked(table: dict[str, dict[str, Rule]]) -> dict[str, dict[str, Rule]]:
    """The table, once it is known to make sense: a mistake in it fails at import, not in a run.

    :raises ValueError: a semantic missing, rows of different verdicts or order (the order is
        that of the violations and of the suites' expectations), or a cell that cannot hold.
    """
    if tuple(table) != SEMANTICS:
        raise ValueError(f"the contract table must list {', '.join(SEMANTICS)}, in this order")
    verdicts = tuple(table[SEMANTICS[0]])
    for semantics, rules in table.items():
        if tuple(rules) != verdicts:
            raise ValueError(f"{semantics}: every semantic judges {verdicts}, in this order")
        for verdict, rule in rules.items():
            measured = rule.allowance in (Allowance.RATIO, Allowance.COUNT)
            if measured != (rule.tolerance is not None):
                raise ValueError(f"{semantics}/{verdict}: a tolerance belongs to ratios and counts")
            if rule.allowance is Allowance.RATIO and verdict not in RATIO_BASE:
                raise ValueError(f"{semantics}/{verdict}: a ratio needs a judged verdict")
            # Idempotence speaks of producer retries only: a messageId at two offsets.
            idempotence = rule.allowance is Allowance.UNLESS_IDEMPOTENT
            if idempotence and verdict != Verdict.TOPIC_DUPLICATE:
                raise ValueError(
                    f"{semantics}/{verdict}: idempotent_producer is about topic_duplicate"
                )
    return table


#: The contract: per claimed semantic, per verdict that can fail a run, its :class:`Rule`.
#: Every semantic lists the same verdicts in the same order.
CONTRACT: Final[Mapping[str, Mapping[str, Rule]]] = _checked(
    {
        "at_most_once": {
            Verdict.LOST: up_to_ratio("max_loss_ratio"),
            Verdict.DUPLICATED: forbidden(_FORBIDS),
            Verdict.LATE: up_to_ratio("max_late_ratio"),
            Verdict.MISMATCHED: up_to_ratio("max_mismatched_ratio"),
            Verdict.OUT_OF_ORDER: up_to_ratio("max_out_of_order_ratio"),
            Verdict.UNPUBLISHED: up_to_ratio("max_unpublished_ratio"),
            Verdict.DIVERTED: up_to_ratio("max_diverted_ratio"),
            Verdict.PHANTOM: forbidden(_NO_RECORD),
            Verdict.ABORTED_READ: forbidden(_NO_RECORD),
            Verdict.TOPIC_DUPLICATE: unless_idempotent(_RETRY),
            Verdict.UNVERIFIABLE: up_to_count("max_unverifiable"),
            Verdict.INVALID: up_to_count("max_invalid"),
        },
        "at_least_once": {
            Verdict.LOST: forbidden(_FORBIDS),
            Verdict.DUPLICATED: up_to_ratio("max_duplicate_ratio"),
            Verdict.LATE: up_to_ratio("max_late_ratio"),
            Verdict.MISMATCHED: up_to_ratio("max_mismatched_ratio"),
            Verdict.OUT_OF_ORDER: up_to_ratio("max_out_of_order_ratio"),
            Verdict.UNPUBLISHED: forbidden(_UNPUBLISHED),
            Verdict.DIVERTED: up_to_ratio("max_diverted_ratio"),
            Verdict.PHANTOM: forbidden(_NO_RECORD),
            Verdict.ABORTED_READ: forbidden(_NO_RECORD),
            Verdict.TOPIC_DUPLICATE: unless_idempotent(_RETRY),
            Verdict.UNVERIFIABLE: up_to_count("max_unverifiable"),
            Verdict.INVALID: up_to_count("max_invalid"),
        },
        "exactly_once": {
            Verdict.LOST: forbidden(_FORBIDS),
            Verdict.DUPLICATED: forbidden(_FORBIDS),
            Verdict.LATE: up_to_ratio("max_late_ratio"),
            Verdict.MISMATCHED: forbidden(_CHANGED),
            Verdict.OUT_OF_ORDER: forbidden(_STALE),
            Verdict.UNPUBLISHED: forbidden(_UNPUBLISHED),
            Verdict.DIVERTED: up_to_ratio("max_diverted_ratio"),
            Verdict.PHANTOM: forbidden(_NO_RECORD),
            Verdict.ABORTED_READ: forbidden(_NO_RECORD),
            Verdict.TOPIC_DUPLICATE: unless_idempotent(_RETRY),
            Verdict.UNVERIFIABLE: up_to_count("max_unverifiable"),
            Verdict.INVALID: up_to_count("max_invalid"),
        },
    }
)
