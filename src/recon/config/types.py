"""The value types a pipeline's declaration is made of, each with the check pydantic has no word
for: a small validator that raises :func:`~recon.config.problems.invalid` with the message the
user reads (:mod:`recon.config.schema` builds its mappings from them).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    model_validator,
)

from recon.config.model import ENGINES, MESSAGE_ID_KINDS, NOTIFIERS, MessageIdSpec
from recon.config.problems import invalid, kind_of
from recon.config.schedule import cron_problem
from recon.model.verdicts import SEMANTICS

# Airflow's own rule for connection ids and DAG ids (pipelines become DAGs).
ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,250}$")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
#: A pipeline name is a DAG id and a directory name under the data directory (its windows,
#: results and ledger): Airflow's rule, and no leading '.', so that '.' and '..' never name a
#: directory outside the pipeline's own.
PIPELINE_NAME_RE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,249}$")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise invalid("must not be empty")
    return value


def _connection_id(value: str) -> str:
    if not ID_RE.match(value):
        raise invalid(
            "expected an Airflow connection id (letters, digits, '_', '.', '-'), "
            "not a URI or credentials"
        )
    return value


def _topic(value: str) -> str:
    if not _TOPIC_RE.match(value):
        raise invalid("not a Kafka topic name (letters, digits, '.', '_', '-')")
    return value


def _table(value: str) -> str:
    # The dot always separates schema from table; each part is quoted later, so only emptiness
    # (which no quoting can rescue) is refused here.
    if value.count(".") > 1 or "" in value.split("."):
        raise invalid(f"expected 'table' or 'schema.table', got {value!r}")
    return value


def _one_of(allowed: tuple[str, ...]) -> BeforeValidator:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise invalid(f"expected one of {', '.join(allowed)}, got {value!r}")
        return value

    return BeforeValidator(check)


def _ratio(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"expected a number between 0 and 1, got {kind_of(value)}")
    if not 0 <= value <= 1:
        raise invalid(f"must be between 0 and 1, got {value}")
    return float(value)


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"expected a positive number of seconds, got {kind_of(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not 0 < seconds < math.inf:  # NaN and infinity too: no clock ever breaks such a bound
        raise invalid(f"must be a positive, finite number of seconds, got {value}")
    return seconds


def mapping_not_null(value: Any) -> Any:
    # Applied before the nullable type: an explicit null is refused as for ``tolerances``,
    # absence is not.
    if value is None:
        raise invalid("expected a mapping, got null")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise invalid("expected a list of non-empty strings")
    return tuple(value)


def _schedule(value: str | None) -> str | None:
    problem = cron_problem(value) if value is not None else None
    if problem:
        raise invalid(problem)
    return value


def _name_not_null(value: Any) -> Any:
    # Applied before the nullable type so that an explicit null is refused, absence is not.
    if value is None:
        raise invalid("expected a string, got null")
    return value


def _record_key(value: Any) -> Any:
    if value is not True:
        raise invalid(f"expected true (the record key is the id), got {value!r}")
    return value


def _partition(value: Any) -> Any:
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid("a partition number must be a whole number, 0 or more")
    return value


def _offset(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"an offset must be a whole number, 0 or more, got {value!r}")
    return value


def _offsets_shape(value: Any) -> Any:
    if value is not None and (not isinstance(value, dict) or not value):
        raise invalid("expected 'earliest' or a mapping {partition: offset}")
    return value


#: A non-empty string (blank counts as empty).
Text = Annotated[str, AfterValidator(_not_blank)]
ConnectionId = Annotated[Text, AfterValidator(_connection_id)]
Topic = Annotated[Text, AfterValidator(_topic)]
Table = Annotated[Text, AfterValidator(_table)]
#: A whole number, 0 or more (a boolean or ``3.0`` is not one).
Count = Annotated[int, Field(ge=0)]
Days = Annotated[int, Field(ge=1)]
Ratio = Annotated[float, BeforeValidator(_ratio)]
#: A number of seconds, more than 0 and finite (a boolean or a string is not one).
Seconds = Annotated[float, BeforeValidator(_seconds)]
Semantics = Annotated[str, _one_of(SEMANTICS)]
Engine = Annotated[str, _one_of(ENGINES)]
Notifier = Annotated[str, _one_of(NOTIFIERS)]
Tags = Annotated[tuple[str, ...], BeforeValidator(_tags)]
Schedule = Annotated[str | None, AfterValidator(_schedule)]
IdName = Annotated[Text | None, BeforeValidator(_name_not_null)]
RecordKey = Annotated[bool | None, BeforeValidator(_record_key)]
Partition = Annotated[int, BeforeValidator(_partition)]
Offset = Annotated[int, BeforeValidator(_offset)]
StartOffsets = Annotated[dict[Partition, Offset] | None, BeforeValidator(_offsets_shape)]


class Declaration(BaseModel):
    """A mapping of the declaration: unknown keys and values of the wrong type are refused."""

    model_config = ConfigDict(strict=True, extra="forbid")


def context(info: ValidationInfo) -> dict[str, Any]:
    """What the checks reading another key of the pipeline get
    (``recon.config.explain.validation_context``)."""
    return info.context if isinstance(info.context, dict) else {}


class MessageIdDecl(Declaration):
    """``{header: name}``, ``{json_field: name}`` or ``{key: true}``: exactly one of them."""

    header: IdName = None
    json_field: IdName = None
    key: RecordKey = None

    @model_validator(mode="before")
    @classmethod
    def _exactly_one(cls, data: Any) -> Any:
        expected = f"expected one of {', '.join(MESSAGE_ID_KINDS)}"
        if not isinstance(data, dict) or not data:
            raise invalid(f"{expected}, as a mapping such as {{header: message_id}}")
        unknown = [str(k) for k in data if k not in MESSAGE_ID_KINDS]
        if unknown:
            raise invalid(f"{expected}, got {', '.join(unknown)}")
        if len(data) > 1:
            raise invalid(f"{expected} (exactly one), got {', '.join(map(str, data))}")
        return data

    def spec(self) -> MessageIdSpec:
        """The validated value."""
        if self.key:
            return MessageIdSpec("key", None)
        if self.header is not None:
            return MessageIdSpec("header", self.header)
        return MessageIdSpec("json_field", self.json_field)
