"""The tables of ``docs/benchmarks.md``, one function per figure, from the raw results of one
``make bench`` (``bench.report`` puts them together with the summary, the method and the plot)."""

from __future__ import annotations

import statistics
from typing import Any

SYSTEMS = (
    ("local", "kafka-recon, local engine"),
    ("product", "kafka-recon, Spark engine (local[*])"),
    ("connect", "kafka-recon, Spark engine on a warm Spark Connect server"),
    ("python", "(a) hand-written Python"),
    ("duckdb", "(b) DuckDB + confluent-kafka"),
    ("spark", "(c) hand-written PySpark (Kafka source, JDBC, one join)"),
    ("floor", "I/O floor (read + COPY)"),
)


ENGINES = (
    ("local", "local engine"),
    ("product", "Spark engine"),
    ("connect", "Spark engine on Spark Connect"),
)


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def system_runs(row: dict[str, Any], system: str) -> list[dict[str, Any]]:
    runs = row["runs"]
    if system == "connect":
        # The server's memory is the run's: its JVM (and Python workers) judge the window.
        return [{**r, "peak_rss_mb": r["peak_rss_mb"] + r["peak_watched_mb"]}
                for r in runs.get(system, [])]  # fmt: skip
    if system != "floor":
        return list(runs.get(system, []))
    # The floor of one repetition is its Kafka read plus its COPY.
    return [
        {"seconds": k["seconds"] + c["seconds"],
         "peak_rss_mb": max(k["peak_rss_mb"], c["peak_rss_mb"])}
        for k, c in zip(runs["floor_kafka"], runs["floor_copy"], strict=True)
    ]  # fmt: skip


