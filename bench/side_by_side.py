"""P6 and P7: what an optional input costs, per engine, against the same run without it.

P6 declares the optional checks (latency and payload), P7 a third input (an outbox as the
pipeline's ``source``). Both compare with the same plain run of the largest P1 dataset, so the
plain run is measured once per engine and the three runs of an engine follow each other: plain,
with the checks, with the source (the machine's drift is what separates them, and it is smallest
between neighbours). :func:`measure` runs them; :func:`p6` and :func:`p7` are their tables.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Protocol

from bench import generate, progress
from bench.measure import Measured


class Bench(Protocol):
    """What P6 and P7 use of the bench (``bench.run.Bench``): its sizes, its results, declaring
    a pipeline and running the product (a protocol: ``bench.run`` imports this module)."""

    sizes: list[int]
    results: dict[str, Any]

    def declare(self, name: str, ds: generate.Dataset, engine: str = "spark", *,
                checks: bool = False, source: str | None = None) -> str: ...  # fmt: skip

    def product(self, pipeline: str, run_id: str, fresh: bool, env: dict[str, str] | None = None,
                watch: tuple[int, ...] = (), spill: str | None = None) -> Measured: ...  # fmt: skip


#: Each optional input: the suffix of its runs' keys, and what ``generate.pipeline_yaml`` is told.
VARIANTS = {"checks": "_checks", "source": "_source"}


def measure(bench: Bench, figures: set[str]) -> None:
    """Run ``figures`` (``P6``, ``P7`` or both) at the largest size into ``bench.results``.

    :raises SystemExit: an optional input changed the verdicts (only its cost may differ).
    """
    size = bench.sizes[-1]
    label = generate.label(size)
    ds = generate.ensure(f"p1-{label.lower()}", size)
    variants = [v for v, f in (("checks", "P6"), ("source", "P7")) if f in figures]
    outbox = generate.make_outbox(ds) if "source" in variants else None
    # Making the data or the outbox (a sort of 10M ids, a table, two indexes) pushes the
    # topic's and the sink's pages out of the page cache: the first run after it reads them from
    # disk (P7 2026-11-27, settled and synced: the two-way local run's read step 21.4 s, the
    # three-way run's after it 17.5 s; 14-18 s warm). One unmeasured run reads them back.
    warm_up = bench.declare(f"bench_p67_{label.lower()}_warm_up", ds, "local")
    warmed = bench.product(warm_up, "p67-warm", fresh=True)
    progress(f"P6/P7 {label}: warm-up run (unmeasured) {warmed.seconds:.1f}s")
    runs: dict[str, Measured] = {}
    for engine in ("local", "spark"):
        for variant in ("", *variants):
            key = engine + (VARIANTS[variant] if variant else "")
            pipeline = bench.declare(
                f"bench_p67_{label.lower()}_{key}", ds, engine, checks=variant == "checks",
                source=outbox if variant == "source" else None,
            )  # fmt: skip
            runs[key] = bench.product(pipeline, f"p67-{label}", fresh=True)
            progress(f"P6/P7 {label} {key}: {runs[key].seconds:.1f}s")
        plain = runs[engine].output.get("counts")
        for variant in variants:
            other = runs[engine + VARIANTS[variant]].output
            # Nothing is late, mismatched or unpublished in the data: only the cost may differ.
            if other.get("counts") != plain or (variant == "source" and not other.get("funnel")):
                raise SystemExit(f"P6/P7 {engine}: the verdicts differ with {variant} declared")
    for variant, figure in (("checks", "p6"), ("source", "p7")):
        if variant in variants:
            keys = [k for e in ("local", "spark") for k in (e, e + VARIANTS[variant])]
            bench.results[figure] = {"size": size, "label": label,
                                     "runs": {k: asdict(runs[k]) for k in keys}}  # fmt: skip


def product_seconds(run: dict[str, Any]) -> float:
    """A run's time from its first step to its commit, as ``bench.product`` measures it: not
    the process's whole life, whose ``--fresh`` clean-up of the pipeline's earlier state costs
    what that state was (P7, 2026-11-27: 13 s before one run, under a second before the next)."""
    return float(run.get("output", {}).get("seconds") or run["seconds"])


def table(
    figure: dict[str, Any] | None, intro: str, columns: tuple[str, str], suffix: str
) -> list[str]:
    """A figure that runs each engine without and with one thing declared: a table of both
    product times (:func:`product_seconds`) and their ratio.

    :param intro: the sentence before the table (``{size}`` is the dataset's size).
    :param columns: the two time columns' headings.
    :param suffix: the second run's key is the engine's plus this.
    """
    if not figure:
        return ["(not run)"]
    runs = figure["runs"]
    lines = [
        intro.format(size=f"{figure['size']:,}"),
        "",
        f"| engine | {columns[0]} | {columns[1]} | ratio |",
        "|---|---|---|---|",
    ]
    for key, name in (("local", "local engine"), ("spark", "Spark engine")):
        first, second = product_seconds(runs[key]), product_seconds(runs[f"{key}{suffix}"])
        lines.append(f"| {name} | {first:.1f} s | {second:.1f} s | {second / first:.2f}x |")
    return lines


_SHARED = (
    "one run each, after one unmeasured run that reads the topic and the sink back into the "
    "page cache; per engine the run without it (shared by P6 and P7), with the checks and with "
    "the source follow each other, each timed from its first step to its commit"
)


def p6(results: dict[str, Any]) -> list[str]:
    return table(
        results.get("p6"),
        "The same {size}-message dataset, run by each engine as declared in P1 and with "
        "`latency` (from `written_at`) and `payload` (`seq` and `payload`) declared, "
        + _SHARED
        + " (target: at most 1.25x):",
        ("without", "with the checks"),
        VARIANTS["checks"],
    )


def p7(results: dict[str, Any]) -> list[str]:
    return table(
        results.get("p7"),
        "The same {size}-message dataset, run by each engine as declared in P1 and with an "
        "outbox holding every message the sink holds declared as its `source` (made from the "
        "sink: nothing is unpublished, so only the third input's cost differs; keyed by its "
        "messageId, as an outbox is, so the run takes the catalog's word that no id is named "
        "twice), " + _SHARED + " (target: at most 1.3x):",
        ("two-way", "three-way"),
        VARIANTS["source"],
    )
