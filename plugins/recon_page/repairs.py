"""The page's repair part: each pipeline's repair plans (``recon.repairs``, written by ``recon
repair plan|apply`` and the runs that verify them) and a read-only view of one plan.

Read-only by design: the page shows plans and where they stand, never applies one. Applying
stays a command (``recon repair apply``) or the pipeline's repair DAG (``recon_repair_<p>``),
each with its own permissions; here there is no form and no button, only links.

Every value from the database passes through :func:`html.escape` (``_e``) on its way out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from recon_page.data import _fetch, redact

if TYPE_CHECKING:
    from recon_page.links import Links

#: The page lists at most this many plans per pipeline (newest first).
MAX_REPAIRS = 50
#: A plan's JSON longer than this is cut in the view (the plan file has all of it).
MAX_PLAN_CHARS = 200_000


@dataclass(frozen=True)
class Repair:
    """One row of ``recon.repairs``, with the plan's size; ``plan`` only when one plan is read
    (:func:`find_repair`), never for the list."""

    plan_id: str
    pipeline: str
    run_id: str
    status: str
    created_at: datetime | None = None
    applied_by: str | None = None
    applied_at: datetime | None = None
    verified_by_run: str | None = None
    verified_at: datetime | None = None
    #: sink rows the apply deleted, records it replayed (``recon.repairs.deleted`` / ``replayed``)
    deleted: int = 0
    replayed: int = 0
    detail: str | None = None
    #: what the plan holds: replays, deletes, messages it cannot replay
    planned_replays: int = 0
    planned_deletes: int = 0
    not_replayable: int = 0
    plan: dict[str, Any] | None = None


_COLUMNS = (
    "plan_id, pipeline, run_id, status, created_at, applied_by, applied_at, verified_by_run, "
    "verified_at, deleted, coalesce(jsonb_array_length(replayed), 0), detail, "
    "coalesce(jsonb_array_length(plan->'replays'), 0), "
    "coalesce(jsonb_array_length(plan->'deletes'), 0), "
    "coalesce(jsonb_array_length(plan->'not_replayable'), 0)"
)


def _repair(row: tuple[Any, ...], plan: Any = None) -> Repair:
    return Repair(
        plan_id=row[0], pipeline=row[1], run_id=row[2], status=row[3], created_at=row[4],
        applied_by=row[5], applied_at=row[6], verified_by_run=row[7], verified_at=row[8],
        deleted=int(row[9] or 0), replayed=int(row[10] or 0), detail=redact(row[11]),
        planned_replays=int(row[12] or 0), planned_deletes=int(row[13] or 0),
        not_replayable=int(row[14] or 0),
        plan=plan if isinstance(plan, dict) else None,
    )  # fmt: skip


def list_repairs(conn: Any, pipeline: str, limit: int = MAX_REPAIRS) -> list[Repair]:
    """The pipeline's plans, newest first, without the plans themselves. None before the table
    exists (no plan made yet, or a results schema from before repairs)."""
    sql = (
        f"SELECT {_COLUMNS} FROM recon.repairs WHERE pipeline = %s "
        "ORDER BY created_at DESC, plan_id LIMIT %s"
    )
    return [_repair(r) for r in _fetch(conn, sql, (pipeline, min(limit, MAX_REPAIRS)))]


def find_repair(conn: Any, plan_id: str) -> Repair | None:
    """One plan with its content (the JSON its file holds), or None."""
    sql = f"SELECT {_COLUMNS}, plan FROM recon.repairs WHERE plan_id = %s"
    rows = _fetch(conn, sql, (plan_id,))
    return _repair(rows[0][:-1], rows[0][-1]) if rows else None


# --- render -------------------------------------------------------------------------------------


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _a(href: str, text: str, *, top: bool = False) -> str:
    target = ' target="_top"' if top else ""
    return f'<a href="{_e(href)}"{target}>{_e(text)}</a>'


def _time(t: datetime | None) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if t else "—"


def _utc(t: datetime | None) -> str:
    return f"{_time(t)} UTC" if t else "—"


def _status(status: str) -> str:
    return f'<span class="status status-{_e(status)}">{_e(status)}</span>'


def _run_link(pipeline: str, run_id: str | None, links: Links) -> str:
    if not run_id:
        return "—"
    return f"<code>{_a(links.dag_run(pipeline, run_id), run_id, top=True)}</code>"


def _who(applied_by: str | None, links: Links) -> str:
    """Who applied: a repair DAG's run (``airflow:<dag_id>/<run_id>``) links to that run."""
    if not applied_by:
        return "—"
    dag, sep, run_id = applied_by.removeprefix("airflow:").partition("/")
    if applied_by.startswith("airflow:") and sep and dag and run_id:
        return f"<code>{_a(links.airflow_run(dag, run_id), applied_by, top=True)}</code>"
    return f"<code>{_e(applied_by)}</code>"


def _planned(r: Repair) -> str:
    parts = [f"{r.planned_replays:,} replays", f"{r.planned_deletes:,} deletes"]
    if r.not_replayable:
        parts.append(f"{r.not_replayable:,} not replayable")
    return ", ".join(parts)


def _changed(r: Repair) -> str:
    if r.status in ("planned", "applying"):
        return "—"
    return f"{r.deleted:,} deleted, {r.replayed:,} replayed"


