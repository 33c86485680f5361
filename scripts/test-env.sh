# Sourced by the test scripts (scripts/test.sh, scripts/test_py312.sh, `make unit|integration|
# system`): what the suite runs with beyond the project's environment (scripts/env.sh).
#
# Spark's JVMs in the suite live for seconds to minutes and judge small frames: the optimising
# JIT compiler (C2) costs them more CPU than it saves, and the tiers are CPU-bound on two cores.
# C1 only: a `recon run` process judging 2,000 records twice used 45 s of CPU instead of 70 s
# (2026-11-27); the unit tier's CPU time halves. Every Spark driver and executor the suite
# starts gets it (recon.spark.spark_settings), the Airflow tasks' spark-submit included. The
# product's own default stays: C1 only cost 52 s at 10M (recon.spark).
export RECON_SPARK_JAVA_OPTIONS="${RECON_SPARK_JAVA_OPTIONS--XX:TieredStopAtLevel=1}"
# Each test's Spark is its own (the test session's JVM, a `recon run` process's, spark-submit's):
# the driver-kill, listener and Spark-UI tests need one; the tests of Spark Connect start the
# project's server and attach to it themselves (tests/fixtures/spark_connect.py).
export RECON_SPARK_REMOTE=""
