"""The ``repair:`` declaration: how a repair may write a lost message's sink row itself, from
its record, instead of producing the record again (``recon repair plan --write-sink``), and the
bound above which only a person applies a plan's deletes (``max_deletes``, ``max_delete_ratio``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from recon.config.model import (
    DEFAULT_MAX_DELETE_RATIO,
    DEFAULT_MAX_DELETES,
    RECORD_FIELDS,
    RepairSpec,
)
from recon.config.problems import invalid
from recon.config.types import Count, Declaration, Ratio, Text


class RecordFieldDecl(Declaration):
    """``{json_field: name}`` or ``{header: name}``: a part of the record a column gets."""

    json_field: Text | None = None
    header: Text | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> RecordFieldDecl:
        if (self.json_field is None) == (self.header is None):
            raise invalid("expected exactly one of json_field and header")
        return self


class RepairDecl(Declaration):
    """The ``repair:`` mapping."""

    sink_columns: dict[Text, Any] | None = Field(
        default=None,
        description="sink column -> what of the record it gets: one of "
        + ", ".join(RECORD_FIELDS) + ", or {json_field: name}, or {header: name}",
    )  # fmt: skip
    max_deletes: Count = Field(
        default=DEFAULT_MAX_DELETES,
        description="the most sink rows a plan deletes unless a person applies it with "
        "--allow-over-bound",
    )
    max_delete_ratio: Ratio = Field(
        default=DEFAULT_MAX_DELETE_RATIO,
        description="the largest share of the sink table a plan deletes unless a person "
        "applies it with --allow-over-bound",
    )

    @model_validator(mode="after")
    def _sources(self) -> RepairDecl:
        if self.sink_columns is None:
            return self
        if not self.sink_columns:
            raise invalid("sink_columns: expected at least one {sink column: record field}")
        for column, source in self.sink_columns.items():
            if isinstance(source, str):
                if source not in RECORD_FIELDS:
                    raise invalid(
                        f"sink_columns.{column}: expected one of {', '.join(RECORD_FIELDS)}, "
                        f"{{json_field: name}} or {{header: name}}, got {source!r}"
                    )
            else:
                RecordFieldDecl.model_validate(source)
        if "message_id" not in self.sink_columns.values():
            raise invalid("sink_columns: one column must get the message_id")
        return self

    def spec(self) -> RepairSpec:
        """The validated value."""
        columns: list[tuple[str, str, str | None]] = []
        for column, source in (self.sink_columns or {}).items():
            if isinstance(source, str):
                columns.append((column, source, None))
            else:
                field = RecordFieldDecl.model_validate(source)
                kind = "json_field" if field.json_field is not None else "header"
                columns.append((column, kind, field.json_field or field.header))
        return RepairSpec(tuple(columns), self.max_deletes, self.max_delete_ratio)
