"""A repair plan as data: what it replays, what it deletes, the sink state it was made against.

The plan file is JSON (:func:`plan_to_json`); it holds connection ids, never credentials. Its id
is a hash of its content (everything but the id and the time it was written), so planning the
same run against the same sink twice gives the same plan, and ``recon.repairs`` one row.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from recon.errors import ReconError

FORMAT = "recon-repair-plan/1"
#: The header every replayed record carries, its value the plan id: a second apply finds the
#: replays of a first one that died half-way, and a reader of the topic can tell a replay.
REPLAY_HEADER = "recon-repair-plan"
#: Beside it, the messageId the replay stands for (the record's own key may be null).
REPLAY_MESSAGE_ID_HEADER = "recon-repair-message-id"


class RepairPlanInvalid(ReconError):
    """A plan file that is not a plan: unreadable, another format, or edited by hand."""


@dataclass(frozen=True)
class SinkState:
    """The sink rows of every message a plan deletes from: how many, and a checksum of their
    keys."""

    rows: int
    checksum: str


@dataclass(frozen=True)
class Replay:
    """A lost message's record to produce again (its first committed position)."""

    verdict: str
    message_id: str
    partition: int
    offset: int


@dataclass(frozen=True)
class NotReplayable:
    verdict: str
    message_id: str
    partition: int | None
    offset: int | None
    reason: str


@dataclass(frozen=True)
class Delete:
    """One sink row to delete, by primary key (values as text, in key-column order)."""

    verdict: str
    message_id: str
    key: tuple[str, ...]


@dataclass(frozen=True)
class SinkTarget:
    """The sink table as the plan saw it: its key columns and their types (from the catalog)."""

    connection: str
    table: str
    message_id_column: str
    key_columns: tuple[str, ...]
    key_types: tuple[str, ...]


@dataclass(frozen=True)
class RepairPlan:
    pipeline: str
    run_id: str
    semantics: str
    kafka_connection: str
    topic: str
    replay_topic: str
    sink: SinkTarget
    before: SinkState
    after: SinkState
    replays: tuple[Replay, ...] = ()
    not_replayable: tuple[NotReplayable, ...] = ()
    deletes: tuple[Delete, ...] = ()
    kept: dict[str, tuple[str, ...]] = field(default_factory=dict)  # duplicated id -> kept key
    kept_by: str = "primary key"  # the column whose first row a duplicated message keeps
    #: ``topic``: lost records are produced again (to ``replay_topic``); ``sink``: their sink
    #: rows are written directly from the records, by ``sink_columns`` (``repair:`` declared)
    replay_mode: str = "topic"
    sink_columns: tuple[tuple[str, str, str | None], ...] = ()
    plan_id: str = ""
    created_at: str = ""

    def content_id(self) -> str:
        body = asdict(self)
        body.pop("plan_id")
        body.pop("created_at")
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def state_ids(self) -> list[str]:
        """The messageIds whose sink rows the plan's state covers (the ones it deletes from),
        sorted; a lost message's rows are checked on their own (none may have come since)."""
        return sorted({d.message_id for d in self.deletes} | set(self.kept))

    def counts(self) -> dict[str, int]:
        by: dict[str, int] = {}
        for r in self.replays:
            by[f"replay {r.verdict}"] = by.get(f"replay {r.verdict}", 0) + 1
        for d in self.deletes:
            by[f"delete {d.verdict}"] = by.get(f"delete {d.verdict}", 0) + 1
        if self.not_replayable:
            by["not replayable"] = len(self.not_replayable)
        return by


def plan_to_dict(plan: RepairPlan) -> dict[str, Any]:
    return {"format": FORMAT, **asdict(plan)}


def plan_to_json(plan: RepairPlan) -> str:
    return json.dumps(plan_to_dict(plan), indent=2, sort_keys=True) + "\n"


def plan_from_dict(data: dict[str, Any], where: str = "plan") -> RepairPlan:
    """The plan a file holds; :raises RepairPlanInvalid: not a plan of this format, or its
    content no longer matches its id (edited by hand)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RepairPlanInvalid(f"{where}: not a repair plan (expected format {FORMAT})")
    try:
        sink = data["sink"]
        plan = RepairPlan(
            pipeline=data["pipeline"], run_id=data["run_id"], semantics=data["semantics"],
            kafka_connection=data["kafka_connection"], topic=data["topic"],
            replay_topic=data["replay_topic"],
            sink=SinkTarget(sink["connection"], sink["table"], sink["message_id_column"],
                            tuple(sink["key_columns"]), tuple(sink["key_types"])),
            before=SinkState(**data["before"]), after=SinkState(**data["after"]),
            replays=tuple(Replay(**r) for r in data["replays"]),
            not_replayable=tuple(NotReplayable(**r) for r in data["not_replayable"]),
            deletes=tuple(Delete(d["verdict"], d["message_id"], tuple(d["key"]))
                          for d in data["deletes"]),
            kept={k: tuple(v) for k, v in data["kept"].items()}, kept_by=data["kept_by"],
            replay_mode=data["replay_mode"],
            sink_columns=tuple(tuple(c) for c in data["sink_columns"]),
            plan_id=data["plan_id"], created_at=data["created_at"],
        )  # fmt: skip
    except (KeyError, TypeError) as exc:
        raise RepairPlanInvalid(
            f"{where}: a repair plan with a missing or bad field: {exc}"
        ) from None
    if plan.content_id() != plan.plan_id:
        raise RepairPlanInvalid(
            f"{where}: the plan's content does not match its id {plan.plan_id} (edited after it "
            "was made?): make a new plan with `recon repair plan`"
        )
    return plan


def read_plan(path: str) -> RepairPlan:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise RepairPlanInvalid(f"plan file {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise RepairPlanInvalid(
            f"plan file {path}: not JSON ({exc.msg}, line {exc.lineno})"
        ) from None
    return plan_from_dict(data, f"plan file {path}")
