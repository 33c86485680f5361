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

History is kept in two parts. The *hot* part is the entries of the last runs, at most
:data:`~recon.ledger.versions.COMPACT_AFTER` of them: every run reads them (the local store one
column wide; the Spark store writes each entry with a segment's index and looks them up).
The *cold* part is *segments*: when a run's version would list more hot entries than that, it
merges them (the newest entry of each of their messages) into one level-0 segment, sorted by
messageId; :data:`~recon.ledger.versions.MERGE_FANOUT` segments of one level are merged into one
of the next (a size-tiered merge: an entry is rewritten about once per level, never all of
history at once), as long as the merge writes at most
:data:`~recon.ledger.versions.MERGE_MAX_ROWS` rows, which bounds the work a compaction adds to
a run. Segments are listed first in a manifest, oldest first, the hot entries after them, so the
newest entry of a message is still the last one listed. A run finds its messages in a segment
without scanning it: both stores write an index beside each segment (a membership filter and
row-group fences), probe the run's ids against the filter (the Spark store in its executors)
and read only the row groups holding the ids it lets through (``recon.ledger.local_segments``,
``recon.ledger.spark_segments``), so history costs a run a few bytes per message (the filter,
from the page cache), not a column of it.
A duplicate of a year-old message is still found: a filter has no false negatives.

Every file is new: a compaction that dies leaves files no manifest lists (``recon prune`` sweeps
them), and the pipeline still points at the version before it.

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
