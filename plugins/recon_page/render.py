"""The page, rendered on the server: self-contained HTML (inline CSS, SVG charts, no script).

The overview and each pipeline's facts, charts and runs are drawn here; its discrepancies ("What
to do" and the table) by :mod:`.discrepancies`, its latency by :mod:`.latency`, its way from
source to sink by :mod:`.funnel`, its repair plans by :mod:`.repairs`.

Every value from the database passes through :func:`html.escape` (``_e``) on its way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from urllib.parse import quote

from recon_page import browse, chart, discrepancies, funnel, latency, repairs
from recon_page.data import MAX_RUNS, Discrepancy, Latency, Run
from recon_page.links import Links

TITLE = "Delivery reconciliation"


@dataclass(frozen=True)
class PipelineView:
    latest: Run
    runs: Sequence[Run]
    discrepancies: Sequence[Discrepancy]
    #: whole-run latency rows of ``runs`` (``data.latency``); empty: no run measured latency
    latency: Sequence[Latency] = ()
    #: per-partition rows of the newest of them (``data.latency_partitions``)
    latency_partitions: Sequence[Latency] = ()
    #: the pipeline's repair plans, newest first (``repairs.list_repairs``)
    repairs: Sequence[repairs.Repair] = ()
    #: one page of a run's filtered discrepancies (the pipeline's own page); None: the
    #: ``discrepancies`` rows above, unfiltered
    browse: browse.Page | None = None


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _a(href: str, text: str, *, top: bool = False, new: bool = False) -> str:
    target = ' target="_top"' if top else (' target="_blank" rel="noopener"' if new else "")
    return f'<a href="{_e(href)}"{target}>{_e(text)}</a>'


def _time(t: datetime | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return t.astimezone(UTC).strftime(fmt) if t else "—"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _anchor(pipeline: str) -> str:
    return "p-" + quote(pipeline, safe="")


def _status(run: Run) -> str:
    return f'<span class="status status-{_e(run.status)}">{_e(run.status)}</span>'


def _counts(run: Run, names: Sequence[str]) -> int:
    return sum(run.counts.get(n, 0) for n in names)


def _num(n: int) -> str:
    return f'<td class="num{" bad" if n else ""}">{n:,}</td>'


#: The overview's count columns: (heading, verdicts counted). Delivered and Pending always show;
#: the others only when a listed pipeline's latest run has some (one row per pipeline must fit).
OVERVIEW_COUNTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Lost", ("lost",)),
    ("Unpublished", ("unpublished",)),
    ("Duplicated", ("duplicated",)),
    ("Mismatched", ("mismatched",)),
    ("Out of order", ("out_of_order",)),
    ("Late", ("late",)),
    ("Phantom / aborted", ("phantom", "aborted_read")),
    ("Unverifiable / invalid", ("unverifiable", "invalid")),
)


def asset_event(run: Run) -> tuple[str, str]:
    """Whether the run's reconciliation DAG emitted the sink's Asset event (its alert task does
    after a run that kept its contract): a short word for tables, and a sentence."""
    if run.status == "running" or (run.status == "passed" and run.contract_passed is None):
        return "not yet", "No Asset event yet: the run is not judged and validated."
    if run.status == "error":
        return "none: run error", "No Asset event: the run did not finish."
    if run.contract_passed:
        return "emitted", (
            "Asset event emitted: DAGs scheduled on this sink's Asset run, with the verified "
            "extent (offsets per partition, watermark) in the event's extra."
        )
    return "none: contract broken", (
        "No Asset event: the run broke its contract, so DAGs waiting for this sink's verified "
        "data do not run."
    )


def overview(latest: Sequence[Run], links: Links) -> str:
    """One row per pipeline: its latest run's status and time, the counts that matter, whether
    it emitted its Asset event, and the link to its own page."""
    shown = [
        (head, names) for head, names in OVERVIEW_COUNTS if any(_counts(r, names) for r in latest)
    ]
    rows = []
    for run in latest:
        word, sentence = asset_event(run)
        rows.append(
            "<tr>"
            f'<td class="name">{_a(links.page(run.pipeline), run.pipeline)}'
            f"<small>{_e(run.semantics)}</small></td><td>{_status(run)}</td>"
            f'<td class="t">{_time(run.started_at, "%m-%d %H:%M")}</td>'
            f'<td class="num">{run.counts.get("delivered", 0):,}</td>'
            + "".join(_num(_counts(run, names)) for _, names in shown)
            + f'<td class="num">{run.counts.get("pending", 0):,}</td>'
            f'<td class="asset" title="{_e(sentence)}">{_e(word)}</td>'
            f"<td>{_a(links.dag(run.pipeline), 'DAG', top=True)}</td></tr>"
        )
    head = (
        "<tr><th>Pipeline</th><th>Latest run</th><th>Started (UTC)</th>"
        '<th class="num">Delivered</th>'
        + "".join(f'<th class="num">{_e(h)}</th>' for h, _ in shown)
        + '<th class="num">Pending</th><th>Asset event</th><th></th></tr>'
    )
    table = f'<table class="overview"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    # fits from 1280 px; narrower, the table scrolls on its own, the page does not
    return f'<div class="scroll">{table}</div>'


def _facts(view: PipelineView, links: Links) -> str:
    run = view.latest
    contract = (
        "—"
        if run.contract_passed is None
        else ("kept" if run.contract_passed else '<strong class="bad">broken</strong>')
    )
    facts = [
        ("Claimed semantic", f"<code>{_e(run.semantics)}</code>"),
        ("Contract", contract),
        ("Latest run", f"<code>{_e(run.run_id)}</code>"),
        ("Started", _time(run.started_at) + " UTC"),
        ("Duration", _duration(run.duration_seconds)),
        ("Verified data", _e(asset_event(run)[1])),
    ]
    if run.rewinds:
        facts.append(("Consumer-group rewinds", f'<strong class="bad">{len(run.rewinds)}</strong>'))
    if run.unchecked:
        from recon.model.details import unchecked_phrases

        facts.append(("Not checked", "<br>".join(_e(p) for p in unchecked_phrases(run.unchecked))))
    dl = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    out = [f'<dl class="facts">{dl}</dl>']
    if run.violations:
        items = "".join(
            f"<li>{chart.verdict_label(str(v.get('verdict') or v.get('rule') or '?'))} "
            f"{_e(v.get('observed', v.get('count')))} "
            f"(allowed {_e(v.get('allowed'))}): "
            f"{_e(v.get('reason') or v.get('expectation') or '')}</li>"
            for v in run.violations
        )
        out.append(f'<ul class="violations">{items}</ul>')
    if run.error:
        out.append(f'<pre class="error">{_e(run.error)}</pre>')
    link_list = [_a(links.dag_run(run.pipeline, run.run_id), "DAG run", top=True)]
    link_list.append(_a(links.dag(run.pipeline), "DAG", top=True))
    if docs := links.docs(run):
        link_list.append(_a(docs, "Data Docs", new=True))
    link_list.append(_a(links.runs_api(run.pipeline), "JSON", new=True))
    out.append(f'<p class="links">{" · ".join(link_list)}</p>')
    return "".join(out)


def _charts(view: PipelineView) -> str:
    runs = view.runs
    bars = [
        chart.Bar(
            label=_time(r.started_at, "%m-%d %H:%M"),
            title=f"{r.run_id} ({r.status})",
            values=r.counts,
            note=None if r.counts else r.status,
        )
        for r in reversed(runs)
    ]
    figures = []
    for series, caption in (
        (chart.ALL_SERIES, "Messages per verdict, per run"),
        (chart.PROBLEM_SERIES, "Discrepancies per run"),
    ):
        svg = chart.stacked_bars(bars, series, title=caption)
        figures.append(
            f"<figure><figcaption>{caption}</figcaption>{svg}{chart.legend(series)}</figure>"
        )
    figures.append(latency.figure(runs, view.latency))
    return f'<div class="charts">{"".join(figures)}</div>' + latency.partitions_table(
        view.latency[0] if view.latency else None, view.latency_partitions
    )


def _runs_table(view: PipelineView, links: Links) -> str:
    rows = []
    for r in view.runs:
        counts = ", ".join(f"{k} {v:,}" for k, v in sorted(r.counts.items()) if v) or "—"
        if r.corrections:
            fixed = ", ".join(f"{k} {v:,}" for k, v in sorted(r.corrections.items()))
            counts += f" (corrected by later runs: {fixed})"
        docs = links.docs(r)
        shown = links.discrepancies(r.pipeline, r.run_id)
        rows.append(
            f'<tr><td class="run">{_a(links.dag_run(r.pipeline, r.run_id), r.run_id, top=True)}'
            f'</td><td>{_status(r)}</td><td class="t">{_time(r.started_at)}</td>'
            f"<td>{_duration(r.duration_seconds)}</td><td>{_e(counts)}</td>"
            f"<td>{_e(asset_event(r)[0])}</td>"
            f"<td>{_a(shown, 'discrepancies')}"
            f"{' · ' + _a(docs, 'Data Docs', new=True) if docs else ''}</td></tr>"
        )
    head = (
        "<tr><th>Run</th><th>Status</th><th>Started (UTC)</th><th>Duration</th>"
        "<th>Counts</th><th>Asset event</th><th>Details</th></tr>"
    )
    return (
        f"<details open><summary>Runs ({len(view.runs)} shown, at most {MAX_RUNS})</summary>"
        f'<div class="scroll"><table class="runs"><thead>{head}</thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></details>"
    )


def _browse(view: PipelineView, links: Links) -> str:
    """The chosen run's discrepancies: filters, one page of rows, the way to the others."""
    page = view.browse
    if page is None:
        return discrepancies.todo(view.discrepancies) + discrepancies.table(view.discrepancies)
    runs = [(r.run_id, f"{_time(r.started_at, '%m-%d %H:%M')} {r.run_id} ({r.status})")
            for r in view.runs]  # fmt: skip
    base = links.page()
    return (
        discrepancies.todo(page.rows)
        + f'<h3 id="discrepancies">Discrepancies of run <code>{_e(page.run_id)}</code></h3>'
        + browse.form(page, runs, base)
        + browse.pager(page, base)
        + f'<div class="scroll">{browse.table(page)}</div>'
    )


