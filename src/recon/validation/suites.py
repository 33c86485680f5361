"""The suite files of ``expectations/``: generated from the contract table, loaded by name, and
the values of their ``$PARAMETER`` placeholders.

The suites are Great Expectations 1.x suite JSON built by :func:`build_suite` from
:data:`recon.contract.table.CONTRACT`, the table
:func:`recon.contract.evaluate.evaluate_contract` judges by: one source for both. The committed
files are :func:`render_suite`'s text, rewritten by ``scripts/gen_suites.py``; a unit test fails
when one differs.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from typing import Any

from recon import settings
from recon.config import PipelineConfig
from recon.contract.table import CONTRACT, Allowance, Rule
from recon.errors import ReconError
from recon.model.verdicts import JUDGED, RATIO_BASE, ROW_VERDICTS, SEMANTICS, Verdict

#: Environment variable naming the folder of the suite files (default: ``<repo>/expectations``).
EXPECTATIONS_ENV = settings.RECON_EXPECTATIONS_DIR
#: The suite file format this module understands (``meta.recon.suite_version``).
SUITE_VERSION = 1


class ValidationError(ReconError):
    """A suite cannot be loaded, or Great Expectations could not evaluate it."""


def expectations_dir() -> str:
    """``$RECON_EXPECTATIONS_DIR``, else ``expectations/`` at the repository root."""
    return settings.expectations_dir()


def load_suite(semantics: str) -> dict[str, Any]:
    """The suite file for a claimed semantic, as a dict in GX's suite JSON format.

    :raises ValidationError: unknown semantic, unreadable file, or a file of another version.
    """
    if semantics not in SEMANTICS:
        raise ValidationError(
            f"unknown semantics {semantics!r}: expected one of {', '.join(SEMANTICS)}"
        )
    path = os.path.join(expectations_dir(), f"{semantics}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            document: dict[str, Any] = json.load(handle)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the suite ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    version = document.get("meta", {}).get("recon", {}).get("suite_version")
    if document.get("name") != semantics or version != SUITE_VERSION:
        raise ValidationError(
            f"{path}: expected suite '{semantics}' with meta.recon.suite_version "
            f"{SUITE_VERSION}, got '{document.get('name')}' version {version}"
        )
    return document


def suite_columns(document: dict[str, Any]) -> list[str]:
    """The results' columns a suite reads: each expectation's ``column`` and the columns of its
    ``row_condition`` (a validation without Spark reads only these)."""
    found: set[str] = set()

    def condition(value: Any) -> None:
        if isinstance(value, dict):
            column = value.get("column")
            if isinstance(column, dict) and isinstance(column.get("name"), str):
                found.add(column["name"])
            for item in value.values():
                condition(item)
        elif isinstance(value, list):
            for item in value:
                condition(item)

    for expectation in document.get("expectations", []):
        kwargs = expectation.get("kwargs", {})
        if isinstance(kwargs.get("column"), str):
            found.add(kwargs["column"])
        condition(kwargs.get("row_condition"))
    return sorted(found)


def _mostly(max_ratio: float) -> float:
    # The contract compares ``count <= ratio * judged`` exactly, on the decimal the user wrote.
    # GX succeeds when ``(judged - count) / judged >= mostly``, in floating point. Both sides
    # round correctly from exact values, so at the threshold they are the same float and pass.
    return float(1 - Fraction(str(max_ratio)))


def _parameter(verdict: str, rule: Rule) -> str | None:
    """The name of the placeholder a cell's expectation reads; ``None`` when it reads none.

    :param verdict: the verdict the cell judges.
    :param rule: the cell of the contract table.
    """
    if rule.allowance is Allowance.RATIO:
        return f"{verdict}_mostly"
    if rule.allowance is Allowance.COUNT:
        return rule.tolerance
    if rule.allowance is Allowance.UNLESS_IDEMPOTENT:
        return f"{verdict}_allowed"
    return None


def suite_parameters(cfg: PipelineConfig) -> dict[str, Any]:
    """The values of the ``$PARAMETER`` placeholders of the pipeline's suite.

    Which setting fills which placeholder is read from the contract table, in the pipeline's
    semantic's row: the cells that built the suite.

    :param cfg: the pipeline: its semantic, tolerances and ``idempotent_producer``.
    """
    values: dict[str, Any] = {}
    for verdict, rule in CONTRACT[cfg.semantics].items():
        name = _parameter(verdict, rule)
        if name is None:
            continue
        if rule.allowance is Allowance.UNLESS_IDEMPOTENT:
            values[name] = [False] if cfg.idempotent_producer else [False, True]
            continue
        value = getattr(cfg.tolerances, str(rule.tolerance))
        values[name] = _mostly(value) if rule.allowance is Allowance.RATIO else int(value)
    return values


# --- generating the suites from the contract table ----------------------------------------------

#: How a note on a rule forbidding the verdict opens: what the verdict is, or what its absence
#: guarantees. Every verdict of the table has one, so that any cell may forbid its verdict.
_NOTE_LEAD: dict[str, str] = {
    Verdict.LOST: "Every committed message below the committed offset has a sink row",
    Verdict.UNPUBLISHED: "Every settled message of the pipeline's source (its outbox) is in a "
    "committed record of the topic",
    Verdict.DUPLICATED: "At most one sink row per messageId",
    Verdict.LATE: "A delivered message whose sink row time is more than latency.max_seconds after "
    "its record's Kafka timestamp",
    Verdict.MISMATCHED: "A delivered message whose sink row's content (the payload fields or the "
    "value's SHA-256) differs from its record's",
    Verdict.OUT_OF_ORDER: "An upsert sink's row for a key holding an older record than the "
    "key's newest committed one (a stale overwrite)",
    Verdict.DIVERTED: "A committed message not in the sink, found in a declared dead-letter or "
    "retry topic",
    Verdict.PHANTOM: "A sink row whose messageId is in no committed record of the topic",
    Verdict.ABORTED_READ: "A sink row written from a record of an aborted transaction "
    "(the consumer read read_uncommitted)",
    Verdict.TOPIC_DUPLICATE: "A messageId at more than one committed offset is a producer retry",
    Verdict.UNVERIFIABLE: "A partition whose window reaches below the log-start offset "
    "(retention or compaction removed the records)",
    Verdict.INVALID: "A record or sink row whose messageId is missing or unparseable",
}
#: Sink rows per committed message in the suite's summary, by whether lost and duplicated are
#: forbidden (each tolerated one has a clause of its own).
_SINK_ROWS = {
    (True, True): "every committed message has exactly one sink row",
    (True, False): "every committed message has a sink row",
    (False, True): "no committed message has more than one sink row",
}
_TOLERATED = {
    Verdict.LOST: "be lost",
    Verdict.DUPLICATED: "have more than one",
    Verdict.LATE: "arrive later than latency.max_seconds",
    Verdict.MISMATCHED: "reach the sink with a different payload",
    Verdict.OUT_OF_ORDER: "be overwritten in an upsert sink by an older record",
    Verdict.DIVERTED: "be diverted to a dead-letter or retry topic",
}
_UNMATCHED = {Verdict.PHANTOM: "phantom", Verdict.ABORTED_READ: "aborted"}


def _where(column: str, operator: str, value: Any) -> dict[str, Any]:
    """A GX ``row_condition``."""
    return {
        "type": "comparison",
        "column": {"name": column},
        "operator": operator,
        "parameter": value,
    }


def _forbids(semantics: str, verdict: str) -> bool:
    rule = CONTRACT[semantics].get(verdict)
    return rule is not None and rule.allowance is Allowance.FORBIDDEN


def _summary(semantics: str) -> str:
    """The suite's ``notes``: its semantic's row of the table in a sentence."""
    clauses = []
    sink_rows = _SINK_ROWS.get(
        (_forbids(semantics, Verdict.LOST), _forbids(semantics, Verdict.DUPLICATED))
    )
    if sink_rows:
        clauses.append(sink_rows)
    for verdict, what in _TOLERATED.items():
        rule = CONTRACT[semantics].get(verdict)
        if rule is not None and rule.allowance is Allowance.RATIO:
            clauses.append(f"a share of judged messages up to {rule.tolerance} may {what}")
        elif rule is not None and rule.allowance is Allowance.COUNT:
            clauses.append(f"up to {rule.tolerance} messages may {what}")
    reads = [name for verdict, name in _UNMATCHED.items() if _forbids(semantics, verdict)]
    if reads:
        clauses.append(f"no {' or '.join(reads)} reads")
    claim = semantics.replace("_", "-")
    return f"The run's results keep the {claim} claim: {'; '.join(clauses)}."


def _forbidden_tail(semantics: str, verdict: str) -> str:
    if all(_forbids(other, verdict) for other in CONTRACT):
        return "forbidden under every semantic"
    return f"{semantics} forbids {verdict} messages"


def _topic_duplicate(semantics: str, rule: Rule, meta: dict[str, Any]) -> dict[str, Any]:
    """The expectation of the ``topic_duplicate`` cell: a boolean column, not a row's verdict."""
    name, lead = Verdict.TOPIC_DUPLICATE.value, _NOTE_LEAD[Verdict.TOPIC_DUPLICATE]
    if rule.allowance is Allowance.UNLESS_IDEMPOTENT:
        parameter = _parameter(name, rule)
        value_set: Any = {"$PARAMETER": parameter}
        notes = (
            f"{lead}: forbidden only when the pipeline declares idempotent_producer: true "
            f"(${parameter} is [false], else [false, true])."
        )
    elif rule.allowance is Allowance.FORBIDDEN:
        value_set, notes = [False], f"{lead}: {_forbidden_tail(semantics, name)}."
    else:
        raise ValidationError(f"{semantics}: no suite expectation allows {name} by a tolerance")
    return {
        "type": "expect_column_values_to_be_in_set",
        "kwargs": {"column": name, "value_set": value_set},
        "meta": meta,
        "notes": notes,
    }


