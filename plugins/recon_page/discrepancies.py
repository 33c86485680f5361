"""The page's discrepancy part: "What to do" (the general advice per verdict, with the positions
or sink keys it concerns) and the table of the latest discrepancy rows, each with its repair hint
(:mod:`.hints`).

Apart from :mod:`.render` because it grows with every verdict: each one that names its records
by something of its own (the differing fields, the stale keys) says it here. Every value from the
database passes through :func:`html.escape` (``_e``) on its way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from recon_page import hints
from recon_page.chart import verdict_label
from recon_page.data import MAX_DISCREPANCIES, Discrepancy

#: Verdicts whose "What to do" names the records (topic, partition, offsets), not sink keys.
_BY_POSITION = (
    "lost", "out_of_order", "mismatched", "late", "aborted_read", "unverifiable", "topic_duplicate",
)  # fmt: skip


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _time(t: datetime | None) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if t else "—"


def _positions(verdict: str, rows: Sequence[Discrepancy]) -> str:
    """Where the rows' records are, per topic and partition; what the verdict names besides (the
    differing fields, the stale keys) first: those are what the person looks for."""
    parts: dict[str, list[int]] = {}
    for d in rows:
        key = f"{d.topic or '?'}[{'?' if d.partition is None else d.partition}]"
        parts.setdefault(key, []).extend(d.offsets)
    where = "; ".join(f"{k} @ {hints._list(sorted(v), 12)}" for k, v in parts.items())
    if verdict == "mismatched" and (fields := hints.differing(rows)):
        where = f"fields {hints._list(fields, 12)}; {where}"
    if verdict == "out_of_order" and (keys := hints.stale_keys(rows)):
        where = f"keys {hints._list(keys, 12)}; {where}"
    return where


def todo(rows: Sequence[Discrepancy]) -> str:
    """The "What to do" list: one item per verdict shown, and one for the producer retries
    flagged beside them, each naming where its records are."""
    by_verdict: dict[str, list[Discrepancy]] = {}
    for d in rows:
        by_verdict.setdefault(d.verdict, []).append(d)
    if any(d.topic_duplicate for d in rows):
        by_verdict["topic_duplicate"] = [d for d in rows if d.topic_duplicate]
    if not by_verdict:
        return ""
    items = []
    for verdict, shown in by_verdict.items():
        if verdict in _BY_POSITION:
            where = _positions(verdict, shown)
        elif verdict == "unpublished":
            # in no topic: its id and the source row naming it are where to look
            ids = [d.message_id or "?" for d in shown]
            where = f"messageIds {hints._list(ids, 12)}"
            if rows_named := hints.source_keys(shown):
                where += f"; source rows {hints._list(rows_named, 12)}"
        else:
            keys = [
                k
                for d in shown
                for k in (d.sink_keys[1:] if verdict == "duplicated" else d.sink_keys)
            ]
            where = ("sink keys " + hints._list(keys, 12)) if keys else ""
            if verdict == "invalid" and (rows_named := hints.source_keys(shown)):
                where = "; ".join(
                    w for w in (where, f"source rows {hints._list(rows_named, 12)}") if w
                )
        items.append(
            f'<li>{verdict_label(verdict)} <span class="n">{len(shown)} shown</span> '
            f"{_e(hints.VERDICT_HINTS.get(verdict, ''))}"
            + (f' <span class="where">{_e(where)}</span>' if where else "")
            + "</li>"
        )
    return f'<h3>What to do</h3><ul class="todo">{"".join(items)}</ul>'


def table(rows: Sequence[Discrepancy]) -> str:
    """The latest discrepancy rows, newest run first, each with its repair hint."""
    if not rows:
        return (
            '<h3>Latest discrepancies</h3><p class="none">No discrepancies in the latest runs.</p>'
        )
    body = "".join(
        "<tr>"
        f'<td class="run"><code>{_e(d.run_id)}</code></td><td>{verdict_label(d.verdict)}'
        + (' <span class="flag">topic dup</span>' if d.topic_duplicate else "")
        + f"</td><td><code>{_e(d.message_id)}</code></td>"
        f'<td class="t">{_e(d.topic)}</td><td class="num">{_e(d.partition)}</td>'
        f"<td><code>{_e(hints._list(d.offsets))}</code></td>"
        f"<td><code>{_e(hints._list(d.sink_keys))}</code></td>"
        f'<td class="num">{d.sink_count:,}</td>'
        f'<td class="hint">{_e(hints.row_hint(d))}</td>'
        f'<td class="t">{_time(d.detected_at)}</td></tr>'
        for d in rows
    )
    head = (
        "<tr><th>Run</th><th>Verdict</th><th>messageId</th><th>Topic</th><th>Partition</th>"
        "<th>Offsets</th><th>Sink keys</th><th>Sink rows</th><th>Repair hint</th>"
        "<th>Detected (UTC)</th></tr>"
    )
    return (
        f"<h3>Latest discrepancies <small>({len(rows)} shown, at most "
        f"{MAX_DISCREPANCIES}, newest run first)</small></h3>"
        f'<div class="scroll"><table class="discrepancies"><thead>{head}</thead>'
        f"<tbody>{body}</tbody></table></div>"
    )
