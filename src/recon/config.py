"""Pipeline declarations, read from one YAML file and validated before anything runs.

The file is the argument to :func:`load_pipelines`, else ``$RECON_PIPELINES``, else
``pipelines.yaml`` at the repository root. Every problem is collected first and reported once,
each line naming the file, the pipeline and the key path, e.g.
``pipelines.yaml: pipeline 'payments': kafka.message_id: expected one of header, json_field, key``.

Top-level keys starting with ``x-`` are ignored, so that they can hold YAML anchors
(``<<: *defaults``) shared by several pipelines.

The file names connections (Airflow connection ids), never credentials: keys such as ``password``
or ``bootstrap.servers`` are rejected with a pointer to the connection. Whether the connections,
the topic and the table exist is checked where they are used, not here: loading stays offline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import yaml

from recon.errors import ConfigError
from recon.verdicts import SEMANTICS

ENV_VAR = "RECON_PIPELINES"
#: A directory whose ``*.yaml`` files declare more pipelines (a team's own, a test's).
DIR_ENV_VAR = "RECON_PIPELINES_DIR"
DEFAULT_FILE = "pipelines.yaml"
MAX_REPORTED_ERRORS = 50

MESSAGE_ID_KINDS = ("header", "json_field", "key")
CRON_PRESETS = ("@once", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly")

_PIPELINE_KEYS = (
    "engine",
    "semantics",
    "schedule",
    "settle_seconds",
    "kafka",
    "sink",
    "tolerances",
    "idempotent_producer",
    "catchup",
    "retries",
    "tags",
)
# schedule is required too, checked on its own so the message can say that null means manual.
_REQUIRED_PIPELINE_KEYS = ("semantics", "settle_seconds", "kafka", "sink")
_KAFKA_KEYS = ("connection", "topic", "consumer_group", "message_id", "start_offsets")
_SINK_KEYS = ("connection", "table", "message_id_column", "ingest_seq_column")
_TOLERANCE_RATIOS = ("max_loss_ratio", "max_duplicate_ratio")
_TOLERANCE_COUNTS = ("max_unverifiable", "max_invalid")

# Keys that carry secrets or connection details; they belong in the Airflow connection.
_CREDENTIAL_KEYS = frozenset(
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
_CREDENTIAL_PREFIXES = ("sasl.", "ssl.", "security.")

# Airflow's own rule for connection ids and DAG ids (pipelines become DAGs).
_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,250}$")
_TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

# (low, high, names) per cron field: minute, hour, day of month, month, day of week.
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_CRON_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {m: i + 1 for i, m in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {d: i for i, d in enumerate(_DAYS)}),
)


@dataclass(frozen=True)
class MessageIdSpec:
    """Where a record's messageId lives: a header, a top-level JSON field of the value, or the key.

    :param kind: ``header``, ``json_field`` or ``key``.
    :param name: the header or field name; ``None`` for ``key``.
    """

    kind: str
    name: str | None = None


@dataclass(frozen=True)
class KafkaSource:
    """The topic side: which connection, topic and consumer group, and how to find the id.

    ``start_offsets`` applies to the first run only: ``None`` or ``"earliest"`` (log start), or a
    read-only ``{partition: offset}`` mapping; partitions it does not name start at log start.
    """

    connection: str
    topic: str
    consumer_group: str
    message_id: MessageIdSpec
    start_offsets: str | Mapping[int, int] | None = None


@dataclass(frozen=True)
class SinkSpec:
    """The PostgreSQL side. Identifiers are quoted when used, so any non-empty name is allowed."""

    connection: str
    table: str
    message_id_column: str
    ingest_seq_column: str | None = None

    @property
    def table_parts(self) -> tuple[str, ...]:
        """``("schema", "table")`` or ``("table",)``, ready for ``psycopg2.sql.Identifier``."""
        return tuple(self.table.split("."))


@dataclass(frozen=True)
class Tolerances:
    """What the contract lets pass: ratios of judged messages, absolute counts for the rest."""

    max_loss_ratio: float = 0.0
    max_duplicate_ratio: float = 0.0
    max_unverifiable: int = 0
    max_invalid: int = 0


@dataclass(frozen=True)
class PipelineConfig:
    """One declared pipeline; becomes one DAG and one reconciliation per scheduled run."""

    name: str
    semantics: str
    schedule: str | None
    settle_seconds: int
    kafka: KafkaSource
    sink: SinkSpec
    tolerances: Tolerances = field(default_factory=Tolerances)
    idempotent_producer: bool = False
    catchup: bool = False
    retries: int = 2
    tags: tuple[str, ...] = ()
    #: ``spark`` (any size, any cluster) or ``local`` (one machine, no JVM: ``recon.local``).
    engine: str = "spark"


ENGINES = ("spark", "local")


def default_pipelines_path() -> str:
    """``$RECON_PIPELINES``, else ``pipelines.yaml`` at the repository root (``$RECON_ROOT``)."""
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return from_env
    root = os.environ.get("RECON_ROOT") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
    return os.path.join(root, DEFAULT_FILE)


def load_pipelines(path: str | os.PathLike[str] | None = None) -> dict[str, PipelineConfig]:
    """Read and validate every pipeline declared in the YAML file.

    :param path: the file; ``None`` means :func:`default_pipelines_path`.
    :returns: pipelines by name, in file order.
    :raises ConfigError: listing every problem found (at most ``MAX_REPORTED_ERRORS`` lines).
    """
    file_path = os.fspath(path) if path is not None else default_pipelines_path()
    try:
        with open(file_path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"{file_path}: cannot read the pipeline file ({exc.strerror})") from None
    return parse_pipelines(text, source=file_path)


def load_pipeline_dir(
    directory: str | os.PathLike[str] | None = None, *, taken: Mapping[str, str] | None = None
) -> list[tuple[str, PipelineConfig]]:
    """Read every ``*.yaml`` file of a directory (sorted by name), each validated as
    :func:`load_pipelines` does. An unset variable or an absent directory declares nothing.

    :param directory: the directory; ``None`` means ``$RECON_PIPELINES_DIR``.
    :param taken: pipeline names already declared elsewhere, by the file that declares them.
    :returns: ``(file, pipeline)`` pairs: each pipeline runs with the file it came from.
    :raises ConfigError: a file's own problems, or a name declared twice (naming both files).
    """
    folder = os.fspath(directory) if directory is not None else os.environ.get(DIR_ENV_VAR, "")
    if not folder or not os.path.isdir(folder):
        return []
    seen = dict(taken or {})
    found: list[tuple[str, PipelineConfig]] = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if not entry.endswith(".yaml") or not os.path.isfile(path):
            continue
        for name, cfg in load_pipelines(path).items():
            if name in seen:
                # Two DAGs with one id would replace each other at every parse.
                raise ConfigError(f"{path}: pipeline '{name}' is already declared in {seen[name]}")
            seen[name] = path
            found.append((path, cfg))
    return found


def parse_pipelines(text: str, source: str = DEFAULT_FILE) -> dict[str, PipelineConfig]:
    """Validate pipeline declarations given as YAML text.

    :param text: the YAML document.
    :param source: the file name used in error messages.
    :raises ConfigError: listing every problem found.
    """
    errors = _Errors(source)
    try:
        document = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{source}: {where}YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML syntax error: {exc}") from None

    pipelines: dict[str, PipelineConfig] = {}
    if not isinstance(document, dict):
        errors.add(None, "", "expected a mapping with the key 'pipelines'")
    else:
        for key in document:
            # 'x-' keys hold YAML anchors shared by pipelines, as in docker-compose files.
            if key != "pipelines" and not (isinstance(key, str) and key.startswith("x-")):
                errors.add(None, str(key), "unknown key (expected 'pipelines' or 'x-...')")
        declared = document.get("pipelines")
        if "pipelines" not in document:
            errors.add(None, "pipelines", "missing required key")
        elif declared is None:
            declared = {}
        if declared is not None and not isinstance(declared, dict):
            errors.add(None, "pipelines", f"expected a mapping of pipelines, got {_kind(declared)}")
        elif declared:
            for name, raw in declared.items():
                config = _pipeline(name, raw, errors)
                if config is not None:
                    pipelines[config.name] = config
    errors.raise_if_any()
    return pipelines


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    # Only keys written out are compared: a key that overrides one merged in with '<<: *anchor'
    # is the point of the merge, not a duplicate.
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _mapping_without_duplicates,
)


class _Errors:
    """Collects problems as ``file: pipeline 'name': key.path: message`` lines."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, pipeline: str | None, path: str, message: str) -> None:
        parts = [self.source]
        if pipeline is not None:
            parts.append(f"pipeline '{pipeline}'")
        if path:
            parts.append(path)
        self.items.append(": ".join([*parts, message]))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        if len(self.items) == 1:
            raise ConfigError(self.items[0], self.items)
        shown = self.items[:MAX_REPORTED_ERRORS]
        lines = [f"{self.source}: {len(self.items)} problems in the pipeline declarations:"]
        lines += [f"  {item}" for item in shown]
        if len(self.items) > len(shown):
            lines.append(f"  ... and {len(self.items) - len(shown)} more")
        raise ConfigError("\n".join(lines), self.items)


