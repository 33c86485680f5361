"""P8: the scheduled pipeline's common case, a small window over a large ledger (issues 75, 78).

One dataset of :data:`LEDGER` messages (10M in ``make bench``; ``RECON_BENCH_P8_LEDGER`` makes
it smaller when the bench is run in a hurry) is judged once by every pipeline below (not
measured: it builds the ledger and the sink's position). Then, :data:`REPS` times over, windows
of :data:`WINDOWS` new messages (and their sink rows, the P1 fault mix) are appended and every
pipeline runs once over each, back to back:

- three ways of running: ``engine: local``, the Spark engine attached to the bench's warm Spark
  Connect server, and the Spark engine in a JVM of its own (its start in the time);
- two sinks over the same table: read by its ingest sequence (``ingest_seq_column: id``), and
  read without one (``sink.incremental: xmin``: the rows whose writing transaction is newer
  than the previous run's snapshot; ``recon.snapshot.sink_changes``).

Each run is timed from its first step to its commit (``bench.product``; the process's start
and imports are not in it); its verdict counts must be the window's planted faults.
Targets: at 10k, local at most 1.5 s, Connect at most 4 s, own JVM at most 10 s; without a
sequence within 10% of with one.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import asdict
from typing import Any, Protocol

from bench import generate, progress
from bench.measure import Measured

LEDGER = int(os.environ.get("RECON_BENCH_P8_LEDGER", "10000000"))
WINDOWS = (0, 10_000, 100_000)
REPS = int(os.environ.get("RECON_BENCH_P8_REPS", "2"))
#: Each way of running: its key, what the report calls it, its engine, its target at 10k.
MODES = (
    ("local", "local engine", "local", 1.5),
    ("connect", "Spark engine on Spark Connect", "spark", 4.0),
    ("own", "Spark engine, own JVM", "spark", 10.0),
)
SINKS = (("seq", "ingest sequence"), ("xmin", "no sequence (xmin)"))
VERDICTS = ("delivered", "lost", "duplicated", "phantom", "topic_duplicate", "invalid")


class Bench(Protocol):
    """What P8 uses of the bench (``bench.run.Bench``; a protocol: ``bench.run`` imports this
    module)."""

    results: dict[str, Any]
    pipelines: dict[str, Any]
    connect: Any

    def declare_all(self) -> None: ...

    def product(self, pipeline: str, run_id: str, fresh: bool, env: dict[str, str] | None = None,
                watch: tuple[int, ...] = (), spill: str | None = None) -> Measured: ...  # fmt: skip


def _declare(bench: Bench, ds: generate.Dataset, mode: str, engine: str, sink: str) -> str:
    name = f"bench_p8_{mode}_{sink}"
    declared = generate.pipeline_yaml(ds, engine=engine)
    if sink == "xmin":
        del declared["sink"]["ingest_seq_column"]
        declared["sink"]["incremental"] = "xmin"
    bench.pipelines[name] = declared
    return name


def measure(bench: Bench, ledger: int = LEDGER) -> None:
    """Every run of P8 into ``bench.results["p8"]``.

    :raises SystemExit: a run's counts differ from its window's planted faults.
    """
    modes = [m for m in MODES if m[0] != "connect" or bench.connect is not None]
    ds = generate.reset(f"p8-{generate.label(ledger).lower()}")
    generate.append_chunk(ds, ledger)
    names = {(mode, sink): _declare(bench, ds, mode, engine, sink)
             for mode, _, engine, _ in modes for sink, _ in SINKS}  # fmt: skip
    bench.declare_all()
    runs: list[dict[str, Any]] = []
    first: dict[str, float] = {}
    for (mode, sink), name in names.items():
        m = _run(bench, mode, name, "p8-ledger", fresh=True)
        _check(name, ds.expected, m)
        first[f"{mode}_{sink}"] = m.seconds
        progress(f"P8 ledger of {ledger:,} for {mode}/{sink}: {m.seconds:.1f} s (not measured)")
    for rep in range(REPS):
        for window in WINDOWS:
            expected = generate.append_chunk(ds, window) if window else {}
            for (mode, sink), name in names.items():
                m = _run(bench, mode, name, f"p8-{rep}-{window}", fresh=False)
                _check(name, expected, m)
                runs.append({"rep": rep, "window": window, "mode": mode, "sink": sink,
                             **asdict(m)})  # fmt: skip
                progress(f"P8 {generate.label(window) if window else '0'} {mode}/{sink}: "
                         f"{seconds(runs[-1]):.2f} s")  # fmt: skip
    bench.results["p8"] = {"ledger": ledger, "reps": REPS, "first": first, "runs": runs}


def _run(bench: Bench, mode: str, name: str, run_id: str, fresh: bool) -> Measured:
    if mode == "connect":
        return bench.product(name, run_id, fresh=fresh, env=bench.connect.env,
                             watch=(bench.connect.pid,))  # fmt: skip
    return bench.product(name, run_id, fresh=fresh)


def _check(name: str, expected: dict[str, int], m: Measured) -> None:
    counts = m.output.get("counts", {})
    got = {v: counts.get(v, 0) for v in VERDICTS}
    want = {v: expected.get(v, 0) for v in VERDICTS}
    if got != want:
        raise SystemExit(f"P8 {name}: counts {got} differ from the window's planted {want}")


def seconds(run: dict[str, Any]) -> float:
    """A run's time from its first step to its commit (``bench.product``)."""
    return float(run.get("output", {}).get("seconds") or run["seconds"])


