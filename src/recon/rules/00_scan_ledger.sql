-- The ledger entries a whole-table scan judges with: those of messages the run has a fact
-- about (an entry meeting no fact yields no verdict and is carried unchanged by the version's
-- earlier entries), and every pending one (reported again, or judged once the window passes its
-- records). A message whose sink rows are all passed again counts none from its entry.
SELECT l.message_id, l.topic, l."partition", l.first_offset, l.offsets,
       CASE WHEN c.message_id IS NULL THEN l.sink_count ELSE CAST(0 AS BIGINT) END AS sink_count,
       l.first_run_id, l.verdict, l.positions, l.record_time_ms, l.sink_time_ms, l.committed_seen
FROM ledger_all l
LEFT JOIN scan_changed_ids c ON l.message_id = c.message_id
LEFT JOIN (
    SELECT DISTINCT message_id FROM (
        SELECT message_id FROM records
        UNION ALL SELECT message_id FROM pending
        UNION ALL SELECT message_id FROM scan_sink_rows
    ) f
    WHERE message_id IS NOT NULL
) seen ON l.message_id = seen.message_id
WHERE l.verdict = 'pending' OR seen.message_id IS NOT NULL
