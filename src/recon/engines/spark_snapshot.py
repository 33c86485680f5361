"""Step 2 of a run on Spark (``recon.run.steps`` says what each step does): the window's parts
read into Parquet with Spark tasks (``recon.read.kafka_spark.read_window``), or by the driver
(:func:`window_on_driver`: a small window, or any window of a Spark on this machine), while
threads of the driver copy the run's sink rows and a declared source's rows out of PostgreSQL
(``recon.read.sink_copy``, ``recon.read.source_copy``) where the data directory is on the
driver's disk. Step 3 reads them all (``recon.engines.spark_run``).
"""

from __future__ import annotations

import os
import shutil
import uuid
from typing import TYPE_CHECKING

from recon.engines.copies import row_copies
from recon.engines.plan import PlannedRun
from recon.ledger.versions import local_path
from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS, collect, offsets_in, read_ranges
from recon.read.kafka_spark import read_window, reraise_read_failure
from recon.read.message_ids import write_empty_part
from recon.read.ranges import OffsetRange, part_ranges, window_ranges
from recon.read.row_copies import RowCopies
from recon.run.paths import is_local, remove_tree, window_path
from recon.run.services import Progress, noop

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The parts step 2 reads (``recon.read.ranges.part_ranges`` says which offsets each holds).
PARTS = ("committed", "pending", "inflight")


def read_records(
    spark: SparkSession,
    plan: PlannedRun,
    ranges: list[OffsetRange],
    isolation_level: str = "read_committed",
) -> DataFrame:
    """The records of ``ranges`` of the run's topic, read by Spark's tasks, as the rules read a
    window part."""
    cfg = plan.cfg
    return read_window(
        spark, plan.kafka, ranges, cfg.kafka.message_id,
        isolation_level=isolation_level, with_time=cfg.sink.time_column is not None,
        payload=cfg.payload, order=cfg.order,
        expect=cfg.expect.fields() if cfg.expect is not None else (),
    )  # fmt: skip


def snapshot_topic(
    plan: PlannedRun, *, spark: SparkSession | None, progress: Progress = noop
) -> dict[str, str]:
    """Read the run's window parts into Parquet (``recon.run.steps.snapshot_topic`` records a
    failure on the run): with Spark tasks, or on the driver (:func:`window_on_driver`).

    :param spark: the session; None only for a window read on the driver.
    :returns: the Parquet paths by part (``committed``, ``pending``).
    """
    cfg, run_id, data_dir = plan.cfg, plan.run_id, plan.data_dir
    on_driver = window_on_driver(plan)
    if spark is None and not on_driver:
        raise ValueError(f"pipeline '{cfg.name}': Spark's tasks read this window: no session")
    # Elsewhere than on the driver's disk, step 3 reads the sink and source rows over JDBC.
    copies = row_copies(
        plan, sink_copy_dir(data_dir, cfg.name, run_id), source_copy_dir(data_dir, cfg.name, run_id)
    ) if is_local(data_dir) else RowCopies({})  # fmt: skip
    copies.start()
    paths = {}
    try:
        for part in PARTS:
            path = window_path(data_dir, cfg.name, run_id, part)
            ranges = part_ranges(plan.windows, part)
            isolation = "read_uncommitted" if part == "inflight" else "read_committed"
            if is_local(path) and all(r.end <= r.start for r in ranges):
                # Nearly always the inflight part, often the pending one: a file of no rows
                # written here costs no Spark job (step 3 plans such a part as empty); marked
                # complete as Spark's writer marks the other parts.
                write_empty_part(local_path(path))
                open(os.path.join(local_path(path), "_SUCCESS"), "w").close()
            elif on_driver:
                _read_on_driver(plan, ranges, isolation, local_path(path))
            else:
                assert spark is not None
                records = read_records(spark, plan, ranges, isolation)
                try:
                    records.write.mode("overwrite").parquet(path)
                except Exception as exc:
                    reraise_read_failure(exc)
                    raise
            paths[part] = path
        if cfg.diverted is not None:
            _dead_letters(plan, spark, window_path(data_dir, cfg.name, run_id, "dead_letters"))
    except BaseException:
        copies.join()  # the window's failure is the one reported
        raise
    copied = copies.wait()
    beside = [f"{copied[what]} {what} rows" for what in ("sink", "source") if what in copied]
    how = " (read by the driver)" if on_driver else ""
    also = f" ({' and '.join(beside)} beside it)" if beside else ""
    progress(f"run {run_id}: window written to {paths['committed']}{how}{also}")
    return paths