def _median(runs: list[dict[str, Any]], **where: Any) -> float | None:
    picked = [seconds(r) for r in runs if all(r[k] == v for k, v in where.items())]
    return float(statistics.median(picked)) if picked else None


def table(results: dict[str, Any]) -> list[str]:
    """P8's table: per way of running and window, the median time with and without a sequence,
    their ratio, and the target."""
    p8 = results.get("p8")
    if not p8:
        return ["(not run)"]
    runs = p8["runs"]
    lines = [
        f"A ledger of {p8['ledger']:,} messages (one run of each pipeline over them, not "
        "measured), then windows of 0, 10,000 and 100,000 new messages (the P1 fault mix), "
        f"{p8['reps']} times over; every pipeline runs once per window, back to back; each run "
        "timed from its first step to its commit (medians). The same table is read by its "
        "ingest sequence (`ingest_seq_column: id`) and without one (`sink.incremental: xmin`). "
        "Targets at 10k: local at most 1.5 s, Spark Connect at most 4 s, own JVM at most 10 s; "
        "without a sequence within 10% of with one.",
        "",
        "| engine | new messages | with a sequence | without (xmin) | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for mode, name, _, target in MODES:
        for window in WINDOWS:
            seq = _median(runs, mode=mode, sink="seq", window=window)
            xmin = _median(runs, mode=mode, sink="xmin", window=window)
            if seq is None or xmin is None:
                continue
            goal = f"{target:g} s" if window == 10_000 else ""
            lines.append(f"| {name} | {window:,} | {seq:.2f} s | {xmin:.2f} s | "
                         f"{xmin / seq:.2f}x | {goal} |")  # fmt: skip
    return lines


def summary(results: dict[str, Any]) -> list[str]:
    """The summary's line: the 10k figures against their targets."""
    p8 = results.get("p8")
    if not p8:
        return []
    parts = []
    for mode, name, _, target in MODES:
        seq = _median(p8["runs"], mode=mode, sink="seq", window=10_000)
        xmin = _median(p8["runs"], mode=mode, sink="xmin", window=10_000)
        if seq is None or xmin is None:
            continue
        met = "met" if max(seq, xmin) <= target and xmin <= 1.1 * seq else "**not met**"
        parts.append(f"{name} {seq:.2f} s with a sequence, {xmin:.2f} s without "
                     f"(target {target:g} s, within 10%: {met})")  # fmt: skip
    return [f"- **P8, 10k new messages over a ledger of {p8['ledger']:,}**: " + "; ".join(parts)
            + "."]  # fmt: skip
