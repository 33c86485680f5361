-- Decides which messages need every fact stacked (the general path, 05_general_verdicts.sql):
-- more than one joined row (several records or sink rows), or anything else known about them
-- (a pending or aborted record, a ledger entry). Found by a 64-bit hash of the messageId, which
-- is cheaper to group than text; a collision only sends a message the general way too.
SELECT DISTINCT h FROM (
    SELECT hash(message_id) AS h FROM joined GROUP BY hash(message_id) HAVING count(*) > 1
    UNION ALL
    SELECT hash(message_id) AS h FROM pending
    WHERE invalid_reason IS NULL AND message_id IS NOT NULL AND trim(message_id) <> ''
    UNION ALL
    SELECT hash(message_id) AS h FROM uncommitted
    WHERE message_id IS NOT NULL AND trim(message_id) <> ''
    UNION ALL
    SELECT hash(message_id) AS h FROM ledger
) hashes