def _dead_letters(plan: PlannedRun, spark: SparkSession | None, path: str) -> None:
    """The run's dead-letter records (``diverted``), read by the driver (a pipeline's failures:
    few) into the window part ``dead_letters``."""
    from recon.read.dead_letters import read_dead_letters, topics_config, write_part

    cfg = plan.cfg
    assert cfg.diverted is not None
    config = topics_config(cfg.diverted, plan.kafka.config)
    ranges = plan.catalog.dead_letter_ranges
    if is_local(path):
        write_part(ranges, cfg.diverted, cfg.kafka.message_id, config, local_path(path))
        return
    from recon.model import schemas
    from recon.read.ranges import OffsetRange

    assert spark is not None
    read = read_dead_letters(config, [OffsetRange(*r) for r in ranges], cfg.diverted,
                             cfg.kafka.message_id)  # fmt: skip
    frame = spark.createDataFrame(read.to_pylist(), schemas.DEAD_LETTERS)
    frame.write.mode("overwrite").parquet(path)


def reads_on_driver(plan: PlannedRun) -> bool:
    """Whether the driver reads the run's window (step 2: the local engine's reader,
    ``recon.read.kafka_local``, instead of Spark tasks) and its results (the validation: pandas,
    as for ``engine: local``) itself: a window of at most ``RECON_SPARK_DRIVER_READ`` offsets
    (``plan.engine.driver_read``; default: ``IN_PROCESS_OFFSETS``) whose files (under the run's
    data directory) are on the driver's own disk. Spark pays a job per part or metric whatever
    its size, and under Airflow those steps then need no session: no JVM under spark-submit, no
    Spark Connect client (bench/engine_changes.md). Both readers write the same columns, and the
    suites run alike on both (tests/unit/test_suites.py); the rules still run on Spark.
    """
    return _on_driver(plan)[1]


def window_on_driver(plan: PlannedRun) -> bool:
    """Whether the driver reads the run's window (step 2) with the local engine's readers: a
    window :func:`reads_on_driver` gives it, and, unless ``RECON_SPARK_DRIVER_READ`` sets
    a bound, every window of a Spark whose master is local (``local[*]``: the Spark Connect
    server of ``make up`` too, started with the same setting) whose files are on the driver's
    disk. Such a Spark's tasks run on the same cores as the driver's reader processes, but as
    Python workers that hand every record to the JVM before Parquet gets it: a 1M window read
    in 5.4-6.2 s by the tasks and in 2.8-2.9 s by the readers (Spark Connect server, 8
    partitions; bench/engine_changes.md). A cluster's tasks read on its workers' cores.
    """
    return _on_driver(plan)[0]


def _on_driver(plan: PlannedRun) -> tuple[bool, bool]:
    """(the window, the results): what the driver reads itself, decided from the settings the
    plan read once."""
    if not is_local(plan.data_dir):
        return False, False
    bound = plan.engine.driver_read
    offsets = offsets_in(window_ranges(plan.windows))
    results = offsets <= (IN_PROCESS_OFFSETS if bound is None else bound)
    local_master = (plan.engine.spark_master or "").strip().startswith("local")
    return results or (bound is None and local_master), results


def _read_on_driver(
    plan: PlannedRun, ranges: list[OffsetRange], isolation: str, directory: str
) -> int:
    """Read ``ranges`` into ``directory`` with the local engine's reader; readers of the part
    see its old files or its new ones, never a mix."""
    cfg, kafka = plan.cfg, plan.kafka
    staging = f"{directory}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        read = read_ranges(
            dict(kafka.config), [r for r in ranges if r.end > r.start], cfg.kafka.message_id,
            staging, isolation_level=isolation, with_time=cfg.sink.time_column is not None,
            payload=cfg.payload, order=cfg.order,
            expect=cfg.expect.fields() if cfg.expect is not None else (),
        )  # fmt: skip
        try:
            n = collect(read, cfg.name, kafka)
        finally:
            read.stop()
        open(os.path.join(staging, "_SUCCESS"), "w").close()
        if os.path.exists(directory):
            # The run's folder inside the pipeline's: a name that climbed out is refused.
            remove_tree(directory, os.path.dirname(os.path.dirname(os.path.dirname(directory))))
        os.rename(staging, directory)
        return n
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def source_copy_dir(data_dir: str, pipeline: str, run_id: str) -> str:
    return local_path(window_path(data_dir, pipeline, run_id, "source"))


def sink_copy_dir(data_dir: str, pipeline: str, run_id: str) -> str:
    return local_path(window_path(data_dir, pipeline, run_id, "sink"))
