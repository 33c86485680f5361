-- The settled source rows without a messageId: one `invalid` row each in 06_results, and
-- counted by 07_funnel. Kept: both read them, and each would otherwise test every settled
-- row's messageId again (the results are read three times: the counts, the ledger, the
-- discrepancies).
SELECT message_id, source_key
FROM source_rows
WHERE judge AND (message_id IS NULL OR trim(message_id) = '')
