"""One run's discrepancies on a pipeline's page: filtered (verdict, topic, partition, text),
sorted and paged in the database, and downloaded whole (CSV, Parquet) with the same filters.

The filters arrive as query parameters (:class:`Filter`); the same parameters make the links of
the page, of its downloads and of the alerts (``recon.alert.content.page_url``), so a link from
an alert opens the filtered view. Every value shown passes through :func:`html.escape`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import Any
from urllib.parse import urlencode

from recon_page import hints
from recon_page.chart import verdict_label
from recon_page.data import VERDICT_ORDER, Discrepancy, _fetch, redact

#: How rows may be sorted: the parameter's value and its ORDER BY (ties broken by position).
SORTS: Mapping[str, str] = {
    "severity": "coalesce(array_position(%(order)s::text[], d.verdict), 99)",
    "position": "d.topic, d.partition, d.first_offset",
    "message_id": "d.message_id",
    "detected": "d.detected_at",
}
PAGE_SIZES = (25, 50, 100, 200)
#: A download holds at most this many rows (the page says when a run has more).
MAX_EXPORT = 100_000
MAX_TEXT = 200
#: The columns of a download, in order.
EXPORT_COLUMNS = (
    "run_id", "verdict", "message_id", "topic", "partition", "offsets", "sink_keys",
    "sink_count", "topic_duplicate", "detail", "detected_at",
)  # fmt: skip


class BadFilter(ValueError):
    """A filter parameter the page cannot use (the message names it)."""


@dataclass(frozen=True)
class Filter:
    """Which discrepancy rows of which run, in which order, which page of them."""

    run_id: str | None = None
    verdict: str | None = None
    topic: str | None = None
    partition: int | None = None
    text: str | None = None
    sort: str = "severity"
    desc: bool = False
    page: int = 1
    per_page: int = 50

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Filter:
        """From a request's query parameters (``run``, ``verdict``, ``topic``, ``partition``,
        ``q``, ``sort``, ``dir``, ``page``, ``per_page``); empty ones are no filter.

        :raises BadFilter: naming the parameter and what it accepts.
        """

        def get(name: str) -> str | None:
            value = (params.get(name) or "").strip()
            return value or None

        def number(name: str, default: int) -> int:
            raw = get(name)
            if raw is None:
                return default
            if not raw.isdigit() or len(raw) > 9:
                raise BadFilter(f"{name} must be a whole number, not {raw[:40]!r}")
            return int(raw)

        verdict = get("verdict")
        if verdict is not None and verdict not in VERDICT_ORDER:
            raise BadFilter(f"verdict must be one of {', '.join(VERDICT_ORDER)}")
        sort = get("sort") or "severity"
        if sort not in SORTS:
            raise BadFilter(f"sort must be one of {', '.join(SORTS)}")
        per_page = number("per_page", 50)
        if per_page not in PAGE_SIZES:
            raise BadFilter(f"per_page must be one of {', '.join(map(str, PAGE_SIZES))}")
        text = get("q")
        if text is not None and len(text) > MAX_TEXT:
            raise BadFilter(f"q must be at most {MAX_TEXT} characters")
        partition = get("partition")
        return cls(
            run_id=get("run"),
            verdict=verdict,
            topic=get("topic"),
            partition=None if partition is None else number("partition", 0),
            text=text,
            sort=sort,
            desc=get("dir") == "desc",
            page=max(1, number("page", 1)),
            per_page=per_page,
        )

    def params(self, **changes: Any) -> dict[str, str]:
        """The query parameters that give this filter back (with ``changes``), defaults left
        out."""
        f = replace(self, **changes)
        out = {
            "run": f.run_id, "verdict": f.verdict, "topic": f.topic,
            "partition": None if f.partition is None else str(f.partition), "q": f.text,
            "sort": None if f.sort == "severity" else f.sort, "dir": "desc" if f.desc else None,
            "page": None if f.page == 1 else str(f.page),
            "per_page": None if f.per_page == 50 else str(f.per_page),
        }  # fmt: skip
        return {k: v for k, v in out.items() if v is not None}

    def query(self, pipeline: str, **changes: Any) -> str:
        """``pipeline=...&...``: this filter's part of a URL."""
        return urlencode({"pipeline": pipeline, **self.params(**changes)})


def _where(pipeline: str, run_id: str, f: Filter) -> tuple[str, dict[str, Any]]:
    clauses = ["d.pipeline = %(p)s", "d.run_id = %(run)s"]
    params: dict[str, Any] = {"p": pipeline, "run": run_id, "order": list(VERDICT_ORDER)}
    if f.verdict:
        clauses.append("d.verdict = %(verdict)s")
        params["verdict"] = f.verdict
    if f.topic:
        clauses.append("d.topic = %(topic)s")
        params["topic"] = f.topic
    if f.partition is not None:
        clauses.append("d.partition = %(partition)s")
        params["partition"] = f.partition
    if f.text:
        # a substring, matched as typed: LIKE's wildcards in it are escaped
        like = "%" + f.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append(
            "(d.message_id ILIKE %(like)s OR d.detail ILIKE %(like)s "
            "OR array_to_string(d.sink_keys, ' ') ILIKE %(like)s)"
        )
        params["like"] = like
    return " AND ".join(clauses), params


