"""The local engine's Kafka read: exact offset ranges to Parquet, in parallel reader processes.

* :mod:`recon.read.kafka_local.pool` spreads the ranges over reader processes (one per core) and
  collects them (:func:`~recon.read.kafka_local.pool.read_ranges`);
* each reader is ``python -m recon.read.kafka_local`` (:mod:`recon.read.kafka_local.__main__`),
  running :func:`recon.read.kafka_local.reader.read_task` on the
  :class:`~recon.read.kafka_local.task.ReadTask` it gets on its standard input;
* :mod:`recon.read.kafka_local.chunk` turns the records read into Arrow columns and Parquet row
  groups;
* :mod:`recon.read.message_ids` takes the messageId out of each record (DuckDB SQL over Arrow), the
  same function the Spark engine runs on its batches.

Nothing is imported here, so that a reader process starts without loading the pool.
"""
