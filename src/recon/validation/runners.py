"""The run's results handed to the checkpoint, by engine: a Spark DataFrame where it lives
(``engine: spark``), or the results Parquet read into pandas without a JVM (``engine: local``).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from recon.config import PipelineConfig
from recon.spark import persist
from recon.validation.checkpoint import ValidationOutcome, run_checkpoint
from recon.validation.suites import load_suite, suite_columns

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

#: Result columns with a closed set of values, read as pandas categoricals (one byte a row).
CATEGORICAL = ("verdict",)


def validate_run(
    spark: SparkSession,
    results: DataFrame,
    cfg: PipelineConfig,
    run_id: str,
    *,
    gx_dir: str | None = None,
) -> ValidationOutcome:
    """Validate one run's results on Spark (``engine: spark``); nothing is copied to pandas.
    Only the columns the pipeline's suite uses are read, as :func:`validate_results_file` reads.

    :param spark: the session the results live in (used to label the Spark jobs).
    :param results: the run's verdicts, shaped as ``schemas.RESULT``.
    :param cfg: the pipeline: its semantic picks the suite, its tolerances fill the parameters.
    :param run_id: the run's id; the validation's run name. Validating it again replaces it.
    :param gx_dir: the GX project folder (default ``$RECON_STATE/gx``); created when absent.
    :raises ValidationError: the suite is unusable or an expectation could not be evaluated.
    """
    document = load_suite(cfg.semantics)
    cached_here = not results.is_cached
    # Only the suite's columns, as the validation without Spark reads: the results' lists of
    # positions and texts of detail are most of their bytes, and no expectation reads them.
    results = results.select(*suite_columns(document))
    if cached_here:
        # GX computes several aggregates; without a cache each would recompute the results.
        # At recon.spark.CACHE_LEVEL, the level of every cache of a run (deserialised: see there).
        results = persist(results)
    spark_context = None
    with contextlib.suppress(Exception):  # Spark Connect sessions have no SparkContext
        spark_context = spark.sparkContext
        spark_context.setJobDescription(f"recon: validate {cfg.name} run {run_id}")
    try:
        return run_checkpoint(cfg, run_id, "spark", results, document=document, gx_dir=gx_dir)
    finally:
        if spark_context is not None:
            spark_context.setJobDescription(None)  # type: ignore[arg-type]
        if cached_here:
            results.unpersist()


def read_results(path: str, columns: list[str]) -> pd.DataFrame:
    """The results Parquet at ``path`` (a file or a folder of part files), only ``columns``, in
    a lean form: :data:`CATEGORICAL` columns as categoricals, the others as Arrow-backed
    columns (strings stay in Arrow buffers, never one Python object a row)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(
        path, columns=columns, read_dictionary=[c for c in columns if c in CATEGORICAL]
    )
    return table.to_pandas(
        types_mapper=lambda t: None if pa.types.is_dictionary(t) else pd.ArrowDtype(t),
        self_destruct=True,
        split_blocks=True,
    )


def validate_results_file(
    cfg: PipelineConfig, run_id: str, path: str, *, gx_dir: str | None = None
) -> ValidationOutcome:
    """Validate one run's results Parquet with a pandas data source (``engine: local``): no JVM.

    Reads only the columns the pipeline's suite uses. Same suite, parameters, Data Docs site and
    outcome as :func:`validate_run`; validating a run id again replaces its earlier validation,
    whichever engine made it.

    :param path: the run's results Parquet (``recon.run.paths.results_path``).
    :raises ValidationError: the suite is unusable or an expectation could not be evaluated.
    """
    document = load_suite(cfg.semantics)
    results = read_results(path, suite_columns(document))
    return run_checkpoint(cfg, run_id, "pandas", results, document=document, gx_dir=gx_dir)
