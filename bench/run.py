"""``make bench``: every figure in one run, on one machine, on the same data.

    python -m bench.run [--sizes 1000000,3000000,10000000] [--reps 3,3,1] [--only P1,P2,...]

P1 throughput (product, the two peers, the I/O floor; medians), P2 incremental runs, P3 memory
(from P1's product runs, and the local engine at three times P1's largest window), P4 a local
Spark standalone cluster, P5 a whole DAG run, P6 the optional checks, P7 the third input of a
three-way run (an outbox as the source; P6 and P7 share their runs without either), P8 small
scheduled windows over a large ledger (``bench.small_windows``). The raw
measurements go to ``.state/bench/results.json``, the tables and the plot to ``docs/``.
A peer whose verdict counts differ from the product's stops the bench: the comparison would be
meaningless.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from typing import Any

import yaml

from bench import disk, generate, history, progress, storage
from bench.checks import check_counts, same_verdicts
from bench.connect import Server
from bench.measure import Measured, run

INCREMENTAL_RUNS = 6
INCREMENTAL_SIZE = int(os.environ.get("RECON_BENCH_INC_SIZE", "1000000"))
#: P2's simulated history: this many top-level segments (``MERGE_MAX_ROWS`` entries each), and
#: how many pairs of runs without and with it.
HISTORY_SEGMENTS = int(os.environ.get("RECON_BENCH_HISTORY_SEGMENTS", "2"))
HISTORY_PAIRS = 2
LATENCY_SIZE = 100_000
#: P3's window beyond P1: this many times P1's largest.
SCALE_FACTOR = int(os.environ.get("RECON_BENCH_P3_FACTOR", "3"))


def _py(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


class Bench:
    def __init__(self, sizes: list[int], reps: list[int]) -> None:
        self.sizes = sizes
        self.reps = dict(zip(sizes, reps, strict=True))
        self.results: dict[str, Any] = {"machine": _machine(), "started": time.time()}
        self.pipelines_file = os.path.join(generate.state_dir(), "pipelines.yaml")
        self.pipelines: dict[str, Any] = {}
        self.local_reference: tuple[str, str, Measured]
        #: The Spark Connect server the ``connect`` runs attach to (P1, P5), once started.
        self.connect: Server | None = None
        #: Whether a run has attached to it yet (its first run pays the JIT a fresh JVM pays).
        self.connect_warm = False

    def declare(self, name: str, ds: generate.Dataset, engine: str = "spark", *,
                checks: bool = False, source: str | None = None) -> str:  # fmt: skip
        """Declare ``name`` (``generate.pipeline_yaml`` says what ``checks`` and ``source`` add)
        into the bench's pipelines file; returns the name."""
        self.pipelines[name] = generate.pipeline_yaml(ds, engine=engine, checks=checks,
                                                      source=source)  # fmt: skip
        self.declare_all()
        return name

    def declare_all(self) -> None:
        with open(self.pipelines_file, "w", encoding="utf-8") as fh:
            yaml.safe_dump({"pipelines": self.pipelines}, fh)

    def product(self, pipeline: str, run_id: str, fresh: bool, env: dict[str, str] | None = None,
                watch: tuple[int, ...] = (), spill: str | None = None) -> Measured:  # fmt: skip
        cmd = _py("bench.product", "--pipelines", self.pipelines_file, "--pipeline", pipeline,
                  "--run-id", run_id)  # fmt: skip
        return run([*cmd, "--fresh"] if fresh else cmd, env=env, watch=watch, spill=spill)

    # --- P1 + P3 --------------------------------------------------------------------------------
    def throughput(self) -> None:
        rows = []
        for size in self.sizes:
            label = generate.label(size)
            ds = generate.ensure(f"p1-{label.lower()}", size)
            pipeline = self.declare(f"bench_p1_{label.lower()}", ds)
            local = self.declare(f"bench_p1_{label.lower()}_local", ds, engine="local")
            attached = self.declare(f"bench_p1_{label.lower()}_connect", ds)
            if self.connect is not None and size == self.sizes[0]:
                progress(f"P1: warming the Spark Connect server with one untimed {label} run")
                self.product(attached, "p1-warm-up", fresh=True, env=self.connect.env)
                self.connect_warm = True
            runs: dict[str, list[Measured]] = {}
            for rep in range(self.reps[size]):
                tag = f"{label} run {rep + 1}/{self.reps[size]}"
                measured = {
                    "floor_kafka": run(_py("bench.floor", "kafka", "--dataset", ds.name)),
                    "floor_copy": run(_py("bench.floor", "copy", "--dataset", ds.name)),
                    "python": run(_py("bench.peers", "python", "--dataset", ds.name)),
                    "duckdb": run(_py("bench.peers", "duckdb", "--dataset", ds.name)),
                    "spark": run(_py("bench.peers", "spark", "--dataset", ds.name)),
                    "local": self.product(local, f"p1-{label}-{rep}", fresh=True),
                    "product": self.product(pipeline, f"p1-{label}-{rep}", fresh=True),
                }
                if self.connect is not None:
                    measured["connect"] = self.product(
                        attached, f"p1-{label}-{rep}", fresh=True, env=self.connect.env,
                        watch=(self.connect.pid,),
                    )  # fmt: skip
                if size == self.sizes[0]:  # P4 compares its cluster run with this one
                    self.local_reference = (pipeline, f"p1-{label}-{rep}", measured["product"])
                check_counts(label, ds.expected, measured)
                for k, m in measured.items():
                    runs.setdefault(k, []).append(m)
                progress(f"P1 {tag}: " + "  ".join(f"{k} {m.seconds:.1f}s"
                                                     for k, m in measured.items()))  # fmt: skip
            rows.append({"size": size, "label": label, "expected": ds.expected,
                         "runs": {k: [asdict(m) for m in v] for k, v in runs.items()}})  # fmt: skip
        self.results["p1"] = rows

    # --- P2 -------------------------------------------------------------------------------------
    def incremental(self) -> None:
        """Both engines, each with its own pipeline state over the same topic and table."""
        ds = generate.reset("p2-inc")
        pipelines = {"product": self.declare("bench_p2_inc", ds),
                     "local": self.declare("bench_p2_inc_local", ds, engine="local")}  # fmt: skip
        runs = []
        for k in range(INCREMENTAL_RUNS):
            expected = generate.append_chunk(ds, INCREMENTAL_SIZE)
            row: dict[str, Any] = {"run": k + 1, "history": k * INCREMENTAL_SIZE}
            for engine, pipeline in pipelines.items():
                m = self.p2_run(engine, pipeline, f"p2-{k}", fresh=(k == 0))
                counts = m.output.get("counts", {})
                wrong = {v: (counts.get(v), n) for v, n in expected.items() if counts.get(v) != n}
                if wrong:
                    raise SystemExit(f"P2 run {k + 1} ({engine}): counts differ from the data: "
                                     f"{wrong}")  # fmt: skip
                row[engine] = {**asdict(m), "ledger_bytes": storage.ledger_bytes(pipeline)}
            runs.append(row)
            progress(f"P2 run {k + 1}/{INCREMENTAL_RUNS}: Spark {row['product']['seconds']:.1f} s, "
                     f"local {row['local']['seconds']:.1f} s "
                     f"(history {k * INCREMENTAL_SIZE:,} messages)")  # fmt: skip
        runs.extend(self.simulated_history(ds, pipelines))
        self.results["p2"] = runs
        self.results["p2_spark_attached"] = self.connect is not None

    def p2_run(self, engine: str, pipeline: str, run_id: str, fresh: bool) -> Measured:
        """One P2 run; the Spark engine's attached to the warm Spark Connect server when there is
        one: P2 measures what history adds to a run, which a JVM started per run (its start and
        its first reads, 20-25 s at 1M, scattering by 5 s) only blurs and lengthens."""
        if engine == "product" and self.connect is not None:
            self.connect_warm = True
            return self.product(pipeline, run_id, fresh=fresh, env=self.connect.env,
                                watch=(self.connect.pid,))  # fmt: skip
        return self.product(pipeline, run_id, fresh=fresh)

    def simulated_history(self, ds: generate.Dataset, pipelines: dict[str, str]) -> list[dict]:
        """Runs with and without :data:`HISTORY_SEGMENTS` segments of simulated history
        (``bench.history``) as the oldest part of each pipeline's ledger, alternating
        (without, with, without, with): each pair differs by the simulated history and one
        run's entries, so the machine's drift and the hot entries' count (which grows until a
        compaction) cancel out."""
        from recon.ledger.versions import MERGE_MAX_ROWS

        directory = os.path.join(generate.state_dir(), "history")
        segments = history.simulate(directory, HISTORY_SEGMENTS, MERGE_MAX_ROWS)
        simulated = HISTORY_SEGMENTS * MERGE_MAX_ROWS
        rows: list[dict[str, Any]] = []
        for k in range(2 * HISTORY_PAIRS):
            with_history = k % 2 == 1
            expected = generate.append_chunk(ds, INCREMENTAL_SIZE)
            real = (INCREMENTAL_RUNS + k) * INCREMENTAL_SIZE
            row: dict[str, Any] = {"run": INCREMENTAL_RUNS + k + 1, "pair": k // 2,
                                   "history": real + (simulated if with_history else 0),
                                   "simulated": simulated if with_history else 0}  # fmt: skip
            for engine, pipeline in pipelines.items():
                history.set_history(pipeline, segments if with_history else [], directory)
                m = self.p2_run(engine, pipeline, f"p2-history-{k}", fresh=False)
                counts = m.output.get("counts", {})
                if any(counts.get(v) != n for v, n in expected.items()):
                    raise SystemExit(f"P2 run {row['run']} ({engine}): counts differ: {counts}")
                row[engine] = {**asdict(m), "ledger_bytes": storage.ledger_bytes(pipeline)}
            rows.append(row)
            what = f"{simulated:,} simulated" if with_history else "no simulated"
            spark, local = row["product"]["seconds"], row["local"]["seconds"]
            progress(f"P2 run {row['run']} ({what} history): Spark {spark:.1f} s, "
                     f"local {local:.1f} s")  # fmt: skip
        return rows

    # --- P3 beyond P1 --------------------------------------------------------------------------
    def memory_at_scale(self) -> None:
        """Each engine's memory at :data:`SCALE_FACTOR` times the largest P1 window, one run
        each (P3 at the P1 sizes comes from P1's runs): the local engine, whose DuckDB judges
        past its memory limit and spills, and the Spark engine in a JVM of its own, whose driver
        stays within its heap setting however large the window (about 3.5 minutes at 30M)."""
        from recon import settings
        from recon.run.paths import spill_dir

        size = SCALE_FACTOR * self.sizes[-1]
        label = generate.label(size)
        ds = generate.ensure(f"p3-{label.lower()}", size)
        local = self.declare(f"bench_p3_{label.lower()}_local", ds, engine="local")
        m = self.product(local, f"p3-{label}", fresh=True,
                         spill=spill_dir(settings.data_dir()))  # fmt: skip
        progress(f"P3 {label}, local engine: {m.seconds:.1f} s, peak {m.peak_rss_mb:,.0f} MB, "
                 f"spilled at most {m.peak_spill_mb:,.0f} MB")  # fmt: skip
        spark = self.product(self.declare(f"bench_p3_{label.lower()}", ds), f"p3-{label}", True)
        check_counts(label, ds.expected, {"local": m, "product": spark})
        progress(f"P3 {label}, Spark engine: {spark.seconds:.1f} s, driver JVM "
                 f"{spark.peak_jvm_mb:,.0f} MB")  # fmt: skip
        # Keyed as P1's runs are (``figures.ENGINES``): "product" is the Spark engine's own JVM.
        self.results["p3"] = {"size": size, "label": label, "local": asdict(m),
                              "product": asdict(spark)}  # fmt: skip

    # --- P4 -------------------------------------------------------------------------------------
    def scale_out(self) -> None:
        """The smallest P1 window again, on a standalone cluster; compared with P1's last local
        run of the same data (no second local run: the budget is better spent on medians)."""
        from bench import cluster

        size = self.sizes[0]
        label = generate.label(size)
        ds = generate.ensure(f"p1-{label.lower()}", size)
        local, local_run, m_local = self.local_reference
        remote = self.declare(f"bench_p4_cluster_{label.lower()}", ds)
        with cluster.standalone(workers=2) as c:
            progress(f"P4: Spark master {c.master_url}, 2 workers")
            m_cluster = self.product(
                remote, "p4-cluster", fresh=True, env={"RECON_SPARK_MASTER": c.master_url},
                watch=tuple(c.worker_pids),
            )  # fmt: skip
        same = same_verdicts(local, local_run, remote, "p4-cluster")
        if not same or m_local.output.get("counts") != m_cluster.output.get("counts"):
            raise SystemExit("P4: the cluster's verdicts differ from local mode's")
        progress(f"P4: local {m_local.seconds:.1f} s, cluster {m_cluster.seconds:.1f} s, "
                 "identical verdicts")  # fmt: skip
        self.results["p4"] = {"size": size, "label": label, "local": asdict(m_local),
                              "cluster": asdict(m_cluster), "identical": same}  # fmt: skip

    # --- P5 -------------------------------------------------------------------------------------
    def latency(self) -> None:
        from bench import latency
        from bench.scheduled import project_airflow

        ds = generate.ensure("p5-100k", LATENCY_SIZE)
        # The bench's own environment: the Spark steps under spark-submit (RECON_SPARK_REMOTE
        # empty); the local engine needs no Spark at all.
        with project_airflow() as airflow:
            self.results["p5"] = latency.dag_run(airflow, ds)
            progress(f"P5: whole DAG run {self.results['p5']['seconds']:.1f} s")
            self.results["p5_local"] = latency.dag_run(airflow, ds, engine="local")
            progress(f"P5, engine local: whole DAG run "
                     f"{self.results['p5_local']['seconds']:.1f} s")  # fmt: skip
        if self.connect is not None:
            # The same DAG run with its Spark steps as clients of the warm server (P1 and P2 ran
            # on it, or one untimed DAG run).
            with project_airflow(self.connect.env) as airflow:
                if not self.connect_warm:
                    # Re-measured alone (--only P5): the server is as cold as a JVM per step
                    # (66.6 s cold against 32.4 s warm); a user's server has run before.
                    progress("P5: warming the Spark Connect server with one untimed DAG run")
                    latency.dag_run(airflow, ds)
                    self.connect_warm = True
                self.results["p5_connect"] = latency.dag_run(airflow, ds)
            progress(f"P5 on Spark Connect: whole DAG run "
                     f"{self.results['p5_connect']['seconds']:.1f} s")  # fmt: skip


