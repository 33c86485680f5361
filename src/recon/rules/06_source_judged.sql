-- unpublished: a settled source message that no committed record of the topic carries: not in
-- the window, not past its end (pending), not in the ledger (an earlier run met its record, or
-- already found it unpublished: input source_known), and with no sink row (a sink row whose
-- messageId is in no record is a phantom, whatever the source says). The window's usable
-- records and the new sink rows are met in `joined` (kept by the verdict steps: one anti join
-- instead of one over each input again); a quarantined record that still names its messageId
-- carries it too. One anti join per input, not one over their union: Spark 4.0's constraint
-- propagation fails on that union's plan.
SELECT s.message_id, s.source_key, s.n_rows
FROM source_ids s
ANTI JOIN joined j ON s.message_id = j.message_id
ANTI JOIN (SELECT message_id FROM checked_records WHERE NOT ok AND message_id IS NOT NULL) r
    ON s.message_id = r.message_id
ANTI JOIN pending p ON s.message_id = p.message_id
ANTI JOIN source_known k ON s.message_id = k.message_id