def pipeline_section(view: PipelineView, links: Links) -> str:
    name = view.latest.pipeline
    return (
        f'<section class="pipeline" id="{_e(_anchor(name))}">'
        f"<h2>{_e(name)} {_status(view.latest)}</h2>"
        + _facts(view, links)
        + _charts(view)
        + funnel.section(view.runs)
        + _browse(view, links)
        + repairs.section(name, view.repairs, links)
        + _runs_table(view, links)
        + "</section>"
    )


def page(
    latest: Sequence[Run],
    views: Sequence[PipelineView],
    links: Links,
    *,
    selected: str | None = None,
    now: datetime | None = None,
) -> str:
    """The overview (one row per pipeline), or the page of the ``selected`` pipeline (its
    section: ``views``)."""
    generated = now_shown(now)
    if not latest:
        body = '<p class="none">No reconciliation runs yet.</p>'
    elif selected:
        body = f'<p class="note">{_a(links.page(), "← All pipelines")}</p>'
        body += "".join(pipeline_section(v, links) for v in views)
    else:
        body = overview(latest, links) + (
            '<p class="note">Pick a pipeline for its runs, charts and discrepancies.</p>'
        )
        body += "".join(pipeline_section(v, links) for v in views)
    return document(body, generated)


def now_shown(now: datetime | None = None) -> str:
    """When a page was generated, as it shows it (UTC)."""
    return _time(now or datetime.now(UTC))


