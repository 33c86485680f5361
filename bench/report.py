"""``docs/benchmarks.md`` and ``docs/benchmarks.png`` from the raw results of one ``make bench``.

Every number in the doc comes from the results of the run that wrote it; the only fixed text is
the method and the engine history (``ENGINE_CHANGES``), whose "before" figures were measured by
this same command on the engine before each change.
"""

from __future__ import annotations

import os
import time
from typing import Any

from bench import figures, side_by_side, small_windows, summary

DOC = "docs/benchmarks.md"
PLOT = "docs/benchmarks.png"

#: What changed in the engine for speed, with the "before" figures (kept as text: the old engine
#: is not in the tree to be measured again).
ENGINE_CHANGES = os.path.join(os.path.dirname(__file__), "engine_changes.md")


def _plot(results: dict[str, Any], root: str) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results.get("p1", [])
    if not rows:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = [r["size"] / 1e6 for r in rows]
    for system, name in figures.SYSTEMS:
        seconds = [figures.median([x["seconds"] for x in figures.system_runs(r, system)])
                   for r in rows]  # fmt: skip
        left.plot(sizes, seconds, marker="o", label=name)
    left.set_xlabel("window (million messages)")
    left.set_ylabel("wall time, median (s)")
    left.set_title("P1: snapshot -> verdicts committed")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    p2 = figures.p2_runs(results, "product")
    if p2:
        width = 0.4
        right.bar([r["run"] - width / 2 for r in p2], [r["seconds"] for r in p2], width,
                  label="Spark engine")  # fmt: skip
        local = figures.p2_runs(results, "local")
        if local:
            right.bar([r["run"] + width / 2 for r in local], [r["seconds"] for r in local], width,
                      label="local engine")  # fmt: skip
        right.legend(fontsize=8)
        right.set_xlabel("run (1M new messages each)")
        right.set_ylabel("wall time (s)")
        right.set_title("P2: incremental runs")
        right.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path = os.path.join(root, PLOT)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _remeasured(results: dict[str, Any]) -> list[str]:
    """A line naming the figures measured again alone after the whole run (``--keep``)."""
    again = results.get("remeasured") or {}
    if not again:
        return []
    told = [
        f"{name} on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(info['at']))}"
        + (f" ({info['seconds'] / 60:.1f} minutes)" if "seconds" in info else "")
        for name, info in sorted(again.items())
    ]
    return [
        "",
        "Measured again alone afterwards (`bench.run --only ... --keep`), every other figure "
        "kept from the whole run: " + "; ".join(told) + ". A figure's comparisons are always "
        "between runs of one such measurement.",
    ]


P2_ATTACHED = (
    "The Spark engine's runs are clients of the bench's Spark Connect server (the one P1 and P5 "
    "attach to; the peak memory is the server's): what history adds to a run, without a JVM's "
    "start and first reads per run."
)