def planned_needs(sizes: list[int], only: set[str]) -> disk.Needs:
    """What the figures in ``only`` will write that is not there yet: the datasets they generate
    (one a reused dataset lacks), P7's outbox and P2's simulated history."""
    needs = disk.Needs()
    p1 = sizes if only & {"P1", "P4"} else sizes[-1:] if only & {"P6", "P7"} else []
    for size in p1:
        _unless_there(needs, f"p1-{generate.label(size).lower()}", size)
    if "P7" in only:
        needs.outbox(sizes[-1], "P7")
    if "P2" in only:
        needs.messages((INCREMENTAL_RUNS + 2 * HISTORY_PAIRS) * INCREMENTAL_SIZE, "P2")
        from recon.ledger.versions import MERGE_MAX_ROWS

        directory = os.path.join(generate.state_dir(), "history")
        missing = history.missing_entries(directory, HISTORY_SEGMENTS, MERGE_MAX_ROWS)
        needs.ledger(missing, directory, "P2's simulated history")
    if "P3" in only:
        size = SCALE_FACTOR * sizes[-1]
        _unless_there(needs, f"p3-{generate.label(size).lower()}", size)
    if "P5" in only:
        _unless_there(needs, "p5-100k", LATENCY_SIZE)
    if "P8" in only:
        from bench import small_windows

        grown = small_windows.REPS * sum(small_windows.WINDOWS)
        needs.messages(small_windows.LEDGER + grown, "P8")
    return needs