def _order(f: Filter) -> str:
    direction = " DESC" if f.desc else ""
    keys = [f"{k.strip()}{direction}" for k in SORTS[f.sort].split(", ")]
    return ", ".join([*keys, "d.topic", "d.partition", "d.first_offset", "d.message_id"])


_COLUMNS = (
    "d.pipeline, d.run_id, d.verdict, d.message_id, d.topic, d.partition, d.offsets, "
    "d.sink_keys, d.sink_count, d.topic_duplicate, d.detail, d.detected_at"
)


def _discrepancy(r: Sequence[Any]) -> Discrepancy:
    return Discrepancy(
        pipeline=r[0], run_id=r[1], verdict=r[2], message_id=r[3], topic=r[4], partition=r[5],
        offsets=[int(o) for o in (r[6] or [])], sink_keys=[str(k) for k in (r[7] or [])],
        sink_count=int(r[8] or 0), topic_duplicate=bool(r[9]), detail=redact(r[10]),
        detected_at=r[11],
    )  # fmt: skip


@dataclass(frozen=True)
class Page:
    """One page of a run's filtered discrepancies, and how many rows match in all."""

    pipeline: str
    run_id: str
    filter: Filter
    total: int
    rows: Sequence[Discrepancy]
    #: the run's topics and partitions with rows, for the filter's choices
    partitions: Sequence[tuple[str, int]] = ()

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.filter.per_page))


def read_page(conn: Any, pipeline: str, run_id: str, f: Filter) -> Page:
    """The rows of ``f``'s page (sorted and cut in the database) and the count of all matches.

    :param conn: a connection to the results database.
    :param pipeline: the pipeline.
    :param run_id: the run whose rows are shown.
    :param f: the filter.
    """
    where, params = _where(pipeline, run_id, f)
    counted = _fetch(conn, f"SELECT count(*) FROM recon.discrepancies d WHERE {where}", params)
    total = int(counted[0][0]) if counted else 0
    params = {**params, "limit": f.per_page, "offset": (f.page - 1) * f.per_page}
    rows = _fetch(
        conn,
        f"SELECT {_COLUMNS} FROM recon.discrepancies d WHERE {where} ORDER BY {_order(f)} "
        "LIMIT %(limit)s OFFSET %(offset)s",
        params,
    )
    parts = _fetch(
        conn,
        "SELECT DISTINCT topic, partition FROM recon.discrepancies WHERE pipeline = %s "
        "AND run_id = %s AND topic IS NOT NULL AND partition IS NOT NULL ORDER BY 1, 2 LIMIT 500",
        (pipeline, run_id),
    )
    return Page(pipeline, run_id, f, total, [_discrepancy(r) for r in rows],
                [(str(t), int(p)) for t, p in parts])  # fmt: skip


def export_rows(conn: Any, pipeline: str, run_id: str, f: Filter) -> list[Discrepancy]:
    """Every row ``f`` matches (its page and page size ignored), at most :data:`MAX_EXPORT`."""
    where, params = _where(pipeline, run_id, f)
    rows = _fetch(
        conn,
        f"SELECT {_COLUMNS} FROM recon.discrepancies d WHERE {where} ORDER BY {_order(f)} "
        "LIMIT %(limit)s",
        {**params, "limit": MAX_EXPORT},
    )
    return [_discrepancy(r) for r in rows]


