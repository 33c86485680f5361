"""The ledger store: what earlier runs concluded about each messageId, kept as a chain of deltas.

A ledger version is a *manifest*: the list of entry directories (Parquet, ``schemas.LEDGER`` plus
``id_hash``) that make it up, oldest first. A run writes one entry directory holding only the
messages it touched (its results merged with their earlier entries, ``recon/rules/08_ledger_*.sql``)
and a manifest listing its base's entries and its own. The newest entry of a messageId wins.

Reading a version for a run (:func:`recon.ledger.spark.ledger_for`) keeps the entries whose
``id_hash`` (a 64-bit xxhash of the messageId) is among the run's: a semi-join against the
broadcast hashes of the run's ids, so history is scanned but neither shuffled nor rewritten, and a
run costs what its own window costs. A hash collision only lets an unrelated entry through; it
meets no fact of the run, so it yields no verdict and is carried unchanged.

When a manifest would list more than :data:`~recon.ledger.spark.COMPACT_AFTER` entries, the run
writes the whole effective ledger as one entry instead: one rewrite of history every
``COMPACT_AFTER`` runs.

A base path that is not a manifest is a whole ledger version as written before manifests: it is
read as a single entry.

An entry may also be a run's *results* (``schemas.RESULT`` rows, as the local engine writes them
once for its validation step and its ledger both): the manifest line names the run
(``results_of``) and readers take each result row of a ledger verdict as the entry of its
message (:func:`recon.ledger.spark.results_as_entries`), first seen in that run. Only messages
new to the ledger are taken from results; the run's entries of known messages follow in the next
entry, which wins.

Two modules read and write the same versions, so a pipeline moves between engines freely:

* :mod:`recon.ledger.spark`: the Spark engine's (``recon.engines.spark_run``);
* :mod:`recon.ledger.local`: the local engine's, in DuckDB (``recon.engines.local_run``).
"""