class _Pipeline:
    """Reads one pipeline's settings, recording every problem under its name."""

    def __init__(self, name: str, errors: _Errors) -> None:
        self.name = name
        self.errors = errors
        self.failed = False

    def error(self, path: str, message: str) -> None:
        self.failed = True
        self.errors.add(self.name, path, message)

    def mapping(self, value: Any, path: str) -> dict[Any, Any] | None:
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {_kind(value)}")
            return None
        return value

    def keys(
        self, raw: dict[Any, Any], path: str, allowed: tuple[str, ...], required: tuple[str, ...]
    ) -> None:
        for key in raw:
            key_path = _join(path, str(key))
            if _is_credential(key):
                self.error(
                    key_path,
                    "credentials and connection settings do not belong in the pipeline file: "
                    "put them in the Airflow connection named by kafka.connection / "
                    "sink.connection",
                )
            elif key not in allowed:
                self.error(key_path, f"unknown key (expected one of {', '.join(allowed)})")
        for key in required:
            if key not in raw:
                self.error(_join(path, key), "missing required key")

    def string(self, raw: dict[Any, Any], key: str, path: str) -> str | None:
        """A non-empty string; ``None`` when absent (presence is checked by :meth:`keys`)."""
        if key not in raw:
            return None
        value = raw[key]
        if not isinstance(value, str):
            self.error(_join(path, key), f"expected a string, got {_kind(value)}")
            return None
        if not value.strip():
            self.error(_join(path, key), "must not be empty")
            return None
        return value

    def identifier(self, raw: dict[Any, Any], key: str, path: str, what: str) -> str | None:
        value = self.string(raw, key, path)
        if value is not None and not _ID_RE.match(value):
            self.error(
                _join(path, key),
                f"expected {what} (letters, digits, '_', '.', '-'), not a URI or credentials",
            )
            return None
        return value

    def integer(self, raw: dict[Any, Any], key: str, path: str, default: int) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(_join(path, key), f"expected a whole number, got {_kind(value)}")
            return default
        if value < 0:
            self.error(_join(path, key), f"must be 0 or more, got {value}")
            return default
        return value

    def boolean(self, raw: dict[Any, Any], key: str, path: str, default: bool) -> bool:
        value = raw.get(key, default)
        if not isinstance(value, bool):
            self.error(_join(path, key), f"expected true or false, got {_kind(value)}")
            return default
        return value

    def ratio(self, raw: dict[Any, Any], key: str, path: str) -> float:
        value = raw.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(_join(path, key), f"expected a number between 0 and 1, got {_kind(value)}")
            return 0.0
        if not 0 <= value <= 1:
            self.error(_join(path, key), f"must be between 0 and 1, got {value}")
            return 0.0
        return float(value)


