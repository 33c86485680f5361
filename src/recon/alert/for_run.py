"""After validation: the data-quality alerts of one run, from what the run stored.

Used by the Airflow ``alert`` task and by ``recon run``, so both send the same alert, once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from recon.config import PipelineConfig
from recon.config.load import flow_of
from recon.store import RunNotFound

SAMPLE_SIZE = 10


def _path_of(url: str | None) -> str:
    if not url:
        return ""
    parsed = urlparse(url)
    return unquote(parsed.path) if parsed.scheme == "file" else url


def _samples(cur: Any, pipeline: str, run_id: str, verdicts: list[str]) -> dict[str, Any]:
    samples: dict[str, list[dict[str, Any]]] = {}
    for verdict in verdicts:
        if verdict == "topic_duplicate":
            cur.execute(
                "SELECT message_id, topic, partition, offsets, sink_keys, sink_count, detail "
                "FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s "
                "AND topic_duplicate ORDER BY partition, first_offset LIMIT %s",
                (pipeline, run_id, SAMPLE_SIZE),
            )
        else:
            cur.execute(
                "SELECT message_id, topic, partition, offsets, sink_keys, sink_count, detail "
                "FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s AND verdict = %s "
                "ORDER BY partition, first_offset, message_id LIMIT %s",
                (pipeline, run_id, verdict, SAMPLE_SIZE),
            )
        # detail: a late row's latency and bound, a mismatched (or duplicated) row's differing
        # fields, an out_of_order row's key and positions, an unpublished (or source invalid)
        # row's source row: the alert shows only those, read back by recon.model.details and
        # recon.alert.funnel
        samples[verdict] = [
            {
                "message_id": m, "topic": t, "partition": p, "offsets": list(o or []),
                "sink_keys": list(k or []), "sink_count": n, "detail": d,
            }
            for m, t, p, o, k, n, d in cur.fetchall()
        ]  # fmt: skip
    return samples


def _latency(pg: Any, pipeline: str, run_id: str) -> dict[str, Any] | None:
    """The run's whole-run latency in the run summary's shape (``bound_ms``, ``overall``, ...),
    built by the function that builds the summary; None when the run measured none."""
    from recon.run.outcome import latency_figures
    from recon.store import LATENCY_FIGURES, committed_latency

    stored = committed_latency(pg, pipeline, run_id)
    if stored is None:
        return None
    figures = [stored[name] for name in LATENCY_FIGURES]
    return latency_figures([(None, *figures)], stored["bound_ms"], stored["timestamp_type"])


def alert_for_run(cfg: PipelineConfig, run_id: str, dag_id: str | None = None) -> dict[str, Any]:
    """Send the run's alerts if it broke its contract (never twice for one run).

    :param cfg: the pipeline; its ``alerts`` routes (empty: the default webhook and email).
    :param run_id: the run.
    :param dag_id: for the link to the DAG run.
    :returns: ``status``, ``contract_passed``, ``violations`` (verdict -> observed) and
        ``channels`` (channel -> sent / already_sent / skipped / failed; a declared route's
        channel is ``<notifier>:<connection>``).
    """
    from recon.alert.send import send_alerts
    from recon.run.services import results_db
    from recon.validation import ValidationOutcome

    with results_db() as pg:
        with pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, counts, violations, validation_url, error, "
                "window_spec, duration_seconds, funnel FROM recon.runs "
                "WHERE pipeline = %s AND run_id = %s",
                (cfg.name, run_id),
            )
            row = cur.fetchone()
            if row is None:
                raise RunNotFound(f"pipeline '{cfg.name}': no run '{run_id}'")
            status, passed, counts, failures, url, error, windows, duration, funnel = row
            if status in ("running", "error") or passed is None:
                return {"status": "error", "error": error or f"run is {status}",
                        "contract_passed": False, "violations": {}, "channels": {}}  # fmt: skip
            violating = sorted({f["verdict"] for f in failures or [] if f.get("verdict")})
            samples = _samples(cur, cfg.name, run_id, violating)
        pg.commit()
        latency = _latency(pg, cfg.name, run_id)
        outcome = ValidationOutcome(
            passed=bool(passed),
            failures=list(failures or []),
            data_docs_path=_path_of(url),
            validation_id="",
        )
        summary = {
            "pipeline": cfg.name, "run_id": run_id, "semantics": cfg.semantics,
            "counts": counts or {}, "samples": samples, "windows": windows or [],
            "duration_seconds": duration, "latency": latency, "funnel": funnel,
            "flow": flow_of(cfg),
        }  # fmt: skip
        channels = send_alerts(
            pg, pipeline=cfg.name, semantics=cfg.semantics, run_id=run_id,
            summary=summary, outcome=outcome, dag_id=dag_id, routes=cfg.alerts,
        )  # fmt: skip
    return {
        "status": status,
        "contract_passed": bool(passed),
        "violations": {
            f.get("verdict") or f.get("rule"): f.get("observed") for f in failures or []
        },
        "channels": channels,
    }
