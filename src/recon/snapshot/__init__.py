"""Offsets and windows: which records and which sink rows a run reads, decided before it reads.

* :mod:`recon.snapshot.offsets` asks Kafka where a topic and a consumer group stand right now
  (log-start, last stable offset, high watermark, the group's committed offset, the settle time);
* :mod:`recon.snapshot.window` decides each partition's window from that snapshot and the previous
  run's watermarks (pure: no Kafka, no database);
* :mod:`recon.snapshot.sink_position` records where the run stands in the sink's ingest sequence,
  so that rows committing late are read by the next run;
* :mod:`recon.snapshot.sink_changes` records the database's snapshot for a sink without one, whose
  rows are read by their writing transaction (``xmin``).

Nothing is imported here: each importer names the module it uses.
"""
