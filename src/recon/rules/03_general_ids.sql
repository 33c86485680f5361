-- The messageIds of the general path: its joined rows, and every pending, aborted or ledger
-- fact (a message known only from those has no joined row).
SELECT DISTINCT message_id FROM (
    SELECT message_id FROM general_joined
    UNION ALL
    SELECT message_id FROM pending
    WHERE invalid_reason IS NULL AND message_id IS NOT NULL AND trim(message_id) <> ''
    UNION ALL
    SELECT message_id FROM uncommitted WHERE message_id IS NOT NULL AND trim(message_id) <> ''
    UNION ALL
    SELECT message_id FROM ledger
) ids