def _cell(semantics: str, verdict: str, rule: Rule) -> dict[str, Any]:
    """The expectation checking one cell of the table over the results' rows.

    :param semantics: the suite's semantic.
    :param verdict: the verdict the cell judges.
    :param rule: the cell.
    :raises ValidationError: a cell that no expectation here expresses.
    """
    name = str(verdict)
    # The rule's name ends in _ratio / _count for a tolerance: alerts word the allowance by it.
    suffix = "" if rule.allowance is Allowance.UNLESS_IDEMPOTENT else f"_{rule.allowance.value}"
    meta: dict[str, Any] = {"recon_rule": name + suffix, "verdict": name}
    if rule.tolerance is not None:
        meta["tolerance"] = rule.tolerance
    if verdict == Verdict.TOPIC_DUPLICATE:
        return _topic_duplicate(semantics, rule, meta)
    parameter = {"$PARAMETER": _parameter(name, rule)}
    if rule.allowance is Allowance.COUNT:
        return {
            "type": "expect_table_row_count_to_be_between",
            "kwargs": {
                "min_value": 0,
                "max_value": parameter,
                "row_condition": _where("verdict", "==", name),
            },
            "meta": meta,
            "notes": f"{name} rows are never silent: at most the pipeline's {rule.tolerance} "
            "(an absolute count, default 0).",
            "description": f"Rows with verdict {name}: at most the pipeline's {rule.tolerance} "
            "(an absolute count, 0 unless set).",
        }
    kwargs: dict[str, Any] = {"column": "verdict", "value_set": [name]}
    if rule.allowance is Allowance.RATIO:
        kwargs["mostly"] = parameter
        kwargs["row_condition"] = _where("verdict", "IN", list(RATIO_BASE))
        notes = (
            f"{name} allowed up to the pipeline's {rule.tolerance} of the judged messages "
            f"({' + '.join(RATIO_BASE)}); mostly = 1 - {rule.tolerance}, filled in at run time as "
            f"${parameter['$PARAMETER']}."
        )
    else:
        notes = f"{_NOTE_LEAD[verdict]}: {_forbidden_tail(semantics, name)}."
    return {
        "type": "expect_column_values_to_not_be_in_set",
        "kwargs": kwargs,
        "meta": meta,
        "notes": notes,
    }


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, dict):
        if "$PARAMETER" in value:
            return {value["$PARAMETER"]}
        return set().union(*(_placeholders(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_placeholders(item) for item in value))
    return set()


def build_suite(semantics: str) -> dict[str, Any]:
    """The suite of a claimed semantic, generated from its row of the contract table.

    Two rules guard the shape of the results (a reconciler bug, not the pipeline's) and carry no
    verdict: ``known_verdicts`` first, ``judged_message_id`` last. Between them, one expectation
    per cell of the row, in the table's order.

    :param semantics: ``at_most_once``, ``at_least_once`` or ``exactly_once``.
    :returns: the suite in GX 1.x suite JSON, as :func:`load_suite` reads it.
    :raises ValidationError: an unknown semantic, or a cell no expectation expresses.
    """
    if semantics not in SEMANTICS:
        raise ValidationError(
            f"unknown semantics {semantics!r}: expected one of {', '.join(SEMANTICS)}"
        )
    known = {
        "type": "expect_column_values_to_be_in_set",
        "kwargs": {"column": "verdict", "value_set": list(ROW_VERDICTS)},
        "meta": {"recon_rule": "known_verdicts"},
        "notes": "Every row carries one of the reconciler's row verdicts (topic_duplicate is the "
        "boolean column, never a verdict).",
    }
    named = {
        "type": "expect_column_values_to_not_be_null",
        "kwargs": {"column": "message_id", "row_condition": _where("verdict", "IN", list(JUDGED))},
        "meta": {"recon_rule": "judged_message_id"},
        "notes": f"Every judged message ({', '.join(JUDGED)}) is named by its messageId.",
    }
    cells = [_cell(semantics, verdict, rule) for verdict, rule in CONTRACT[semantics].items()]
    expectations = [known, *cells, named]
    recon = {
        "suite_version": SUITE_VERSION,
        "semantic": semantics,
        "parameters": sorted(_placeholders(expectations)),
    }
    return {
        "name": semantics,
        "meta": {"recon": recon},
        "notes": _summary(semantics),
        "expectations": expectations,
    }


def render_suite(semantics: str) -> str:
    """:func:`build_suite` as the text of its file in ``expectations/``.

    :param semantics: the suite's semantic.
    """
    return json.dumps(build_suite(semantics), indent=2, ensure_ascii=False) + "\n"
