"""The ledger store: what earlier runs concluded about each messageId, kept as a chain of deltas.

A ledger version is a *manifest*: the list of entry directories (Parquet, ``schemas.LEDGER`` plus
``id_hash``) that make it up, oldest first. A run writes one entry directory holding only the
messages it touched (its results merged with their earlier entries, ``recon/rules/08_ledger_*.sql``)
and a manifest listing its base's entries and its own. The newest entry of a messageId wins.

Reading a version for a run (:func:`recon.ledger.versions.read_newest`) keeps the entries of the
run's messages: the engine's store registers at least those (Spark: a semi-join of the stored
``id_hash``, a 64-bit xxhash of the messageId, against the broadcast hashes of the run's ids;
DuckDB: two passes, the first one column wide), and the rules ``00_ledger_entries`` and
``00_ledger_newest`` pick the newest entry of each. History is scanned but neither shuffled nor
rewritten, and a run costs what its own window costs. An entry that lets an unrelated message
through (a hash collision) meets no fact of the run, so it yields no verdict and is carried
unchanged.

When a manifest would list more than :data:`~recon.ledger.versions.COMPACT_AFTER` entries, the
run writes the whole effective ledger as one entry instead: one rewrite of history every
``COMPACT_AFTER`` runs.

A base path that is not a manifest is a whole ledger version as written before manifests: it is
read as a single entry.

An entry may also be a run's *results* (``schemas.RESULT`` rows, as the local engine writes them
once for its validation step and its ledger both): the manifest line names the run
(``results_of``) and readers take each result row of a ledger verdict as the entry of its
message (``recon/rules/00_ledger_entries.sql``), first seen in that run. Only messages new to
the ledger are taken from results; the run's entries of known messages follow in the next entry,
which wins.

What a version is made of is written once, in :mod:`recon.ledger.versions`; two stores do its file
IO, so a pipeline moves between engines freely:

* :mod:`recon.ledger.spark`: the Spark engine's (``recon.engines.spark_run``);
* :mod:`recon.ledger.local`: the local engine's, in DuckDB (``recon.engines.local_run``).
"""
