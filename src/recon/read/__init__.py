"""Reading: a run's Kafka records and sink rows, each record with its messageId or why it has none.

* :mod:`recon.read.message_ids` takes the messageId out of each record read (DuckDB SQL over
  Arrow), where bad input is quarantined: one function for both engines;
* :mod:`recon.read.ranges` says which offsets a run's window parts hold and cuts a read into
  tasks;
* :mod:`recon.read.kafka_local` reads exact offset ranges with confluent-kafka: its reader runs
  in parallel reader processes (the local engine; ``python -m recon.read.kafka_local``) or in
  Spark tasks (the Spark engine, :mod:`recon.read.kafka_spark`);
* :mod:`recon.read.sink` inspects the sink table and reads the run's rows through JDBC (Spark);
* :mod:`recon.read.sink_arrow` copies the same rows out of PostgreSQL with ``COPY`` (local).

Nothing is imported here, so that a reader process starts without loading the rest.
"""
