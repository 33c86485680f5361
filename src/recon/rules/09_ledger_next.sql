-- The ledger after this run: the entries of the messages it knew, updated, and the new ones.
SELECT * FROM ledger_known
UNION ALL
SELECT * FROM ledger_new
