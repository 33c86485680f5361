-- unpublished: a settled source message that no committed record of the topic carries: not in
-- the window, not past its end (pending), not in the ledger (an earlier run met its record, or
-- already found it unpublished: input source_known), and with no sink row (a sink row whose
-- messageId is in no record is a phantom, whatever the source says). The window's usable
-- records and the new sink rows are met in 06_source_unmatched; a quarantined record that still
-- names its messageId carries it too. One anti join per input, not one over their union: Spark
-- 4.0's constraint propagation fails on that union's plan. One row per message, named by its
-- first source row, with how many settled rows name it (none of them met a joined row).
SELECT s.message_id, coalesce(min(s.source_key), s.message_id) AS source_key,
       count(*) AS n_rows
FROM source_unmatched s
ANTI JOIN (SELECT message_id FROM checked_records WHERE NOT ok AND message_id IS NOT NULL) r
    ON s.message_id = r.message_id
ANTI JOIN pending p ON s.message_id = p.message_id
ANTI JOIN source_known k ON s.message_id = k.message_id
WHERE s.judge AND s.sourced
GROUP BY s.message_id