def _pipeline(name: Any, raw: Any, errors: _Errors) -> PipelineConfig | None:
    if not isinstance(name, str) or not _ID_RE.match(name):
        errors.add(
            None,
            f"pipelines.{name}",
            "a pipeline name must be letters, digits, '_', '.' or '-' (it becomes a DAG id)",
        )
        return None
    p = _Pipeline(name, errors)
    body = p.mapping(raw, "")
    if body is None:
        return None
    p.keys(body, "", _PIPELINE_KEYS, _REQUIRED_PIPELINE_KEYS)

    semantics = body.get("semantics")
    if "semantics" in body and semantics not in SEMANTICS:
        p.error("semantics", f"expected one of {', '.join(SEMANTICS)}, got {semantics!r}")
    schedule = body.get("schedule")
    if "schedule" not in body:
        p.error("schedule", "missing required key (a cron expression, a preset, or null)")
    elif schedule is not None:
        problem = (
            f"expected a string, got {_kind(schedule)}"
            if not isinstance(schedule, str)
            else cron_problem(schedule)
        )
        if problem:
            p.error("schedule", problem)
    settle_seconds = p.integer(body, "settle_seconds", "", 0)
    kafka = _kafka(p, body["kafka"]) if "kafka" in body else None
    sink = _sink(p, body["sink"]) if "sink" in body else None
    tolerances = _tolerances(p, body.get("tolerances", {}), semantics)
    idempotent_producer = p.boolean(body, "idempotent_producer", "", False)
    catchup = p.boolean(body, "catchup", "", False)
    retries = p.integer(body, "retries", "", 2)
    tags = _tags(p, body.get("tags", []))
    engine = body.get("engine", "spark")
    if engine not in ENGINES:
        p.error("engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")

    if p.failed or kafka is None or sink is None:
        return None
    return PipelineConfig(
        name=name,
        semantics=str(semantics),
        schedule=schedule,
        settle_seconds=settle_seconds,
        kafka=kafka,
        sink=sink,
        tolerances=tolerances,
        idempotent_producer=idempotent_producer,
        catchup=catchup,
        retries=retries,
        tags=tags,
        engine=str(engine),
    )