def write(results: dict[str, Any], root: str | None = None) -> str:
    root = root or os.environ.get("RECON_ROOT", ".")
    _plot(results, root)
    m = results["machine"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(results["started"]))
    p1 = results.get("p1", [])
    reps = ", ".join(f"{len(r['runs']['product'])} at {r['label']}" for r in p1)
    parts = [
        "# Benchmarks",
        "",
        f"Written by `make bench` on {when}: {m['cpus']} cores, {m['memory_gb']} GiB, "
        f"{m['system']}, Python {m['python']}. The whole command took "
        f"{results['seconds'] / 60:.1f} minutes. Same data, same machine, same run for every "
        f"system; times are medians of the repetitions ({reps}). The machine is a shared virtual "
        "machine whose speed varies from day to day (the same peers ran up to 1.4x slower on "
        "one day than another): compare systems within one run, not across runs.",
        *_remeasured(results),
        "",
        "![P1 wall time by window size, P2 time per incremental run](benchmarks.png)",
        "",
        "## Summary",
        "",
        *summary.summary_lines(results),
        "",
        *summary.gap_lines(results),
        "## Method",
        "",
        "- **Data** (`bench/generate.py`): a topic of 8 partitions of ~100-byte JSON messages "
        "(id in the JSON `id` field, also the key), written by one batching producer; the sink "
        "table, shaped as the workload's (`id bigserial` ingest sequence, `message_id`, position "
        "columns), filled with `COPY` as the consumer would have left it. The fault mix "
        "(deterministic in the sequence number) is below; the product and both peers must find "
        "exactly these counts or the bench stops.",
        "- **Product** (`bench/product.py`): `snapshot_offsets`, `snapshot_topic` and "
        "`reconcile_run` of `recon.run.steps`, as `recon run` calls them, in a fresh process each "
        "time (for the Spark engine the JVM start is included), from an empty pipeline state; "
        "stops when the verdicts, the ledger, the results file and the watermarks are committed "
        "(the Great Expectations step is in P5). Both engines run on the same data: the local "
        "engine (`engine: local`, `recon.engines.local_run`) and the Spark engine "
        "(`engine: spark`), the latter twice: in a JVM of its own, and attached to the project's "
        "Spark Connect server (`RECON_SPARK_REMOTE`, `scripts/spark-connect.sh`; started by the "
        "bench and warmed by one untimed run at the smallest size, as a user's server has run "
        "before; the server's memory counted with the run's).",
        "- **(a) hand-written Python** (`bench/peers.py`): confluent-kafka `consume(num_messages="
        "10000)`, `json.loads` per value, `Counter`s; the sink's ids by `COPY ... TO STDOUT`. "
        "The peers and the floor read with the same librdkafka fetch settings as the product's "
        "readers (`bench.peers.FETCH_SETTINGS`: with librdkafka's defaults a partition stops "
        "fetching for a second whenever 100,000 records wait locally). The product's readers "
        "also switch off Python's cyclic garbage collector while they consume; the peers, "
        "written as people write them, do not.",
        "- **(b) DuckDB** (`bench/peers.py`): the same consume, raw values into Arrow, "
        "`json_extract_string` and `GROUP BY`s in DuckDB; sink ids by `COPY` (CSV) into Arrow "
        "(DuckDB's postgres extension cannot be downloaded here).",
        "- **(c) hand-written PySpark** (`bench/peers.py`): the job a Spark user writes, in a "
        "JVM of its own (`local[*]`, the product's driver memory and jars, Spark's defaults "
        'otherwise): `spark.read.format("kafka")` with the window\'s offsets as '
        "`startingOffsets`/`endingOffsets` JSON, `spark.read.jdbc` of the sink's ids split by "
        "its `id` column, a group-by per side, one full outer join, counts. Like (a) and (b) "
        "it judges the window alone (no ledger, no positions, no aborted or pending records) "
        "and writes nothing.",
        "- **I/O floor** (`bench/floor.py`): a plain consume of the window (values touched, not "
        "parsed) plus a `COPY` of the sink's ids to a byte counter; the sum of the two.",
        "- **Memory**: peak proportional set size (PSS: pages shared between processes "
        "counted once) of the process tree, sampled every 100 ms: each process's PSS read "
        "when first seen and again when its resident set moved by 3% or 2 s passed, its "
        "resident set scaled by the last ratio between (reading PSS walks a process's page "
        "tables: 46 ms for the Spark Connect server, `bench.measure.PssSampler`); runs before "
        "2026-11-28 reported the resident set (RSS), which counts a forked process's shared "
        "pages again.",
        "",
        "### The data",
        "",
        *figures.verdicts(results),
        "",
        "## P1: throughput",
        "",
        *figures.p1(results),
        "",
        "Where the product's time goes (median of its runs):",
        "",
        *figures.product_steps(results),
        "",
        "## P2: incremental runs",
        "",
        "Runs of the same pipeline, 1M new messages (and their sink rows) before each; each "
        "run judges only its new window and sink rows against the ledger of all earlier runs. "
        "The last four alternate without and with a simulated history made the oldest part of "
        "its ledger: segments of 64M entries each (`bench/history.py`: written by the local "
        "store's own segment writer, sorted, with their membership filters; messageIds of 39 "
        "characters spread evenly over the key space, as a pipeline that ran for months leaves "
        "them).",
        *([P2_ATTACHED] if results.get("p2_spark_attached") else []),
        "",
        *figures.p2(results),
        "",
        "## P3: memory",
        "",
        *figures.p3(results),
        "",
        "## P4: scale-out",
        "",
        *figures.p4(results),
        "",
        "## P5: latency",
        "",
        *figures.p5(results),
        "",
        "## P6: the optional checks",
        "",
        *side_by_side.p6(results),
        "",
        "## P7: the third input (three-way runs)",
        "",
        *side_by_side.p7(results),
        "",
        "## P8: small scheduled windows over a large ledger",
        "",
        *small_windows.table(results),
        "",
        "## Engine changes for speed",
        "",
        _engine_changes(),
        "",
    ]
    path = os.path.join(root, DOC)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(parts))
    return path


def _engine_changes() -> str:
    with open(ENGINE_CHANGES, encoding="utf-8") as fh:
        return fh.read().strip()