def _how_to_apply(pipeline: str, links: Links) -> str:
    return (
        '<p class="note">Plans are made and applied outside this page: '
        f"<code>recon repair plan --pipeline {_e(pipeline)}</code>, then "
        "<code>recon repair apply PLAN --dry-run</code> and without <code>--dry-run</code>, or "
        f"the repair DAG {_a(links.repair_dag(pipeline), f'recon_repair_{pipeline}', top=True)} "
        "triggered with the plan id. The next run verifies an applied plan.</p>"
    )


def section(pipeline: str, rows: Sequence[Repair], links: Links) -> str:
    """The pipeline's "Repairs" list: each plan, its state, who applied it and what verified it.
    Read-only: links to the plan's view and to Airflow, nothing that changes anything."""
    head = (
        "<tr><th>Plan</th><th>Run repaired</th><th>Created (UTC)</th><th>Status</th>"
        "<th>Planned</th><th>Changed</th><th>Applied by</th><th>Applied (UTC)</th>"
        "<th>Verified by run</th><th>Detail</th></tr>"
    )
    anchor = _e("repairs-" + quote(pipeline, safe=""))
    if not rows:
        return (
            f'<h3 id="{anchor}">Repairs</h3><p class="none">No repair plans for this pipeline.</p>'
            + _how_to_apply(pipeline, links)
        )
    title = (
        f'<h3 id="{anchor}">Repairs <small>({len(rows)} shown, at most {MAX_REPAIRS}, newest '
        "first)</small></h3>"
    )
    body = "".join(
        "<tr>"
        f"<td><code>{_a(links.repair(r.plan_id), r.plan_id)}</code></td>"
        f'<td class="run">{_run_link(pipeline, r.run_id, links)}</td>'
        f'<td class="t">{_time(r.created_at)}</td><td>{_status(r.status)}</td>'
        f"<td>{_e(_planned(r))}</td><td>{_e(_changed(r))}</td>"
        f'<td class="run">{_who(r.applied_by, links)}</td>'
        f'<td class="t">{_time(r.applied_at)}</td>'
        f'<td class="run">{_run_link(pipeline, r.verified_by_run, links)}</td>'
        f'<td class="detail">{_e(r.detail) or "—"}</td></tr>'
        for r in rows
    )
    table = f'<table class="repairs"><thead>{head}</thead><tbody>{body}</tbody></table>'
    return f'{title}<div class="scroll">{table}</div>{_how_to_apply(pipeline, links)}'


def summary(plan: dict[str, Any] | None) -> str:
    """The plan as a person reads it (``recon.repair.commands.summary_lines``), or why it cannot
    be read (a stored plan that is not one, or that no longer matches its id)."""
    from recon.errors import ReconError
    from recon.repair.commands import summary_lines
    from recon.repair.plan_model import plan_from_dict

    try:
        lines = summary_lines(plan_from_dict(plan or {}, "the stored plan"))
    except Exception as exc:  # a row no plan reader accepts must not take the page down
        text = str(exc) if isinstance(exc, ReconError) else type(exc).__name__
        return f'<pre class="error">{_e(redact(text))}</pre>'
    return f'<pre class="plan">{_e(chr(10).join(lines))}</pre>'


def plan_json(plan: dict[str, Any] | None) -> str:
    text = json.dumps(plan, indent=2, sort_keys=True, default=str)
    if len(text) <= MAX_PLAN_CHARS:
        return f'<pre class="plan json">{_e(text)}</pre>'
    return (
        f'<pre class="plan json">{_e(text[:MAX_PLAN_CHARS])}</pre><p class="note">Cut at '
        f"{MAX_PLAN_CHARS:,} characters; the plan file holds all of it.</p>"
    )


def plan_view(r: Repair, links: Links) -> str:
    """The body of one plan's page: where it stands, its summary, its JSON. No actions."""
    facts = [
        ("Pipeline", _a(links.page(r.pipeline), r.pipeline)),
        ("Run repaired", _run_link(r.pipeline, r.run_id, links)),
        ("Status", _status(r.status)),
        ("Created", _utc(r.created_at)),
        ("Planned", _e(_planned(r))),
        ("Changed", _e(_changed(r))),
        ("Applied by", _who(r.applied_by, links)),
        ("Applied", _utc(r.applied_at)),
        ("Verified by run", _run_link(r.pipeline, r.verified_by_run, links)),
        ("Verified", _utc(r.verified_at)),
    ]
    dl = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    detail = f'<p class="detail">{_e(r.detail)}</p>' if r.detail else ""
    return (
        f'<section class="pipeline repair"><h2>Repair plan <code>{_e(r.plan_id)}</code> '
        f"{_status(r.status)}</h2>"
        f'<dl class="facts">{dl}</dl>{detail}'
        + "<h3>Summary</h3>"
        + summary(r.plan)
        + _how_to_apply(r.pipeline, links)
        + "<details><summary>The plan (JSON)</summary>"
        + plan_json(r.plan)
        + "</details>"
        + f'<p class="links">{_a(links.page(r.pipeline), "Back to the pipeline")}</p>'
        + "</section>"
    )


CSS = """
.status-planned{background:#fff8e1;color:#8d6e00}
.status-applying,.status-applied{background:#e3f2fd;color:#0d47a1}
.status-verified{background:#e3f9e5;color:#1b5e20}
pre.plan{background:#f8fafc;border:1px solid var(--line);padding:8px;white-space:pre-wrap;
word-break:break-all;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
td.detail{min-width:200px}
"""
