"""The single-machine engine: the same steps and verdicts as the Spark engine, without a JVM.

A pipeline declares ``engine: local`` when its windows fit one machine (tens of millions of
messages on a few GiB). The steps keep the Spark engine's contracts (``recon.engine``):

* :mod:`recon.local.kafka` reads exact offset ranges with confluent-kafka in parallel
  worker processes (one per core, partitions spread by size), the messageIds taken out by
  :mod:`recon.message_ids` as the Spark engine's are;
* :mod:`recon.local.sink_arrow` copies the run's sink rows out of PostgreSQL (``COPY``) while the
  workers read Kafka;
* the verdicts are the rules of :mod:`recon.rules`, run by :mod:`recon.engines.duckdb`;
* :mod:`recon.local.ledger` reads and writes the same ledger versions (manifests of Parquet
  entry directories) as ``recon.ledger``, so a pipeline can move between engines;
* :mod:`recon.local.engine` is the run's IO for the one driver of ``recon.engines.driver``.

Nothing here imports pyspark or Airflow.
"""

from __future__ import annotations
