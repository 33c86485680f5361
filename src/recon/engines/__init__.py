"""The engines that run the rules (``recon.rules``): DuckDB on one machine, Spark anywhere.

Each is a small adapter behind ``recon.rules.run.RuleEngine``: it registers the run's inputs
under the rules' names, runs each rule statement, and hands its outputs on.

:func:`needs_spark` is the one test of ``cfg.engine``: ``recon.engine`` picks the steps and the
validation by it, the CLI whether to start a SparkSession, the Airflow DAG factory whether a step
runs under spark-submit. It imports nothing at run time: the DAG factory uses it at parse time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recon.config import PipelineConfig


def needs_spark(cfg: PipelineConfig) -> bool:
    """Whether the pipeline's engine runs on Spark (``engine: spark``, the default) rather than
    in the calling process without a JVM (``engine: local``: DuckDB and pandas).
    """
    return bool(cfg.engine != "local")
