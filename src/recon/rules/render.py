"""The rule files, read once and rendered for the engine that runs them.

The rules are written in DuckDB's dialect. For Spark they are transpiled with sqlglot, and five
constructs that sqlglot renders faithfully but Spark evaluates differently (or not faithfully)
are rewritten:

* ``list[i]`` becomes ``try_element_at(list, i)``: Spark's ``list[i - 1]`` fails on a short list
  in ANSI mode, where DuckDB gives NULL;
* ``list_slice(list, a, b)`` becomes ``slice(list, a, b - a + 1)``;
* ``hash(x)`` becomes ``xxhash64(x)``: Spark's ``hash`` has 32 bits, too few for a window of
  millions of ids (more collisions send more messages the general way);
* ``array_length(list)`` stays ``size(list)``, as sqlglot renders it;
* ``epoch_ms(timestamp)`` becomes ``unix_millis(timestamp)``: sqlglot reads DuckDB's
  ``epoch_ms`` as its other overload (milliseconds to a timestamp). The rules apply it to
  timestamps only.

``${NAME}`` placeholders are the run's parameters and the shared vocabulary (verdict groups,
detail words), substituted as SQL literals before parsing, so no constant is written twice.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping, Sequence
from importlib import resources

from recon.model import details
from recon.model.verdicts import JUDGED, LEDGER_VERDICTS, UNMATCHED
from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH

#: How many positions a detail text lists before it stops.
MAX_POSITIONS_IN_DETAIL = 20
POSITION_TYPE = 'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT)'
ENGINES = ("duckdb", "spark")


def literal(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def in_list(values: Sequence[str]) -> str:
    """``values`` as the parenthesised list of an ``IN``."""
    return "(" + ", ".join(literal(v) for v in values) + ")"


def _vocabulary() -> dict[str, str]:
    position = "{'topic': topic, 'partition': \"partition\", 'offset': \"offset\"}"
    no_positions = f"CAST(NULL AS {POSITION_TYPE}[])"
    return {
        "POSITION_TYPE": POSITION_TYPE,
        "POS": f"CAST({position} AS {POSITION_TYPE})",
        "NULL_POS": f"CAST(NULL AS {POSITION_TYPE})",
        "EMPTY_POSITIONS": f"CAST([] AS {POSITION_TYPE}[])",
        "NO_POSITIONS": no_positions,
        "NO_LEDGER": (
            "CAST(NULL AS BIGINT) AS l_sink_count, CAST(NULL AS VARCHAR) AS l_verdict, "
            f"CAST(NULL AS VARCHAR) AS l_first_run_id, {no_positions} AS l_positions, "
            "CAST(NULL AS BIGINT) AS l_record_time_ms, "
            "CAST(NULL AS BIGINT) AS l_sink_time_ms"
        ),
        "NO_TIME": "CAST(NULL AS TIMESTAMPTZ) AS at_time",
        "NO_DIFFERS": "CAST(NULL AS VARCHAR[]) AS differs",
        "NO_TIMES": (
            "CAST(NULL AS BIGINT) AS latency_ms, CAST(NULL AS BIGINT) AS record_time_ms, "
            "CAST(NULL AS BIGINT) AS sink_time_ms"
        ),
        "LATE_DETAIL": literal(details.LATE),
        "MISMATCHED_DETAIL": literal(details.MISMATCHED),
        "COPIES_DIFFER": literal(details.DUPLICATE_COPIES_DIFFER),
        "OUT_OF_ORDER_DETAIL": literal(details.OUT_OF_ORDER),
        "SUPERSEDED_DETAIL": literal(details.SUPERSEDED),
        "EXCLUDED_DETAIL": literal(details.EXCLUDED),
        "EXCLUDED_WRITTEN": literal(details.EXCLUDED_WRITTEN),
        "DEAD_LETTER_UNKNOWN": literal(details.DEAD_LETTER_UNKNOWN),
        "DIVERTED_DELIVERY": literal(details.DIVERTED_DELIVERY),
        "MAX_POSITIONS_IN_DETAIL": str(MAX_POSITIONS_IN_DETAIL),
        "JUDGED": in_list(JUDGED),
        "UNMATCHED": in_list(UNMATCHED),
        "LEDGER_VERDICTS": in_list(LEDGER_VERDICTS),
        "LATE_DELIVERY": literal(details.LATE_DELIVERY),
        "PENDING": literal(details.PENDING),
        "PENDING_REMOVED": literal(details.PENDING_REMOVED),
        "PENDING_NEVER_COMMITTED": literal(details.PENDING_NEVER_COMMITTED),
        "NOT_FOUND_REMOVED": literal(details.NOT_FOUND_REMOVED),
        "PHANTOM": literal(details.PHANTOM),
        "UNPUBLISHED_DETAIL": literal(details.UNPUBLISHED),
        "SOURCE_WITHOUT_ID": literal(details.SOURCE_WITHOUT_ID),
        "SINK_ID_OVERSIZE": literal(details.SINK_ID_OVERSIZE),
        "MAX_MESSAGE_ID_LENGTH": str(MAX_MESSAGE_ID_LENGTH),
    }


@functools.cache
def source(step: str) -> str:
    """The text of one rule file, as reviewed (placeholders unsubstituted)."""
    return resources.files("recon.rules").joinpath(f"{step}.sql").read_text()


def render(step: str, dialect: str, params: Mapping[str, str] | None = None) -> str:
    """One rule step as a statement in ``dialect``.

    :param step: the rule file's name without ``.sql`` (e.g. ``05_general_verdicts``).
    :param dialect: ``duckdb`` or ``spark`` (``RuleEngine.dialect``).
    :param params: more placeholders (e.g. ``RUN_ID``), already SQL literals.
    """
    if dialect not in ENGINES:
        raise ValueError(f"unknown dialect {dialect!r}: expected one of {', '.join(ENGINES)}")
    text = string.Template(source(step)).substitute({**_vocabulary(), **(params or {})})
    return for_dialect(text, dialect)


def for_dialect(statement: str, dialect: str) -> str:
    """A statement written in DuckDB's dialect (a rule, or an input's conform/VALUES statement)
    in ``dialect``: as it is for DuckDB, transpiled for Spark."""
    return statement if dialect == "duckdb" else _for_spark(statement)


@functools.lru_cache(maxsize=64)
def _for_spark(text: str) -> str:
    import sqlglot
    from sqlglot import exp

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
            index = node.expressions[0]
            if isinstance(index, exp.Literal) and not index.is_string:
                # sqlglot keeps indexes 0-based; try_element_at counts from 1, as DuckDB does.
                one_based = exp.Literal.number(int(index.this) + 1)
                return exp.Anonymous(this="try_element_at", expressions=[node.this, one_based])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "list_slice":
            array, start, end = node.expressions
            length = exp.Add(
                this=exp.Sub(this=end, expression=start), expression=exp.Literal.number(1)
            )
            return exp.Anonymous(this="slice", expressions=[array, start, length])
        if isinstance(node, exp.UnixToTime) and str(node.args.get("scale")) == "3":
            return exp.Anonymous(this="unix_millis", expressions=[node.this])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "hash":
            return exp.Anonymous(this="xxhash64", expressions=node.expressions)
        return node

    tree = sqlglot.parse_one(text, read="duckdb")
    return tree.transform(rewrite).sql(dialect="spark")
