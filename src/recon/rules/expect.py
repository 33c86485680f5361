"""A pipeline's ``expect:`` predicate as SQL, for both engines' rules (``${EXPECTED}``).

The predicate reads ``records.expect_fields``: the texts of the fields it names, in the order
``recon.config.diversions.Predicate.fields`` gives (the reader extracts them with the messageId,
``recon.read.message_ids``). Each leaf is written so that it is never NULL (an absent field is in
no list), so ``NOT``, ``AND`` and ``OR`` keep two values and a record is either expected or not:
no third state for a reader to guess. The expression is written in DuckDB's dialect and rendered
for Spark with the rules (``recon.rules.render``: ``list[i]`` becomes ``try_element_at``).
Values are SQL literals (``recon.rules.render.literal``), never spliced text.
"""

from __future__ import annotations

from recon.config.diversions import FieldRef, Predicate
from recon.rules.render import literal

#: ``${EXPECTED}`` when the pipeline declares no ``expect``: every record is expected.
EVERY_RECORD = "true"


def expected_sql(predicate: Predicate | None, column: str = "expect_fields") -> str:
    """Whether a record is one the sink is expected to hold, as a boolean SQL expression over
    ``column`` (never NULL).

    :param predicate: the pipeline's ``expect`` (None: every record is).
    :param column: the list of the predicate's field texts.
    """
    if predicate is None:
        return EVERY_RECORD
    slots = {f: i for i, f in enumerate(predicate.fields(), 1)}
    return _sql(predicate, slots, column)


def _sql(p: Predicate, slots: dict[FieldRef, int], column: str) -> str:
    if p.op in ("all", "any"):
        joiner = " AND " if p.op == "all" else " OR "
        return "(" + joiner.join(_sql(i, slots, column) for i in p.items) + ")"
    if p.op == "not":
        return f"(NOT {_sql(p.items[0], slots, column)})"
    assert p.field is not None, "a leaf reads a field"
    value = f"{column}[{slots[p.field]}]"
    if p.op == "present":
        return f"({value} IS NOT NULL)"
    if p.op == "absent":
        return f"({value} IS NULL)"
    listed = ", ".join(literal(v) for v in p.values)
    found = f"coalesce({value} IN ({listed}), false)"
    return found if p.op == "in" else f"(NOT {found})"
