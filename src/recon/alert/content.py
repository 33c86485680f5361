"""What an alert says, independent of the channel: the violated rules, sample messages with their
positions, a repair hint per verdict, the run's delivery latency when it measured one, its way
from source to sink when it has a source, and the links to the run and its Data Docs."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recon import settings
from recon.alert.funnel import funnel_line, source_row_without_id, unpublished_source
from recon.alert.hints import field_names, full_list_sql, repair_hint, sample_keys
from recon.alert.text import shown, value
from recon.contract.table import CONTRACT, Allowance
from recon.model.details import differing_fields, late_figures, out_of_order_positions
from recon.model.verdicts import RATIO_BASE, Verdict
from recon.validation import ValidationOutcome, data_docs_url

DEFAULT_SAMPLE_SIZE = 10


@dataclass(frozen=True)
class VerdictReport:
    """One violated rule: how many, what was allowed, which messages, how to repair."""

    verdict: str | None
    rule: str
    observed: int | None
    allowed: str
    samples: list[str]
    hint: str


@dataclass(frozen=True)
class Alert:
    """Everything an alert says, independent of the channel."""

    pipeline: str
    semantics: str
    run_id: str
    title: str
    reports: list[VerdictReport]
    data_docs_url: str
    run_url: str | None
    validation_id: str
    sample_ids: dict[str, list[str]] = field(default_factory=dict)
    #: one line of the run's latency percentiles (:func:`latency_line`), when it measured any
    latency: str | None = None
    #: one line of the run's way from source to sink (:func:`recon.alert.funnel.funnel_line`),
    #: when the pipeline has a source
    funnel: str | None = None
    #: the run's discrepancies on the reconciliation page (:func:`page_url`)
    page_url: str | None = None
    #: the hop of its flow the pipeline is (:func:`flow_line`), when it is one
    flow: str | None = None

    def text(self) -> str:
        """The alert as plain text (the email body, the webhook's fallback ``text``)."""
        lines = [self.title, ""]
        if self.flow:
            lines.extend([self.flow, ""])
        if self.latency:
            lines.extend([self.latency, ""])
        if self.funnel:
            lines.extend([self.funnel, ""])
        for report in self.reports:
            lines.append(report_heading(report))
            lines.extend(f"  - {s}" for s in report.samples)
            lines.append(f"  Repair: {report.hint}")
            lines.append("")
        lines.extend(link_lines(self))
        return "\n".join(lines).rstrip() + "\n"


def report_heading(report: VerdictReport) -> str:
    """``<verdict or rule>: <observed> (<what was allowed>)``."""
    name = report.verdict or report.rule
    observed = "?" if report.observed is None else str(report.observed)
    return f"{name}: {observed} ({report.allowed})"


def link_lines(alert: Alert) -> list[str]:
    """The lines that link to the Airflow run, its Data Docs and the stored validation."""
    lines = []
    if alert.run_url:
        lines.append(f"Airflow run: {alert.run_url}")
    if alert.page_url:
        lines.append(f"Discrepancies: {alert.page_url}")
    if alert.data_docs_url:
        lines.append(f"Data Docs: {alert.data_docs_url}")
    lines.append(f"Validation: {shown(alert.validation_id, 300)}")
    return lines


def _position(sample: Mapping[str, Any]) -> str | None:
    topic, partition = sample.get("topic"), sample.get("partition")
    if topic is None or partition is None:
        return None
    offsets = [int(o) for o in sample.get("offsets") or []]
    return f"{shown(topic)}/{int(partition)}" + (
        "@" + ",".join(map(str, offsets)) if offsets else ""
    )


def _sample_line(verdict: str, sample: Mapping[str, Any]) -> str:
    # Only these fields are rendered: a sample that carries anything else (a payload) leaks nothing.
    message_id = sample.get("message_id")
    parts = [value(message_id) if message_id else "(no message id)"]
    position = _position(sample)
    if position:
        parts.append(f"at {position}")
    keys = sample_keys(sample)
    if keys:
        parts.append("sink keys " + ", ".join(keys))
    if verdict == Verdict.DUPLICATED and sample.get("sink_count") is not None:
        parts.append(f"{int(sample['sink_count'])} sink rows")
    # Numbers only, read back from the reconciler's own wording: the detail itself is not shown.
    figures = late_figures(sample.get("detail")) if verdict == Verdict.LATE else None
    if figures is not None:
        parts.append(f"latency {figures[0]} ms (bound {figures[1]} ms)")
    # Field names only (never values), read back the same way; a name is the pipeline's own,
    # so it is escaped like a messageId.
    if verdict in (Verdict.MISMATCHED, Verdict.DUPLICATED):
        fields = differing_fields(sample.get("detail"))
        if fields:
            what = "differs in" if verdict == Verdict.MISMATCHED else "copies differ in"
            parts.append(f"{what} {field_names(fields)}")
    # The key and both positions, read back the same way; the key is the user's data, escaped
    # like a messageId.
    stale = out_of_order_positions(sample.get("detail"))
    if verdict == Verdict.OUT_OF_ORDER and stale is not None:
        key, held, newest = stale
        parts.append(f"key {value(key)}  row holds position {held}, newest {newest}")
    # An unpublished message, or a source row without an id, is in no topic: the source row that
    # names it is where to look; the key is the user's data, escaped like a messageId.
    source = unpublished_source(sample.get("detail")) if verdict == Verdict.UNPUBLISHED else None
    if source is not None:
        times = f" (held {source[1]} times)" if source[1] > 1 else ""
        parts.append(f"source row {value(source[0])}{times}")
    unnamed = source_row_without_id(sample.get("detail")) if verdict == Verdict.INVALID else None
    if unnamed is not None:
        parts.append(f"source row {value(unnamed)}")
    return "  ".join(parts)


def latency_line(latency: Mapping[str, Any] | None) -> str | None:
    """``latency p50/p95/p99/max: 120/800/1900/2500 ms (bound 2000 ms)`` from a summary's
    ``latency`` (``recon.run.outcome.latency_figures``: ``bound_ms`` and the whole run's
    ``overall``); with the count of negative latencies (clock skew) when there are any."""
    overall = (latency or {}).get("overall")
    if not overall:
        return None
    try:
        figures = "/".join(str(int(overall[k])) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms"))
        bound = (latency or {}).get("bound_ms")
        limit = "no bound" if bound is None else f"bound {int(bound)} ms"
        line = f"latency p50/p95/p99/max: {figures} ms ({limit})"
        negative = int(overall.get("negative") or 0)
    except (KeyError, TypeError, ValueError):
        return None  # a summary of another shape: the alert goes out without the line
    if negative:
        line += f"; {negative} of {int(overall.get('messages') or 0)} negative (clock skew)"
    return line


def flow_line(flow: Mapping[str, Any] | None) -> str | None:
    """Which hop of which flow broke its contract: ``Flow orders, hop 2 of 3: processor (mirror
    -> processor -> to_table)``.

    :param flow: ``name``, ``hops`` (in order) and ``hop`` (this pipeline), or None.
    """
    if not flow:
        return None
    hops = [str(h) for h in flow.get("hops") or ()]
    hop = str(flow.get("hop"))
    where = f"hop {hops.index(hop) + 1} of {len(hops)}" if hop in hops else "a hop"
    chain = " -> ".join(value(h) for h in hops)
    return f"Flow {value(str(flow.get('name')))}, {where}: {value(hop)} ({chain})"


def _allowance(failure: Mapping[str, Any], semantics: str) -> Allowance | None:
    """How the failed rule allows its verdict: by the checkpoint's rule name (``<verdict>_ratio``,
    ``_count``, ``_forbidden``), else by the contract's cell: the contract's own violations
    (``recon.run.outcome.judged_outcome``) name the bare verdict as the rule, and a verdict such as
    ``mismatched`` is a ratio under one semantic and forbidden under another."""
    rule = str(failure.get("rule") or "")
    for allowance in (Allowance.RATIO, Allowance.COUNT, Allowance.FORBIDDEN):
        if rule.endswith(f"_{allowance.value}"):
            return allowance
    cell = CONTRACT.get(semantics, {}).get(str(failure.get("verdict") or ""))
    return cell.allowance if cell is not None else None


def _allowed_text(failure: Mapping[str, Any], semantics: str, judged: int) -> str:
    allowed = failure.get("allowed") or 0
    allowance = _allowance(failure, semantics)
    if allowance is Allowance.RATIO:
        return f"allowed up to {float(allowed):.2%} of {judged} judged messages"
    if allowance is Allowance.COUNT:
        return f"allowed {int(allowed)}"
    if failure.get("verdict") == Verdict.TOPIC_DUPLICATE:
        return "forbidden: the producer is declared idempotent"
    if failure.get("verdict"):
        return f"forbidden under {semantics}"
    return f"expectation {failure.get('expectation')} failed"


def airflow_run_url(dag_id: str, run_id: str) -> str | None:
    """``{RECON_AIRFLOW_BASE_URL}/dags/{dag_id}/runs/{run_id}``, or ``None`` when unset."""
    base = settings.airflow_base_url()
    if not base:
        return None
    quote = urllib.parse.quote
    return f"{base.rstrip('/')}/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"


def page_url(pipeline: str, run_id: str, verdict: str | None = None) -> str | None:
    """``{RECON_AIRFLOW_BASE_URL}/recon/runs/{pipeline}/{run_id}[?verdict=..]``: the run's
    discrepancies (of one verdict) on the reconciliation page, which sends the link on to its
    filtered view; ``None`` when the base URL is unset. No ``&`` in it: the alert's text shows
    it as it is in every channel."""
    base = settings.airflow_base_url()
    if not base:
        return None
    quote = urllib.parse.quote
    url = f"{base.rstrip('/')}/recon/runs/{quote(pipeline, safe='')}/{quote(run_id, safe='')}"
    return url + (f"?verdict={quote(verdict, safe='')}" if verdict else "")


def build_alert(
    *,
    pipeline: str,
    semantics: str,
    run_id: str,
    summary: Mapping[str, Any],
    outcome: ValidationOutcome,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    dag_id: str | None = None,
) -> Alert:
    """Compose the alert for a failed validation.

    :param summary: the run's summary (``dataclasses.asdict(RunSummary)``): ``counts``,
        ``samples`` (per verdict: message_id, topic, partition, offsets, sink_keys, sink_count;
        a ``late``, ``mismatched``, ``duplicated``, ``out_of_order``, ``unpublished`` or
        ``invalid`` one also its ``detail``, of which only the figures, field names, key and
        positions or source row are shown) and optionally ``latency`` (:func:`latency_line`),
        ``funnel`` (:func:`recon.alert.funnel.funnel_line`) and ``flow`` (:func:`flow_line`).
    :param outcome: the checkpoint's decision; its failures name the violated rules.
    :param sample_size: at most this many sample messages per verdict.
    :param dag_id: the pipeline's DAG id for the run link (default: the pipeline name).
    """
    counts = {str(k): int(v) for k, v in (summary.get("counts") or {}).items()}
    judged = sum(counts.get(v, 0) for v in RATIO_BASE)
    all_samples: Mapping[str, Sequence[Mapping[str, Any]]] = summary.get("samples") or {}
    reports: list[VerdictReport] = []
    sample_ids: dict[str, list[str]] = {}
    for failure in outcome.failures:
        verdict = failure.get("verdict")
        samples = list(all_samples.get(verdict, []))[: max(sample_size, 0)] if verdict else []
        observed = failure.get("observed")
        lines = [_sample_line(verdict or "", s) for s in samples]
        if verdict and observed is not None and observed > len(samples):
            every = full_list_sql(pipeline, run_id, verdict)
            lines.append(f"... {len(samples)} of {observed} shown; all of them: `{every}`")
        if verdict:
            sample_ids[verdict] = [str(s.get("message_id")) for s in samples]
        reports.append(
            VerdictReport(
                verdict=verdict,
                rule=str(failure.get("rule") or failure.get("expectation")),
                observed=observed,
                allowed=_allowed_text(failure, semantics, judged),
                samples=lines,
                hint=repair_hint(verdict, samples),
            )
        )
    broken = ", ".join(
        f"{r.observed} {r.verdict or r.rule}" for r in reports if r.observed is not None
    )
    verdicts = sorted({r.verdict for r in reports if r.verdict})
    title = (
        f"Delivery contract broken: pipeline {value(pipeline)} claims {semantics}, "
        f"run {value(run_id)}: "
        f"{broken or 'see Data Docs'}"
    )
    return Alert(
        pipeline=pipeline,
        semantics=semantics,
        run_id=run_id,
        title=title,
        reports=reports,
        data_docs_url=data_docs_url(outcome.data_docs_path),
        run_url=airflow_run_url(dag_id or pipeline, run_id),
        # one verdict broken: the page at its rows; several: at every row of the run
        page_url=page_url(pipeline, run_id, verdicts[0] if len(verdicts) == 1 else None),
        validation_id=outcome.validation_id,
        sample_ids=sample_ids,
        latency=latency_line(summary.get("latency")),
        funnel=funnel_line(summary.get("funnel")),
        flow=flow_line(summary.get("flow")),
    )
