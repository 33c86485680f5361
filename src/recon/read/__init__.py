"""Reading: a run's Kafka records and sink rows, each record with its messageId or why it has none.

* :mod:`recon.read.message_ids` takes the messageId out of each record read (DuckDB SQL over
  Arrow), where bad input is quarantined: one function for both engines;
* :mod:`recon.read.kafka_spark` reads exact offset ranges with Spark (the Spark engine);
* :mod:`recon.read.kafka_local` reads them in parallel reader processes with confluent-kafka
  (the local engine; a reader is ``python -m recon.read.kafka_local``);
* :mod:`recon.read.sink` inspects the sink table and reads the run's rows through JDBC (Spark);
* :mod:`recon.read.sink_arrow` copies the same rows out of PostgreSQL with ``COPY`` (local).

Nothing is imported here, so that a reader process starts without loading the rest.
"""
