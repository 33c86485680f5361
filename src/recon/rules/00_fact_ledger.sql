-- A run with a source reads the ledger entries of its facts and of its settled source messages
-- at once (00_source_fact_ids); the verdict steps judge with the entries of its facts only.
SELECT l.* FROM ledger_all l SEMI JOIN fact_ids f ON l.message_id = f.message_id
