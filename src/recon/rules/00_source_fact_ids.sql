-- The messageIds whose ledger entries a run with a source reads: those of 00_fact_ids, and the
-- source messages that settled in the run (00_source_in_ledger keeps which the ledger has).
SELECT message_id FROM fact_ids
UNION ALL SELECT message_id FROM source_ids