def document(body: str, generated: str, title: str = TITLE) -> str:
    """A whole page of this app around ``body`` (HTML already escaped), with its styles.

    :param generated: when, as shown (UTC); :param title: the window's title (escaped here).
    """
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}{latency.CSS}{funnel.CSS}{repairs.CSS}</style></head><body>"
        f"<header><h1>{TITLE}</h1><p>Kafka → consumer → PostgreSQL: does each pipeline keep the "
        f"delivery semantic it claims? Generated {generated} UTC.</p></header>"
        f"<main>{body}</main></body></html>"
    )


CSS = """
:root{color-scheme:light;--fg:#1f2933;--muted:#616e7c;--line:#d9e2ec;--bg:#f5f7fa;--bad:#c62828}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
header{background:#102a43;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#bcccdc}
main{padding:16px 24px;max-width:1600px}
h2{font-size:19px;margin:0 0 8px;display:flex;gap:10px;align-items:center}
h3{font-size:15px;margin:18px 0 6px}
h3 small{color:var(--muted);font-weight:normal}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:#e4e7eb;font-weight:600}
tbody tr:nth-child(even){background:#fafbfc}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.bad{color:var(--bad);font-weight:600}
code{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
td.t,td code{white-space:nowrap}
td.run code,td.run a,td.id{white-space:normal;overflow-wrap:anywhere}
td.run{min-width:140px;max-width:250px}
td.id{min-width:9em;max-width:240px}
td.hint{min-width:220px}
td.name small{display:block;color:var(--muted);font-size:12px}
table.overview th{white-space:normal}
form.filters{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center;margin:6px 0;
font-size:13px}
form.filters select,form.filters input{font:inherit;max-width:100%}
form.filters select[name=run]{max-width:320px}
.pager{display:flex;flex-wrap:wrap;gap:4px 16px;color:var(--muted)}
.pager a{margin:0 2px}
@media (max-width:1279px){main{padding:12px}th,td{padding:4px 5px}body{font-size:13px}}
.scroll{overflow-x:auto}
section.pipeline{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px;
margin:18px 0}
.status{font-size:12px;font-weight:700;text-transform:uppercase;padding:2px 8px;border-radius:10px;
background:#e4e7eb;color:#3e4c59}
.status-passed,.status-reconciled{background:#e3f9e5;color:#1b5e20}
.status-failed,.status-error{background:#ffebee;color:var(--bad)}
.status-running{background:#e3f2fd;color:#0d47a1}
.facts{display:flex;flex-wrap:wrap;gap:6px 28px;margin:0 0 8px}
.facts dt{color:var(--muted);font-size:12px}
.facts dd{margin:0}
.bad{color:var(--bad)}
.violations,.todo{margin:6px 0;padding-left:18px}
.todo li{margin:3px 0}
.todo .n{color:var(--muted);font-size:12px}
.todo .where{display:block;font:12px ui-monospace,Menlo,Consolas,monospace;color:#334e68}
pre.error{background:#fff5f5;border:1px solid #f5c6cb;padding:8px;white-space:pre-wrap}
.links a{margin-right:2px}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;flex:1 1 480px;min-width:0;max-width:100%}
figcaption{font-weight:600;margin-bottom:4px}
svg.chart{background:#fff;border:1px solid var(--line);border-radius:4px}
svg .grid{stroke:#eef2f6}
svg .axis{stroke:#9aa5b1}
svg .tick,svg .xlabel,svg .empty{font-size:11px;fill:var(--muted)}
svg .bar-empty{fill:#cfd8dc}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 14px;padding:0;margin:6px 0 0;
font-size:12px}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;
vertical-align:-1px}
.verdict{white-space:nowrap}
.flag{font-size:11px;background:#f3e5f5;color:#6a1b9a;border-radius:8px;padding:0 6px}
details summary{cursor:pointer;font-weight:600;margin:16px 0 6px}
.note,.none{color:var(--muted)}
a{color:#0b69a3}
"""
