"""The page's three-way part: "Source → topic → sink", the funnel of the newest run that has one
(``recon.runs.funnel``, read with the run by :mod:`.data`) and a line naming its findings.

A pipeline that declares ``source:`` (an outbox table) stores, per committed run, how many
source messages settled in it (produced), how many of those a committed record carries
(published), the window's committed messages (committed) and those with a sink row (delivered);
beside them the findings: committed records no source row names (unsourced, with a sample of
where they sit), source rows without a messageId, and the extra rows of ids the source holds
more than once. Nothing shows for a pipeline whose latest runs have no funnel.

Every value from the database passes through :func:`html.escape` (``_e``) on its way out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from recon_page import data
from recon_page.data import Run

CAPTION = "Source → topic → sink"

#: The hops, in order, each with its bar's colour and what its count is (the bar's tooltip).
STAGES: dict[str, tuple[str, str]] = {
    "produced": ("#78909c", "source messages that settled in this run"),
    "published": ("#5c6bc0", "of those, carried by a committed record of the topic"),
    "committed": ("#1e88e5", "committed messages in the run's window"),
    # the delivered verdict's own colour: the same thing as in the verdict charts
    "delivered": ("#4caf50", "committed messages with a sink row"),
}
#: What the difference between a hop and the next one is called: the loss when the next is
#: smaller, what it gained from elsewhere when it is larger. Between published and committed
#: the populations differ (this run's source rows, the window's records), so neither is a loss.
HOPS: dict[str, tuple[str, str, bool]] = {
    # next stage: (fewer, more, whether fewer is a loss)
    "published": ("unpublished", "published", True),
    "committed": (
        "published outside this window",
        "more in this window (earlier source rows, unsourced)",
        False,
    ),
    "delivered": ("not delivered", "delivered from earlier windows", True),
}
#: The findings beside the hops, by their ``recon.runs.funnel`` key.
FINDINGS = ("unsourced", "source_invalid", "source_duplicates")


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


@dataclass(frozen=True)
class Unsourced:
    """A committed record no source row names: its messageId and where it sits in the topic."""

    message_id: str | None
    partition: int | None
    offset: int | None

    def where(self) -> str:
        """``partition@offset``, or "" when the stored sample lacks either."""
        if self.partition is None or self.offset is None:
            return ""
        return f"{self.partition}@{self.offset}"


@dataclass(frozen=True)
class Funnel:
    """One run's way from source to sink, read defensively from the stored JSON."""

    run_id: str
    counts: Mapping[str, int]
    sample: Sequence[Unsourced]


def _int(raw: object) -> int | None:
    # JSON numbers, and digits as text; a boolean is no count even though Python takes it for one
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        return int(raw)
    except (ValueError, OverflowError):
        return None


def read(run: Run) -> Funnel | None:
    """The run's funnel, or None when it has none. A count that is missing or not a number reads
    as 0, a sample entry that is not an object is left out: a stored row of another shape costs
    its figures, never the page.

    :param run: a run as :mod:`.data` reads it (``funnel``: the stored JSON object).
    """
    raw = run.funnel
    if not isinstance(raw, Mapping):
        return None
    counts = {name: _int(raw.get(name)) or 0 for name in (*STAGES, *FINDINGS)}
    listed = raw.get("unsourced_sample")
    sample = [
        Unsourced(
            None if s.get("message_id") is None else str(s["message_id"]),
            _int(s.get("partition")),
            _int(s.get("offset")),
        )
        for s in (listed if isinstance(listed, list) else [])
        if isinstance(s, Mapping)
    ]
    return Funnel(run.run_id, counts, sample)


def newest(runs: Sequence[Run]) -> Funnel | None:
    """The funnel of the newest run (``runs`` newest first) that has one."""
    return next((f for f in map(read, runs) if f is not None), None)


def funnels(conn: Any, pipeline: str, limit: int = data.MAX_RUNS) -> list[dict[str, Any]]:
    """The stored funnel of each of the pipeline's latest ``limit`` runs that has one, newest
    first (``/recon/api/funnel``).

    :param conn: a results database connection (:func:`.data.results_db`).
    """
    return [
        {"run_id": r.run_id, "status": r.status, "started_at": r.started_at, "funnel": r.funnel}
        for r in data.runs(conn, pipeline, limit)
        if r.funnel is not None
    ]


def hop_label(stage: str, upper: int, lower: int) -> tuple[str, bool] | None:
    """The difference from the previous hop (``upper``) to ``stage``'s count (``lower``), as
    ``(label, whether it is a loss)``: "2 unpublished"; None when they are equal."""
    if upper == lower:
        return None
    fewer, more, loss = HOPS[stage]
    if lower < upper:
        return f"{upper - lower:,} {fewer}", loss
    return f"+{lower - upper:,} {more}", False


