"""The declarations ``expect:`` and ``diverted:`` (issue 72), checked when the file is loaded:
each mistake is one line naming the pipeline and the key (``expect: all[1]: names no field ...``),
never a failure in a run. Their values are :mod:`recon.config.diversions`'."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from recon.config.diversions import (
    BY_MESSAGE_ID,
    FIELD_KINDS,
    GROUP_OPS,
    LEAF_OPS,
    PRESETS,
    DivertedSpec,
    FieldRef,
    OriginalHeaders,
    Predicate,
)
from recon.config.problems import invalid, kind_of
from recon.config.types import ConnectionId, Declaration, Text, Topic, context

#: How an error shows the shapes a predicate may take.
_SHAPES = (
    "{json_field: type, in: [order]}, {header: name, not_in: [...]}, {key: true, present: true}, "
    "{all: [...]}, {any: [...]} or {not: {...}}"
)


def _where(path: str) -> str:
    return f"{path}: " if path else ""


def _values(value: Any, path: str) -> tuple[str, ...]:
    # A value is compared as the text the record holds: a JSON number or boolean as written.
    # A float is refused: 1.0 and 1 are different texts, and a YAML float rarely says which.
    if not isinstance(value, list) or not value:
        raise invalid(f"{_where(path)}expected a non-empty list of values, got {kind_of(value)}")
    texts: list[str] = []
    for index, item in enumerate(value):
        if isinstance(item, bool):
            texts.append("true" if item else "false")
        elif isinstance(item, int | str):
            texts.append(str(item))
        else:
            raise invalid(
                f"{path}[{index}]: expected a text, a whole number or a boolean, got "
                f"{kind_of(item)}"
            )
    return tuple(dict.fromkeys(texts))


def _field(data: dict[str, Any], path: str) -> FieldRef:
    named = [k for k in FIELD_KINDS if k in data]
    if not named:
        raise invalid(
            f"{_where(path)}names no field: add json_field: <name>, header: <name> or key: true"
        )
    if len(named) > 1:
        raise invalid(f"{_where(path)}names {' and '.join(named)}: a leaf reads one field")
    kind = named[0]
    value = data[kind]
    if kind == "key":
        if value is not True:
            raise invalid(f"{_where(path)}key: expected true, got {value!r}")
        return FieldRef("key")
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{_where(path)}{kind}: expected a non-empty name, got {kind_of(value)}")
    return FieldRef(kind, value)


def parse_predicate(data: Any, path: str = "") -> Predicate:
    """A declared predicate (the YAML under ``expect:``) as its value.

    :param data: the mapping as the YAML loader made it.
    :param path: where it sits under ``expect`` (for the error: ``all[1]``).
    :raises PydanticCustomError: a mistake, worded for the user (``recon.config.problems``).
    """
    if not isinstance(data, dict) or not data:
        raise invalid(f"{_where(path)}expected a mapping such as {_SHAPES}, got {kind_of(data)}")
    keys = [str(k) for k in data]
    unknown = [k for k in keys if k not in (*FIELD_KINDS, *LEAF_OPS, *GROUP_OPS)]
    if unknown:
        raise invalid(f"{_where(path)}unknown key {', '.join(unknown)}: expected {_SHAPES}")
    groups = [k for k in keys if k in GROUP_OPS]
    if groups:
        if len(keys) > 1:
            raise invalid(f"{_where(path)}{groups[0]} stands alone, got {', '.join(keys)}")
        op = groups[0]
        inner = f"{path}.{op}" if path else op
        if op == "not":
            return Predicate("not", items=(parse_predicate(data[op], inner),))
        items = data[op]
        if not isinstance(items, list) or not items:
            raise invalid(f"{_where(inner)}expected a non-empty list of predicates")
        return Predicate(
            op, items=tuple(parse_predicate(p, f"{inner}[{i}]") for i, p in enumerate(items))
        )
    field = _field(data, path)
    ops = [k for k in keys if k in LEAF_OPS]
    if len(ops) != 1:
        got = ", ".join(ops) if ops else "none"
        raise invalid(
            f"{_where(path)}expected one of in, not_in, present, absent beside the field, got {got}"
        )
    op = ops[0]
    if op in ("present", "absent"):
        if data[op] is not True:
            raise invalid(f"{_where(path)}{op}: expected true, got {data[op]!r}")
        return Predicate(op, field)
    return Predicate(op, field, _values(data[op], f"{path}.{op}" if path else op))


class ExpectDecl(BaseModel):
    """The ``expect:`` mapping: which records the sink is expected to hold. A record outside it
    is ``excluded`` (counted and listed, never ``lost``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    predicate: Predicate

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, data: Any) -> Any:
        return {"predicate": parse_predicate(data)}

    def spec(self) -> Predicate:
        """The validated value."""
        return self.predicate


class OriginalHeadersDecl(Declaration):
    """``diverted.original`` as explicit header names."""

    topic: Text
    partition: Text
    offset: Text
    error: Text | None = None

    def spec(self) -> OriginalHeaders:
        """The validated value."""
        return OriginalHeaders(self.topic, self.partition, self.offset, self.error)


class DivertedDecl(Declaration):
    """The ``diverted:`` mapping: the dead-letter and retry topics a consumer sends the records it
    does not write to, their connection (default: ``kafka.connection``), and how a record there
    names its original (``original``: ``spring``, ``connect``, ``message_id`` or
    ``{topic: h, partition: h, offset: h, error: h}``)."""

    topics: list[Topic]
    connection: ConnectionId | None = None
    original: Any = "spring"

    @field_validator("topics")
    @classmethod
    def _distinct(cls, topics: list[str]) -> list[str]:
        if not topics:
            raise invalid("expected at least one dead-letter or retry topic")
        seen: set[str] = set()
        for topic in topics:
            if topic in seen:
                raise invalid(f"{topic} is listed twice")
            seen.add(topic)
        return topics

    @model_validator(mode="after")
    def _not_the_pipelines_own(self, info: ValidationInfo) -> DivertedDecl:
        # On the pipeline's own cluster its topic is the window, never a dead-letter topic; on
        # another cluster a topic of the same name is another topic.
        own = context(info).get("topic")
        if self.connection is None and own in self.topics:
            raise invalid(
                f"topics: {own} is the pipeline's own topic (kafka.topic): a dead-letter topic "
                "is another"
            )
        return self

    @field_validator("original", mode="before")
    @classmethod
    def _naming(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value in PRESETS or value == BY_MESSAGE_ID:
                return value
            raise invalid(
                f"expected {', '.join(PRESETS)}, {BY_MESSAGE_ID} or {{topic: <header>, "
                f"partition: <header>, offset: <header>, error: <header>}}, got {value!r}"
            )
        if isinstance(value, dict):
            return OriginalHeadersDecl.model_validate(value)
        raise invalid(f"expected a preset name or a mapping of header names, got {kind_of(value)}")

    def spec(self) -> DivertedSpec:
        """The validated value."""
        original = self.original
        if isinstance(original, OriginalHeadersDecl):
            return DivertedSpec(tuple(self.topics), self.connection, "headers", original.spec())
        if original == BY_MESSAGE_ID:
            return DivertedSpec(tuple(self.topics), self.connection, BY_MESSAGE_ID, None)
        return DivertedSpec(
            tuple(self.topics), self.connection, original, OriginalHeaders(*PRESETS[original])
        )