def _kafka(p: _Pipeline, value: Any) -> KafkaSource | None:
    raw = p.mapping(value, "kafka")
    if raw is None:
        return None
    required = ("connection", "topic", "consumer_group", "message_id")
    p.keys(raw, "kafka", _KAFKA_KEYS, required)
    connection = p.identifier(raw, "connection", "kafka", "an Airflow connection id")
    topic = p.string(raw, "topic", "kafka")
    if topic is not None and not _TOPIC_RE.match(topic):
        p.error("kafka.topic", "not a Kafka topic name (letters, digits, '.', '_', '-')")
        topic = None
    group = p.string(raw, "consumer_group", "kafka")
    message_id = _message_id(p, raw["message_id"]) if "message_id" in raw else None
    start_offsets = _start_offsets(p, raw.get("start_offsets"))
    if connection is None or topic is None or group is None or message_id is None:
        return None
    return KafkaSource(connection, topic, group, message_id, start_offsets)


def _message_id(p: _Pipeline, value: Any) -> MessageIdSpec | None:
    path = "kafka.message_id"
    expected = f"expected one of {', '.join(MESSAGE_ID_KINDS)}"
    if not isinstance(value, dict) or not value:
        p.error(path, f"{expected}, as a mapping such as {{header: message_id}}")
        return None
    unknown = [str(k) for k in value if k not in MESSAGE_ID_KINDS]
    if unknown:
        p.error(path, f"{expected}, got {', '.join(unknown)}")
        return None
    if len(value) > 1:
        p.error(path, f"{expected} (exactly one), got {', '.join(map(str, value))}")
        return None
    kind, name = next(iter(value.items()))
    if kind == "key":
        if name is not True:
            p.error(f"{path}.key", f"expected true (the record key is the id), got {name!r}")
            return None
        return MessageIdSpec("key", None)
    checked = p.string(value, kind, path)
    return MessageIdSpec(kind, checked) if checked is not None else None


def _start_offsets(p: _Pipeline, value: Any) -> str | Mapping[int, int] | None:
    path = "kafka.start_offsets"
    if value is None:
        return None
    if value == "earliest":
        return "earliest"
    if not isinstance(value, dict) or not value:
        p.error(path, "expected 'earliest' or a mapping {partition: offset}")
        return None
    offsets: dict[int, int] = {}
    for key, offset in value.items():
        partition = key if isinstance(key, int) and not isinstance(key, bool) else None
        if isinstance(key, str) and key.isdigit():
            partition = int(key)
        if partition is None or partition < 0:
            p.error(f"{path}.{key}", "a partition number must be a whole number, 0 or more")
            continue
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            p.error(f"{path}.{key}", f"an offset must be a whole number, 0 or more, got {offset!r}")
            continue
        offsets[partition] = offset
    return MappingProxyType(offsets)


