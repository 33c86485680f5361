"""The engines that run the rules (``recon.rules``): DuckDB on one machine, Spark anywhere.

Each is a small adapter behind ``recon.rules.run.RuleEngine``: it registers the run's inputs
under the rules' names, runs each rule statement, and hands its outputs on.

* :mod:`recon.engines.driver` is step 3 of a run, one driver for both engines: an engine gives
  it only its IO;
* :mod:`recon.engines.spark` and :mod:`recon.engines.duckdb` run the rules;
* :mod:`recon.engines.spark_snapshot` is step 2 on Spark, :mod:`recon.engines.spark_run` a run's
  IO on Spark; :mod:`recon.engines.local_run` is both on one machine without a JVM
  (``engine: local``: confluent-kafka readers, ``COPY``, DuckDB);
* :mod:`recon.engines.pending` carries the messages the base run left ``pending`` into a run.

* :mod:`recon.engines.plan` is a run's plan: resolved and recorded by step 1, loaded once by each
  later step and handed to the engine's functions, which ask nothing again.

:func:`needs_spark` is the one test of ``cfg.engine``: a run's plan records it, by which
``recon.run.steps`` picks the steps and the validation; the CLI asks it whether to start a
SparkSession, the Airflow DAG factory whether a step runs under spark-submit. It imports
nothing at run time: the DAG factory uses it at parse time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recon.config import PipelineConfig


#: The Spark engine's steps that its driver does itself for a small run, without Spark
#: (``recon.run.steps.step_needs_spark``); ``reconcile`` always runs the rules on Spark.
DRIVER_STEPS = ("snapshot_topic", "validate")


def needs_spark(cfg: PipelineConfig) -> bool:
    """Whether the pipeline's engine runs on Spark (``engine: spark``, the default) rather than
    in the calling process without a JVM (``engine: local``: DuckDB and pandas).
    """
    return bool(cfg.engine != "local")