def _record(d: Discrepancy) -> dict[str, Any]:
    return {
        "run_id": d.run_id, "verdict": d.verdict, "message_id": d.message_id, "topic": d.topic,
        "partition": d.partition, "offsets": list(d.offsets), "sink_keys": list(d.sink_keys),
        "sink_count": d.sink_count, "topic_duplicate": d.topic_duplicate, "detail": d.detail,
        "detected_at": d.detected_at,
    }  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        value = " ".join(map(str, value))
    text = str(value)
    # A spreadsheet would run a cell starting with these as a formula (messageIds are user data).
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def to_csv(rows: Sequence[Discrepancy]) -> bytes:
    """The rows as CSV (UTF-8, a header row; lists space-separated; a value a spreadsheet would
    take for a formula gets a leading ``'``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for d in rows:
        rec = _record(d)
        writer.writerow([_cell(rec[c]) for c in EXPORT_COLUMNS])
    return out.getvalue().encode()


def to_parquet(rows: Sequence[Discrepancy]) -> bytes:
    """The rows as one Parquet file (typed columns: offsets a list of int64, sink_keys of
    strings, detected_at a UTC timestamp)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("run_id", pa.string()), ("verdict", pa.string()), ("message_id", pa.string()),
            ("topic", pa.string()), ("partition", pa.int32()), ("offsets", pa.list_(pa.int64())),
            ("sink_keys", pa.list_(pa.string())), ("sink_count", pa.int64()),
            ("topic_duplicate", pa.bool_()), ("detail", pa.string()),
            ("detected_at", pa.timestamp("us", tz="UTC")),
        ]
    )  # fmt: skip
    table = pa.Table.from_pylist([_record(d) for d in rows], schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


# --- rendering ----------------------------------------------------------------------------------


def _e(value: object) -> str:
    return escape("" if value is None else str(value))


def _option(value: str, label: str, selected: bool) -> str:
    return f'<option value="{_e(value)}"{" selected" if selected else ""}>{_e(label)}</option>'


def form(page: Page, runs: Sequence[tuple[str, str]], action: str) -> str:
    """The filter form (GET, so a filtered view is a link).

    :param runs: ``(run id, label)`` of the runs to choose from, newest first.
    :param action: the page's URL without a query.
    """
    f = page.filter
    run_opts = "".join(_option(r, label, r == page.run_id) for r, label in runs)
    verdicts = _option("", "any verdict", f.verdict is None) + "".join(
        _option(v, v, v == f.verdict) for v in VERDICT_ORDER if v != "delivered"
    )
    topics = sorted({t for t, _ in page.partitions})
    topic_opts = _option("", "any topic", f.topic is None) + "".join(
        _option(t, t, t == f.topic) for t in topics
    )
    sorts = "".join(_option(s, f"sort: {s.replace('_', ' ')}", s == f.sort) for s in SORTS)
    sizes = "".join(_option(str(n), f"{n} per page", n == f.per_page) for n in PAGE_SIZES)
    partition = "" if f.partition is None else str(f.partition)
    return (
        f'<form class="filters" method="get" action="{_e(action)}">'
        f'<input type="hidden" name="pipeline" value="{_e(page.pipeline)}">'
        f'<label>Run <select name="run">{run_opts}</select></label>'
        f'<label>Verdict <select name="verdict">{verdicts}</select></label>'
        f'<label>Topic <select name="topic">{topic_opts}</select></label>'
        f'<label>Partition <input name="partition" inputmode="numeric" size="4" '
        f'value="{_e(partition)}"></label>'
        f'<label>Text <input name="q" type="search" maxlength="{MAX_TEXT}" size="16" '
        f'value="{_e(f.text)}" placeholder="messageId, key, detail"></label>'
        f'<label><select name="sort">{sorts}</select></label>'
        f'<label><select name="dir">{_option("", "ascending", not f.desc)}'
        f"{_option('desc', 'descending', f.desc)}</select></label>"
        f'<label><select name="per_page">{sizes}</select></label>'
        '<button type="submit">Show</button></form>'
    )


def table(page: Page) -> str:
    """The page's rows, each with its repair hint."""
    if not page.rows:
        return '<p class="none">No discrepancies match.</p>'
    body = "".join(
        f"<tr><td>{verdict_label(d.verdict)}"
        + (' <span class="flag">topic dup</span>' if d.topic_duplicate else "")
        + f'</td><td class="id"><code>{_e(d.message_id)}</code></td>'
        f'<td class="id">{_e(d.topic)}</td><td class="num">{_e(d.partition)}</td>'
        f'<td class="id"><code>{_e(hints._list(d.offsets))}</code></td>'
        f'<td class="id"><code>{_e(hints._list(d.sink_keys))}</code></td>'
        f'<td class="num">{d.sink_count:,}</td>'
        f'<td class="hint">{_e(hints.row_hint(d))}</td></tr>'
        for d in page.rows
    )
    head = (
        "<tr><th>Verdict</th><th>messageId</th><th>Topic</th><th>Partition</th>"
        "<th>Offsets</th><th>Sink keys</th><th>Sink rows</th><th>Repair hint</th></tr>"
    )
    return f'<table class="discrepancies browse"><thead>{head}</thead><tbody>{body}</tbody></table>'


def pager(page: Page, base: str) -> str:
    """Which rows are shown of how many, links to the previous and next pages, and the
    downloads of every matching row."""
    f = page.filter
    first = (f.page - 1) * f.per_page + 1 if page.rows else 0
    last = first + len(page.rows) - 1 if page.rows else 0
    nav = [f"rows {first:,}–{last:,} of {page.total:,} (page {f.page} of {page.pages})"]
    if f.page > 1:
        nav.append(f'<a href="{_e(base)}?{_e(f.query(page.pipeline, page=f.page - 1))}'
                   f'#discrepancies" rel="prev">previous</a>')  # fmt: skip
    if f.page < page.pages:
        nav.append(f'<a href="{_e(base)}?{_e(f.query(page.pipeline, page=f.page + 1))}'
                   f'#discrepancies" rel="next">next</a>')  # fmt: skip
    whole = f.query(page.pipeline, page=1, per_page=50, run_id=page.run_id)
    downloads = [
        f'<a class="download" href="{_e(base)}discrepancies.{ext}?{_e(whole)}">{label}</a>'
        for ext, label in (("csv", "CSV"), ("parquet", "Parquet"))
    ]
    more = f" (the first {MAX_EXPORT:,})" if page.total > MAX_EXPORT else ""
    return (
        f'<p class="pager">{" · ".join(nav)}<span class="downloads">Download every matching '
        f"row{more}: {' · '.join(downloads)}</span></p>"
    )