def chart(funnel: Funnel, *, title: str = CAPTION, width: int = 720) -> str:
    """An ``<svg>`` of the funnel: a horizontal bar per hop (produced, published, committed,
    delivered) labelled with its count, and between two hops their difference ("2
    unpublished"); what a hop lost is drawn as a pale part of the next bar. Every bar and label
    has a ``<title>`` tooltip."""
    left, right, top, bottom, row, gap = 92, 70, 10, 10, 24, 20
    pw = width - left - right
    height = top + len(STAGES) * row + (len(STAGES) - 1) * gap + bottom
    counts = [funnel.counts.get(name, 0) for name in STAGES]
    scale = max(max(counts), 1)

    def w(n: int) -> float:
        return pw * max(n, 0) / scale

    out = [
        f'<svg class="chart funnel" data-chart="funnel" data-run="{_e(funnel.run_id)}" '
        f'viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{_e(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{_e(title)}</title>",
    ]
    for i, (name, (color, meaning)) in enumerate(STAGES.items()):
        n, y = counts[i], top + i * (row + gap)
        hop = hop_label(name, counts[i - 1], n) if i else None
        if hop is not None:
            label, loss = hop
            previous = counts[i - 1]
            if loss:  # what the hop lost: the rest of the previous bar's length, pale
                out.append(
                    f'<rect class="dropped" x="{left + w(n):.1f}" y="{y}" '
                    f'width="{w(previous) - w(n):.1f}" height="{row}"/>'
                )
            out.append(
                f'<text class="drop{" bad" if loss else ""}" data-drop="{_e(name)}" '
                f'data-diff="{n - previous}" x="{left + 4}" y="{y - gap / 2 + 4:.1f}">'
                f"{_e(label)}<title>{_e(name)}: {_e(label)} (from {previous:,} to {n:,})"
                "</title></text>"
            )
        out.append(
            f'<text class="stage-name" x="{left - 8}" y="{y + row / 2 + 4:.1f}" '
            f'text-anchor="end">{_e(name)}</text>'
            f'<rect class="stage" data-stage="{_e(name)}" data-count="{n}" x="{left}" y="{y}" '
            f'width="{w(n):.1f}" height="{row}" fill="{color}">'
            f"<title>{_e(name)} {n:,}: {_e(meaning)}</title></rect>"
            f'<text class="count" data-stage="{_e(name)}" x="{left + w(n) + 6:.1f}" '
            f'y="{y + row / 2 + 4:.1f}">{n:,}</text>'
        )
    out.append(
        f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}"/></svg>'
    )
    return "".join(out)


def _unsourced(funnel: Funnel) -> str:
    n = funnel.counts.get("unsourced", 0)
    if not n:
        return ""
    shown = []
    for s in funnel.sample:
        mid = "(no message id)" if s.message_id is None else s.message_id
        at = f" at {_e(s.where())}" if s.where() else ""
        shown.append(f"<code>{_e(mid)}</code>{at}")
    first = ""
    if shown:
        said = [f"first {len(shown)} of {n:,}" if n > len(shown) else ""]
        said.append("partition@offset" if any(s.where() for s in funnel.sample) else "")
        aside = ", ".join(x for x in said if x)
        first = f": {', '.join(shown)}" + (f" ({aside})" if aside else "")
    return (
        f'<strong class="finding" data-finding="unsourced">{n:,} unsourced</strong> (committed '
        f"records no source row names: another producer, or a replay from elsewhere){first}"
    )


def _rows(n: int) -> str:
    return "row" if n == 1 else "rows"


def findings(funnel: Funnel) -> str:
    """The line that names the run's findings: the unsourced records (with the sample's ids and
    where they sit, ``partition@offset``), the source rows without a messageId, the ids the
    source holds more than once; or that there are none."""
    parts = [_unsourced(funnel)]
    invalid = funnel.counts.get("source_invalid", 0)
    if invalid:
        parts.append(
            f'<strong class="finding" data-finding="source_invalid">{invalid:,} source '
            f"{_rows(invalid)} without a message id</strong> (each an invalid row below)"
        )
    twice = funnel.counts.get("source_duplicates", 0)
    if twice:
        parts.append(
            f'<strong class="finding" data-finding="source_duplicates">{twice:,} extra source '
            f"{_rows(twice)} of ids held more than once</strong> (each id judged once)"
        )
    said = "; ".join(p for p in parts if p)
    if not said:
        said = "no findings: every committed record has a source row, every source row an id"
    return f'<p class="funnel-note">Findings: {said}.</p>'


def section(runs: Sequence[Run]) -> str:
    """The "Source → topic → sink" part of a pipeline over ``runs`` (newest first, as the page
    has them), or "" when none of them has a funnel."""
    found = newest(runs)
    if found is None:
        return ""
    return (
        f'<div class="funnel"><h3>{_e(CAPTION)} <small>(run <code>{_e(found.run_id)}</code>, '
        "the newest with a source)</small></h3>"
        f'<figure class="funnel">{chart(found)}</figure>{findings(found)}</div>'
    )


CSS = """
figure.funnel{max-width:720px}
svg .stage-name{font-size:12px;fill:var(--fg)}
svg .count{font-size:12px;font-weight:600;fill:var(--fg)}
svg .drop{font-size:11px;fill:var(--muted)}
svg .drop.bad{fill:var(--bad);font-weight:600}
svg .dropped{fill:#ffcdd2}
.funnel-note{font-size:12px;color:var(--muted);margin:4px 0 0}
.funnel-note .finding{color:var(--fg)}
"""