def p1(results: dict[str, Any]) -> list[str]:
    lines = [
        "| window | system | runs | wall time (median) | throughput | peak memory | vs floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results.get("p1", []):
        floor = median([r["seconds"] for r in system_runs(row, "floor")])
        for system, name in SYSTEMS:
            runs = system_runs(row, system)
            if not runs:
                continue
            secs = median([r["seconds"] for r in runs])
            mem = median([r["peak_rss_mb"] for r in runs])
            lines.append(
                f"| {row['label']} | {name} | {len(runs)} | {secs:.1f} s | "
                f"{row['size'] / secs / 1000:,.0f} k msg/s | {mem:,.0f} MB | "
                f"{secs / floor:.1f}x |"
            )
    return lines


def verdicts(results: dict[str, Any]) -> list[str]:
    lines = ["| window | delivered | lost | duplicated | phantom | topic_duplicate | invalid |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in results.get("p1", []):
        e = row["expected"]
        lines.append(
            f"| {row['label']} | " + " | ".join(
                f"{e.get(v, 0):,}" for v in
                ("delivered", "lost", "duplicated", "phantom", "topic_duplicate", "invalid"))
            + " |"
        )  # fmt: skip
    return lines


def product_steps(results: dict[str, Any]) -> list[str]:
    lines = ["| window | engine | JVM + session | offsets | topic and sink -> Parquet "
             "| reconcile + commit |", "|---|---|---|---|---|---|"]  # fmt: skip
    for row in results.get("p1", []):
        for engine, name in ENGINES:
            steps = [r["output"].get("steps", {}) for r in row["runs"].get(engine, [])]
            if not steps:
                continue
            cells = [
                f"{median([s.get(k, 0) for s in steps]):.1f} s"
                for k in ("session", "snapshot_offsets", "snapshot_topic", "reconcile")
            ]
            lines.append(f"| {row['label']} | {name} | " + " | ".join(cells) + " |")
    return lines


def p2_runs(results: dict[str, Any], engine: str) -> list[dict[str, Any]]:
    """One engine's P2 runs (older results hold the Spark engine's runs at the top level)."""
    return [{"run": r["run"], "history": r["history"], "simulated": r.get("simulated", 0),
             **({"pair": r["pair"]} if "pair" in r else {}), **(r.get(engine) or r)}
            for r in results.get("p2", []) if engine in r or engine == "product"]  # fmt: skip


def _mb(run: dict[str, Any] | None, key: str) -> str:
    stored = (run or {}).get("ledger_bytes") or {}
    return f"{stored[key] / 1e6:,.0f}" if key in stored else "-"


def p2(results: dict[str, Any]) -> list[str]:
    lines = ["| run | messages already reconciled | Spark engine | local engine | peak memory "
             "(Spark / local) | ledger after the run, current version (Spark / local) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    local = {r["run"]: r for r in p2_runs(results, "local")}
    for r in p2_runs(results, "product"):
        lo = local.get(r["run"])
        simulated = f" ({r['simulated']:,} simulated)" if r.get("simulated") else ""
        lines.append(
            f"| {r['run']} | {r['history']:,}{simulated} | {r['seconds']:.1f} s | "
            + (f"{lo['seconds']:.1f} s" if lo else "-")
            + f" | {r['peak_rss_mb']:,} / "
            + (f"{lo['peak_rss_mb']:,} MB" if lo else "-")
            + f" | {_mb(r, 'current')} / {_mb(lo, 'current')} MB |"
        )
    return lines + ["", *p2_storage(results)]


def p2_storage(results: dict[str, Any]) -> list[str]:
    """What the ledger costs on disk: bytes per million messages reconciled, and the whole
    folder (every version and entry, as a pipeline that never runs ``recon prune`` keeps)."""
    lines = []
    for engine, name in ENGINES:
        runs = [r for r in p2_runs(results, engine) if r.get("ledger_bytes")]
        if len(runs) < 2:
            continue
        last = runs[-1]
        # After its run a row's ledger holds its history and its own window (one step more).
        reconciled = last["history"] + runs[1]["history"] - runs[0]["history"]
        per_million = last["ledger_bytes"]["current"] / max(reconciled, 1) * 1e6
        lines.append(
            f"- Ledger on disk, {name}: {last['ledger_bytes']['current'] / 1e6:,.0f} MB in the "
            f"current version after {reconciled:,} messages ({per_million / 1e6:,.1f} MB per "
            f"million); the folder with every version kept: "
            f"{last['ledger_bytes']['folder'] / 1e6:,.0f} MB."
        )
    return lines


def real_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """P2's runs on history the bench reconciled itself (not the simulated-history run)."""
    return [r for r in runs if not r.get("simulated")]


def least_squares_slope(runs: list[dict[str, Any]]) -> float:
    xs = [float(r["history"]) / 1e6 for r in runs]
    ys = [float(r["seconds"]) for r in runs]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def history_slope(runs: list[dict[str, Any]]) -> tuple[float, int] | None:
    """Seconds added per million messages of history: the runs with the simulated history
    against the runs without it that alternate with them (P2's target: at most 0.01), and that
    history."""
    simulated = [r for r in runs if r.get("simulated")]
    control = [r for r in runs if "pair" in r and not r.get("simulated")]
    if not simulated or not control:
        return None
    added = (statistics.fmean(r["history"] for r in simulated)
             - statistics.fmean(r["history"] for r in control)) / 1e6  # fmt: skip
    seconds = statistics.fmean(r["seconds"] for r in simulated) - statistics.fmean(
        r["seconds"] for r in control
    )
    return seconds / added, int(simulated[-1]["history"])


def p2_judgement(engine: str, runs: list[dict[str, Any]]) -> str:
    """Whether an engine's P2 time grows beyond the run-to-run noise over the real runs, and
    what the simulated history says."""
    found = history_slope(runs)
    tail = ""
    if found is not None:
        slope, where = found
        tail = (
            f" With {where / 1e6:,.0f}M messages of history (simulated: segments as a year of "
            "runs leaves them), against the runs without it between them: "
            f"**{slope:+.4f} s per million** messages of history (target: at most 0.01)."
        )
    runs = real_runs(runs)
    slope = least_squares_slope(runs)
    xs = [r["history"] / 1e6 for r in runs]
    ys = [r["seconds"] for r in runs]
    intercept = statistics.fmean(ys) - slope * statistics.fmean(xs)
    # how far the runs scatter around the least-squares line
    noise = statistics.stdev(y - intercept - slope * x for x, y in zip(xs, ys, strict=True))
    growth = slope * (xs[-1] - xs[0])
    if abs(growth) < 2 * noise:
        return (
            f"Flat within noise over the real runs: the fitted line moves {growth:+.1f} s over "
            f"the {len(runs)} runs, the runs scatter {noise:.1f} s around it." + tail
        )
    how = (
        "A run scans its hot entries (at most 16 runs' worth) one column wide, and finds older "
        "messages through each segment's membership filter."
        if engine == "local"
        else "A run finds its messages in hot entries and segments alike through their "
        "membership filters, probed in its executors in one pass over its ids (the Spark engine "
        "writes every entry and results file sorted within its files, with the filter); run 1 "
        "has no ledger to probe."
    )
    return (
        f"Over the real runs it grows {growth:+.1f} s in {len(runs)} runs (runs scatter "
        f"{noise:.1f} s around the line); its reconcile step took {step_seconds(runs[0]):.1f} s "
        f"in run 1 and {step_seconds(runs[-1]):.1f} s in run {runs[-1]['run']}. {how}" + tail
    )


def step_seconds(run: dict[str, Any], step: str = "reconcile") -> float:
    return float((run.get("output") or {}).get("steps", {}).get(step, 0.0))


def p3(results: dict[str, Any]) -> list[str]:
    limit = results.get("machine", {}).get("local_memory_limit")
    lines = (
        [
            f"The local engine judged with DuckDB's memory limit at {limit} "
            "(`RECON_LOCAL_MEMORY_LIMIT`): past it DuckDB spills to the data folder's "
            "`duckdb-spill`; its Kafka readers fetch at most 4 MiB at a time.",
            "",
        ]
        if limit
        else []
    )
    lines += ["| window | engine | Python processes | JVM (driver = executor in local mode) "
             "| whole tree |", "|---|---|---|---|---|"]  # fmt: skip
    for row in results.get("p1", []):
        for engine, name in ENGINES:
            runs = system_runs(row, engine)
            if not runs:
                continue
            python = max(r["peak_python_mb"] for r in runs)
            # On Spark Connect the JVM is the server's (watched beside the run).
            jvm = max(r["peak_jvm_mb"] or r.get("peak_watched_mb", 0) for r in runs)
            lines.append(
                f"| {row['label']} | {name} | {python:,} MB | "
                + (f"{jvm:,} MB" if jvm else "none")
                + f" | {max(r['peak_rss_mb'] for r in runs):,} MB |"
            )
    scaled = results.get("p3") or {}
    for key, name in ENGINES:
        if m := scaled.get(key):
            jvm = f"{m['peak_jvm_mb']:,} MB" if m["peak_jvm_mb"] else "none"
            lines.append(
                f"| {scaled['label']} (P3's own run) | {name} | "
                f"{m['peak_python_mb']:,} MB | {jvm} | {m['peak_rss_mb']:,} MB |"
            )
    p4 = results.get("p4")
    if p4:
        c = p4["cluster"]
        lines.append(
            f"| {p4['label']}, standalone cluster | Spark engine | {c['peak_python_mb']:,} MB | "
            f"{c['peak_jvm_mb']:,} MB (driver JVM) | two workers and their executors: "
            f"{c['peak_watched_mb']:,} MB |"
        )
    if scaled:
        m, spark = scaled["local"], scaled.get("product")
        lines += ["", f"P3's own run: the local engine on a {scaled['size']:,}-message dataset "
                  f"(`p3-{scaled['label'].lower()}`, the P1 fault mix), once: "
                  f"{m['seconds']:.1f} s, its DuckDB's spill folder holding at most "
                  f"{m.get('peak_spill_mb', 0):,} MB during the run (sampled every 100 ms with "
                  "the memory)." + (f" The Spark engine, in a JVM of its own: "
                                    f"{spark['seconds']:.1f} s." if spark else "")]  # fmt: skip
    return lines


def scaled_peaks(results: dict[str, Any]) -> list[tuple[str, float]]:
    """The local engine's peak memory (MB) per window: P1's sizes, then P3's own run."""
    peaks = [(row["label"], max(r["peak_rss_mb"] for r in system_runs(row, "local")))
             for row in results.get("p1", []) if system_runs(row, "local")]  # fmt: skip
    scaled = results.get("p3")
    if scaled:
        peaks.append((scaled["label"], scaled["local"]["peak_rss_mb"]))
    return peaks


def p4(results: dict[str, Any]) -> list[str]:
    p4 = results.get("p4")
    if not p4:
        return ["(not run)"]
    return [
        f"The {p4['label']} job of P1 on a Spark standalone cluster started from "
        "pyspark's own classes (`bench/cluster.py`: one master, two workers of one core and "
        "2 GiB each), against the same job in local mode, on the same data.",
        "",
        "| mode | wall time | verdicts |",
        "|---|---|---|",
        f"| local[*] (P1's last run) | {p4['local']['seconds']:.1f} s | {counts(p4['local'])} |",
        f"| standalone, 2 workers | {p4['cluster']['seconds']:.1f} s | "
        f"{counts(p4['cluster'])} |",
        "",
        "Identical verdicts: "
        + ("yes (same counts, and the same discrepancy rows: md5 over verdict, messageId, "
           "offsets, sink count)" if p4["identical"] else "NO"),
    ]  # fmt: skip


def counts(m: dict[str, Any]) -> str:
    counts = m.get("output", {}).get("counts", {})
    return ", ".join(f"{k} {v:,}" for k, v in counts.items() if v)


def p5(results: dict[str, Any]) -> list[str]:
    p5 = results.get("p5")
    if not p5:
        return ["(not run)"]
    how = (
        "A run of one pipeline's DAG on the project's Airflow (its scheduler and LocalExecutor: "
        "each task a process of its own, as a deployment runs it), triggered through the REST "
        "API"
        if p5.get("scheduled")
        else "`airflow dags test` of one pipeline's DAG"
    )
    return [
        f"{how} (`snapshot_offsets -> snapshot_topic -> reconcile -> validate -> alert`, the "
        f"Spark steps under spark-submit) over {p5['messages']:,} messages with the fault mix "
        f"above: **{p5_seconds(p5):.1f} s** from the snapshot to the alert{recorded(p5)}. The "
        f"contract (at-least-once) is broken by the lost messages, so the run ends "
        f"`{p5['status']}` and sent its alerts ({', '.join(p5['alerts'])}); the reconcile "
        f"step's own time {p5['reconcile_seconds']:.1f} s.",
        *(line for key, how in P5_VARIANTS for line in p5_variant(results.get(key), how)),
        *(P5_SCHEDULED if p5.get("scheduled") else P5_RECORDED if p5.get("dag_run_seconds")
          else ()),
    ]  # fmt: skip


#: What a P5 figure measures, when the runs were ``airflow dags test`` runs that kept Airflow's
#: record of them (2026-11-28).
P5_RECORDED = (
    "",
    "Each figure is the DAG run as Airflow's metadata database records it, from the run's "
    "creation to its last task's end: what the Airflow UI shows for a scheduled run. The "
    "`airflow dags test` command's wall time adds its own start and the DAG file's parse "
    "before the run is created, which a scheduler does once per file, not per run; tasks "
    "run in the command's process, which starts Airflow's execution API server at the "
    "first task (in `snapshot_offsets`' time), where a scheduler's worker starts a process "
    "per task instead.",
)

#: What a P5 figure measures, when the runs were triggered on the project's Airflow.
P5_SCHEDULED = (
    "",
    "Each figure is the DAG run as Airflow's metadata database records it, from its start to "
    "its last task's end: the duration the Airflow UI shows. Airflow was started for P5 with "
    "the environment each figure needs (`RECON_SPARK_REMOTE` empty for spark-submit, the "
    "server's address for Spark Connect) and warmed by one run of `recon_stack_check` (the "
    "first task after a start waits for the executor's worker process, which a scheduled "
    "pipeline's runs do not). Each task is a process that parses the DAG file and pays its "
    "own imports (pyspark, Great Expectations), and the scheduler hands each task on: "
    "both are in the figure, as they are in a deployment.",
)


def p5_seconds(run: dict[str, Any]) -> float:
    """A P5 run's figure: the DAG run Airflow recorded (``bench.latency.recorded_run``); runs
    measured before that was kept have only the ``dags test`` wall time."""
    return float(run.get("dag_run_seconds") or run["seconds"])


def recorded(run: dict[str, Any]) -> str:
    """Each task's time and the wall time the bench saw, when the run kept them."""
    tasks = run.get("tasks")
    if not tasks:
        return ""
    split = ", ".join(f"{task} {seconds:.1f} s" for task, seconds in tasks.items())
    wall = "trigger to end as the bench saw it" if run.get("scheduled") else (
        "`airflow dags test` wall time")  # fmt: skip
    return f" ({split}; {wall} {run['seconds']:.1f} s)"


#: The other DAG runs of P5: the results key, and how the run differs from the first.
P5_VARIANTS = (
    ("p5_connect", "with `RECON_SPARK_REMOTE` set: the Spark steps run in their task's process "
     "as clients of the bench's Spark Connect server, warmed by the runs before (no "
     "spark-submit, no JVM start)"),
    ("p5_local", "for `engine: local` (every step in its task's process, no JVM; target: at "
     "most 15 s)"),
)  # fmt: skip


def p5_variant(run: dict[str, Any] | None, how: str) -> list[str]:
    """One more P5 DAG run over the same data, run as ``how`` says."""
    if not run:
        return []
    return [
        "",
        f"The same DAG run {how}: **{p5_seconds(run):.1f} s**{recorded(run)}, ending "
        f"`{run['status']}` with its alerts ({', '.join(run['alerts'])}); the reconcile step's "
        f"own time {run['reconcile_seconds']:.1f} s.",
    ]
