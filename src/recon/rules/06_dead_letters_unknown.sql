-- The dead-letter records that name no record the run has seen: their original is in none of
-- the window's committed or pending records, and their messageId (when they carry one) in no
-- record and no ledger entry the run read. Reported (06_results, an `unverifiable` row at the
-- dead-letter record's position), never dropped.
SELECT d.*
FROM dead_lettered d
ANTI JOIN (SELECT message_id FROM records WHERE message_id IS NOT NULL
           UNION ALL SELECT message_id FROM pending WHERE message_id IS NOT NULL
           UNION ALL SELECT message_id FROM ledger) k
    ON d.message_id = k.message_id