def _sink(p: _Pipeline, value: Any) -> SinkSpec | None:
    raw = p.mapping(value, "sink")
    if raw is None:
        return None
    p.keys(raw, "sink", _SINK_KEYS, ("connection", "table", "message_id_column"))
    connection = p.identifier(raw, "connection", "sink", "an Airflow connection id")
    table = p.string(raw, "table", "sink")
    # The dot always separates schema from table; each part is quoted later, so only emptiness
    # (which no quoting can rescue) is refused here.
    if table is not None and (table.count(".") > 1 or "" in table.split(".")):
        p.error("sink.table", f"expected 'table' or 'schema.table', got {table!r}")
        table = None
    column = p.string(raw, "message_id_column", "sink")
    # null reads as "no such column", like leaving the key out: scan the whole table each run.
    seq_column = None
    if raw.get("ingest_seq_column") is not None:
        seq_column = p.string(raw, "ingest_seq_column", "sink")
    if connection is None or table is None or column is None:
        return None
    return SinkSpec(connection, table, column, seq_column)


def _tolerances(p: _Pipeline, value: Any, semantics: Any) -> Tolerances:
    raw = p.mapping(value, "tolerances")
    if raw is None:
        return Tolerances()
    allowed = _TOLERANCE_RATIOS + _TOLERANCE_COUNTS
    p.keys(raw, "tolerances", allowed, ())
    tolerances = Tolerances(
        max_loss_ratio=p.ratio(raw, "max_loss_ratio", "tolerances"),
        max_duplicate_ratio=p.ratio(raw, "max_duplicate_ratio", "tolerances"),
        max_unverifiable=p.integer(raw, "max_unverifiable", "tolerances", 0),
        max_invalid=p.integer(raw, "max_invalid", "tolerances", 0),
    )
    # A tolerance the contract would ignore is a misunderstanding worth stopping for.
    if tolerances.max_loss_ratio > 0 and semantics in ("at_least_once", "exactly_once"):
        p.error("tolerances.max_loss_ratio", f"{semantics} forbids loss: only at_most_once may")
    if tolerances.max_duplicate_ratio > 0 and semantics in ("at_most_once", "exactly_once"):
        p.error(
            "tolerances.max_duplicate_ratio",
            f"{semantics} forbids duplicates: only at_least_once may",
        )
    return tolerances


def _tags(p: _Pipeline, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        p.error("tags", "expected a list of non-empty strings")
        return ()
    return tuple(value)


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a schedule this product accepts, or ``None`` when it is.

    Accepted: Airflow's presets (``@hourly`` ...) and ``@once``, or five cron fields made of
    ``*``, numbers, month/day names, ranges ``a-b``, steps ``/n`` and lists ``a,b``.

    :param expression: the ``schedule`` value.
    """
    text = expression.strip()
    if text.startswith("@"):
        if text in CRON_PRESETS:
            return None
        return f"unknown preset {text!r} (expected one of {', '.join(CRON_PRESETS)})"
    fields = text.split()
    if len(fields) != 5:
        return f"expected 5 cron fields or a preset such as @hourly, got {expression!r}"
    for value, (label, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for item in value.split(","):
            if not _cron_item_ok(item, low, high, names):
                return f"cron {label} field {value!r} is not valid (allowed {low}-{high})"
    return None


def _cron_item_ok(item: str, low: int, high: int, names: dict[str, int]) -> bool:
    base, _, step = item.partition("/")
    if step and (not step.isdigit() or int(step) == 0):
        return False
    if base == "*":
        return True
    start, dash, end = base.partition("-")
    bounds = [_cron_value(start, names), _cron_value(end, names) if dash else None]
    if bounds[0] is None or (dash and bounds[1] is None):
        return False
    values = [b for b in bounds if b is not None]
    return all(low <= b <= high for b in values) and values == sorted(values)


def _cron_value(text: str, names: dict[str, int]) -> int | None:
    if text.isdigit():
        return int(text)
    return names.get(text.upper())


def _is_credential(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return lowered in _CREDENTIAL_KEYS or lowered.startswith(_CREDENTIAL_PREFIXES)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    kinds.update({list: "a list", dict: "a mapping"})
    return kinds.get(type(value), f"a {type(value).__name__}")
