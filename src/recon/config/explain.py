"""Validate one pipeline against the schema and word each error as the user reads it.

pydantic names where an error happened (its ``loc``) and what kind it is; this module turns that
into ``key.path`` and a message in the words the rest of the product uses (``expected a whole
number, got a string``). An unknown key that looks like a credential (``password``,
``bootstrap.servers``, ``sasl.*`` ...) gets a pointer to the Airflow connection instead: the file
names connections, never credentials or connection settings.

The checks of one key that depend on another (a ratio the claimed semantic forbids, ``latency``
without ``sink.time_column``, ``tolerances.max_late_ratio`` without ``latency``) get those keys
from :func:`validation_context`, read from the raw declaration, so they run beside other mistakes.
"""

from __future__ import annotations

from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from recon.config.model import PipelineConfig
from recon.config.problems import RECON_ERROR, kind_of
from recon.config.schema import PipelineDecl

# Keys that carry secrets or connection details; they belong in the Airflow connection.
CREDENTIAL_KEYS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "access_key",
        "secret_key",
        "private_key",
        "credentials",
        "user",
        "username",
        "login",
        "dsn",
        "url",
        "uri",
        "jdbc_url",
        "host",
        "bootstrap.servers",
        "bootstrap_servers",
    }
)
CREDENTIAL_PREFIXES = ("sasl.", "ssl.", "security.")
CREDENTIALS_REFUSED = (
    "credentials and connection settings do not belong in the pipeline file: put them in the "
    "Airflow connection named by kafka.connection / sink.connection (alerts[].connection "
    "for an alert route)"
)

# pydantic's type errors, in the product's words; {kind} is what the value was instead.
_TYPE_MESSAGES = {
    "model_type": "expected a mapping, got {kind}",
    "dict_type": "expected a mapping, got {kind}",
    "int_type": "expected a whole number, got {kind}",
    "bool_type": "expected true or false, got {kind}",
    "string_type": "expected a string, got {kind}",
}


def check_pipeline(name: str, raw: Any) -> tuple[PipelineConfig | None, list[tuple[str, str]]]:
    """Validate one pipeline's declaration.

    :param name: the pipeline's name (already checked).
    :param raw: what the YAML holds under its name.
    :returns: the pipeline, or ``None`` and every problem as ``(key path, message)``.
    """
    try:
        decl = PipelineDecl.model_validate(raw, context=validation_context(raw))
    except ValidationError as exc:
        return None, [explain(error) for error in exc.errors(include_url=False)]
    return decl.config(name), []


def validation_context(raw: Any) -> dict[str, Any]:
    """What the schema's checks that read another key of the pipeline need: ``semantics`` as
    written, whether ``latency``, ``payload``, ``order`` and ``source`` are declared, whether
    ``sink.time_column`` holds a value.

    A flag is ``None`` when the mapping holding it is not one: that is reported at its own key,
    and the checks reading the flag say nothing rather than add a second, misleading problem.

    :param raw: what the YAML holds under the pipeline's name.
    """
    if not isinstance(raw, dict):
        return {
            "semantics": None,
            "latency": None,
            "time_column": None,
            "payload": None,
            "order": None,
            "source": None,
            "diverted": None,
            "topic": None,
        }
    sink = raw.get("sink")
    # A time column with a wrong value is reported at sink.time_column; only absence (or null,
    # the same as absence) leaves latency nothing to measure.
    time_column = sink.get("time_column") is not None if isinstance(sink, dict) else None
    return {
        "semantics": raw.get("semantics"),
        "latency": "latency" in raw,
        "time_column": time_column,
        "payload": "payload" in raw,
        "order": "order" in raw,
        "source": "source" in raw,
        "diverted": "diverted" in raw,
        # the pipeline's own topic, which no dead-letter topic on its cluster may be
        "topic": kafka.get("topic") if isinstance(kafka := raw.get("kafka"), dict) else None,
    }


def is_credential(key: Any) -> bool:
    """Whether a key names a secret or a connection setting.

    :param key: a mapping key as the YAML loader made it.
    """
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return lowered in CREDENTIAL_KEYS or lowered.startswith(CREDENTIAL_PREFIXES)


def explain(error: ErrorDetails) -> tuple[str, str]:
    """``(key path, message)`` for one pydantic error of :class:`PipelineDecl`.

    :param error: one item of ``ValidationError.errors()``.
    """
    loc = list(error["loc"])
    if loc and loc[-1] == "[key]":
        # A mapping key was refused: name it as written (pydantic shows True as 1).
        loc = [*loc[:-2], error["input"]]
    return key_path(loc), _message(error, loc)


def key_path(loc: list[Any]) -> str:
    """``alerts[1].notifier`` for pydantic's ``("alerts", 1, "notifier")``: an item of a list
    by its index in brackets, as the user counts it in the file; a mapping key (a partition
    number of ``start_offsets``) stays a dotted key.

    :param loc: an error's location, mapping keys already as written.
    """
    path = ""
    for index, part in enumerate(loc):
        if isinstance(part, int) and not isinstance(part, bool) and _is_list(loc[:index]):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + str(part)
    return path


def _is_list(loc: list[Any]) -> bool:
    if not loc or not isinstance(loc[-1], str):
        return False
    model = _model_at(loc[:-1])
    field = model.model_fields.get(loc[-1]) if model is not None else None
    return field is not None and _list_item(field.annotation) is not None


def _message(error: ErrorDetails, loc: list[Any]) -> str:
    kind = error["type"]
    if kind == RECON_ERROR:
        return error["msg"]
    if kind in ("extra_forbidden", "invalid_key"):
        if is_credential(loc[-1]):
            return CREDENTIALS_REFUSED
        model = _model_at(loc[:-1])
        allowed = ", ".join(model.model_fields) if model is not None else ""
        return f"unknown key (expected one of {allowed})" if allowed else "unknown key"
    if kind == "missing":
        hint = _description_of(loc)
        return f"missing required key ({hint})" if hint else "missing required key"
    if kind in _TYPE_MESSAGES:
        return _TYPE_MESSAGES[kind].format(kind=kind_of(error["input"]))
    if kind == "greater_than_equal":
        return f"must be {error.get('ctx', {}).get('ge')} or more, got {error['input']}"
    return error["msg"]  # pydantic's own words for anything the schema does not foresee


def _model_at(loc: list[Any]) -> type[BaseModel] | None:
    model: type[BaseModel] = PipelineDecl
    item: type[BaseModel] | None = None  # the model of the list the next index points into
    for part in loc:
        if isinstance(part, int) and item is not None:
            model, item = item, None
            continue
        field = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = field.annotation if field is not None else None
        item = _list_item(annotation)
        found = _declared_model(annotation)
        if found is None and item is None:
            return None
        model = found or model
    return None if item is not None else model


def _list_item(annotation: Any) -> type[BaseModel] | None:
    """The mapping model of a list field's items (``alerts``: ``list[AlertRouteDecl] | None``)."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    for candidate in (annotation, *candidates):
        if get_origin(candidate) is list:
            return _declared_model(get_args(candidate)[0])
    return None


def _declared_model(annotation: Any) -> type[BaseModel] | None:
    """The mapping model a field holds: itself, or the one of an optional mapping such as
    ``latency`` (``LatencyDecl | None``), so that its unknown keys list the allowed ones too."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    for candidate in (annotation, *candidates):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _description_of(loc: list[Any]) -> str | None:
    model = _model_at(loc[:-1])
    field = model.model_fields.get(loc[-1]) if model is not None and loc else None
    return field.description if field is not None else None