def _unless_there(needs: disk.Needs, name: str, size: int) -> None:
    ds = generate.load(name)
    if ds is None or ds.chunks != [size]:
        needs.messages(size, f"data {name}")


def _machine() -> dict[str, Any]:
    import platform

    import psutil

    from recon import settings

    return {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30),
            "python": platform.python_version(), "system": platform.platform(),
            "local_memory_limit": settings.local_memory_limit()}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.run", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default=os.environ.get("RECON_BENCH_SIZES", "1000000,3000000,10000000")
    )
    # 3 runs at 1M, one at 3M and 10M: what fits the 40-minute budget on two cores.
    parser.add_argument("--reps", default=os.environ.get("RECON_BENCH_REPS", "3,1,1"))
    parser.add_argument(
        "--only", default=os.environ.get("RECON_BENCH_ONLY", "P1,P2,P3,P4,P5,P6,P7,P8")
    )
    # Re-measure the --only figures and keep every other one from the last run's results.json;
    # the report names what was re-measured, when, and how long it took.
    parser.add_argument("--keep", action="store_true",
                        default=os.environ.get("RECON_BENCH_KEEP") == "1")  # fmt: skip
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    reps = [int(r) for r in args.reps.split(",")][: len(sizes)]
    bench = Bench(sizes, reps)
    doc = ""
    only = set(args.only.upper().split(","))
    started = time.monotonic()
    from bench import connect, report, side_by_side, small_windows

    # P4 needs P1 (its local reference run); P1 runs first. P6 and P7 share their plain runs.
    steps = (
        (("P1",), bench.throughput), (("P4",), bench.scale_out), (("P2",), bench.incremental),
        (("P5",), bench.latency),
        (("P6", "P7"), lambda: side_by_side.measure(bench, only & {"P6", "P7"})),
        (("P3",), bench.memory_at_scale), (("P8",), lambda: small_windows.measure(bench)),
    )  # fmt: skip
    if "P4" in only:
        only.add("P1")
    kept = _load() if args.keep else None
    if kept is not None:
        again = {name: {"at": time.time()} for names, _ in steps for name in names if name in only}
        bench.results = {**kept, "remeasured": {**kept.get("remeasured", {}), **again}}

    disk.require(planned_needs(sizes, only))
    with contextlib.ExitStack() as stack:
        if only & {"P1", "P2", "P5", "P8"}:
            bench.connect = stack.enter_context(connect.server())
        for names, step in steps:
            measured = [name for name in names if name in only]
            if measured:
                progress(f"{' and '.join(measured)}: starting")
                step_started = time.monotonic()
                step()
                # The doc is rewritten after every figure: an interrupted bench still shows its
                # figures so far (the header says how long it ran).
                took = round(time.monotonic() - started, 1)
                if kept is None:
                    bench.results["seconds"] = took
                for name in measured if kept is not None else ():  # this figure's own time
                    bench.results["remeasured"][name]["seconds"] = round(
                        time.monotonic() - step_started, 1
                    )
                _save(bench.results)
                doc = report.write(bench.results)
    progress(f"done in {(time.monotonic() - started) / 60:.1f} min: {doc}")
    return 0


def _load() -> dict[str, Any]:
    path = os.path.join(generate.state_dir(), "results.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return dict(json.load(fh))
    except FileNotFoundError:
        raise SystemExit(
            f"--keep: no earlier results at {path}: run the whole bench first"
        ) from None


def _save(results: dict[str, Any]) -> None:
    with open(os.path.join(generate.state_dir(), "results.json"), "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1)


def median(values: list[float]) -> float:
    return float(statistics.median(values))


if __name__ == "__main__":
    sys.exit(main())
