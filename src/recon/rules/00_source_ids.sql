-- The messageIds of the source rows that settled in this run (input source_rows, column
-- `judge`: each source row is judged by exactly one run, the one in whose settle interval it was
-- written): whose ledger entries the run reads (00_source_fact_ids) and which of those the ledger
-- knows (00_source_in_ledger). An id two rows name is here twice: both read the ids as a set.
SELECT message_id
FROM source_rows
WHERE judge AND message_id IS NOT NULL AND trim(message_id) <> ''
