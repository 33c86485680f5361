-- One entry per message: the newest (the highest _seq). A version's entries are written oldest
-- first, and a run writes an entry only for the messages it touched, so the newest entry is
-- what the ledger says of the message now. Most messages have one entry: only those found in
-- more than one are ranked (one narrow pass finds them), the others are taken as they are.
WITH repeated AS (
    SELECT message_id FROM ledger_entries GROUP BY message_id HAVING count(*) > 1
)
SELECT message_id, topic, "partition", first_offset, offsets, sink_count, first_run_id,
       verdict, positions, record_time_ms, sink_time_ms, committed_seen
FROM ledger_entries e ANTI JOIN repeated r ON e.message_id = r.message_id
UNION ALL
SELECT message_id, topic, "partition", first_offset, offsets, sink_count, first_run_id,
       verdict, positions, record_time_ms, sink_time_ms, committed_seen
FROM (
    SELECT e.*, row_number() OVER (PARTITION BY e.message_id ORDER BY e._seq DESC) AS newest
    FROM ledger_entries e SEMI JOIN repeated r ON e.message_id = r.message_id
) ranked
WHERE newest = 1
