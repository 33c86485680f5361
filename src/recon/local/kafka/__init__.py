"""The local engine's Kafka read: exact offset ranges to Parquet, in parallel reader processes.

* :mod:`recon.local.kafka.pool` spreads the ranges over reader processes (one per core) and
  collects them (:func:`~recon.local.kafka.pool.read_ranges`);
* each reader is ``python -m recon.local.kafka`` (:mod:`recon.local.kafka.__main__`), running
  :func:`recon.local.kafka.reader.read_task` on the :class:`~recon.local.kafka.task.ReadTask` it
  gets on its standard input;
* :mod:`recon.local.kafka.chunk` turns the records read into Arrow columns and Parquet row groups;
* :mod:`recon.message_ids` takes the messageId out of each record (DuckDB SQL over Arrow), the
  same function the Spark engine runs on its batches.

Nothing is imported here, so that a reader process starts without loading the pool.
"""
